package graph

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// simPool simulates a FIFO pool of c slots, each call holding one for
// S·(1 + s·W) (W the calls waiting as its work starts), a call that waits
// longer than capMS for a slot refused then (an own failure), under a
// Poisson load that rises from base to peak per second and back. It
// returns the calls as a node's requests.
func simPool(seed uint64, c int, sMS, s, capMS, base, peak float64, seconds int) []seqReq {
	rng := rand.New(rand.NewPCG(seed, 2))
	var arrive []float64 // ms
	for t := 0.0; t < float64(seconds)*1000; {
		phase := t / (float64(seconds) * 1000)
		rate := base + (peak-base)*(1-2*abs(phase-0.5)) // a triangle
		t += rng.ExpFloat64() / rate * 1000
		arrive = append(arrive, t)
	}
	free := make([]float64, c) // when each slot frees
	out := make([]seqReq, 0, len(arrive))
	for i, a := range arrive {
		// The slot that frees first; FIFO: a call starts when it frees.
		k := 0
		for j := range free {
			if free[j] < free[k] {
				k = j
			}
		}
		startWork := max(a, free[k])
		if startWork-a > capMS {
			out = append(out, seqReq{start: int64(a * 1e6), end: int64((a + capMS) * 1e6), own: true, failed: true})
			continue
		}
		// Waiting as it starts: the later arrivals already in, not yet
		// started (approximated by those arrived before startWork
		// that cannot have a slot yet).
		w := 0
		for j := i + 1; j < len(arrive) && arrive[j] < startWork; j++ {
			w++
		}
		d := sMS * (0.9 + 0.2*rng.Float64()) * (1 + s*float64(w))
		free[k] = startWork + d
		out = append(out, seqReq{start: int64(a * 1e6), end: int64((startWork + d) * 1e6)})
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestWaitSlowdownCalibrated(t *testing.T) {
	tests := []struct {
		name  string
		slots int
		s     float64
	}{
		{"no contention", 3, 0},
		{"a quarter a waiter", 3, 0.25},
		{"half a waiter", 2, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// 20 ms a call: 3 slots serve 150/s. The load rises from 40/s
			// to 170/s and back over 60 s.
			seq := simPool(1, tc.slots, 20, tc.s, 100, 40, 170*float64(tc.slots)/3, 60)
			p, ok := hiddenPool(seq)
			require.True(t, ok, "a pool")
			require.Equal(t, tc.slots, p.slots)
			require.InDelta(t, 100, float64(p.deadline)/1e6, 5, "the wait cap")
			require.InDelta(t, tc.s, p.slow, 0.1, "wait slowdown")
			require.True(t, p.capped, "the failures are the pool's refusals at its wait cap, not a deadline on the whole call")
			t.Logf("slots %d, deadline %.1f ms, capped %v, slowdown %g", p.slots, float64(p.deadline)/1e6, p.capped, p.slow)
		})
	}
}
