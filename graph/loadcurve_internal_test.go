package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// synthLoad makes 120 one-second windows of a node's requests: the rate
// of window w is rate(w) per second, each request's exclusive time and
// failure drawn by at(w, rate).
func synthLoad(seed uint64, rate func(w int) float64, at func(w int, r float64, rng *rand.Rand) (float64, bool)) ([]seqReq, []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var seq []seqReq
	var excl []float64
	for w := range 120 {
		r := rate(w)
		n := int(r)
		for i := range n {
			start := int64(w)*1e9 + int64(i)*int64(1e9/max(1, n))
			ms, failed := at(w, r, rng)
			seq = append(seq, seqReq{start: start, end: start + int64(ms*1e6), own: failed, failed: failed})
			excl = append(excl, ms)
		}
	}
	return seq, excl
}

func TestLoadCurveReads(t *testing.T) {
	// The rate moves up and down, not with time: 20 to 60 per second,
	// a wave of 12 s (a load's swings last seconds: the curve reads the
	// rate of the window before).
	wave := func(w int) float64 { return 40 + 20*math.Sin(2*math.Pi*float64(w)/12) }
	flat := func(int) float64 { return 40 }
	tests := []struct {
		name       string
		rate       func(int) float64
		at         func(w int, r float64, rng *rand.Rand) (float64, bool)
		slow, fail bool // a slowdown curve, a failure curve
	}{
		{"fails with the rate", wave, func(_ int, r float64, rng *rand.Rand) (float64, bool) {
			return 10 + rng.Float64(), rng.Float64() < (r-20)/100
		}, false, true},
		{"slows with the rate", wave, func(_ int, r float64, rng *rand.Rand) (float64, bool) {
			return (10 + rng.Float64()) * (1 + (r-20)/20), false
		}, true, false},
		{"nothing to do with the rate", wave, func(_ int, _ float64, rng *rand.Rand) (float64, bool) {
			return 10 + 5*rng.Float64(), rng.Float64() < 0.05
		}, false, false},
		// A slowdown from the middle on (a deploy), at a rate that
		// rises with it (callers retrying the slow node): time, not load.
		{"a step in time", func(w int) float64 {
			if w >= 60 {
				return wave(w) + 30
			}
			return wave(w)
		}, func(w int, _ float64, rng *rand.Rand) (float64, bool) {
			if w >= 60 {
				return 20 + rng.Float64(), rng.Float64() < 0.2
			}
			return 10 + rng.Float64(), false
		}, false, false},
		{"a flat rate", flat, func(_ int, _ float64, rng *rand.Rand) (float64, bool) {
			return 10 + rng.Float64(), rng.Float64() < 0.1
		}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, excl := synthLoad(1, tc.rate, tc.at)
			fit, ok := loadCurve(seq, excl, 1, 1, 1e9, 0)
			require.Equal(t, tc.slow || tc.fail, ok, "a curve")
			if !ok {
				return
			}
			c := fit.curve
			require.Equal(t, tc.slow, len(c.Slowdown) > 0, "slowdown %v", c.Slowdown)
			require.Equal(t, tc.fail, len(c.Fail) > 0, "fail %v", c.Fail)
			require.NoError(t, c.Validate("curve"))
			// The truth at the most loaded point's rate, less what
			// reading the window before takes off (a wave of 12 s moves
			// in 1 s): within 35% of the truth, and monotone.
			top := c.RatePerSec[len(c.RatePerSec)-1]
			if tc.slow {
				want := (1 + (top-20)/20) / (1 + (c.RatePerSec[0]-20)/20)
				require.InDelta(t, want, c.Slowdown[len(c.Slowdown)-1], 0.35*want, "slowdown at %.1f/s: %v", top, c.Slowdown)
				require.IsNonDecreasing(t, c.Slowdown)
			}
			if tc.fail {
				require.InDelta(t, (top-20)/100, c.Fail[len(c.Fail)-1], 0.35*(top-20)/100, "fail at %.1f/s: %v", top, c.Fail)
				require.IsNonDecreasing(t, c.Fail)
			}
		})
	}
}

func TestDeadlineOf(t *testing.T) {
	ms := func(v ...float64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x * 1e6)
		}
		return out
	}
	rep := func(x float64, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = x + 0.01*float64(i%5)
		}
		return v
	}
	tests := []struct {
		name   string
		failed []int64
		want   float64 // ms, 0 none
		at     int64
	}{
		{"one deadline", ms(rep(120, 20)...), 120.02, 20},
		// An acquire timeout at 100 ms under a handler's deadline of
		// 120: the first band, and every failure past it.
		{"cap under a deadline", ms(append(rep(100, 14), rep(120, 6)...)...), 100.02, 20},
		{"spread", ms(10, 30, 50, 70, 90, 110, 130, 150, 170, 190), 0, 0},
		{"too few", ms(100, 100, 100), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, at := deadlineOf(tc.failed)
			require.InDelta(t, tc.want, float64(d)/1e6, 0.02)
			require.Equal(t, tc.at, at)
		})
	}
}

func TestImmediateFirst(t *testing.T) {
	tests := []struct {
		name  string
		byIdx map[int][2]int64 // index: {back at once, delayed}
		want  int
	}{
		{"one at once, then the delay", map[int][2]int64{1: {40, 1}, 2: {0, 12}, 3: {0, 4}}, 1},
		{"two at once, then the delay", map[int][2]int64{1: {40, 0}, 2: {12, 1}, 3: {0, 5}}, 2},
		{"all delayed", map[int][2]int64{1: {0, 40}, 2: {0, 12}}, 0},
		{"all at once", map[int][2]int64{1: {40, 0}, 2: {12, 0}, 3: {5, 0}}, 0},
		{"mixed first", map[int][2]int64{1: {20, 20}, 2: {0, 12}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q queueAcc
			for i, v := range tc.byIdx {
				q.byIndex[i] = v
			}
			require.Equal(t, tc.want, q.immediateFirst())
		})
	}
}
