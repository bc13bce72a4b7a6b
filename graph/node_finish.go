package graph

// This file turns a node's accumulated requests into its model node
// and its info: (*nodeAcc).finish and its phases.

import (
	"math"
	"slices"
	"time"

	"cascade"
)

// finish turns the node's requests into its model node and its info,
// phase by phase: what was observed, the failure process, the capacity,
// a load curve, the service time and, with enough failures of its own,
// their service time apart. Each phase leaves its part in a nodeFinish.
func (n *nodeAcc) finish(b *Builder, spanSeconds float64) (cascade.Node, NodeInfo) {
	f := n.newNodeFinish(b, spanSeconds)
	f.readFailures()
	f.readCapacity()
	f.readLoadCurve()
	n.seq = nil
	f.readService()
	f.setService()
	f.splitFailService()
	f.node.Provenance = f.prov
	f.checkLittle()
	return f.node, f.info()
}

// nodeFinish is what finish's phases read and leave for the next: the
// node being built with its provenance and observations, and what the
// capacity and load-curve phases found.
type nodeFinish struct {
	n           *nodeAcc
	b           *Builder
	spanSeconds float64
	tls         timelineStats
	prov        map[string]cascade.Provenance
	obs         *cascade.NodeObserved
	node        cascade.Node
	m           *serviceMetrics // the service's series; nil for none
	// svc are the service times (ms, sorted) and svcMean their mean:
	// the exclusive times until a later phase reads them otherwise.
	svc     []float64
	svcMean float64
	// gaps are the departure gaps, width their bins' width (0 when
	// exact).
	gaps  *reservoir
	width int64
	// ser says the node is serialised, serSource how that was read.
	ser       bool
	serSource string
	// pool is the hidden pool read, when pooled.
	pool   poolFit
	pooled bool
	// curve is the load curve read, when curved.
	curve  curveFit
	curved bool
	// okDefl and badDefl are the exclusive times at no load, with a
	// slowdown curve, of the calls that did not and did fail on their
	// own (sorted).
	okDefl, badDefl []float64
}

// newNodeFinish starts node n's finish: its timeline, what was
// observed of it, and the model node with what needs no inference.
func (n *nodeAcc) newNodeFinish(b *Builder, spanSeconds float64) *nodeFinish {
	f := &nodeFinish{n: n, b: b, spanSeconds: spanSeconds}
	f.tls = n.tl.finish(int64(b.cfg.Window), b.startNS, b.endNS, b.rng, b.cfg.Reservoir)
	f.prov = map[string]cascade.Provenance{}
	f.observe()
	prov := f.prov
	f.node = cascade.Node{
		Name:     n.name,
		Virtual:  n.virtual,
		Replicas: max(1, len(n.instances)),
		Overload: cascade.Overload{Base: ownRate(n.own, n.requests), Slope: 0, Threshold: 1},
		Observed: f.obs,
	}
	if len(n.instances) > 0 {
		prov["replicas"] = cascade.Observed
	} else {
		prov["replicas"] = cascade.Default
	}
	prov["queue_cap"] = cascade.Default
	prov["overload.base"] = cascade.Observed
	if bl := n.blocked; bl != nil {
		// The failures inside the alarm are the broker's (the edges into
		// its queues fail_blocked): the node's own are those outside.
		f.node.Overload.Base = ownRate(bl.outOwn, bl.outReq)
		prov["overload.base"] = cascade.Inferred
	}
	prov["overload.slope"] = cascade.Default
	prov["overload.threshold"] = cascade.Default

	// Service time: the exclusive times, or for a serialised node the
	// departure gaps (its exclusive times include the wait for the lock).
	f.svc = n.exclusive.sorted()
	f.svcMean = n.exclusive.mean()
	prov["service_ms"] = cascade.Observed
	f.m = b.metrics.forService(n.service)
	return f
}

// observe fills what was observed of the node: its rate, in-flight
// counts, errors and latency quantiles.
func (f *nodeFinish) observe() {
	n, tls, spanSeconds := f.n, &f.tls, f.spanSeconds
	obs := &cascade.NodeObserved{
		Requests:     n.requests,
		PeakInFlight: peakInFlight(tls.peak, n.requests),
		SelfCall:     n.selfCall,
	}
	if spanSeconds > 0 {
		obs.RatePerSec = round6(float64(n.requests) / spanSeconds)
		obs.MeanInFlight = round6(tls.busy / 1e9 / spanSeconds)
		obs.LittleL = round6(float64(n.requests) / spanSeconds * n.latency.mean() / 1e3)
	}
	if n.requests > 0 {
		obs.ErrorRate = round6(float64(n.errors) / float64(n.requests))
	}
	lat := n.latency.sorted()
	obs.LatencyP50MS = roundMS(quantile(lat, 0.5))
	obs.LatencyP95MS = roundMS(quantile(lat, 0.95))
	obs.LatencyP99MS = roundMS(quantile(lat, 0.99))
	f.obs = obs
}

