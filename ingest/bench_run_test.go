package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRun measures the whole ingest of one input: decode, sort in
// spilled runs, deduplicate, and write the zstd Parquet dataset. The input
// is the HotROD capture as the Collector's file exporter writes it with
// format: proto (length-prefixed frames), 11,850 spans.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "traces.binpb")
	if err := os.WriteFile(in, loadOTLPHotROD(b).framed, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, runRows := range []int{1 << 18, 2048} {
		name := "in-memory"
		if runRows < 11850 {
			name = "spilled"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				cfg := DefaultConfig()
				cfg.Traces = []string{in}
				cfg.RunRows = runRows
				cfg.Out = filepath.Join(dir, "ds")
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				n += int(sum.Spans)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
