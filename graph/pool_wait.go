package graph

// This file reads the waits of a hidden pool (hiddenPool): the deadline
// its requests give up at, a cap on the wait or on the whole request,
// and how its calls slow with its queue; and gives the deadline to the
// edges into the node (poolDeadlines).

import (
	"context"
	"math"
	"slices"
	"time"

	"cascade"
	"cascade/replay"
)

// A deadline: at least poolMinDeadline own failures of requests that
// waited, poolDeadlineShare of them within poolDeadlineWidth of one
// duration (the densest such band, the earliest of equals).
const (
	poolMinDeadline   = 5
	poolDeadlineShare = 0.5
	poolDeadlineWidth = 0.03
)

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
	f, ok := newSlowdownFit(rs, p)
	if !ok {
		return 0, false
	}
	capped := f.capped()
	none, ok := f.loss(0, capped)
	if !ok {
		return 0, capped
	}
	best, bestLoss := 0.0, none
	for _, s := range waitGrid[1:] {
		if l, ok := f.loss(s, capped); ok && l < bestLoss {
			best, bestLoss = s, l
		}
	}
	if none-bestLoss < waitMinGain {
		return 0, capped
	}
	return best, capped
}

// slowdownFit is what waitSlowdown replays the pool with and scores the
// replays against: the pool's unqueued work, its requests' starts and
// what they showed.
type slowdownFit struct {
	p   poolFit
	svc []float64 // the unqueued work, ms, sorted
	at  []float64 // the requests' starts, ms from the first
	// okMS are the successful requests' durations (ms, sorted); wantOK
	// the requests' success share and wantP50 the successes' median.
	okMS            []float64
	wantOK, wantP50 float64
	// base is the pool's own failure rate: the failures the deadline
	// does not explain; deadline is the deadline, ms (0 none).
	base, deadline float64
}

// newSlowdownFit reads pool p's requests rs (by start) for
// waitSlowdown; false when too few succeeded to compare with.
func newSlowdownFit(rs []seqReq, p poolFit) (*slowdownFit, bool) {
	f := &slowdownFit{p: p}
	f.svc = make([]float64, len(p.unqueued))
	for i, d := range p.unqueued {
		f.svc[i] = nsToMS(float64(d))
	}
	slices.Sort(f.svc)
	var own int64
	f.at = make([]float64, len(rs))
	for i := range rs {
		f.at[i] = nsToMS(float64(rs[i].start - rs[0].start))
		if rs[i].own {
			own++
		} else {
			f.okMS = append(f.okMS, nsToMS(float64(rs[i].end-rs[i].start)))
		}
	}
	if len(f.okMS) < minShape {
		return nil, false
	}
	slices.Sort(f.okMS)
	f.wantOK = 1 - float64(own)/float64(len(rs))
	f.wantP50 = quantile(f.okMS, 0.5)
	// The failures the deadline does not explain stay the pool's own.
	f.base = ownRate(max(0, own-p.deadlineFails), int64(len(rs)))
	if p.deadline <= 0 {
		f.base = ownRate(own, int64(len(rs)))
	}
	f.deadline = roundMS(nsToMS(float64(p.deadline)))
	return f, true
}

// capped reports whether the deadline is a cap on the wait for a slot:
// capSuccessShare of the successes or more took longer than its band.
func (f *slowdownFit) capped() bool {
	if f.deadline <= 0 {
		return false
	}
	past := 0
	for _, v := range f.okMS {
		if v > f.deadline*(1+poolDeadlineWidth) {
			past++
		}
	}
	return float64(past) >= capSuccessShare*float64(len(f.okMS))
}

// model returns the pool alone behind a caller, its calls slowing by s
// per waiter, its deadline a wait cap when capped, else a deadline on
// the whole request.
func (f *slowdownFit) model(s float64, capped bool) *cascade.Model {
	p := f.p
	pool := cascade.Node{Name: "pool", Replicas: 1, Concurrency: p.slots, Service: cascade.Dist{Kind: cascade.DistEmpirical, Points: drawPoints(f.svc)},
		WaitSlowdown: s, Overload: cascade.Overload{Base: f.base, Threshold: 1}}
	edge := cascade.Edge{From: "caller", To: "pool", FanOut: cascade.Const(1), Propagation: 1}
	if capped {
		pool.WaitCapMS = f.deadline
		if total := roundMS(nsToMS(float64(p.total))); total > 0 {
			pool.DeadlinePropagation, edge.TimeoutMS = true, total
		}
	} else {
		pool.DeadlinePropagation, edge.TimeoutMS = f.deadline > 0, f.deadline
	}
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "caller", Share: 1}},
		Nodes:   []cascade.Node{{Name: "caller", Replicas: 1, Service: cascade.Const(0)}, pool},
		Edges:   []cascade.Edge{edge},
	}
}

// loss replays the pool (model) under its requests' starts and returns
// the gap from what they showed: in success over waitSuccessS plus the
// log-ratio of the medians over waitMedianS, squared and summed; false
// when the replay fails or shows no median.
func (f *slowdownFit) loss(s float64, capped bool) (float64, bool) {
	at := f.at
	cfg := replay.DefaultConfig()
	cfg.Seed, cfg.Seeds, cfg.Parallel = 1, waitSeeds, 1
	cfg.Duration = time.Duration((at[len(at)-1] + 1) * float64(time.Millisecond))
	cfg.Traffic = &cascade.Traffic{Kind: cascade.TrafficObserved, ArrivalsMS: at, DurationMS: at[len(at)-1] + 1}
	res, err := replay.RunSeeds(context.Background(), f.model(s, capped), cfg)
	if err != nil || len(res) == 0 {
		return 0, false
	}
	var ok, p50 float64
	for _, r := range res {
		ok += r.SuccessRate / float64(len(res))
		p50 += r.LatencyP50MS / float64(len(res))
	}
	if !(p50 > 0) || !(f.wantP50 > 0) {
		return 0, false
	}
	a, b := (ok-f.wantOK)/waitSuccessS, math.Log(p50/f.wantP50)/waitMedianS
	return a*a + b*b, true
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

// absInt64 returns the absolute value of v.
func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
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
