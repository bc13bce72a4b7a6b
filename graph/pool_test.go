package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fifoPool simulates n requests at rate per second (Poisson) into a pool
// of slots taken in turn (slots ≤ 0: as many as needed), each holding a
// slot svc ns (±2%; exponential with that mean when slots < 0); a
// request that would wait past deadline ns (0 none) gives up there and
// fails on its own.
func fifoPool(seed uint64, n, slots int, rate float64, svc, deadline int64) []seqReq {
	rng := rand.New(rand.NewPCG(seed, 7))
	var free endHeap // when each slot is next free
	for range max(slots, 0) {
		free.push(0)
	}
	var t int64
	out := make([]seqReq, 0, n)
	for range n {
		t += int64(rng.ExpFloat64() / rate * 1e9)
		work := svc + int64((rng.Float64()*0.04-0.02)*float64(svc))
		if slots < 0 {
			work = int64(rng.ExpFloat64() * float64(svc))
		}
		if slots <= 0 {
			out = append(out, seqReq{start: t, end: t + work})
			continue
		}
		at := max(t, free[0])
		if deadline > 0 && at+work > t+deadline {
			out = append(out, seqReq{start: t, end: t + deadline, own: true})
			if at < t+deadline {
				// It held the slot until it gave up.
				free.pop()
				free.push(t + deadline)
			}
			continue
		}
		free.pop()
		free.push(at + work)
		out = append(out, seqReq{start: t, end: at + work})
	}
	return out
}

func TestHiddenPool(t *testing.T) {
	const ms = int64(1e6)
	tests := []struct {
		name     string
		seq      []seqReq
		slots    int // 0: no pool
		deadline int64
	}{
		{"4 slots of 40 ms at 70% busy", fifoPool(1, 3000, 4, 70, 40*ms, 0), 4, 0},
		{"8 slots of 10 ms at 80% busy", fifoPool(2, 5000, 8, 640, 10*ms, 0), 8, 0},
		{"4 slots, give up after 120 ms, 95% busy", fifoPool(3, 3000, 4, 95, 40*ms, 120*ms), 4, 120 * ms},
		{"2 slots of 40 ms at 60% busy", fifoPool(7, 3000, 2, 30, 40*ms, 0), 2, 0},
		{"16 slots of 5 ms at 85% busy", fifoPool(8, 8000, 16, 2720, 5*ms, 0), 16, 0},
		{"no pool: every request served at once", fifoPool(4, 3000, 0, 70, 40*ms, 0), 0, 0},
		{"no pool, work of any length", fifoPool(9, 3000, -1, 200, 40*ms, 0), 0, 0},
		{"4 slots, seldom full (20% busy)", fifoPool(10, 3000, 4, 20, 40*ms, 0), 4, 0},
		{"a lock (one slot) is not read here", fifoPool(5, 3000, 1, 18, 40*ms, 0), 0, 0},
		{"too few requests", fifoPool(6, 150, 4, 70, 40*ms, 0), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := hiddenPool(tc.seq)
			require.Equal(t, tc.slots > 0, ok, "%+v", f.slots)
			if !ok {
				return
			}
			require.Equal(t, tc.slots, f.slots)
			require.NotEmpty(t, f.unqueued)
			var sum int64
			for _, d := range f.unqueued {
				sum += d
			}
			mean := sum / int64(len(f.unqueued))
			require.InEpsilon(t, float64(tc.seq[0].end-tc.seq[0].start), float64(mean), 0.05, "the unqueued time is the work")
			if tc.deadline == 0 {
				require.Zero(t, f.deadline)
				return
			}
			require.InEpsilon(t, float64(tc.deadline), float64(f.deadline), 0.01)
			require.Positive(t, f.deadlineFails)
		})
	}
}

// TestEndHeap: pop returns the pushed values least first, pushes and
// pops interleaved.
func TestEndHeap(t *testing.T) {
	var h endHeap
	var want []int64
	for i, x := range []int64{5, 3, 9, 1, 1, 7, 2, 8, 6, 4} {
		h.push(x)
		want = append(want, x)
		if i%3 == 2 {
			slices.Sort(want)
			require.Equal(t, want[0], h.pop())
			want = want[1:]
		}
	}
	slices.Sort(want)
	for _, w := range want {
		require.Equal(t, w, h.pop())
	}
	require.Zero(t, h.Len())
}
