package graph

import (
	"cmp"
	"slices"
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
	// slow is the service time's growth per waiter (waitSlowdown), 0
	// when the capture shows none; capped says the deadline is a wait
	// cap of the pool's (a call refused when it waited that long) rather
	// than a deadline on the whole request.
	slow   float64
	capped bool
	// total is, with a wait cap, the deadline on the whole request past
	// it (a handler's own timeout, ns) when the failures show a second
	// band there that no success passed; 0 none.
	total int64
}

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
	p := newPoolScan(seq)
	if !p.readIdle() {
		return poolFit{}, false
	}
	p.markWaits()
	p.meanWaits()
	c := p.onset()
	if c < 2 {
		return poolFit{}, false // none, or a lock (c = 1), which serialised and lockedCalls read
	}
	sse, ok := p.fitHinge(c)
	if !ok || !p.explains(c, sse) {
		return poolFit{}, false
	}
	return p.fit(c), true
}

// poolScan is what hiddenPool's phases read of a node's requests and
// leave for the next. Slices indexed by k are per count of requests in
// flight at a request's start.
type poolScan struct {
	rs       []seqReq // the requests, by start then end
	inFlight []int    // per request, the count in flight at its start
	maxK     int
	count    []int // requests per count in flight
	// idle are the durations of the requests that found fewest in
	// flight (sorted): the unqueued time.
	idle []float64
	// waits counts the requests that waited per count, waited marks
	// them.
	waits  []int
	waited []bool
	// floor is the median unqueued time; excess the mean wait past it
	// per count, of okN requests that did not fail; fitN is okN, or 0
	// where most requests failed.
	floor     float64
	excess    []float64
	okN, fitN []int
}

// newPoolScan sorts the requests by start and counts the requests in
// flight at each start: the earlier requests not yet ended.
func newPoolScan(seq []seqReq) *poolScan {
	rs := slices.Clone(seq)
	slices.SortFunc(rs, func(a, b seqReq) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.end, b.end)
	})
	// In flight at each start: the earlier requests not yet ended.
	p := &poolScan{rs: rs, inFlight: make([]int, len(rs))}
	var ends endHeap
	for i := range rs {
		for ends.Len() > 0 && ends[0] <= rs[i].start {
			ends.pop()
		}
		p.inFlight[i] = ends.Len()
		p.maxK = max(p.maxK, p.inFlight[i])
		ends.push(rs[i].end)
	}
	return p
}

// readIdle reads the unqueued time: the durations of the requests that
// found fewest in flight (at least poolMinIdle of them, k ≤ k0). It
// reports false when there are too few.
func (p *poolScan) readIdle() bool {
	rs := p.rs
	p.count = make([]int, p.maxK+1)
	for i := range rs {
		p.count[p.inFlight[i]]++
	}
	k0, n0 := 0, p.count[0]
	for n0 < poolMinIdle && k0 < p.maxK {
		k0++
		n0 += p.count[k0]
	}
	if n0 < poolMinIdle {
		return false
	}
	p.idle = make([]float64, 0, n0)
	for i := range rs {
		if p.inFlight[i] <= k0 {
			p.idle = append(p.idle, float64(rs[i].end-rs[i].start))
		}
	}
	slices.Sort(p.idle)
	return true
}

// markWaits marks the requests that waited: longer than poolSlack times
// the unqueued time's 90% quantile.
func (p *poolScan) markWaits() {
	rs := p.rs
	threshold := poolSlack * quantile(p.idle, 0.9)
	p.waits = make([]int, p.maxK+1)
	p.waited = make([]bool, len(rs))
	for i := range rs {
		if float64(rs[i].end-rs[i].start) > threshold {
			p.waited[i] = true
			p.waits[p.inFlight[i]]++
		}
	}
}

// meanWaits reads the mean wait by the count in flight at the start,
// for the hinge fit: none below c; at k ≥ c, (k − c + 1) slots must free
// first, one every S/c on average (S the unqueued time): a hinge at
// c − 1. Failed requests are left out: one that gave up waiting was cut
// short.
func (p *poolScan) meanWaits() {
	rs := p.rs
	p.floor = quantile(p.idle, 0.5)
	p.excess = make([]float64, p.maxK+1)
	p.okN = make([]int, p.maxK+1)
	for i := range rs {
		if !rs[i].own {
			p.excess[p.inFlight[i]] += max(0, float64(rs[i].end-rs[i].start)-p.floor)
			p.okN[p.inFlight[i]]++
		}
	}
	for k := range p.excess {
		if p.okN[k] > 0 {
			p.excess[k] /= float64(p.okN[k])
		}
	}
	// Where most requests failed (gave up waiting), those that did not
	// are the ones that waited least: their mean wait falls short of
	// the count's, and says nothing of the hinge. Such counts are left
	// out of the fit below (fitN: okN, or 0 there).
	p.fitN = slices.Clone(p.okN)
	for k := range p.fitN {
		if n := p.count[k]; n > 0 && 2*p.okN[k] < n {
			p.fitN[k] = 0
		}
	}
}

