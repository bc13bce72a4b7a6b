package fit_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
)

// TestFitLogistic draws calls from a known logistic model and recovers
// its coefficients within four standard errors.
func TestFitLogistic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	want := []float64{-3, 0.5, 2, 0.01, -0.8} // intercept, upstream, node, rate, attempt
	calls := make([]fit.Call, 20000)
	for i := range calls {
		c := fit.Call{
			UpstreamLoad: rng.Float64() * 1.5,
			NodeLoad:     rng.Float64() * 2,
			ArrivalRate:  50 + 100*rng.Float64(),
			Attempt:      float64(1 + rng.IntN(3)),
		}
		z := want[0] + want[1]*c.UpstreamLoad + want[2]*c.NodeLoad + want[3]*c.ArrivalRate + want[4]*c.Attempt
		c.Failed = rng.Float64() < 1/(1+math.Exp(-z))
		calls[i] = c
	}
	lg, err := fit.FitLogistic(calls)
	require.NoError(t, err)
	require.Empty(t, lg.Note)
	require.Len(t, lg.Coefficients, 5)
	for i, c := range lg.Coefficients {
		require.Greater(t, c.StdErr, 0.0, c.Feature)
		require.InDelta(t, want[i], c.Estimate, 4*c.StdErr, "%s: %+v", c.Feature, c)
	}
	require.Greater(t, lg.PseudoR2, 0.05)
	require.Greater(t, lg.NodeLoadSlope, 0.0)

	// Degenerate inputs say why there is nothing to fit.
	for _, tc := range []struct {
		calls []fit.Call
		note  string
	}{
		{nil, "no calls"},
		{[]fit.Call{{NodeLoad: 1}}, "no call failed"},
		{[]fit.Call{{Failed: true}}, "every call failed"},
	} {
		lg, err := fit.FitLogistic(tc.calls)
		require.NoError(t, err)
		require.Contains(t, lg.Note, tc.note)
		require.Empty(t, lg.Coefficients)
	}
	// A feature that does not vary is left out, not a singular fit.
	for i := range calls {
		calls[i].Attempt = 1
	}
	lg, err = fit.FitLogistic(calls)
	require.NoError(t, err)
	require.Zero(t, lg.Coefficients[4].Estimate)
	require.Empty(t, lg.Note)
}
