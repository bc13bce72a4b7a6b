package testutil

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConnectorSeries checks the simulated connectors on the bundled
// HotROD capture: the edges servicegraph pairs, the virtual nodes it makes
// of client spans nobody answered, and every span counted once by
// spanmetrics. CONNECTOR_OUT=FILE keeps the output to look at.
func TestConnectorSeries(t *testing.T) {
	for _, om := range []bool{false, true} {
		f, err := os.Open("../../testdata/hotrod-baseline/traces-otlp.json.gz")
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, ConnectorSeries(&buf, f, ConnectorConfig{OpenMetrics: om}))
		f.Close()
		if p := os.Getenv("CONNECTOR_OUT"); p != "" {
			if om {
				p += ".om"
			}
			require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		}
		out := buf.String()
		if om {
			require.True(t, strings.HasSuffix(out, "# EOF\n"))
		}
		final := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "traces_service_graph_request_total{") || strings.HasPrefix(line, "traces_span_metrics_calls_total{") {
				i := strings.LastIndexByte(line, '}')
				fields := strings.Fields(line[i+1:])
				final[line[:i+1]] = fields[0]
			}
		}
		var sum int
		for k, v := range final {
			if strings.HasPrefix(k, "traces_span_metrics_calls_total{") {
				n := 0
				for _, c := range v {
					n = n*10 + int(c-'0')
				}
				sum += n
			}
		}
		require.Equal(t, 11850, sum, "every span counted once")
		for _, want := range []string{
			`client="frontend",failed="false",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="route"}`,
			`client="user",connection_type="virtual_node",failed="false",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="frontend"}`,
			`client="mysql",connection_type="virtual_node",failed="false",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="mysql"}`,
			`client="redis-manual",connection_type="virtual_node",failed="true",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="unknown"}`,
		} {
			v, ok := final["traces_service_graph_request_total{"+want]
			require.True(t, ok, want)
			require.NotEmpty(t, v)
		}
		require.Equal(t, "3000", final[`traces_service_graph_request_total{client="frontend",failed="false",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="route"}`])
		require.Equal(t, "750", final[`traces_service_graph_request_total{client="redis-manual",connection_type="virtual_node",failed="true",instance="127.0.0.1:8889",job="otel-collector",otel_scope_name="traces_service_graph",server="unknown"}`])
	}
}
