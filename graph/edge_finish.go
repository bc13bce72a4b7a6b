package graph

// This file turns an edge's accumulated calls into its model edge:
// (*edgeAcc).finish and its phases.

import (
	"math"
	"slices"

	"cascade"
)

// edgeFacts is what finish derives for the table and the stage ordering.
type edgeFacts struct {
	firstStartMS, lastEndMS float64
}

// finish turns the accumulated statistics into a model edge.
// callerRequests is the number of requests of the calling node, callerOwn
// how many of them failed on their own. It reads the edge phase by
// phase: fan-out, parallelism, latency and timeouts, retries and
// propagation, each into an edgeOut.
func (e *edgeAcc) finish(b *Builder, callerRequests, callerOwn int64) (cascade.Edge, edgeFacts) {
	o := e.newEdgeOut(b)
	e.readFanOut(o, callerRequests, callerOwn)
	e.readParallelism(o)
	e.readLatency(o)
	e.readRetries(o)
	e.readPropagation(o)
	o.prov["stage"] = cascade.Inferred
	o.edge.Provenance = o.prov

	fs, le := e.firstStart.sorted(), e.lastEnd.sorted()
	return o.edge, edgeFacts{firstStartMS: quantile(fs, 0.5), lastEndMS: quantile(le, 0.5)}
}

// edgeOut is the model edge finish's phases write, with what was
// observed of it and its provenance.
type edgeOut struct {
	edge cascade.Edge
	obs  *cascade.EdgeObserved
	prov map[string]cascade.Provenance
}

// newEdgeOut starts the model edge: its ends, its counts observed, and
// whether its calls are asynchronous.
func (e *edgeAcc) newEdgeOut(b *Builder) *edgeOut {
	from, to := b.nodes[e.from], b.nodes[e.to]
	obs := &cascade.EdgeObserved{
		Calls:            e.calls,
		ParentRequests:   e.groups,
		ObservedParallel: float64(e.maxConc),
		Overlapping:      e.overlap,
		Retries:          e.retries,
		SelfCall:         e.from == e.to,
	}
	return &edgeOut{
		edge: cascade.Edge{
			From: from.name,
			To:   to.name,
			// A publisher that saw its publishes refused waited for the
			// broker's confirms: a confirmed publish, not fire-and-forget.
			Async:    2*e.async > e.calls && e.nacks == 0,
			Observed: obs,
		},
		obs:  obs,
		prov: map[string]cascade.Provenance{},
	}
}

// readFanOut reads the fan-out: logical calls per caller request, zeros
// included. A request that failed on its own and made no call on the
// edge is not a zero: the replay answers such a request at once without
// calling its children, so its missing calls would be taken away twice
// (a caller failing 30% on its own would call 0.7 × 0.7 as often).
func (e *edgeAcc) readFanOut(o *edgeOut, callerRequests, callerOwn int64) {
	obs := o.obs
	hist := slices.Clone(e.hist)
	if len(hist) == 0 {
		hist = []int64{0}
	}
	hist[0] = max(0, (callerRequests-callerOwn)-(e.groups-e.ownGroups))
	obs.FanOutHistogram = hist
	var sum, n int64
	for k, c := range hist[1:] {
		sum += int64(k+1) * c
		n += c
	}
	if n > 0 {
		obs.FanOutMean = round6(float64(sum) / float64(n))
		obs.FanOutP50 = histQuantile(hist[1:], n, 0.5) + 1
		obs.FanOutP95 = histQuantile(hist[1:], n, 0.95) + 1
		obs.FanOutMax = float64(len(hist) - 1)
	}
	o.edge.FanOut = fanOutDist(hist)
	o.prov["fan_out"] = cascade.Observed
}

// readParallelism reads the parallelism (one call at a time, all at
// once, or the most seen at once) and whether it is a pool the
// requests share.
func (e *edgeAcc) readParallelism(o *edgeOut) {
	edge, prov := &o.edge, o.prov
	switch {
	case !e.multi:
		edge.Parallelism = 1
	case !e.notAllOnce:
		edge.Parallelism = 0
	default:
		edge.Parallelism = e.maxConc
	}
	prov["parallelism"] = cascade.Observed
	// The parallelism is a pool when some request had more calls than it
	// ran at once: calls waited. (A fan-out of 3 that re-sends failures
	// has at most 3 at once without holding any call back.)
	prov["shared_pool"] = cascade.Default
	if edge.Parallelism > 1 && len(e.hist)-1 > edge.Parallelism {
		switch o.obs.PoolSharing = e.poolSharing(edge.Parallelism); o.obs.PoolSharing {
		case cascade.PoolShared:
			edge.SharedPool = true
			prov["shared_pool"] = cascade.Inferred
		case cascade.PoolPerRequest:
			prov["shared_pool"] = cascade.Inferred
		default:
			edge.SharedPool = DefaultSharedPool
		}
	}
}

