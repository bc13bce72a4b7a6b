package rank

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade/testdata/shapes"
)

// TestTickCheck: lock-pool's services last a few ms and its calls' network
// 0.2 ms, so at a 1 ms tick (every duration rounded up) its lock reads 97%
// busy instead of 80% and the baseline's p50 is 7 times the capture's;
// the check refines the tick to 100 µs and says so. A tick the user gave
// is kept. Seed 002 (services of tens of ms) keeps 1 ms.
func TestTickCheck(t *testing.T) {
	lock, _ := remedyShape(t, shapes.Config{Shape: "lock-pool"})
	storm := loadModel(t, "../testdata/replay/seed002.json")
	tests := []struct {
		name  string
		check bool
		want  time.Duration
	}{
		{"lock-pool, checked", true, 100 * time.Microsecond},
		{"lock-pool, as given", false, time.Millisecond},
		{"seed 002, checked", true, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := lock
			if tc.name[:4] == "seed" {
				m = storm
			}
			cfg := DefaultConfig()
			cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.Derive, cfg.SurgeFactor = 4, 20*time.Second, false, false, 0
			cfg.TickCheck = tc.check
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			t.Logf("tick %g ms; %s; baseline p50 %.1f, roots %v", rep.TickMS, rep.TickNote, rep.Baseline[0].Metric(MetricP50).Mean, rep.Baseline[0].Metric("goodput_per_sec").Mean)
			require.Equal(t, float64(tc.want)/1e6, rep.TickMS)
			require.Equal(t, tc.want != time.Millisecond, rep.TickNote != "")
		})
	}
}
