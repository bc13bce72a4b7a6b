package cascade

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDistTimes(t *testing.T) {
	tests := []struct {
		in, want Dist
	}{
		{Const(2), Const(3)},
		{Dist{Kind: DistExp, Mean: 4, SpikeProb: 0.1, SpikeMS: 10, Floor: 1, Cap: 100},
			Dist{Kind: DistExp, Mean: 6, SpikeProb: 0.1, SpikeMS: 15, Floor: 1.5, Cap: 150}},
		{Dist{Kind: DistNormal, Mean: 10, Sigma: 2}, Dist{Kind: DistNormal, Mean: 15, Sigma: 3}},
		{Dist{Kind: DistUniform, Min: 2, Max: 4}, Dist{Kind: DistUniform, Min: 3, Max: 6}},
		{Dist{Kind: DistEmpirical, Points: []float64{2, 4}}, Dist{Kind: DistEmpirical, Points: []float64{3, 6}}},
		{Dist{Kind: DistTiers, P50: 2, P95: 4, P99: 8}, Dist{Kind: DistTiers, P50: 3, P95: 6, P99: 12}},
	}
	for _, tc := range tests {
		t.Run(tc.in.Kind, func(t *testing.T) {
			got := tc.in.Times(1.5)
			require.Equal(t, tc.want, got)
			require.InDelta(t, 1.5*tc.in.MeanValue(), got.MeanValue(), 1e-9)
		})
	}
	ln := Dist{Kind: DistLognormal, Mu: 1, Sigma: 0.5}
	got := ln.Times(1.5)
	require.InDelta(t, 1.5*ln.MeanValue(), got.MeanValue(), 1e-9)
	require.Equal(t, 0.5, got.Sigma)
}
