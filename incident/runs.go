package incident

import (
	"math"
	"sort"
)

// Count-based onsets (see docs/incident.md, Method): the walk that the
// client−server gap, the fan-out and truncation, and the self-time
// tests share. Each judges calls (or requests) one by one in time
// order, so that a thin service needs as many of them as a busy one,
// not as much time.

// maxRunTries bounds the runs tried per pool: a run whose confirmation
// fails was chance, and the walk goes on past it.
const maxRunTries = 64

// firstRun walks n items in time order, flag(i) reporting item i
// flagged (high, or low), and returns the first flagged item of the
// first run of m items with at least k flagged for which confirm(first)
// holds (the items from first on show the change); −1 when there is
// none, or when maxRunTries runs failed confirmation. After a run
// fails, the next one starts after it.
func firstRun(n, m, k int, flag func(int) bool, confirm func(first int) bool) int {
	tries, from := 0, 0
	for i := 0; i < n; i++ {
		count := 0
		for j := max(from, i-m+1); j <= i; j++ {
			if flag(j) {
				count++
			}
		}
		if count < k {
			continue
		}
		first := max(from, i-m+1)
		for !flag(first) {
			first++
		}
		if confirm(first) {
			return first
		}
		if tries++; tries >= maxRunTries {
			return -1
		}
		from = i + 1
	}
	return -1
}

// runItem is one call of a count-based change from its onset on: when
// it started, its value (ms) and whether it was flagged against its
// normal: high, or low for a test of a fall (medianTest.down).
type runItem struct {
	at   int64
	v    float64
	high bool
}

// runWindows turns a count-based change (its items from the onset on)
// into one judgement per window: a window holding items is out when
// most of them are flagged and their median is floor beyond the normal
// median (above it; below it when down), with the binomial z of the
// flagged share against p, the normal share of flagged items.
func runWindows(items []runItem, normMed, floor, p float64, down bool, metric string, width, lo int64, nw int) []judgement {
	js := make([]judgement, nw)
	byWin := make([][]float64, nw)
	hi := make([]int, nw)
	for _, it := range items {
		k := int(floorDiv(it.at, width) - lo)
		if k < 0 || k >= nw {
			continue
		}
		byWin[k] = append(byWin[k], it.v)
		if it.high {
			hi[k]++
		}
	}
	for k, vs := range byWin {
		if len(vs) == 0 {
			continue
		}
		n := float64(len(vs))
		z := (float64(hi[k])/n - p) / math.Sqrt(p*(1-p)/n)
		med := quantile(vs, 0.5)
		moved := med - normMed
		if down {
			moved = -moved
		}
		js[k] = judgement{judged: true, out: 2*hi[k] > len(vs) && moved >= floor, z: math.Max(z, 0),
			metric: metric, base: normMed, value: med, n: len(vs)}
	}
	return js
}

// stepChange is a count-based step of a median: of the gap on a pool of
// edges (a callee's inbound ones, gap_in, or a caller's outbound ones,
// gap_out), or of a node's self time (self_time_calls; a fall of it,
// self_time_drop).
type stepChange struct {
	node, metric string
	onset        int64 // ns: the first high item of the first run
	n            int   // items from the onset on
	normMed      float64
	postMed      float64
	low, high    float64   // the order-statistic 95% CI of postMed
	size         float64   // |log(postMed / max(normMed, the test's min))|
	items        []runItem // from the onset on
	p            float64   // the share of items flagged under the normal
	down         bool      // a fall of the median (medianTest.down)
	edges        []*gapEdge
}

// medianTest is how a step of a median is found: a run of m items with
// k flagged, k the least with P(Binomial(m, p) ≥ k) < alpha (p: the
// share of items flagged under the normal), confirmed when the items
// from its first flagged one on have a median at least ratio times the
// normal median (floored at min) and floor above it; or, when down (the
// items flagged low), at most the normal median over ratio and floor
// below it.
type medianTest struct {
	m                 int
	p, alpha          float64
	ratio, min, floor float64
	down              bool
	// also, when not nil, must hold too for the run whose first high
	// item is first, the median from there on being med.
	also func(first int, med float64) bool
}

// stepFrom reports whether med is a step from the median of xs (see
// step).
func (t *medianTest) stepFrom(xs []float64, med float64) bool {
	return t.step(quantile(xs, 0.5), med)
}

// step reports whether med is a step from base: at least ratio times
// it (floored at min) and floor above it; when down, at most base over
// ratio and floor below it.
func (t *medianTest) step(base, med float64) bool {
	if t.down {
		return med*t.ratio <= base && base-med >= t.floor
	}
	return med >= t.ratio*math.Max(base, t.min) && med-base >= t.floor
}

// medianStep runs t on items (in time order); nil when no step is
// found. The size is the log ratio of the median from the onset on to
// the floored normal median, its uncertainty the items counted and the
// median's 95% confidence interval.
func medianStep(items []runItem, normMed float64, t medianTest) *stepChange {
	var post []float64
	first := firstRun(len(items), t.m, gapRunK(t.m, t.p, t.alpha),
		func(i int) bool { return items[i].high },
		func(first int) bool {
			post = post[:0]
			for _, it := range items[first:] {
				post = append(post, it.v)
			}
			sort.Float64s(post)
			med := quantile(post, 0.5)
			return t.step(normMed, med) && (t.also == nil || t.also(first, med))
		})
	if first < 0 {
		return nil
	}
	med := quantile(post, 0.5)
	n := len(post)
	lo, hi := medianCI(n)
	return &stepChange{onset: items[first].at, n: n, normMed: normMed, postMed: med, low: post[lo], high: post[hi],
		size: math.Abs(math.Log(math.Max(med, 1e-3) / math.Max(normMed, t.min))), items: items[first:], p: t.p, down: t.down}
}
