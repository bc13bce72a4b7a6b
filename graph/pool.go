package graph

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"cascade"
	"cascade/replay"
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
	// Where most requests failed (gave up waiting), those that did not
	// are the ones that waited least: their mean wait falls short of
	// the count's, and says nothing of the hinge. Such counts are left
	// out of the fit below (fitN: okN, or 0 there).
	fitN := slices.Clone(okN)
	for k := range fitN {
		if n := count[k]; n > 0 && 2*okN[k] < n {
			fitN[k] = 0
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
	// counts fall short of S/c), must explain the waits. Where the
	// pool's calls slow with its queue (waitSlowdown), each of the x = k
	// − c + 1 slots to free takes longer the longer the queue: the waits
	// grow as x·(1 + s·x), so the hinge may bend upward (a·x + b·x², b ≥
	// 0).
	var sxy, sxx, sx2y, sx3, sx4 float64
	for k := range excess {
		x := float64(max(0, k-c+1))
		w := float64(fitN[k])
		sxy += w * x * excess[k]
		sxx += w * x * x
		sx2y += w * x * x * excess[k]
		sx3 += w * x * x * x
		sx4 += w * x * x * x * x
	}
	if sxx == 0 || sxy <= 0 {
		return poolFit{}, false
	}
	sseOf := func(a, b float64) float64 {
		var sse float64
		for k := range excess {
			x := float64(max(0, k-c+1))
			d := excess[k] - a*x - b*x*x
			sse += float64(fitN[k]) * d * d
		}
		return sse
	}
	// The best of a line, a parabola through the origin, and both
	// terms where both come out non-negative.
	a, b := sxy/sxx, 0.0
	sse := sseOf(a, b)
	if sx4 > 0 && sx2y > 0 {
		if q := sseOf(0, sx2y/sx4); q < sse {
			a, b, sse = 0, sx2y/sx4, q
		}
	}
	if det := sxx*sx4 - sx3*sx3; det > 0 {
		qa, qb := (sx4*sxy-sx3*sx2y)/det, (sxx*sx2y-sx3*sxy)/det
		if qb >= 0 && qa >= 0 {
			if q := sseOf(qa, qb); q < sse {
				a, b, sse = qa, qb, q
			}
		}
	}
	var total float64
	for k := range excess {
		total += float64(fitN[k]) * excess[k] * excess[k]
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
	if best.deadline > 0 {
		best.total = totalDeadline(failed, rs, best.deadline)
	}
	best.slow, best.capped = waitSlowdown(rs, best)
	if !best.capped {
		best.total = 0
	}
	return best, true
}

// A pool's calls can slow with its queue (contention: a database slows
// with the connections queued on it), which makes a saturated pool serve
// fewer calls the longer its queue, and a storm feed itself. The spans do
// not show it apart from the waits (a request's span holds its wait and
// its work), so waitSlowdown reads it as the seed reads every
// coefficient: it replays the pool alone under its own requests' starts
// (the slots, the unqueued work, the deadline with its dropped work, the
// failures the deadline does not explain), at each share of
// waitGrid, and keeps the one whose replay best matches the requests'
// success and median time: the loss is the gap in success over 2 pp plus
// the log-ratio of the medians over 10%, squared and summed, and a share
// is kept only when it beats none by waitMinGain. A pool whose calls do
// not slow keeps 0 (its replay at 0 already matches).
//
// Where the failures show a deadline, the successful requests say what
// it is: a deadline on the whole request (the callers give up, the work
// is dropped: a handler's own timeout) lets none succeed past it, a cap
// on the wait for a slot (the pool refuses, and a call that got a slot
// runs to its end: an acquire timeout) lets those that got a slot just
// before it run on. capped is set when capSuccessShare of the successes
// or more took longer than the deadline's band. (The replays cannot
// tell: a cap with more contention and a deadline with less can match
// the same success and median, as a held-out run of the chain showed.)
var waitGrid = []float64{0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 2, 3}

const (
	waitSeeds    = 2
	waitMinGain  = 1
	waitSuccessS = 0.02 // the success gap's scale
	// capSuccessShare is the share of successes past the deadline's
	// band that makes it a wait cap.
	capSuccessShare = 0.02
	waitMedianS     = 0.1 // the medians' log-ratio's scale
)

// totalDeadline returns, for a pool whose first band of failures is at
// capNS (its wait cap), a second band past it that no success passed: a
// deadline on the whole request (ns), or 0.
func totalDeadline(failed []int64, rs []seqReq, capNS int64) int64 {
	var past []int64
	for _, d := range failed {
		if float64(d) > float64(capNS)*(1+2*poolDeadlineWidth) {
			past = append(past, d)
		}
	}
	d, _ := deadlineOf(past)
	if d <= 0 {
		return 0
	}
	ok, over := 0, 0
	for i := range rs {
		if !rs[i].own {
			ok++
			if float64(rs[i].end-rs[i].start) > float64(d)*(1+poolDeadlineWidth) {
				over++
			}
		}
	}
	if float64(over) >= capSuccessShare*float64(max(1, ok)) {
		return 0
	}
	return d
}

// waitSlowdown returns the pool's wait slowdown (see waitGrid) and
// whether its deadline is a wait cap, rs its requests sorted by start.
func waitSlowdown(rs []seqReq, p poolFit) (float64, bool) {
	if len(p.unqueued) < minShape || len(rs) < poolMinRequests {
		return 0, false
	}
	svc := make([]float64, len(p.unqueued))
	for i, d := range p.unqueued {
		svc[i] = nsToMS(float64(d))
	}
	slices.Sort(svc)
	var own int64
	var okMS []float64
	at := make([]float64, len(rs))
	for i := range rs {
		at[i] = nsToMS(float64(rs[i].start - rs[0].start))
		if rs[i].own {
			own++
		} else {
			okMS = append(okMS, nsToMS(float64(rs[i].end-rs[i].start)))
		}
	}
	if len(okMS) < minShape {
		return 0, false
	}
	slices.Sort(okMS)
	wantOK := 1 - float64(own)/float64(len(rs))
	wantP50 := quantile(okMS, 0.5)
	// The failures the deadline does not explain stay the pool's own.
	base := ownRate(max(0, own-p.deadlineFails), int64(len(rs)))
	if p.deadline <= 0 {
		base = ownRate(own, int64(len(rs)))
	}
	deadline := roundMS(nsToMS(float64(p.deadline)))
	loss := func(s float64, capped bool) (float64, bool) {
		pool := cascade.Node{Name: "pool", Replicas: 1, Concurrency: p.slots, Service: cascade.Dist{Kind: cascade.DistEmpirical, Points: drawPoints(svc)},
			WaitSlowdown: s, Overload: cascade.Overload{Base: base, Threshold: 1}}
		edge := cascade.Edge{From: "caller", To: "pool", FanOut: cascade.Const(1), Propagation: 1}
		if capped {
			pool.WaitCapMS = deadline
			if total := roundMS(nsToMS(float64(p.total))); total > 0 {
				pool.DeadlinePropagation, edge.TimeoutMS = true, total
			}
		} else {
			pool.DeadlinePropagation, edge.TimeoutMS = deadline > 0, deadline
		}
		m := &cascade.Model{
			Version: cascade.ModelVersion,
			Entries: []cascade.Entry{{Node: "caller", Share: 1}},
			Nodes:   []cascade.Node{{Name: "caller", Replicas: 1, Service: cascade.Const(0)}, pool},
			Edges:   []cascade.Edge{edge},
		}
		cfg := replay.DefaultConfig()
		cfg.Seed, cfg.Seeds, cfg.Parallel = 1, waitSeeds, 1
		cfg.Duration = time.Duration((at[len(at)-1] + 1) * float64(time.Millisecond))
		cfg.Traffic = &cascade.Traffic{Kind: cascade.TrafficObserved, ArrivalsMS: at, DurationMS: at[len(at)-1] + 1}
		res, err := replay.RunSeeds(context.Background(), m, cfg)
		if err != nil || len(res) == 0 {
			return 0, false
		}
		var ok, p50 float64
		for _, r := range res {
			ok += r.SuccessRate / float64(len(res))
			p50 += r.LatencyP50MS / float64(len(res))
		}
		if !(p50 > 0) || !(wantP50 > 0) {
			return 0, false
		}
		a, b := (ok-wantOK)/waitSuccessS, math.Log(p50/wantP50)/waitMedianS
		return a*a + b*b, true
	}
	capped := false
	if deadline > 0 {
		past := 0
		for _, v := range okMS {
			if v > deadline*(1+poolDeadlineWidth) {
				past++
			}
		}
		capped = float64(past) >= capSuccessShare*float64(len(okMS))
	}
	none, ok := loss(0, capped)
	if !ok {
		return 0, capped
	}
	best, bestLoss := 0.0, none
	for _, s := range waitGrid[1:] {
		if l, ok := loss(s, capped); ok && l < bestLoss {
			best, bestLoss = s, l
		}
	}
	if none-bestLoss < waitMinGain {
		return 0, capped
	}
	return best, capped
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