// readFailures reads the node's failure process from its request
// sequence (outside its broker's alarms): the bursts, whether failures
// come at random, and the gaps between them. It runs first: lockedCalls
// (readCapacity) reorders the sequence.
func (f *nodeFinish) readFailures() {
	n, obs := f.n, f.obs
	if n.seqFull {
		return
	}
	if b := failureBurst(n.seq); b > 0 {
		obs.FailureBurstMS = roundMS(nsToMS(float64(b)))
	}
	seq, own := n.seq, n.own
	if bl := n.blocked; bl != nil {
		seq, own = outside(seq, bl.iv, bl.fastNS), bl.outOwn
	}
	gaps, verdict, ratio := failureProcess(seq, own)
	obs.FailureProcess, obs.FailureDispersion = verdict, ratio
	if gaps != nil {
		// Gaps are counts: their frequencies, as fan-out's, keep the
		// mean (the failure share) where quantiles would not.
		hist := make([]int64, int(gaps[len(gaps)-1])+1)
		for _, g := range gaps {
			hist[int(g)]++
		}
		d := fanOutDist(hist)
		f.node.Overload.Gaps = &d
		f.prov["overload.failure_gaps"] = cascade.Observed
	}
}

// readCapacity reads the node's concurrency: a pool_size metric, else
// a single instance serialised (by its departure gaps, or its calls
// waiting for the previous request's end), else a hidden pool, else
// none proven (the peak in flight only). It also reads the zombie share.
func (f *nodeFinish) readCapacity() {
	n, b := f.n, f.b
	// Departure gaps: exact from the request sequence when the node kept
	// it whole, else from the bins (which must then resolve them).
	f.gaps, f.width = &f.tls.gaps, f.tls.width
	if !n.seqFull {
		f.gaps, f.width = departureGaps(n.seq, b), 0
	}
	f.ser = len(n.instances) <= 1 && serialised(f.gaps, f.width, quantile(f.svc, 0.5))
	f.serSource = CapacitySerialised
	if !f.ser && len(n.instances) <= 1 && !n.seqFull && lockedCalls(n.seq) {
		f.ser, f.serSource = true, CapacityLocked
	}
	if !f.ser && len(n.instances) <= 1 && !n.seqFull && (f.m == nil || f.m.poolSize <= 0) {
		f.pool, f.pooled = hiddenPool(n.seq)
	}
	node, obs, prov := &f.node, f.obs, f.prov
	switch {
	case f.m != nil && f.m.poolSize > 0:
		node.Concurrency = int(math.Round(f.m.poolSize))
		obs.CapacitySource = CapacityPoolSize
		obs.CapacityProven = true
		prov["concurrency"] = cascade.Observed
	case f.ser:
		node.Concurrency = 1
		obs.CapacitySource = f.serSource
		obs.CapacityProven = true
		prov["concurrency"] = cascade.Inferred
	case f.pooled:
		f.applyPool()
	default:
		// The most requests seen in flight is what the load (or a limit
		// upstream, a lock, a caller's pool) let through, not a limit of
		// the node's own: unbounded unless a user or a metric says so.
		node.Concurrency = 0
		obs.CapacitySource = CapacityPeak
		prov["concurrency"] = cascade.ObservedPeak
	}
	if n.busy > 0 {
		obs.ZombieShare = round6(float64(n.zombie) / float64(n.busy))
	}
}

