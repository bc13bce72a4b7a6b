package replay

// This file holds the caller's side of the end of a call: answers and
// timeouts reach the link, which retries or ends, and reports to the job
// that made the call; a caller that gives up abandons the work below it.

// onResponse takes an answer to the attempt with sequence seq.
func (e *Engine) onResponse(l int32, seq uint32, ok bool) {
	lk := e.link(l)
	if !lk.live || lk.seq != seq || !lk.waiting {
		if ok {
			e.m.late++
		}
		return
	}
	e.respond(l, lk, ok)
}

// respond takes an answer to the attempt link l (whose record is lk)
// waits for.
func (e *Engine) respond(l int32, lk *link, ok bool) {
	lk.waiting = false
	lk.seq++
	r := lk.rt
	if lk.job >= 0 {
		if n := r.callee; n.brkOn {
			n.brk.record(e, ok)
		}
	}
	lk.job = -1
	if ok {
		e.linkDone(l, lk, true)
		return
	}
	e.attemptFailed(l, lk)
}

// addTimer starts the deadline of the attempt (l, seq) on route ri.
func (e *Engine) addTimer(ri, l int32, seq uint32) {
	r := &e.routes[ri]
	if r.timerHead > 0 && r.timerHead == len(r.timers) {
		r.timers, r.timerHead = r.timers[:0], 0
	}
	at := e.now + r.timeout
	r.timers = append(r.timers, timer{at: at, link: l, seq: seq})
	if !r.timerArmed {
		r.timerArmed = true
		e.q.push(at, evTimeout, ri, 0)
	}
}

// live reports whether the attempt (l, seq) still waits for an answer.
func (e *Engine) live(l int32, seq uint32) bool {
	lk := e.link(l)
	return lk.live && lk.seq == seq && lk.waiting
}

// fireTimers times out the attempts on route ri whose deadline has come,
// skips those that have been answered, and waits for the next live one.
// Timeouts can send retries on the same route; their timers are queued
// behind, and the one event armed at the end serves them all.
func (e *Engine) fireTimers(ri int32) {
	r := &e.routes[ri]
	r.timerArmed = true // no arming by addTimer while this runs
	for r.timerHead < len(r.timers) {
		t := r.timers[r.timerHead]
		if !e.live(t.link, t.seq) {
			r.timerHead++
			continue
		}
		if t.at > e.now {
			break
		}
		r.timerHead++
		e.onTimeout(t.link, t.seq)
	}
	r.timerArmed = false
	if r.timerHead == len(r.timers) {
		r.timers, r.timerHead = r.timers[:0], 0
		return
	}
	if r.timerHead > 1024 && r.timerHead > len(r.timers)/2 {
		n := copy(r.timers, r.timers[r.timerHead:])
		r.timers, r.timerHead = r.timers[:n], 0
	}
	r.timerArmed = true
	e.q.push(r.timers[r.timerHead].at, evTimeout, ri, 0)
}

// onTimeout gives up on the attempt with sequence seq.
func (e *Engine) onTimeout(l int32, seq uint32) {
	lk := e.link(l)
	if !lk.live || lk.seq != seq || !lk.waiting {
		return
	}
	lk.waiting = false
	lk.seq++
	e.m.timeouts++
	r := lk.rt
	n := r.callee
	e.nodeFail(n)
	n.nm.timeouts++
	if n.brkOn {
		n.brk.record(e, false)
	}
	if lk.job >= 0 {
		e.abandon(lk.job, lk.jobGen)
	}
	lk.job = -1
	e.attemptFailed(l, lk)
}

// attemptFailed retries link l (whose record is lk) after its backoff,
// or ends it failed.
func (e *Engine) attemptFailed(l int32, lk *link) {
	r := lk.rt
	rt := &r.retry
	if rt.on && lk.attempt < rt.max && (rt.react >= 1 || r.retryR.Float64() < rt.react) && rt.allow(e) {
		d := rt.wait(lk.attempt, &lk.backoff, r.retryR.Rand)
		lk.seq++
		e.q.push(e.now+e.ticks(d), evRetry, l, lk.seq)
		return
	}
	if r.pub && lk.parent >= 0 {
		// A confirmed publish refused for good: its message is lost to
		// the flow. (An async publish fails its flow as it ends.)
		e.flowFail(lk.flow)
	}
	e.linkDone(l, lk, false)
}

