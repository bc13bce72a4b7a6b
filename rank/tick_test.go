package rank

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade/testdata/shapes"
)

// TestTickCheck: lock-pool's services last a few ms and its calls' network
// 0.2 ms. When every drawn duration rounded up to the 1 ms tick its lock
// read 97% busy instead of 80% and the baseline's p50 was 7 times the
// capture's; drawn durations now keep their mean (replay's dither), so
// its baseline p50 at 1 ms is the capture's and the check keeps the tick,
// as it does seed 002's (services of tens of ms). A tick the user gave is
// kept. replay's TestRefineTick has a model the check refines.
func TestTickCheck(t *testing.T) {
	lock, _ := remedyShape(t, shapes.Config{Shape: "lock-pool"})
	storm := loadModel(t, "../testdata/replay/seed002.json")
	tests := []struct {
		name  string
		check bool
		want  time.Duration
	}{
		{"lock-pool, checked", true, time.Millisecond},
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
			if m == lock {
				// The capture's root p50 is 55 ms.
				require.InEpsilon(t, 55, rep.Baseline[0].Metric(MetricP50).Mean, 0.1)
			}
		})
	}
}
