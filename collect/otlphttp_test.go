package collect

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// TestExportResponseAsPdata holds the hand-written answers to what pdata's
// ptraceotlp and pmetricotlp write, byte for byte.
func TestExportResponseAsPdata(t *testing.T) {
	msgs := []string{"", "3 spans rejected: end before start", `quote " backslash \ tab 	 newline
 bell ` + "\a nul \x00 del \x7f", "<html> & ü 日本 \u2028 \xff\xfe invalid", "x"}
	for _, sig := range []signal{signalTraces, signalMetrics} {
		for _, enc := range []encoding{encodingJSON, encodingProto} {
			for _, rejected := range []int64{0, 1, 5, 300, 1 << 40} {
				for _, msg := range msgs {
					var want []byte
					var err error
					if sig == signalTraces {
						resp := ptraceotlp.NewExportResponse()
						if rejected > 0 {
							resp.PartialSuccess().SetRejectedSpans(rejected)
							resp.PartialSuccess().SetErrorMessage(msg)
						}
						if enc == encodingJSON {
							want, err = resp.MarshalJSON()
						} else {
							want, err = resp.MarshalProto()
						}
					} else {
						resp := pmetricotlp.NewExportResponse()
						if rejected > 0 {
							resp.PartialSuccess().SetRejectedDataPoints(rejected)
							resp.PartialSuccess().SetErrorMessage(msg)
						}
						if enc == encodingJSON {
							want, err = resp.MarshalJSON()
						} else {
							want, err = resp.MarshalProto()
						}
					}
					require.NoError(t, err)
					got, err := exportResponse(sig, enc, rejected, msg)
					require.NoError(t, err)
					require.Equal(t, want, got, "signal %v, encoding %v, rejected %d, message %q", sig, enc, rejected, msg)
				}
			}
		}
	}
}
