package replay

// This file holds the end of a call: a job that did its work frees its
// slot and answers its caller (the general path, and the lean ones of
// leaves and parents in models without children lists).

// finish ends a job that did its work: frees its slot and answers its
// caller, unless the caller has given up on this attempt. Abandoned work
// still answers a caller that waits: that caller is zombie work itself
// (its own caller gave up), and it must hear back to finish and free its
// slot, as a real server's handler does when its downstream call returns.
func (e *Engine) finish(j int32, jb *job) {
	if jb.link < 0 {
		e.finishLean(j, jb)
		return
	}
	r := e.rt(jb)
	n := r.callee
	ok := !jb.failed() && !jb.childFail()
	// n.nm.latency.add(e.now - jb.arrive), by hand: add does not
	// inline with its call to grow.
	h := &n.nm.latency
	o, s := histBucket(uint64(e.now - jb.arrive))
	c := h.oct[o]
	if c == nil {
		c = h.grow(o)
	}
	c[s&(1<<histSub-1)]++
	h.n++
	e.m.slotTicks += e.now - jb.start
	if jb.abandoned || !ok {
		e.finishBadly(j, jb, n)
	}
	l, seq, rep := jb.link, jb.linkSeq, jb.rep
	lk := e.link(l)
	if jb.issues >= 0 {
		e.freeIssues(jb)
	}
	rp := &n.reps[rep]
	rp.busy--
	// busyAdd(n, -1), by hand.
	if nm := &n.nm; e.now < nm.wEnd {
		n.busy--
		nm.bInt[nm.w] -= nm.stop - e.now
	} else {
		e.busyAdd(n, -1)
	}
	e.freeJob(j, jb)
	if rp.qlen > 0 {
		e.drain(n, rep)
	}
	if !lk.live || lk.seq != seq || !lk.waiting {
		return // the caller gave up on this attempt
	}
	if r.netOn {
		e.answer(l, seq, r, ok)
		return
	}
	// respond(l, lk, ok), by hand: the link waits for this very job
	// (lk.job == j), at this node.
	lk.waiting = false
	lk.seq++
	if n.brkOn {
		n.brk.record(e, ok)
	}
	lk.job = -1
	if !ok {
		e.attemptFailed(l, lk)
		return
	}
	if r.entry >= 0 {
		e.linkDone(l, lk, true)
		return
	}
	// linkDone(l, lk, true), by hand, for a call between nodes.
	p, pgen, is, pj := lk.parent, lk.parentGen, lk.issue, lk.pj
	if p < 0 {
		e.asyncDone(l, lk, true)
		return
	}
	if e.kids {
		e.unlinkKid(lk)
	}
	lk.live = false
	lk.seq++
	e.links.release(l)
	if pj.gen != pgen || pj.state != jsWaiting {
		return
	}
	pj.pending--
	if ed := r.ed; is >= 0 || ed.shared || pj.childFail() {
		e.childDone(p, pj, is, ed)
		return
	}
	if pj.pending == 0 {
		if pj.issues >= 0 {
			e.freeIssues(pj)
		}
		pj.stage++
		e.runStages(p, pj)
	}
}

// finishLeaf is finish for a leaf's lean attempt (Engine.call): it did
// its work, and its caller waits for it. The steps are finish's, in the
// same order, without those its kind of call never needs.
func (e *Engine) finishLeaf(j int32, jb *job) {
	r := e.rt(jb)
	n := r.callee
	h := &n.nm.latency
	o, s := histBucket(uint64(e.now - jb.arrive))
	c := h.oct[o]
	if c == nil {
		c = h.grow(o)
	}
	c[s&(1<<histSub-1)]++
	h.n++
	e.m.slotTicks += e.now - jb.start
	rep := jb.rep
	p, pgen, is := jb.leanCaller()
	pj := e.jobs.at(p)
	rp := &n.reps[rep]
	rp.busy--
	if nm := &n.nm; e.now < nm.wEnd {
		n.busy--
		nm.bInt[nm.w] -= nm.stop - e.now
	} else {
		e.busyAdd(n, -1)
	}
	// freeJob, by hand.
	jb.gen++
	jb.state = jsFree
	e.njobs--
	e.jobs.release(j)
	if rp.qlen > 0 {
		e.drain(n, rep)
	}
	if pj.gen != pgen || pj.state != jsWaiting {
		return
	}
	pj.pending--
	if ed := r.ed; is >= 0 || ed.shared || pj.childFail() {
		e.childDone(p, pj, is, ed)
		return
	}
	if pj.pending == 0 {
		if pj.issues >= 0 {
			e.freeIssues(pj)
		}
		pj.stage++
		e.runStages(p, pj)
	}
}

