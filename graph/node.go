package graph

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"cascade"
)

// Capacity sources written to NodeObserved.CapacitySource.
const (
	CapacityPoolSize   = "pool_size metric"
	CapacitySerialised = "serialised (regular departures while queued)"
	CapacityLocked     = "serialised (queued requests call only after the previous one ends)"
	CapacityPeak       = "peak in-flight (no limit proven)"
	CapacityPool       = "pool (requests waited exactly when that many were in flight)"
)

// nodeAcc accumulates one node's requests.
type nodeAcc struct {
	name      string
	service   string
	virtual   bool
	requests  int64
	errors    int64
	latency   reservoir // request durations, ms
	exclusive reservoir // exclusive (self) times, ms
	// own counts requests that failed on their own (no call of theirs
	// failed for good); ownExcl are their exclusive times, okExcl the
	// others'.
	own             int64
	ownExcl, okExcl reservoir
	// seq holds every request's start and whether it failed on its own,
	// up to maxSequence, to read the failure process; seqFull says the
	// cap was passed (the sequence is then a sample, not a sequence).
	seq       []seqReq
	seqFull   bool
	instances map[int32]struct{}
	tl        *timeline
	selfCall  bool
	waitNS    int64 // time requests waited for synchronous calls, ns
	busy      int64 // request time, ns
	zombie    int64 // request time after the caller gave up, ns
	// queue is set on a queue node: what its messages showed.
	queue *queueAcc
	// dropped marks a node left out of the model (an exchange replaced
	// by the queues it routes to).
	dropped bool
	// blocked is set on a publisher whose own failures are its broker's
	// memory alarm (see findBlocked).
	blocked *blockedFacts
	// pubs are the requests that published without waiting on the
	// publish (their exclusive times hold it), up to maxSequence, and
	// pubsFull says more were left out; held is what releaseHeld took
	// out of the exclusive times (see held.go).
	pubs     []pubReq
	pubsFull bool
	held     heldFacts
}

func newNodeAcc(name, service string, b *Builder) *nodeAcc {
	return &nodeAcc{
		name:      name,
		service:   service,
		virtual:   true,
		instances: map[int32]struct{}{},
		tl:        newTimeline(int64(b.cfg.Resolution), b.cfg.MaxBins),
	}
}

// addRequest records one request of the node; own says it failed on its
// own, not by a call of its that failed for good.
func (n *nodeAcc) addRequest(b *Builder, start, end int64, failed, own bool, inst int32, exclMS float64) {
	n.requests++
	n.busy += end - start
	if failed {
		n.errors++
	}
	k := b.cfg.Reservoir
	n.latency.add(b.rng, k, nsToMS(float64(end-start)))
	n.exclusive.add(b.rng, k, exclMS)
	if own {
		n.own++
		n.ownExcl.add(b.rng, k, exclMS)
	} else {
		n.okExcl.add(b.rng, k, exclMS)
	}
	if len(n.seq) < maxSequence {
		n.seq = append(n.seq, seqReq{start: start, end: end, own: own, failed: failed,
			exclUS: uint32(min(math.Max(0, exclMS*1e3), math.MaxUint32))})
	} else {
		n.seqFull = true
	}
	n.waitNS += max(0, end-start-int64(exclMS*1e6))
	if inst >= 0 {
		if _, ok := n.instances[inst]; !ok {
			n.instances[inst] = struct{}{}
		}
	}
	n.tl.add(start, end, failed)
}

// serviceDist is the distribution replay draws a node's self time from:
// the sample's own shape (drawPoints), which keeps its mean and its modes
// (a fast path and a slow tail stay two), or with too few values for
// that the tiers.
func serviceDist(sorted []float64, t *cascade.Tiers) cascade.Dist {
	if len(sorted) >= minShape {
		return cascade.Dist{Kind: cascade.DistEmpirical, Points: drawPoints(sorted)}
	}
	return cascade.Dist{Kind: cascade.DistTiers, P50: t.P50, P95: t.P95, P99: t.P99}
}

// minShape is the fewest values whose shape becomes an empirical service
// distribution: enough for a 95% quantile, as minFailSplit.
const minShape = 20

// seqReq is one request in a node's failure sequence.
type seqReq struct {
	start, end int64
	// callUS is how long after its start its first synchronous call
	// started, in µs rounded up, plus one; 0 when it made none. (A
	// uint32 keeps the record small; 71 minutes is the most.)
	callUS uint32
	// exclUS is its exclusive time in µs (at most 71 minutes), for the
	// load curve's service time (loadCurve).
	exclUS uint32
	own    bool
	// failed: the request failed, on its own or by a call of its.
	failed bool
}

