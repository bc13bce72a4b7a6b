package graph

import (
	"cmp"
	"slices"

	"cascade"
)

// A node can hold a pool nobody traces: a database's connections, a
// semaphore, a fixed set of workers. Its requests then wait for a slot
// before their work, and the wait is in their spans. With c slots taken
// in turn (first come, first served), a request waits exactly when c
// requests of the node were in flight as it arrived (in service or
// waiting ahead of it). hiddenPool reads c from that: it counts, for
// each request, the node's requests in flight at its start, reads the
// mean wait (the time over the unqueued one) at each count, and takes
// c where the waits begin. Replay then makes the waits itself, from the
// load it replays, instead of drawing them from the capture's.
//
// It reads leaf nodes only (no synchronous calls: the pool's holding
// time is the request's own time), with the requests kept whole.

// Acceptance of a pool: enough requests, enough that found the fewest in
// flight to know the unqueued time, enough that started at c or more;
// nearly no request below c waited, and the hinge explains the waits.
const (
	poolMinRequests = 200
	poolMinIdle     = 30
	poolMinAbove    = 30
	// poolSlack is how much longer than the unqueued 90% quantile a
	// request must take to count as having waited.
	poolSlack = 1.25
	// poolMaxFalse bounds the share of requests below c that waited
	// anyway.
	poolMaxFalse = 0.1
	// poolMinExplained is the least share of the waits' squares the
	// hinge must explain.
	poolMinExplained = 0.7
	// The onset of the waits: at least poolMinAt requests at the count,
	// a mean wait over poolOnset of the unqueued time and over
	// poolOnsetRatio times the mean wait below.
	poolMinAt      = 10
	poolOnset      = 0.03
	poolOnsetRatio = 4
)

// poolFit is a hidden pool: its slots, and the durations (ns) of the
// requests that did not wait for one.
type poolFit struct {
	slots    int
	unqueued []int64
	// deadline is when the node's requests give up waiting (ns), 0 when
	// its failures do not show one; deadlineFails are the failures at it.
	deadline      int64
	deadlineFails int64
}

// A deadline: at least poolMinDeadline own failures of requests that
// waited, poolDeadlineShare of them within poolDeadlineWidth of one
// duration (the densest such band, the earliest of equals).
const (
	poolMinDeadline   = 5
	poolDeadlineShare = 0.5
	poolDeadlineWidth = 0.03
)

// hiddenPool reads a hidden pool from a node's requests (seq, in any
// order; it is not changed).
func hiddenPool(seq []seqReq) (poolFit, bool) {
	if len(seq) < poolMinRequests {
		return poolFit{}, false
	}
	for i := range seq {
		if seq[i].callUS != 0 {
			return poolFit{}, false
		}
	}
	rs := slices.Clone(seq)
	slices.SortFunc(rs, func(a, b seqReq) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.end, b.end)
	})
	// In flight at each start: the earlier requests not yet ended.
	inFlight := make([]int, len(rs))
	var ends endHeap
	maxK := 0
	for i := range rs {
		for ends.Len() > 0 && ends[0] <= rs[i].start {
			ends.pop()
		}
		inFlight[i] = ends.Len()
		maxK = max(maxK, inFlight[i])
		ends.push(rs[i].end)
	}
	// The unqueued time: of the requests that found fewest in flight
	// (at least poolMinIdle of them, k ≤ k0), the 90% quantile.
	count := make([]int, maxK+1)
	for i := range rs {
		count[inFlight[i]]++
	}
	k0, n0 := 0, count[0]
	for n0 < poolMinIdle && k0 < maxK {
		k0++
		n0 += count[k0]
	}
	if n0 < poolMinIdle {
		return poolFit{}, false
	}
	idle := make([]float64, 0, n0)
	for i := range rs {
		if inFlight[i] <= k0 {
			idle = append(idle, float64(rs[i].end-rs[i].start))
		}
	}
	slices.Sort(idle)
	threshold := poolSlack * quantile(idle, 0.9)
	waits := make([]int, maxK+1)
	waited := make([]bool, len(rs))
	for i := range rs {
		if float64(rs[i].end-rs[i].start) > threshold {
			waited[i] = true
			waits[inFlight[i]]++
		}
	}
	// c from the mean wait by the count in flight at the start: none
	// below c; at k ≥ c, (k − c + 1) slots must free first, one every
	// S/c on average (S the unqueued time): a hinge at c − 1.
	// Failed requests are left out: one that gave up waiting was cut
	// short.
	floor := quantile(idle, 0.5)
	excess := make([]float64, maxK+1)
	okN := make([]int, maxK+1)
	for i := range rs {
		if !rs[i].own {
			excess[inFlight[i]] += max(0, float64(rs[i].end-rs[i].start)-floor)
			okN[inFlight[i]]++
		}
	}
	for k := range excess {
		if okN[k] > 0 {
			excess[k] /= float64(okN[k])
		}
	}
	// c is where the waits begin: the least count k (with poolMinAt
	// requests or more) whose mean wait passes both poolOnset of S and
	// poolOnsetRatio times the mean wait below it.
	c := -1
	var belowEx float64
	belowOK := 0
	for k := range excess {
		if k > 0 && okN[k] >= poolMinAt && excess[k] > max(poolOnset*floor, poolOnsetRatio*belowEx/float64(max(1, belowOK))) {
			c = k
			break
		}
		belowEx += excess[k] * float64(okN[k])
		belowOK += okN[k]
	}
	if c < 2 {
		return poolFit{}, false // none, or a lock (c = 1), which serialised and lockedCalls read
	}
	// The hinge at c − 1, its slope fitted (a request that waited past
	// its deadline failed and is left out, so the waits seen at high
	// counts fall short of S/c), must explain the waits.
	var sxy, sxx float64
	for k := range excess {
		x := float64(max(0, k-c+1))
		sxy += float64(okN[k]) * x * excess[k]
		sxx += float64(okN[k]) * x * x
	}
	if sxx == 0 || sxy <= 0 {
		return poolFit{}, false
	}
	slope := sxy / sxx
	var sse, total float64
	for k := range excess {
		d := excess[k] - float64(max(0, k-c+1))*slope
		sse += float64(okN[k]) * d * d
		total += float64(okN[k]) * excess[k] * excess[k]
	}
	belowN, belowW := 0, 0
	for k := range c {
		belowN += count[k]
		belowW += waits[k]
	}
	aboveN := len(rs) - belowN
	if aboveN < poolMinAbove || float64(belowW) > poolMaxFalse*float64(belowN) || !(1-sse/total >= poolMinExplained) {
		return poolFit{}, false
	}
	best := poolFit{slots: c}
	var failed []int64
	for i := range rs {
		switch {
		case inFlight[i] < best.slots:
			best.unqueued = append(best.unqueued, rs[i].end-rs[i].start)
		case rs[i].own && waited[i]:
			failed = append(failed, rs[i].end-rs[i].start)
		}
	}
	best.deadline, best.deadlineFails = deadlineOf(failed)
	return best, true
}

