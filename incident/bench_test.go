package incident

import (
	"context"
	"testing"

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