// onset returns c, where the waits begin: the least count k (with
// poolMinAt requests or more) whose mean wait passes both poolOnset of S
// and poolOnsetRatio times the mean wait below it; -1 for none.
func (p *poolScan) onset() int {
	var belowEx float64
	belowOK := 0
	for k := range p.excess {
		if k > 0 && p.okN[k] >= poolMinAt && p.excess[k] > max(poolOnset*p.floor, poolOnsetRatio*belowEx/float64(max(1, belowOK))) {
			return k
		}
		belowEx += p.excess[k] * float64(p.okN[k])
		belowOK += p.okN[k]
	}
	return -1
}

// fitHinge fits the hinge at c − 1 to the mean waits and returns its
// squared error, false when no rising hinge fits. Its slope is fitted
// (a request that waited past its deadline failed and is left out, so
// the waits seen at high counts fall short of S/c). Where the pool's
// calls slow with its queue (waitSlowdown), each of the x = k − c + 1
// slots to free takes longer the longer the queue: the waits grow as
// x·(1 + s·x), so the hinge may bend upward (a·x + b·x², b ≥ 0).
func (p *poolScan) fitHinge(c int) (float64, bool) {
	var sxy, sxx, sx2y, sx3, sx4 float64
	for k := range p.excess {
		x := float64(max(0, k-c+1))
		w := float64(p.fitN[k])
		sxy += w * x * p.excess[k]
		sxx += w * x * x
		sx2y += w * x * x * p.excess[k]
		sx3 += w * x * x * x
		sx4 += w * x * x * x * x
	}
	if sxx == 0 || sxy <= 0 {
		return 0, false
	}
	// The best of a line, a parabola through the origin, and both
	// terms where both come out non-negative.
	sse := p.sse(c, sxy/sxx, 0)
	if sx4 > 0 && sx2y > 0 {
		if q := p.sse(c, 0, sx2y/sx4); q < sse {
			sse = q
		}
	}
	if det := sxx*sx4 - sx3*sx3; det > 0 {
		qa, qb := (sx4*sxy-sx3*sx2y)/det, (sxx*sx2y-sx3*sxy)/det
		if qb >= 0 && qa >= 0 {
			if q := p.sse(c, qa, qb); q < sse {
				sse = q
			}
		}
	}
	return sse, true
}

// sse returns the weighted squared error of the hinge a·x + b·x² at
// c − 1 against the mean waits.
func (p *poolScan) sse(c int, a, b float64) float64 {
	var sse float64
	for k := range p.excess {
		x := float64(max(0, k-c+1))
		d := p.excess[k] - a*x - b*x*x
		sse += float64(p.fitN[k]) * d * d
	}
	return sse
}

// explains reports whether a pool of c slots, its hinge fitted with
// squared error sse, explains the waits: enough requests above c, few
// that waited below it, and poolMinExplained of the waits' squares.
func (p *poolScan) explains(c int, sse float64) bool {
	var total float64
	for k := range p.excess {
		total += float64(p.fitN[k]) * p.excess[k] * p.excess[k]
	}
	belowN, belowW := 0, 0
	for k := range c {
		belowN += p.count[k]
		belowW += p.waits[k]
	}
	aboveN := len(p.rs) - belowN
	return aboveN >= poolMinAbove && float64(belowW) <= poolMaxFalse*float64(belowN) && 1-sse/total >= poolMinExplained
}

// fit returns the pool of c slots: the unqueued work of the requests
// that found a slot free, and from the failures of those that waited,
// its deadline and whether it caps the wait, and its calls' slowdown.
func (p *poolScan) fit(c int) poolFit {
	rs := p.rs
	best := poolFit{slots: c}
	var failed []int64
	for i := range rs {
		switch {
		case p.inFlight[i] < best.slots:
			best.unqueued = append(best.unqueued, rs[i].end-rs[i].start)
		case rs[i].own && p.waited[i]:
			failed = append(failed, rs[i].end-rs[i].start)
		}
	}
	best.deadline, best.deadlineFails = deadlineOf(failed)
	if best.deadline > 0 {
		best.total = totalDeadline(failed, rs, best.deadline)
	}
	best.slow, best.capped = waitSlowdown(rs, best)
	if !best.capped {
		best.total = 0
	}
	return best
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