// deadlineOf returns the common duration of failed requests that
// waited (their deadline, ns) and how many failed at it or later: a
// pool's acquire timeout, or the handler's own deadline, ends them there,
// and a request that failed later still (a slot found just before the
// cap, then a deadline of the handler's) waited past the cap too. 0, 0
// when they show none.
//
// The deadline is the middle of the densest band of durations within
// ±poolDeadlineWidth, which must hold poolDeadlineShare of the failures:
// a pool with an acquire timeout under its handler's deadline shows two
// bands, and the first, where the waits are cut, is the one replay must
// make.
func deadlineOf(failed []int64) (int64, int64) {
	if len(failed) < poolMinDeadline {
		return 0, 0
	}
	slices.Sort(failed)
	best, bestN := 0, 0
	j := 0
	for i := range failed {
		// failed[i:j] are within the band that starts at failed[i].
		hi := float64(failed[i]) * (1 + 2*poolDeadlineWidth)
		for j < len(failed) && float64(failed[j]) <= hi {
			j++
		}
		if j-i > bestN {
			best, bestN = i, j-i
		}
	}
	if float64(bestN) < poolDeadlineShare*float64(len(failed)) {
		return 0, 0
	}
	med := failed[best+bestN/2]
	var at int64
	for _, d := range failed {
		if float64(d) >= (1-poolDeadlineWidth)*float64(med) {
			at++
		}
	}
	return med, at
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// endHeap is a min-heap of request ends. Its push and pop take int64s,
// not container/heap's any, whose boxing allocated once a request.
type endHeap []int64

func (h endHeap) Len() int { return len(h) }

// push adds x.
func (h *endHeap) push(x int64) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] <= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

// pop removes and returns the least.
func (h *endHeap) pop() int64 {
	a := *h
	x, n := a[0], len(a)-1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a[l] < a[m] {
			m = l
		}
		if r := l + 1; r < n && a[r] < a[m] {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return x
}

// poolDeadlines gives every edge into a node whose requests give up
// waiting for its pool at a deadline (hiddenPool) that deadline as its
// timeout, where the edge has none of its own: a consumer's delivery as
// well as a synchronous call ends there.
func (b *Builder) poolDeadlines(m *cascade.Model) {
	for i := range m.Edges {
		e := &m.Edges[i]
		d, ok := b.poolDeadline[e.To]
		if !ok || e.TimeoutMS > 0 {
			continue
		}
		e.TimeoutMS = d
		if e.Provenance == nil {
			e.Provenance = map[string]cascade.Provenance{}
		}
		e.Provenance["timeout_ms"] = cascade.Inferred
	}
}