// finishLean is finish for a parent's lean attempt (Engine.call): it
// did its work and its calls, and its caller waits for it. The steps are
// finish's, in the same order, without those its kind of call never
// needs: it cannot fail on its own (its node has no overload curve) nor
// be abandoned (nothing times out), but a child's failure can fail it.
func (e *Engine) finishLean(j int32, jb *job) {
	r := e.rt(jb)
	n := r.callee
	ok := !jb.childFail()
	h := &n.nm.latency
	o, s := histBucket(uint64(e.now - jb.arrive))
	c := h.oct[o]
	if c == nil {
		c = h.grow(o)
	}
	c[s&(1<<histSub-1)]++
	h.n++
	e.m.slotTicks += e.now - jb.start
	if !ok {
		e.nodeFail(n)
	}
	rep := jb.rep
	p, pgen, is := jb.leanCaller()
	pj := e.jobs.at(p)
	if jb.issues >= 0 {
		e.freeIssues(jb)
	}
	rp := &n.reps[rep]
	rp.busy--
	if nm := &n.nm; e.now < nm.wEnd {
		n.busy--
		nm.bInt[nm.w] -= nm.stop - e.now
	} else {
		e.busyAdd(n, -1)
	}
	if !ok {
		e.leanFailed(j, jb, n, rep)
		return
	}
	// freeJob, by hand.
	jb.gen++
	jb.state = jsFree
	e.njobs--
	e.jobs.release(j)
	if rp.qlen > 0 {
		e.drain(n, rep)
	}
	if pj.gen != pgen || pj.state != jsWaiting {
		return
	}
	pj.pending--
	if ed := r.ed; is >= 0 || ed.shared || pj.childFail() {
		e.childDone(p, pj, is, ed)
		return
	}
	if pj.pending == 0 {
		if pj.issues >= 0 {
			e.freeIssues(pj)
		}
		pj.stage++
		e.runStages(p, pj)
	}
}

// leanFailed ends finishLean for an attempt that failed (job j, whose
// record is jb, at replica rep of n): its caller may retry it, which
// takes a link, so the link call would have made is made now, as call
// would have left it once finish answered it, and the failure goes to
// attemptFailed as in finish.
//
//go:noinline
func (e *Engine) leanFailed(j int32, jb *job, n *node, rep int32) {
	r := e.rt(jb)
	l := e.links.alloc()
	lk := e.links.at(l)
	lk.seq += 3 // call's two and the answer's
	lk.live, lk.waiting = true, false
	lk.rt = r
	p, pgen, is := jb.leanCaller()
	lk.parent, lk.parentGen, lk.issue, lk.pj = p, pgen, is, e.jobs.at(p)
	lk.flow = jb.flow
	lk.user = -1
	lk.attempt, lk.job, lk.prev, lk.next = 1, -1, -1, -1
	lk.first, lk.backoff, lk.depth = jb.arrive, 0, 0
	lk.low = jb.low()
	e.freeJob(j, jb)
	if n.reps[rep].qlen > 0 {
		e.drain(n, rep)
	}
	e.attemptFailed(l, lk)
}

// finishBadly counts a job that finishes as zombie work or failed.
func (e *Engine) finishBadly(j int32, jb *job, n *node) {
	if jb.abandoned {
		e.m.zombies++
		n.nm.zombies++
		e.m.zombieTicks += e.now - e.zombieFrom(j, jb)
		return
	}
	e.nodeFail(n)
}

// answer delivers an answer to link l over route r: after the network
// delay, or at once (without an event) when the route has none.
func (e *Engine) answer(l int32, seq uint32, r *route, ok bool) {
	if !r.netOn {
		e.onResponse(l, seq, ok)
		return
	}
	kind := evRespFail
	if ok {
		kind = evRespOK
	}
	e.q.push(e.now+r.netTicks(e.perMS), kind, l, seq)
}

func (e *Engine) freeJob(j int32, jb *job) {
	jb.gen++
	jb.state = jsFree
	e.njobs--
	e.jobs.release(j)
}
