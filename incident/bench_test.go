package incident

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"cascade"
	"cascade/graph"
)

// BenchmarkRootCause reads 2,400 synthetic traces (14,400 spans) of a
// callee slowing down.
func BenchmarkRootCause(b *testing.B) {
	spans := synth{slow: step("db", 60, 4), starve: func(float64) float64 { return 0 }}.spans()
	cfg := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RootCause(context.Background(), graph.Spans(spans), nil, nil, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(spans))*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkNezhaWindow times the incident pass of `cascade analyze` on a
// 3-minute Nezha TrainTicket window (the first fault of 2023-01-30:
// traces, logs and every pod's metrics) with the model and the replay
// check, ingest and graph left out of the timing. It needs the shared
// captures: CASCADE_NEZHA=/work/shared/realdata go test ./incident -run
// '^$' -bench NezhaWindow -benchtime 3x.
func BenchmarkNezhaWindow(b *testing.B) {
	root := os.Getenv(envNezha)
	if root == "" {
		b.Skipf("set %s to the directory of the Nezha captures", envNezha)
	}
	day := filepath.Join(root, "nezha-trainticket", "rca_data", "2023-01-30")
	var files, logs []string
	for _, m := range []string{"11_51", "11_52", "11_53"} {
		files = append(files, traceFile(day, m))
		logs = append(logs, logFile(day, m)...)
	}
	d := nezhaIngestLogs(b, files, []string{filepath.Join(day, "metric")}, logs)
	var spans int
	_ = d.spans(func(*cascade.Span) error { spans++; return nil })
	in := Input{Spans: d.spans, Samples: d.samples, Model: d.model, Logs: d.logs}
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Investigate(context.Background(), in, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
