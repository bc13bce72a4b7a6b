package cascade

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPropagationInterval checks the Wilson score interval against its
// published values (Newcombe 1998, table I; 95%).
func TestPropagationInterval(t *testing.T) {
	tests := []struct {
		p      float64
		n      int64
		lo, hi float64
		ok     bool
	}{
		{0.5, 10, 0.2366, 0.7634, true},
		{0.1, 10, 0.0179, 0.4042, true},
		{0, 10, 0, 0.2775, true},
		{1, 10, 0.7225, 1, true},
		{1, 197, 0.9809, 1, true},
		{1, 0, 0, 1, false},
	}
	for _, tc := range tests {
		o := &EdgeObserved{Propagation: tc.p, FinalFailed: tc.n}
		lo, hi, ok := o.PropagationInterval()
		require.Equal(t, tc.ok, ok, "%g of %d", tc.p, tc.n)
		require.InDelta(t, tc.lo, lo, 5e-5, "%g of %d", tc.p, tc.n)
		require.InDelta(t, tc.hi, hi, 5e-5, "%g of %d", tc.p, tc.n)
		require.LessOrEqual(t, lo, tc.p)
		require.GreaterOrEqual(t, hi, tc.p)
	}
	var none *EdgeObserved
	_, _, ok := none.PropagationInterval()
	require.False(t, ok)
}
