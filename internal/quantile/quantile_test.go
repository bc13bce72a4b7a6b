package quantile

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestType7(t *testing.T) {
	// Values as R's quantile(x, type = 7) gives them.
	x := []float64{1, 2, 3, 4, 10}
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.99, 7},
		{x, 0, 1},
		{x, 0.5, 3},
		{x, 0.9, 7.6},
		{x, 0.99, 9.76},
		{x, 1, 10},
	} {
		require.InDelta(t, tc.want, Type7(tc.xs, tc.q), 1e-12, "q %g of %v", tc.q, tc.xs)
	}
}
