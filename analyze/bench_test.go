package analyze

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkRun analyses the bundled HotROD capture end to end with the
// defaults of `cascade analyze` (the README's main command) and reports
// spans analysed per second of wall time.
func BenchmarkRun(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Inputs = []string{filepath.Join(hotrod, "traces-otlp.json.gz")}
	cfg.Metrics = []string{filepath.Join(hotrod, "prometheus")}
	b.ReportAllocs()
	var spans int64
	for b.Loop() {
		cfg.Out = filepath.Join(b.TempDir(), "report")
		a, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		spans += a.Dataset.Spans
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}