// readLatency reads the errors, the latency, the timeouts and the
// network delay.
func (e *edgeAcc) readLatency(o *edgeOut) {
	edge, obs, prov := &o.edge, o.obs, o.prov
	if e.calls > 0 {
		obs.ErrorRate = round6(float64(e.failed) / float64(e.calls))
	}
	ok := e.okLatency.sorted()
	lat := mergeWeighted(ok, e.okLatency.n, e.failedLatency.sorted(), e.failedLatency.n)
	obs.LatencyP50MS = roundMS(quantile(lat, 0.5))
	obs.LatencyP95MS = roundMS(quantile(lat, 0.95))
	obs.LatencyP99MS = roundMS(quantile(lat, 0.99))
	obs.Timeouts, edge.TimeoutMS, obs.TimeoutEvidence = e.timeout(ok)

	// Network: the one-way delay between the client's span and the
	// callee's, when enough calls show it.
	if e.net.n >= minNetCalls {
		net := e.net.sorted()
		if p50 := roundMS(quantile(net, 0.5)); p50 > 0 {
			edge.NetworkMS = &cascade.Dist{Kind: cascade.DistTiers, P50: p50,
				P95: roundMS(quantile(net, 0.95)), P99: roundMS(quantile(net, 0.99))}
			prov["network_ms"] = cascade.Observed
		}
	}
	if edge.TimeoutMS > 0 {
		prov["timeout_ms"] = cascade.Inferred
	} else {
		prov["timeout_ms"] = cascade.Default
	}
	obs.Cut = e.cut.n
}

// readRetries reads the retries: how many calls were attempts again,
// the gaps between them and, when some were, the retry policy
// (retryPolicy).
func (e *edgeAcc) readRetries(o *edgeOut) {
	obs, prov := o.obs, o.prov
	if e.logical > 0 {
		obs.AttemptsPerCall = round6(float64(e.calls) / float64(e.logical))
	}
	if e.calls > 0 {
		obs.RetryShare = round6(float64(e.retries) / float64(e.calls))
	}
	gaps := e.gaps.sorted()
	obs.BackoffGapsMS = gapSummary(gaps)
	obs.RetryEvidence = EvidenceNone
	switch {
	case e.retries > 0:
		e.retryPolicy(o, gaps)
	case e.failed > 0:
		prov["retry"] = cascade.Observed // failures seen, none re-sent
	default:
		prov["retry"] = cascade.Default
	}
}

// retryPolicy reads the retry policy of an edge whose calls were
// retried: the share of retriable failures retried, the backoff from
// the gaps (sorted), the attempts' limit, and the evidence (the calls
// re-sent, or siblings of the failed ones).
func (e *edgeAcc) retryPolicy(o *edgeOut, gaps []float64) {
	edge, obs, prov := &o.edge, o.obs, o.prov
	// Failed attempts that could have been retried: not those at
	// the longest chain seen, which the policy's limit stopped (a
	// chain of max attempts that fails at the end is not a failure
	// the client chose to keep).
	retriable := e.failed - e.failedAt[min(int(e.maxAttempts), len(e.failedAt)-1)]
	re := 1.0
	if retriable > 0 && e.resendRetries < e.retries {
		re = math.Min(1, float64(e.failedRetried)/float64(retriable))
	} else if retriable > 0 {
		re = math.Min(1, float64(e.retries)/float64(retriable))
	}
	edge.Retry = &cascade.Retry{
		Reactivation: round6(re),
		Backoff:      backoffOf(gaps, e.gaps1.sorted(), e.gaps2.sorted()),
	}
	obs.MaxAttemptsSeen = int(e.maxAttempts)
	edge.Retry.MaxAttempts, obs.RetryLimit = e.retryLimit()
	switch e.resendRetries {
	case e.retries:
		prov["retry"] = cascade.Observed
		obs.RetryEvidence = EvidenceResend
	case 0:
		prov["retry"] = cascade.Inferred
		obs.RetryEvidence = EvidenceSiblings
	default:
		prov["retry"] = cascade.Inferred
		obs.RetryEvidence = EvidenceResend + " + " + EvidenceSiblings
	}
	// The limit is as sure as the chains when some ran out; else a
	// default, or the most seen when that is more.
	switch {
	case obs.RetryLimit == cascade.RetryLimitObserved:
		prov["retry.max_attempts"] = prov["retry"]
	case edge.Retry.MaxAttempts == obs.MaxAttemptsSeen:
		prov["retry.max_attempts"] = cascade.ObservedPeak
	default:
		prov["retry.max_attempts"] = cascade.Default
	}
}

// readPropagation reads the propagation: P(caller's request failed |
// call failed after retries), 1 by default when no call failed so.
func (e *edgeAcc) readPropagation(o *edgeOut) {
	edge, prov := &o.edge, o.prov
	if e.finalFailed > 0 {
		edge.Propagation = round6(float64(e.finalParent) / float64(e.finalFailed))
		o.obs.Propagation, o.obs.FinalFailed = edge.Propagation, e.finalFailed
		prov["propagation"] = cascade.Observed
	} else {
		edge.Propagation = 1
		prov["propagation"] = cascade.Default
	}
}
