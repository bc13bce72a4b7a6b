package graph

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// closedLoop simulates n clients that each send, wait for an answer
// (latency ~ exp(meanR) ms) and think (~ exp(meanZ) ms) for d seconds.
func closedLoop(r *rand.Rand, n int, meanR, meanZ, d float64) [][2]int64 {
	var out [][2]int64
	for range n {
		t := r.ExpFloat64() * meanZ
		for t < d*1e3 {
			lat := r.ExpFloat64() * meanR
			out = append(out, [2]int64{int64(t * 1e6), int64((t + lat) * 1e6)})
			t += lat + r.ExpFloat64()*meanZ
		}
	}
	return out
}

// loadTest simulates a load test: n clients that start together and
// each send k requests, waiting for an answer (latency meanR ms ± 5%)
// and thinking thinkMS in between, then stop; the capture ends with the
// last answer, so the clients done sooner idle at its end.
func loadTest(r *rand.Rand, n, k int, meanR, thinkMS float64) [][2]int64 {
	var out [][2]int64
	for range n {
		t := 0.0
		for range k {
			lat := meanR * (1 + 0.05*r.NormFloat64())
			out = append(out, [2]int64{int64(t * 1e6), int64((t + lat) * 1e6)})
			t += lat + thinkMS
		}
	}
	return out
}

// openLoop simulates Poisson arrivals at rate per second with latency ~
// exp(meanR) ms for d seconds.
func openLoop(r *rand.Rand, rate, meanR, d float64) [][2]int64 {
	var out [][2]int64
	for t := r.ExpFloat64() / rate * 1e3; t < d*1e3; t += r.ExpFloat64() / rate * 1e3 {
		out = append(out, [2]int64{int64(t * 1e6), int64((t + r.ExpFloat64()*meanR) * 1e6)})
	}
	return out
}

func TestLoadOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		roots   [][2]int64
		shape   string
		clients int
		thinkMS float64 // ±25%
	}{
		// Clients who wait more than they think: closed.
		{"closed, no think", closedLoop(r, 5, 300, 0, 600), cascade.LoadClosed, 5, 0},
		{"closed, some think", closedLoop(r, 20, 100, 30, 600), cascade.LoadClosed, 20, 30},
		// A short load test whose clients finish at different times:
		// their idle end is not thinking (Little's law over the
		// capture's length read 20 ms here).
		{"closed, load test's edges", loadTest(r, 5, 30, 1500, 2), cascade.LoadClosed, 5, 2},
		// Clients who think far longer than they wait act as an open
		// load, and are replayed as one.
		{"closed, long think", closedLoop(r, 50, 20, 2000, 600), cascade.LoadOpen, 0, 0},
		{"open, light", openLoop(r, 5, 100, 600), cascade.LoadOpen, 0, 0},
		{"open, heavy", openLoop(r, 200, 50, 120), cascade.LoadOpen, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := loadOf(tc.roots, int64(len(tc.roots)))
			require.NotNil(t, l)
			require.Equal(t, tc.shape, l.Shape, "dispersion %g", l.Dispersion)
			require.Equal(t, tc.clients, l.Clients)
			if tc.thinkMS == 0 {
				require.Less(t, l.ThinkMS, 5.0)
			} else {
				require.InDelta(t, tc.thinkMS, l.ThinkMS, tc.thinkMS/4)
			}
		})
	}
	// Too few roots, or fewer kept than read: not judged closed.
	require.Nil(t, loadOf(closedLoop(r, 2, 100, 0, 1), 5))
	roots := closedLoop(r, 5, 300, 0, 60)
	require.Equal(t, cascade.LoadOpen, loadOf(roots, int64(len(roots))+1).Shape)
}
