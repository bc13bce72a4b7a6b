package incident

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChangeAt(t *testing.T) {
	in, out, skip := judgement{judged: true}, judgement{judged: true, out: true}, judgement{}
	tests := []struct {
		name    string
		js      []judgement
		persist int
		want    int
	}{
		{"none", []judgement{in, in, in}, 2, -1},
		{"step", []judgement{in, in, out, out, out}, 2, 2},
		{"spike", []judgement{in, out, in, in}, 2, -1},
		{"spike then step", []judgement{out, in, out, out}, 2, 2},
		{"gap of unjudged windows", []judgement{in, out, skip, skip, out}, 2, 1},
		{"at the end", []judgement{in, in, out}, 2, 2},
		{"persist 1", []judgement{in, out, in}, 1, 1},
		{"persist 3", []judgement{out, out, in, out, out, out}, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, changeAt(tc.js, tc.persist))
		})
	}
}

// window draws n latencies from normal(mean, sd) (self time half of it),
// with errs failures.
func window(rng *rand.Rand, n int, mean, sd float64, errs int) *winAcc {
	w := &winAcc{n: int64(n), errs: int64(errs)}
	for i := 0; i < n; i++ {
		x := mean + sd*rng.NormFloat64()
		w.lat.add(x, 4096, rng)
		w.self.add(x/2, 4096, rng)
	}
	return w
}

func TestJudgeWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nb := normalOf([]*winAcc{window(rng, 300, 100, 10, 3)})
	require.InDelta(t, 100, nb.latMed, 3)
	require.InDelta(t, 10, nb.latSigma, 2)
	tail := window(rng, 100, 100, 10, 0)
	for i := 0; i < 25; i++ {
		tail.lat.vals[i] = 200 // a quarter far slower than the baseline's p95, median unmoved
	}
	tests := []struct {
		name   string
		w      *winAcc
		out    bool
		metric string
	}{
		{"same", window(rng, 100, 100, 10, 1), false, ""},
		{"slower", window(rng, 50, 150, 10, 0), true, "latency|slow_share"},
		// A drop in latency is not a fault; failing fast shows as errors.
		{"faster", window(rng, 50, 40, 5, 0), false, ""},
		{"faster (fail fast)", window(rng, 50, 40, 5, 20), true, "error_rate"},
		{"tail", tail, true, "slow_share"},
		{"errors", window(rng, 100, 100, 10, 30), true, "error_rate"},
		{"too few", window(rng, 2, 500, 10, 0), false, ""},
		{"small shift, many requests", window(rng, 4000, 110, 10, 40), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := nb.judge(tc.w, 4, 0.25, 3)
			require.Equal(t, tc.out, j.out, "%+v", j)
			if tc.out {
				require.Contains(t, strings.Split(tc.metric, "|"), j.metric)
				require.GreaterOrEqual(t, j.z, 4.0)
			}
		})
	}
}

func TestCovered(t *testing.T) {
	tests := []struct {
		iv     [][2]int64
		lo, hi int64
		want   int64
	}{
		{nil, 0, 10, 0},
		{[][2]int64{{1, 3}, {2, 5}}, 0, 10, 4},
		{[][2]int64{{6, 8}, {1, 3}}, 0, 10, 4},
		{[][2]int64{{-5, 3}, {8, 20}}, 0, 10, 5},
		{[][2]int64{{1, 9}, {2, 3}}, 0, 10, 8},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, covered(tc.iv, tc.lo, tc.hi), "%v", tc.iv)
	}
}

// TestOwnChangeAt: against a reference, a change point whose window a
// windowed metric put out must be out against the capture's own windows
// before it too. A level that differs from the reference from the
// start (a baseline mismatch), first judged out at window 2, is no
// change; a step at window 2 is; a change the gap test put out (its
// own normal) and a change at the first window stand as they are.
func TestOwnChangeAt(t *testing.T) {
	win := func(ms float64) *winAcc {
		w := &winAcc{n: 20}
		for i := range 20 {
			v := ms * (0.95 + 0.005*float64(i))
			w.lat.vals = append(w.lat.vals, v)
			w.self.vals = append(w.self.vals, v)
		}
		return w
	}
	wins := func(levels ...float64) map[int64]*winAcc {
		m := map[int64]*winAcc{}
		for i, l := range levels {
			m[int64(i)] = win(l)
		}
		return m
	}
	js := func(metric string, from, n int) []judgement {
		out := make([]judgement, n)
		for k := range out {
			out[k] = judgement{judged: true, out: k >= from, metric: metric, z: 5}
		}
		return out
	}
	cfg := DefaultConfig()
	tests := []struct {
		name string
		js   []judgement
		wins map[int64]*winAcc
		c    int
		want int
	}{
		{"mismatch from the start", js("latency", 2, 6), wins(20, 20, 20, 20, 20, 20), 2, -1},
		{"step at window 2", js("latency", 2, 6), wins(10, 10, 20, 20, 20, 20), 2, 2},
		{"gap test's change", js("gap_in", 2, 6), wins(20, 20, 20, 20, 20, 20), 2, 2},
		{"first window", js("latency", 0, 6), wins(20, 20, 20, 20, 20, 20), 0, 0},
		{"mismatch, then a step", js("latency", 1, 6), wins(10, 10, 10, 20, 20, 20), 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ownChangeAt(tc.js, tc.wins, 0, tc.c, cfg))
		})
	}
}