// linkDone ends a logical call (link l, whose record is lk) and reports
// it to its parent (or records the root request).
func (e *Engine) linkDone(l int32, lk *link, ok bool) {
	r := lk.rt
	if r.entry >= 0 {
		e.m.rootDone(e, ok, e.now-lk.first)
		if lk.low {
			e.m.lowDone(ok)
		}
		if e.flowOn {
			e.flowWork(lk.flow, ok)
		}
		u := lk.user
		e.freeLink(l, lk)
		if u >= 0 {
			e.userDone(u)
		}
		return
	}
	p, pgen, is, jb := lk.parent, lk.parentGen, lk.issue, lk.pj
	if p < 0 {
		e.asyncDone(l, lk, ok)
		return
	}
	// freeLink(l, lk), by hand.
	if e.kids {
		e.unlinkKid(lk)
	}
	lk.live = false
	lk.seq++
	e.links.release(l)
	if jb.gen != pgen || jb.state != jsWaiting {
		return
	}
	jb.pending--
	ed := r.ed
	if !ok && r.prop > 0 && (r.prop >= 1 || ed.propR.Float64() < r.prop) {
		// A failure that fails the caller, unless a fallback answers
		// for it (drawn after the propagation, from a stream of its own,
		// so that the draws of models without one stay as they were).
		if ed.fbOn && (ed.fb >= 1 || ed.fbR.Float64() < ed.fb) {
			e.m.degraded++
			e.rt(jb).callee.nm.degraded++
		} else {
			jb.fl |= jfChildFail
		}
	}
	if is >= 0 || ed.shared || jb.childFail() {
		e.childDone(p, jb, is, ed)
		return
	}
	if jb.pending == 0 {
		if jb.issues >= 0 {
			e.freeIssues(jb)
		}
		jb.stage++
		e.runStages(p, jb)
	}
}

// childDone is the end of linkDone for a call with a progress record or
// a shared pool, or one that fails its caller (job p).
func (e *Engine) childDone(p int32, jb *job, is int32, ed *edge) {
	pgen := jb.gen
	var rec *issue
	if is >= 0 {
		rec = e.issues.at(is)
		rec.active--
	}
	var pl *pool
	if ed.shared {
		pl = e.nodes[ed.from].pool(jb.rep, ed.pool)
		pl.free++
	}
	if jb.childFail() {
		// Fail fast: the request fails now; calls still out are abandoned.
		e.freeIssues(jb)
		e.abandonKids(p)
		e.finish(p, jb)
		if pl != nil {
			e.servePool(pl)
		}
		return
	}
	if pl != nil {
		e.servePool(pl)
	} else if rec != nil && rec.left > 0 {
		// pump(is, rec), which issues exactly one call here: it keeps
		// rec.active at most the edge's parallelism, and one just ended.
		e.issueOne(is, rec, ed)
	}
	if jb.pending == 0 && jb.state == jsWaiting && jb.gen == pgen {
		e.freeIssues(jb)
		jb.stage++
		e.runStages(p, jb)
	}
}

// abandon marks a job whose caller gave up, and the calls it has out,
// whose work now serves nobody. A node with deadline propagation cancels
// such work where it runs (queued work is dropped when it reaches a
// worker, in start); elsewhere it goes on as zombie work.
func (e *Engine) abandon(j int32, gen uint32) {
	jb := e.jobs.at(j)
	if jb.gen != gen || jb.state == jsFree || jb.abandoned {
		return
	}
	jb.abandoned = true
	if jb.state == jsRunning || jb.state == jsWaiting {
		e.setZoff(j, jb, e.now-jb.start)
	}
	n := e.rt(jb).callee
	if jb.state == jsQueued && n.deadline && !jb.refused() {
		n.reps[jb.rep].qdead++ // dropped unserved when it reaches a slot
	}
	if jb.state != jsRunning && jb.state != jsWaiting {
		return
	}
	if !n.deadline {
		if !e.kids {
			return // no lists (and a lean attempt's kids is its issue)
		}
		for l := jb.kids; l >= 0; l = e.link(l).next {
			if lk := e.link(l); lk.job >= 0 {
				e.abandon(lk.job, lk.jobGen)
			}
		}
		return
	}
	e.m.cancelled++
	n.nm.cancelled++
	e.m.slotTicks += e.now - jb.start
	e.q.push(e.now, evRespFail, jb.link, jb.linkSeq)
	e.freeIssues(jb)
	e.abandonKids(j)
	n.reps[jb.rep].busy--
	e.busyAdd(n, -1)
	rep := jb.rep
	e.freeJob(j, jb)
	e.drain(n, rep)
}

// abandonKids gives up on every call the job still has out. A model
// without children lists (Engine.kids) has none to walk, and a lean
// attempt's kids field holds its caller's issue record instead.
func (e *Engine) abandonKids(j int32) {
	if !e.kids {
		return
	}
	for {
		jb := e.jobs.at(j)
		l := jb.kids
		if l < 0 {
			return
		}
		lk := e.link(l)
		cj, cgen := lk.job, lk.jobGen
		var pl *pool
		if ed := lk.rt.ed; ed.shared {
			pl = e.nodes[ed.from].pool(jb.rep, ed.pool)
		}
		e.freeLink(l, lk)
		if cj >= 0 {
			e.abandon(cj, cgen)
		}
		if pl != nil {
			pl.free++
			e.servePool(pl)
		}
	}
}