// applyPool sets the node's concurrency from the hidden pool read, its
// slowdown while waiting, and its deadline: a cap on the wait for a
// slot (an acquire timeout) or a deadline the requests give up at, whose
// failures then leave the node's own failure rate.
func (f *nodeFinish) applyPool() {
	n, b, pool := f.n, f.b, &f.pool
	node, obs, prov := &f.node, f.obs, f.prov
	node.Concurrency = pool.slots
	obs.CapacitySource = CapacityPool
	obs.CapacityProven = true
	prov["concurrency"] = cascade.Inferred
	if pool.slow > 0 {
		node.WaitSlowdown = pool.slow
		prov["wait_slowdown"] = cascade.Inferred
	}
	if pool.deadline > 0 && pool.capped {
		// Its requests are refused when they waited that long for a
		// slot (an acquire timeout): replay refuses them at the cap,
		// so those failures leave its own failure rate.
		node.WaitCapMS = roundMS(nsToMS(float64(pool.deadline)))
		prov["wait_cap_ms"] = cascade.Inferred
		node.Overload.Base = ownRate(max(0, n.own-pool.deadlineFails), n.requests)
		prov["overload.base"] = cascade.Inferred
		node.Overload.Gaps = nil
		delete(prov, "overload.failure_gaps")
		if pool.total > 0 {
			// And past the cap, a deadline on the whole request.
			node.DeadlinePropagation = true
			prov["deadline_propagation"] = cascade.Inferred
			if b.poolDeadline == nil {
				b.poolDeadline = map[string]float64{}
			}
			b.poolDeadline[n.name] = roundMS(nsToMS(float64(pool.total)))
		}
	}
	if pool.deadline > 0 && !pool.capped {
		// Its requests give up waiting at a deadline and their work
		// ends with them: replay makes those failures from the
		// waits (a timeout on the edges into it, poolDeadlines), so
		// they leave its own failure rate.
		node.DeadlinePropagation = true
		prov["deadline_propagation"] = cascade.Inferred
		node.Overload.Base = ownRate(max(0, n.own-pool.deadlineFails), n.requests)
		prov["overload.base"] = cascade.Inferred
		node.Overload.Gaps = nil
		delete(prov, "overload.failure_gaps")
		if b.poolDeadline == nil {
			b.poolDeadline = map[string]float64{}
		}
		b.poolDeadline[n.name] = roundMS(nsToMS(float64(pool.deadline)))
	}
}

// readLoadCurve reads a load curve where nothing of the node's own
// explains its load: no limit read, not a queue, not a publisher its
// broker blocks. With a slowdown curve, it deflates the exclusive times
// to their time at no load (okDefl, badDefl).
func (f *nodeFinish) readLoadCurve() {
	n, b := f.n, f.b
	if !n.seqFull && !f.ser && !f.pooled && f.node.Concurrency == 0 && n.queue == nil && n.blocked == nil {
		excl := make([]float64, len(n.seq))
		for i := range n.seq {
			excl[i] = float64(n.seq[i].exclUS) / 1e3
		}
		f.curve, f.curved = loadCurve(n.seq, excl, b.sampleScale, f.node.Replicas, int64(b.cfg.Window), b.startNS)
		if f.curved {
			f.node.LoadCurve = f.curve.curve
			f.prov["load_curve"] = cascade.Observed
			b.noteCurve(n.name, f.curve.curve)
		}
	}
	if f.curved && f.curve.slow != nil {
		for i := range n.seq {
			x := float64(n.seq[i].exclUS) / 1e3
			if n.seq[i].own {
				f.badDefl = append(f.badDefl, x) // a rejection's time is its cap's, not the load's
			} else {
				f.okDefl = append(f.okDefl, x/f.curve.slow[i])
			}
		}
		slices.Sort(f.okDefl)
		slices.Sort(f.badDefl)
	}
}

// readService reads the node's service times: the exclusive times, or
// what the capacity or load-curve phase read in their place (a
// serialised node's departure gaps, a pool's unqueued work, the times at
// no load under a slowdown curve).
func (f *nodeFinish) readService() {
	n, prov := f.n, f.prov
	if f.ser {
		// One at a time, a request holds the node through its own work
		// and its waits for synchronous calls; replay adds the waits
		// back, so the service time is the gap less the mean wait.
		var wait float64
		if n.requests > 0 {
			wait = float64(n.waitNS) / float64(n.requests)
		}
		f.svc = f.gaps.sorted()
		for i := range f.svc {
			f.svc[i] = nsToMS(max(0, f.svc[i]-wait))
		}
		f.svcMean = 0
		for _, v := range f.svc {
			f.svcMean += v
		}
		f.svcMean /= float64(len(f.svc))
		prov["service_ms"] = cascade.Inferred
	}
	if f.pooled {
		// The work of a slot: the requests that found one free. Replay
		// adds the waits for the slots from the load it replays.
		f.svc = make([]float64, len(f.pool.unqueued))
		f.svcMean = 0
		for i, d := range f.pool.unqueued {
			f.svc[i] = nsToMS(float64(d))
			f.svcMean += f.svc[i]
		}
		slices.Sort(f.svc)
		f.svcMean /= float64(len(f.svc))
		prov["service_ms"] = cascade.Inferred
	}
	if f.okDefl != nil {
		// Service is the time at no load: the slowdown curve adds the rest.
		f.svc = slices.Clone(f.okDefl)
		if len(f.badDefl) < minFailSplit {
			f.svc = append(f.svc, f.badDefl...)
			slices.Sort(f.svc)
		}
		f.svcMean = 0
		for _, v := range f.svc {
			f.svcMean += v
		}
		f.svcMean /= float64(max(1, len(f.svc)))
		prov["service_ms"] = cascade.Inferred
	}
}