// firstCall is when the request's first synchronous call started, to the
// µs above, or 0 when it made none.
func (r *seqReq) firstCall() int64 {
	if r.callUS == 0 {
		return 0
	}
	return r.start + int64(r.callUS-1)*1000
}

// maxSequence bounds the requests a node keeps to read its failure
// process (2 MiB a node).
const maxSequence = 1 << 17

// failureProcess reads how a node's own failures came. Sorted by start,
// the gaps between consecutive own failures (in calls: 1 is the next
// call) have mean 1/p for a share p of failures whatever the process;
// their variance tells the process apart. Independent failures give
// geometric gaps, variance (1 − p)/p², and the ratio of the sample
// variance to it has a standard error of √((κ − 1)/n) for n gaps, κ the
// geometric law's kurtosis 9 + p²/(1 − p). A ratio more than three
// standard errors below 1 is a regular process (HotROD's redis fails
// every 5th GetDriver), above 1 a bursty one; either way the gaps become
// the model's failure process. It returns the gaps (nil for independent
// failures or too few to tell), the verdict and the ratio.
func failureProcess(seq []seqReq, own int64) ([]float64, string, float64) {
	if own < minFailSplit || int64(len(seq)) <= own {
		return nil, "", 0
	}
	slices.SortStableFunc(seq, func(a, b seqReq) int { return cmp.Compare(a.start, b.start) })
	var gaps []float64
	last := -1
	for i, r := range seq {
		if !r.own {
			continue
		}
		if last >= 0 {
			gaps = append(gaps, float64(i-last))
		}
		last = i
	}
	p := float64(own) / float64(len(seq))
	varGeo := (1 - p) / (p * p)
	ratio := stat.Variance(gaps, nil) / varGeo
	kurt := 9 + p*p/(1-p)
	se := math.Sqrt((kurt - 1) / float64(len(gaps)))
	ratio = round6(ratio)
	switch {
	case ratio < 1-3*se:
		slices.Sort(gaps)
		return gaps, "regular", ratio
	case ratio > 1+3*se:
		slices.Sort(gaps)
		return gaps, "bursty", ratio
	}
	return nil, "independent", ratio
}

// failureBurst is the longest stretch of time in which most of a node's
// requests failed, ns: every run of burstRun consecutive requests (by
// start) of which at least half failed marks the time from its first
// start to its last end, and the longest stretch of overlapping marks
// is the burst; 0 when no run is marked. A retry that comes back inside
// such a stretch more likely fails than not: a delay queue's TTL should
// outlast it (seed 002 §6.1: a fixed 1 s retry fails again while the
// failure lasts longer). It sorts seq by start.
func failureBurst(seq []seqReq) int64 {
	if len(seq) < burstRun {
		return 0
	}
	slices.SortStableFunc(seq, func(a, b seqReq) int { return cmp.Compare(a.start, b.start) })
	failed := 0
	for _, r := range seq[:burstRun] {
		if r.failed {
			failed++
		}
	}
	var best, from, to int64
	open := false
	for i := 0; i+burstRun <= len(seq); i++ {
		if i > 0 {
			if seq[i-1].failed {
				failed--
			}
			if seq[i+burstRun-1].failed {
				failed++
			}
		}
		if 2*failed < burstRun {
			continue
		}
		a, z := seq[i].start, seq[i].end
		for _, r := range seq[i : i+burstRun] {
			z = max(z, r.end)
		}
		if open && a <= to {
			to = max(to, z)
		} else {
			from, to, open = a, z, true
		}
		best = max(best, to-from)
	}
	return best
}

// burstRun is how many consecutive requests failureBurst judges at once:
// enough that a majority of them failing is not chance at a node's usual
// failure shares (20 requests give a share to ±11%).
const burstRun = 20

// minFailSplit is the fewest own failures whose exclusive times become a
// node's fail_service_ms: enough for a 95% quantile.
const minFailSplit = 20

// ownRate is the share of requests that failed on their own: the
// overload curve's base. A request that failed because a call of its
// failed for good is the edge's propagation, not the node's failure;
// counting it here too would fail it twice in replay.
func ownRate(own, requests int64) float64 {
	if requests == 0 {
		return 0
	}
	return round6(float64(own) / float64(requests))
}

