package rank

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRun ranks seed 000's derived candidates: 4 seeds, 10 s
// replays, both traffics, the capacity sweep off.
func BenchmarkRun(b *testing.B) {
	m := loadModel(b, "../testdata/replay/seed000.json")
	cfg := DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.Parallel = 4, 10*time.Second, false, 1
	var replays int64
	cfg.Progress = func(done, total int64) { replays++ }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), m, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(replays)/b.Elapsed().Seconds(), "replays/s")
}
