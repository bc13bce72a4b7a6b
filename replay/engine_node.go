package replay

// This file holds the callee's side of an attempt: it arrives, takes a
// slot or queues (or is turned back by a full queue), is dropped when
// its caller gave up at a node that propagates deadlines, and starts its
// work, drawing its service time and overload failure.

import "math"

// arrive places job j (whose record is jb) that reached its callee: on
// a free slot, in a queue, or back to the caller when the queue is full.
func (e *Engine) arrive(j int32, jb *job) {
	r := e.rt(jb)
	n := r.callee
	jb.arrive = e.now
	e.nodeCall(n)
	rep := r.base // the replica's shared slots, or its bulkhead's
	if n.replicas > 1 {
		if n.lb == lbRoundRobin {
			// pickReplica's default, inline.
			rep += n.rr
			n.rr = n.nextRR()
		} else {
			rep = e.pickReplica(n, rep)
		}
	}
	jb.rep = rep
	if rp := &n.reps[rep]; rp.conc == 0 || rp.busy < rp.conc {
		e.start(j, jb, rp)
		return
	}
	e.enqueue(j, jb, n)
}

// enqueue queues job j at its replica, or answers at once that the
// queue is full.
func (e *Engine) enqueue(j int32, jb *job, n *node) {
	rp := &n.reps[jb.rep]
	if full, shed := n.qcap > 0 && rp.qlen >= n.qcap, jb.low() && rp.qlen >= n.shedLow; full || shed {
		if shed && !full {
			// A priority split turns the low class away first.
			e.m.shed++
		} else {
			e.m.rejectedQueue++
		}
		e.nodeReject(n)
		l, seq, r := jb.link, jb.linkSeq, e.rt(jb)
		lk := e.link(l)
		e.freeJob(j, jb)
		// A caller that gave up has moved on; one that still waits (a
		// zombie itself, whose own caller gave up) must hear back, or it
		// would hold its slot for good.
		if lk.live && lk.seq == seq && lk.waiting {
			// Through an event even without network delay: the caller
			// may be in the middle of issuing this very call.
			at := e.now
			if r.netOn {
				at += r.netTicks(e.perMS)
			}
			e.q.push(at, evRespFail, l, seq)
		}
		return
	}
	jb.state = jsQueued
	jb.setQnext(-1)
	if rp.qtail >= 0 {
		e.jobs.at(rp.qtail).setQnext(j)
	} else {
		rp.qhead = j
	}
	rp.qtail = j
	rp.qlen++
	if jb.abandoned && n.deadline {
		rp.qdead++
	}
	if n.wcap > 0 {
		e.q.push(e.now+n.wcap, evWaitCap, j, jb.gen)
	}
	e.queuedAdd(n, 1)
	if q := int(rp.qlen); q > n.nm.queueMaxRep {
		n.nm.queueMaxRep = q
	}
	if q := int(n.queued); q > n.nm.queueMax {
		n.nm.queueMax = q
	}
}

// start gives job j (whose record is jb) a slot of its replica rp, or
// drops it when its caller has given up and the node propagates
// deadlines.
func (e *Engine) start(j int32, jb *job, rp *replica) {
	n := e.rt(jb).callee
	if jb.abandoned && n.deadline {
		e.drop(j, jb, n)
		return
	}
	var load float64 // calls starting per second per replica, for a load curve
	if n.curve != nil {
		load = e.curveLoad(n)
	}
	rp.busy++
	// busyAdd(n, 1), by hand: it is too big for the inliner.
	if nm := &n.nm; e.now < nm.wEnd {
		n.busy++
		nm.bInt[nm.w] += nm.stop - e.now
	} else {
		e.busyAdd(n, 1)
	}
	if b := int(n.busy); b > n.nm.inflightMax {
		n.nm.inflightMax = b
	}
	jb.state = jsRunning
	jb.start = e.now
	if n.overOn {
		// A job starts once, with jfFailed clear since it was made.
		var failed bool
		if n.curveFail {
			p, _ := n.curve.FailAt(load)
			failed = n.failR.Float64() < p
		} else {
			failed = e.overloaded(n)
		}
		if failed {
			jb.fl |= jfFailed
		}
	}
	e.m.starts++
	var d int64 // ticks
	if jb.failed() && n.failSvcOn {
		d = n.svcTicks(n.failSvc.draw(n.svcR.Rand))
	} else if n.svcBatched {
		// The next of svcBuf (see refillSvc).
		k := n.svcK
		if k >= svcBatch {
			n.refillSvc()
			k = 0
		}
		n.svcK = k + 1
		d = n.svcBuf[k]
	} else if n.curve != nil || n.wslow > 0 {
		f := n.curve.SlowdownAt(load)
		if n.wslow > 0 {
			f *= 1 + n.wslow*float64(max(0, rp.qlen-rp.qdead))
		}
		d = n.svcTicks(n.svc.draw(n.svcR.Rand) * f)
	} else if n.svc.kind == sExpMean {
		d = n.svcTicks(n.svcR.Rand.ExpFloat64() * n.svc.a)
	} else {
		d = n.svcTicks(n.svc.draw(n.svcR.Rand))
	}
	// e.q.push(e.now+d, evJobDone, j, jb.gen), by hand (see call).
	q := &e.q
	at, i := e.now+d, q.free
	if uint64(at-q.now) >= wheelSize || i < 0 {
		q.pushSlow(at, evJobDone, j, jb.gen)
		return
	}
	sl := &q.ev[i]
	q.free = sl.next
	*sl = slot{next: -1, id: j, gen: jb.gen, kind: evJobDone}
	q.count++
	q.link(i, at)
}