// departureGaps samples the gaps between consecutive request ends of a
// node while at least two of its requests were in flight after the
// earlier end (one served, one waiting), exactly, from its requests'
// starts and ends.
func departureGaps(seq []seqReq, b *Builder) *reservoir {
	type ev struct {
		t   int64
		end bool
	}
	evs := make([]ev, 0, 2*len(seq))
	for _, r := range seq {
		evs = append(evs, ev{r.start, false}, ev{r.end, true})
	}
	// Ends before starts at one instant: a request that starts as
	// another ends did not overlap it.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.end == b.end {
			return 0
		}
		if a.end {
			return -1
		}
		return 1
	})
	g := &reservoir{}
	inflight := 0
	var prevEnd int64
	after := 0 // in flight just after the previous end; 0 before the first
	for _, e := range evs {
		if !e.end {
			inflight++
			continue
		}
		if after >= 2 {
			g.add(b.rng, b.cfg.Reservoir, float64(e.t-prevEnd))
		}
		inflight--
		prevEnd, after = e.t, inflight
	}
	return g
}

// serialised reports whether departure gaps show a node that serves one
// request at a time: while two or more requests were in flight, requests
// still finished one by one at regular intervals (the 5% quantile of the
// gaps is at least half their median); the gaps are long enough for the
// bins to resolve (median at least two bins of width, when they come from
// bins; width 0 for exact gaps); and the node's own exclusive
// time covers them (median exclusive time at least 90% of the median gap),
// so the regularity is the node's own and not that of a serialised callee
// it waits for. Many concurrent workers would let completions bunch
// together. The gaps are then the service times of a single server.
func serialised(gaps *reservoir, width int64, exclusiveP50MS float64) bool {
	if gaps.n < 30 {
		return false
	}
	s := gaps.sorted()
	med := quantile(s, 0.5)
	return med >= 2*float64(width) && quantile(s, 0.05) >= 0.5*med && exclusiveP50MS >= 0.9*nsToMS(med)
}

// noteFirstCall records when the request just added (addRequest) made its
// first synchronous call.
func (n *nodeAcc) noteFirstCall(t int64) {
	if !n.seqFull && len(n.seq) > 0 {
		r := &n.seq[len(n.seq)-1]
		us := (max(0, t-r.start) + 999) / 1000
		r.callUS = uint32(min(us+1, math.MaxUint32))
	}
}

// lockedCalls tells a node that serves one request at a time from the
// order of its requests' calls, for a node whose holding times are not
// regular enough for serialised (a slowdown of a callee inside the
// capture makes them two populations). A request i that arrives while the
// request ending before it, i−1, is still in progress must wait for it
// behind a lock: its first call comes at least that wait after its start
// (firstCall_i − start_i ≥ end_{i−1} − start_i). Without a lock its first
// call comes after its own pre-call work, whatever the others do. Only
// waits of more than twice the median pre-call delay of the requests that
// found the node free are asked, where a node without a lock would meet
// the bound by chance only for its slowest pre-call work; a lock must
// meet it in 95% of at least 30 of them.
//
// It sorts seq by end.
func lockedCalls(seq []seqReq) bool {
	rs := seq
	slices.SortFunc(rs, func(a, b seqReq) int {
		if c := cmp.Compare(a.end, b.end); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	var free []float64
	for i := 1; i < len(rs); i++ {
		if r := &rs[i]; r.callUS != 0 && r.start >= rs[i-1].end {
			free = append(free, float64(r.firstCall()-r.start))
		}
	}
	if len(free) < 30 {
		return false
	}
	slices.Sort(free)
	bound := 2 * quantile(free, 0.5)
	tested, ok := 0, 0
	for i := 1; i < len(rs); i++ {
		r := &rs[i]
		wait := rs[i-1].end - r.start
		if r.callUS == 0 || float64(wait) <= bound {
			continue
		}
		tested++
		if r.firstCall() >= rs[i-1].end {
			ok++
		}
	}
	return tested >= 30 && float64(ok) >= 0.95*float64(tested)
}

// warnf records a warning for the build's result.
func (b *Builder) warnf(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// peakInFlight rounds the largest bin average up (less a 0.05 tolerance for
// rounding noise), and is at least 1 for a node that served requests: the
// average over a bin understates requests much shorter than a bin.
func peakInFlight(peak float64, requests int64) int {
	p := int(math.Ceil(peak - 0.05))
	if requests > 0 {
		p = max(p, 1)
	}
	return p
}
