package ingest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// readHead reads a fixture's decompressed first bytes, as the loader
// sniffs them, and its name without the compression suffix.
func readHead(t *testing.T, path string) (string, []byte) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd, base, done, err := decompressed(path, f)
	require.NoError(t, err)
	defer done()
	head := make([]byte, sniffLen)
	n, _ := io.ReadFull(rd, head)
	return base, head[:n]
}

// TestMisplaced reads each bundled fixture as the kind it is not, and
// as the kind it is: the first names what the file looks like and where
// to pass it, the second finds nothing amiss (a false alarm would turn
// a good input away).
func TestMisplaced(t *testing.T) {
	tests := []struct {
		name    string
		path    string // under the repository's testdata
		metrics bool   // what the file is
		want    string // the error when read as the other kind
	}{
		{name: "Prometheus query JSON", path: "hotrod-baseline/prometheus/request_rate_by_endpoint.json", metrics: true,
			want: "this looks like Prometheus query JSON: pass it with --metrics"},
		{name: "Prometheus query JSON, gzip", path: "hotrod-baseline/prometheus/raw_hotrod_series.json.gz", metrics: true,
			want: "this looks like Prometheus query JSON: pass it with --metrics"},
		{name: "Prometheus text", path: "hotrod-baseline/hotrod-metrics.prom", metrics: true,
			want: "this looks like Prometheus text exposition: pass it with --metrics"},
		{name: "OTLP metrics", path: "otlp-metrics/sdk-runtime-http.jsonl", metrics: true,
			want: "this looks like an OTLP metrics file: pass it with --metrics"},
		{name: "Nezha metric CSV", path: "nezha-trainticket/metric/ts-travel-service-64469b5b48-25zj6_metric.csv", metrics: true},
		{name: "OTLP traces", path: "hotrod-baseline/traces-otlp.json.gz",
			want: "this looks like an OTLP trace file: pass it as PATH, not with --metrics"},
		{name: "OTLP trace", path: "hotrod-baseline/sample-trace-otlp.json",
			want: "this looks like an OTLP trace file: pass it as PATH, not with --metrics"},
		{name: "Jaeger traces", path: "hotrod-baseline/traces-jaeger-legacy.json.gz",
			want: "this looks like a Jaeger trace file: pass it as PATH, not with --metrics"},
		{name: "Zipkin traces", path: "zipkin/hotrod-traces.json",
			want: "this looks like a Zipkin trace file: pass it as PATH, not with --metrics"},
		{name: "Nezha span CSV", path: "nezha-trainticket/trace/08_43_trace.csv.gz",
			want: "this looks like a span CSV: pass it as PATH, not with --metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, head := readHead(t, repoTestdata(filepath.FromSlash(tc.path)))
			require.Nil(t, misplaced(name, head, tc.metrics), "read as what it is")
			err := misplaced(name, head, !tc.metrics)
			if tc.want == "" {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, ErrUnknownFormat, "a directory walk skips it")
		})
	}
}

// TestSniffHeads checks the signs on heads no fixture holds: what must
// be told apart (a Prometheus sample line from a CSV header, a Jaeger
// trace from an answer that mentions resultType in a tag).
func TestSniffHeads(t *testing.T) {
	tests := []struct {
		name          string
		file, head    string
		metrics, span Format
	}{
		{name: "sample line", file: "m.txt", head: "http_requests_total{code=\"200\",method=\"get\",a=\"b\"} 1027 1395066363000\n", metrics: FormatPromText},
		{name: "sample line without labels", file: "m", head: "up 1\n", metrics: FormatPromText},
		{name: ".prom name", file: "x.prom", head: "", metrics: FormatPromText},
		{name: "prose", file: "notes", head: "hello world\n"},
		{name: "CSV header", file: "spans", head: "TraceID,SpanID,ParentID,PodName\n", span: FormatSpanCSV},
		{name: "CSV of metrics", file: "m.csv", head: "time,service,cpu\n1,a,2\n"},
		{name: "Jaeger with resultType in a tag", file: "t.json", head: `{"data":[{"traceID":"1","spans":[{"tags":[{"key":"resultType"}]}]}]}`, span: FormatJaegerJSON},
		{name: "Prometheus error answer without data", file: "e.json", head: `{"status":"error","errorType":"bad_data"}`},
		{name: "empty", file: "e.json", head: ""},
		{name: "binary", file: "x", head: "\x0a\x05hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.metrics, sniffMetrics(tc.file, []byte(tc.head)), "as metrics")
			require.Equal(t, tc.span, sniffTraces(tc.file, []byte(tc.head)), "as traces")
		})
	}
}

// TestRunMisplacedDirectory gives a directory of metrics as traces: the
// run fails naming each file for what it is and the flag to pass the
// directory with.
func TestRunMisplacedDirectory(t *testing.T) {
	dir := repoTestdata("hotrod-baseline", "prometheus")
	cfg := DefaultConfig()
	cfg.Traces = []string{dir}
	cfg.Out = filepath.Join(t.TempDir(), "ds")
	_, err := Run(context.Background(), cfg)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, dir, ie.File)
	require.ErrorIs(t, err, ErrNoInput)
	require.Contains(t, err.Error(), filepath.Join(dir, "request_rate_by_endpoint.json")+" (Prometheus query JSON)")
	require.Contains(t, err.Error(), ": pass the directory with --metrics: ")
}

// TestMisplacedLogs: log files given as traces or as metrics say to pass
// them with --logs, rather than that a span CSV needs a column map.
func TestMisplacedLogs(t *testing.T) {
	tests := []struct{ path, want string }{
		{repoTestdata("nezha-trainticket", "log", "09_26_log_head300.csv"), "this looks like a log CSV: pass it with --logs"},
		{"testdata/otlp-logs/logs.jsonl", "this looks like an OTLP logs file: pass it with --logs"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			name, head := readHead(t, tc.path)
			for _, metrics := range []bool{false, true} {
				err := misplaced(name, head, metrics)
				require.NotNil(t, err)
				require.EqualError(t, err, tc.want)
			}
		})
	}
}