// setService sets the node's service time from the times read, its
// tiers and distribution, with the service's metrics observed.
func (f *nodeFinish) setService() {
	if m := f.m; m != nil {
		f.obs.PoolSize = m.poolSize
		f.obs.QueueDepthMax = m.queueMax
		f.obs.Rejected = m.rejected
	}
	tiers := &cascade.Tiers{
		P50:    roundMS(quantile(f.svc, 0.5)),
		P95:    roundMS(quantile(f.svc, 0.95)),
		P99:    roundMS(quantile(f.svc, 0.99)),
		Mean:   roundMS(f.svcMean),
		Points: points(f.svc),
	}
	f.node.Tiers = tiers
	f.node.Service = serviceDist(f.svc, tiers)
}

// splitFailService gives the node's own failures a service time of
// their own when there are enough of them to know it: calls that fail
// on their own take their own time (fast 503s, slow errors), the others
// the rest. Not for a serialised or pooled node, whose service time is
// read otherwise.
func (f *nodeFinish) splitFailService() {
	n := f.n
	if f.ser || f.pooled || n.own < minFailSplit || n.own >= n.requests {
		return
	}
	ok, bad := n.okExcl.sorted(), n.ownExcl.sorted()
	okMean := n.okExcl.mean()
	if f.okDefl != nil && len(f.badDefl) >= minFailSplit {
		ok, bad, okMean = f.okDefl, f.badDefl, 0
		for _, v := range ok {
			okMean += v
		}
		okMean /= float64(max(1, len(ok)))
	}
	tiers := &cascade.Tiers{
		P50: roundMS(quantile(ok, 0.5)), P95: roundMS(quantile(ok, 0.95)), P99: roundMS(quantile(ok, 0.99)),
		Mean: roundMS(okMean), Points: points(ok),
	}
	f.node.Tiers = tiers
	f.node.Service = serviceDist(ok, tiers)
	fail := serviceDist(bad, &cascade.Tiers{P50: roundMS(quantile(bad, 0.5)), P95: roundMS(quantile(bad, 0.95)), P99: roundMS(quantile(bad, 0.99))})
	f.node.FailService = &fail
	f.prov["fail_service_ms"] = cascade.Observed
}

// checkLittle warns where the node's numbers disagree. Little's law:
// the in-flight average λW must match the measured one (else spans
// overlap the observation's edges or bins were lost), and the offered
// work λS must fit the capacity.
func (f *nodeFinish) checkLittle() {
	n, b, obs, node := f.n, f.b, f.obs, &f.node
	if d := math.Abs(obs.LittleL - obs.MeanInFlight); d > 0.05*obs.LittleL+0.01 {
		b.warnf("node %s: Little's law gives %.3f in flight (λW), the bins %.3f", n.name, obs.LittleL, obs.MeanInFlight)
	}
	if capacity := float64(node.Concurrency * node.Replicas); f.spanSeconds > 0 && capacity > 0 {
		if offered := float64(n.requests) / f.spanSeconds * node.Tiers.Mean / 1e3; offered > 1.05*capacity {
			b.warnf("node %s: offered work λS = %.2f exceeds the capacity estimate %g (%s)", n.name, offered, capacity, obs.CapacitySource)
		}
	}
}

// info returns the node's info: its series of windows, rounded.
func (f *nodeFinish) info() NodeInfo {
	info := NodeInfo{
		Name:       f.n.name,
		Resolution: time.Duration(f.tls.width),
		Window:     time.Duration(f.tls.window),
		Series:     f.tls.windows,
	}
	for i := range info.Series {
		info.Series[i].MeanInFlight = round6(info.Series[i].MeanInFlight)
		info.Series[i].PeakInFlight = round6(info.Series[i].PeakInFlight)
	}
	return info
}
