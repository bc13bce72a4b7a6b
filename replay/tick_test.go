package replay

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

// TestRefineTick: dither keeps a short service's mean at any tick, but
// not its quantiles. At a 1 ms tick a 0.3 ms service lasts 0 or 1 ms, so
// the p50 reads 0 and the p99 1 ms; RefineTick refines the tick to
// 100 µs and says so. A 40 ms service keeps 1 ms.
func TestRefineTick(t *testing.T) {
	tests := []struct {
		name      string
		svcMS     float64
		rate      float64
		wantFiner bool // refined to 100 µs; else kept at 1 ms
	}{
		{"0.3 ms", 0.3, 250, true},
		{"40 ms", 40, 18.75, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mmodel("api", tc.rate, []cascade.Node{mnode("api", 1, 0, cascade.Const(tc.svcMS))})
			cfg := DefaultConfig()
			cfg.Duration = 20 * time.Second
			tick, note, err := RefineTick(context.Background(), m, cfg)
			require.NoError(t, err)
			t.Logf("tick %v: %s", tick, note)
			require.Equal(t, tc.wantFiner, tick == 100*time.Microsecond, "tick %v", tick)
			require.Equal(t, tc.wantFiner, note != "", note)
		})
	}
}