// drop cancels abandoned work that reaches a worker of a node with
// deadline propagation.
func (e *Engine) drop(j int32, jb *job, n *node) {
	e.m.cancelled++
	n.nm.cancelled++
	// A caller that still waits (a zombie itself) learns at once.
	e.q.push(e.now, evRespFail, jb.link, jb.linkSeq)
	e.freeJob(j, jb)
}

// overloaded draws whether a call that starts at n fails from overload.
func (e *Engine) overloaded(n *node) bool {
	rho := 0.0
	if n.capacity > 0 {
		rho = float64(n.busy+n.queued) / n.capacity
	}
	if n.gapsOn {
		return e.processFails(n, rho)
	}
	return n.failR.Float64() < n.over.At(rho)
}

// processFails is overloaded for a node with a failure process: the base
// failures come when the countdown of calls runs out, the load-dependent
// excess over the base call by call. The first countdown is a uniform
// share of a drawn gap, so a replay starts part-way through a gap as an
// observation does.
func (e *Engine) processFails(n *node, rho float64) bool {
	if n.countdown <= 0 {
		n.countdown = 1 + n.failR.Rand.IntN(n.drawGap())
	}
	n.countdown--
	if n.countdown == 0 {
		n.countdown = n.drawGap()
		return true
	}
	excess := n.over.At(rho) - math.Min(1, math.Max(0, n.over.Base))
	return excess > 0 && n.failR.Float64() < excess
}

// drawGap draws the calls from one own failure to the next, at least 1.
func (n *node) drawGap() int {
	return max(1, int(math.Round(n.gaps.draw(n.failR.Rand))))
}

// drain starts queued jobs of replica r while it has free slots.
func (e *Engine) drain(n *node, r int32) {
	rp := &n.reps[r]
	for rp.qlen > 0 && (rp.conc == 0 || rp.busy < rp.conc) {
		j := rp.qhead
		jb := e.jobs.at(j)
		rp.qhead = jb.qnext() // before start overwrites it
		if rp.qhead < 0 {
			rp.qtail = -1
		}
		rp.qlen--
		if jb.refused() || (jb.abandoned && n.deadline) {
			rp.qdead--
		}
		e.queuedAdd(n, -1)
		if jb.refused() {
			e.freeJob(j, jb) // its caller heard at the cap
			continue
		}
		e.start(j, jb, rp)
	}
}

// onWaitCap refuses job j (generation gen) if it still waits for a slot
// when its node's wait cap is over: a failure of the node's own, which
// its caller hears at once. The job stays in the queue, not a waiter any
// more (qdead), and leaves it unserved when it reaches its head (drain).
func (e *Engine) onWaitCap(j int32, gen uint32) {
	jb := e.jobs.at(j)
	if jb.gen != gen || jb.state != jsQueued || jb.refused() {
		return
	}
	n := e.rt(jb).callee
	jb.fl |= jfRefused
	if !(jb.abandoned && n.deadline) {
		n.reps[jb.rep].qdead++
	}
	e.m.rejectedQueue++
	e.nodeReject(n)
	lk, seq := e.link(jb.link), jb.linkSeq
	if lk.live && lk.seq == seq && lk.waiting {
		at := e.now
		if r := e.rt(jb); r.netOn {
			at += r.netTicks(e.perMS)
		}
		e.q.push(at, evRespFail, jb.link, seq)
	}
}
