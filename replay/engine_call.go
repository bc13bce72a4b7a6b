package replay

// This file holds the life of a call: a link (the caller's side, with its
// attempts, timer and retries) sends jobs (attempts) to the callee, where
// they queue, work, call their own children stage by stage, and answer.

// maxDepth bounds chains of calls: a job this deep in its request's call
// tree does not call its children (Counts.Truncated counts them), so a
// cycle in the graph (a node that calls itself) cannot recurse forever.
const maxDepth = 64

// maxJobs bounds the attempts in flight at once. A replay that needs more
// (fan-out on a cycle multiplies calls at every turn) stops early, and
// Replay and RunSeeds report ErrRunaway.
const maxJobs = 1 << 22

// loop runs events until the queue is empty or the replay ends.
func (e *Engine) loop() {
	for {
		ev, ok := e.q.pop()
		if !ok || ev.at >= e.end {
			break
		}
		e.now = ev.at
		switch ev.kind {
		case evArrival:
			e.onArrival(ev.id)
		case evUser:
			e.onUser(ev.id)
		case evJobArrive:
			if jb := e.jobs.at(ev.id); jb.gen == ev.gen && jb.state == jsNet {
				e.arrive(ev.id)
			}
		case evJobDone:
			if jb := e.jobs.at(ev.id); jb.gen == ev.gen && jb.state == jsRunning {
				e.workDone(ev.id)
			}
		case evRespOK:
			e.onResponse(ev.id, ev.gen, true)
		case evRespFail:
			e.onResponse(ev.id, ev.gen, false)
		case evTimeout:
			e.fireTimers(ev.id)
		case evRetry:
			if lk := e.links.at(ev.id); lk.live && lk.seq == ev.gen && !lk.waiting {
				e.send(ev.id)
			}
		}
		if e.check != nil {
			e.check(ev)
		}
		if e.jobs.n-int32(len(e.jobs.free)) > e.maxJobs {
			e.m.aborted = true
			break
		}
	}
	e.now = e.end
}

// newRoot starts a root request at entry en for closed-loop user u (or
// -1).
func (e *Engine) newRoot(en int32, u int32) {
	e.m.rootOffered(e)
	l := e.newLink(int32(len(e.edges))+en, -1, 0, -1, u)
	e.send(l)
}

// newLink allocates a link on route r for parent job p (or -1).
func (e *Engine) newLink(r, p int32, pgen uint32, is int32, u int32) int32 {
	l := e.links.alloc()
	lk := e.links.at(l)
	seq := lk.seq
	*lk = link{seq: seq + 1, live: true, route: r, parent: p, parentGen: pgen, issue: is,
		user: u, job: -1, prev: -1, next: -1, first: e.now}
	if p >= 0 {
		jb := e.jobs.at(p)
		lk.next = jb.kids
		if jb.kids >= 0 {
			e.links.at(jb.kids).prev = l
		}
		jb.kids = l
	}
	return l
}

// freeLink ends a link: events that still name it become stale.
func (e *Engine) freeLink(l int32) {
	lk := e.links.at(l)
	if lk.parent >= 0 {
		jb := e.jobs.at(lk.parent)
		if jb.gen == lk.parentGen {
			if lk.prev >= 0 {
				e.links.at(lk.prev).next = lk.next
			} else {
				jb.kids = lk.next
			}
			if lk.next >= 0 {
				e.links.at(lk.next).prev = lk.prev
			}
		}
	}
	lk.live = false
	lk.seq++
	e.links.release(l)
}

// send sends the link's next attempt.
func (e *Engine) send(l int32) {
	lk := e.links.at(l)
	r := &e.routes[lk.route]
	lk.attempt++
	lk.seq++
	lk.waiting = true
	lk.job = -1
	seq := lk.seq
	e.m.calls++
	if lk.attempt > 1 {
		e.m.retries++
	} else if r.retry.budgetOn {
		r.retry.deposit(e)
	}
	n := &e.nodes[r.to]
	if r.edge >= 0 {
		if ed := &e.edges[r.edge]; ed.availOn && !ed.avail.up(e, &ed.availR) {
			e.m.unavailable++
			e.q.push(e.now, evRespFail, l, seq)
			return
		}
	} else if en := &e.entries[r.entry]; en.rlOn && !en.rl.take(e) {
		e.m.rejectedLimit++
		e.q.push(e.now, evRespFail, l, seq)
		return
	}
	if n.brkOn && !n.brk.allow(e) {
		e.m.rejectedBreaker++
		e.nodeCall(n)
		e.nodeReject(n)
		e.q.push(e.now, evRespFail, l, seq)
		return
	}
	j := e.jobs.alloc()
	jb := e.jobs.at(j)
	gen := jb.gen
	*jb = job{gen: gen, state: jsNet, link: l, linkSeq: seq, route: lk.route, node: r.to,
		qnext: -1, issues: -1, kids: -1}
	lk.job, lk.jobGen = j, gen
	jb.depth = lk.depth
	if lk.parent >= 0 {
		pj := e.jobs.at(lk.parent)
		jb.depth = pj.depth + 1
		// A call sent for a request that is already gone is zombie work
		// from the start.
		if pj.gen == lk.parentGen && pj.abandoned {
			jb.abandoned = true
			jb.abandonAt = e.now
		}
	}
	if r.timeout > 0 {
		e.addTimer(lk.route, l, seq)
	}
	if r.netOn {
		e.q.push(e.now+e.ticks(r.net.draw(r.netR.Rand)), evJobArrive, j, gen)
		return
	}
	e.arrive(j)
}

// arrive places a job that reached its callee: on a free slot, in a
// queue, or back to the caller when the queue is full.
func (e *Engine) arrive(j int32) {
	jb := e.jobs.at(j)
	n := &e.nodes[jb.node]
	jb.arrive = e.now
	e.nodeCall(n)
	jb.rep = e.pickReplica(n)
	rp := &n.reps[jb.rep]
	if n.conc == 0 || rp.busy < n.conc {
		e.start(j)
		return
	}
	if n.qcap > 0 && rp.qlen >= n.qcap {
		e.m.rejectedQueue++
		e.nodeReject(n)
		answer, l, seq, route := !jb.abandoned, jb.link, jb.linkSeq, jb.route
		e.freeJob(j)
		if answer {
			// Through an event even without network delay: the caller
			// may be in the middle of issuing this very call.
			r := &e.routes[route]
			at := e.now
			if r.netOn {
				at += e.ticks(r.net.draw(r.netR.Rand))
			}
			e.q.push(at, evRespFail, l, seq)
		}
		return
	}
	e.touch(n)
	jb.state = jsQueued
	if rp.qtail >= 0 {
		e.jobs.at(rp.qtail).qnext = j
	} else {
		rp.qhead = j
	}
	rp.qtail = j
	rp.qlen++
	n.queued++
	if q := int(rp.qlen); q > n.nm.queueMaxRep {
		n.nm.queueMaxRep = q
	}
	if q := int(n.queued); q > n.nm.queueMax {
		n.nm.queueMax = q
	}
}

// start gives job j a slot of its replica, or drops it when its caller
// has given up and the node propagates deadlines.
func (e *Engine) start(j int32) {
	jb := e.jobs.at(j)
	n := &e.nodes[jb.node]
	if jb.abandoned && n.deadline {
		e.m.cancelled++
		n.nm.cancelled++
		// A caller that still waits (a zombie itself) learns at once.
		e.q.push(e.now, evRespFail, jb.link, jb.linkSeq)
		e.freeJob(j)
		return
	}
	e.touch(n)
	n.reps[jb.rep].busy++
	n.busy++
	if b := int(n.busy); b > n.nm.inflightMax {
		n.nm.inflightMax = b
	}
	jb.state = jsRunning
	jb.start = e.now
	if n.overOn {
		rho := 0.0
		if n.capacity > 0 {
			rho = float64(n.busy+n.queued) / n.capacity
		}
		jb.failed = n.failR.Float64() < n.over.At(rho)
	}
	e.m.starts++
	e.q.push(e.now+e.ticks(n.svc.draw(n.svcR.Rand)), evJobDone, j, jb.gen)
}

// drain starts queued jobs of replica r while it has free slots.
func (e *Engine) drain(n *node, r int32) {
	rp := &n.reps[r]
	for rp.qlen > 0 && (n.conc == 0 || rp.busy < n.conc) {
		j := rp.qhead
		jb := e.jobs.at(j)
		rp.qhead = jb.qnext
		if rp.qhead < 0 {
			rp.qtail = -1
		}
		rp.qlen--
		e.touch(n)
		n.queued--
		e.start(j)
	}
}

// workDone ends a job's own time: it fails, or calls its children.
func (e *Engine) workDone(j int32) {
	jb := e.jobs.at(j)
	if jb.failed {
		e.finish(j)
		return
	}
	jb.stage = 0
	e.runStages(j)
}

// runStages issues the calls of the job's current stage, moving on while
// a stage has nothing to wait for, and finishes the job after the last.
func (e *Engine) runStages(j int32) {
	jb := e.jobs.at(j)
	n := &e.nodes[jb.node]
	if jb.depth >= maxDepth && len(n.stages) > 0 {
		// A cycle of calls that never ends: stop it here.
		e.m.truncated++
		jb.stage = int32(len(n.stages))
	}
	for int(jb.stage) < len(n.stages) {
		jb.state = jsWaiting
		for _, ei := range n.stages[jb.stage] {
			ed := &e.edges[ei]
			c := int32(ed.fan.count(ed.fanR.Rand))
			if c <= 0 {
				continue
			}
			if ed.async {
				for k := int32(0); k < c; k++ {
					l := e.newLink(ei, -1, 0, -1, -1)
					e.links.at(l).depth = jb.depth + 1
					e.send(l)
				}
				continue
			}
			if !ed.shared && (ed.par == 0 || c <= ed.par) {
				// Nothing limits these calls: send them all now, with no
				// progress record.
				jb.pending += c
				for k := int32(0); k < c; k++ {
					e.send(e.newLink(ei, j, jb.gen, -1, -1))
				}
				continue
			}
			is := e.issues.alloc()
			*e.issues.at(is) = issue{job: j, jobGen: jb.gen, edge: ei, left: c, next: jb.issues, wnext: -1}
			jb.issues = is
			jb.pending += c
		}
		gen := jb.gen
		for is := jb.issues; is >= 0; is = e.issues.at(is).next {
			e.pump(is)
			if jb.gen != gen {
				return // cannot happen while sends answer through events; kept as a guard
			}
		}
		if jb.pending > 0 {
			return
		}
		e.freeIssues(jb)
		jb.stage++
	}
	e.finish(j)
}

// pump issues as many of an issue record's calls as its parallelism (or
// shared pool) allows.
func (e *Engine) pump(i int32) {
	is := e.issues.at(i)
	ed := &e.edges[is.edge]
	if ed.shared {
		if is.waiting {
			return
		}
		jb := e.jobs.at(is.job)
		pl := &e.nodes[ed.from].reps[jb.rep].pools[ed.pool]
		for is.left > 0 && pl.free > 0 && pl.whead < 0 {
			pl.free--
			e.issueOne(i)
		}
		if is.left > 0 {
			is.waiting = true
			is.wnext = -1
			if pl.wtail >= 0 {
				e.issues.at(pl.wtail).wnext = i
			} else {
				pl.whead = i
			}
			pl.wtail = i
		}
		return
	}
	for is.left > 0 && (ed.par == 0 || is.active < ed.par) {
		e.issueOne(i)
	}
}

func (e *Engine) issueOne(i int32) {
	is := e.issues.at(i)
	is.left--
	is.active++
	e.send(e.newLink(is.edge, is.job, is.jobGen, i, -1))
}

// servePool hands a shared pool's free calls to its waiters, in order.
func (e *Engine) servePool(pl *pool) {
	for pl.free > 0 && pl.whead >= 0 {
		w := pl.whead
		ws := e.issues.at(w)
		if !ws.dead && ws.left > 0 {
			pl.free--
			e.issueOne(w)
		}
		if ws.dead || ws.left == 0 {
			pl.whead = ws.wnext
			if pl.whead < 0 {
				pl.wtail = -1
			}
			ws.waiting = false
			if ws.dead {
				e.issues.release(w)
			}
		}
	}
}

// freeIssues releases the job's issue records; those still queued at a
// shared pool are released when the pool reaches them.
func (e *Engine) freeIssues(jb *job) {
	for i := jb.issues; i >= 0; {
		is := e.issues.at(i)
		next := is.next
		if is.waiting {
			is.dead = true
		} else {
			e.issues.release(i)
		}
		i = next
	}
	jb.issues = -1
}

// finish ends a job that did its work: frees its slot and answers its
// caller, unless the caller has gone.
func (e *Engine) finish(j int32) {
	jb := e.jobs.at(j)
	n := &e.nodes[jb.node]
	ok := !jb.failed && !jb.childFail
	n.nm.latency.add(e.now - jb.arrive)
	e.m.slotTicks += e.now - jb.start
	answer := !jb.abandoned
	if !answer {
		e.m.zombies++
		n.nm.zombies++
		e.m.zombieTicks += e.now - max(jb.start, jb.abandonAt)
	} else if !ok {
		e.nodeFail(n)
	}
	l, seq, route := jb.link, jb.linkSeq, jb.route
	e.freeIssues(jb)
	e.touch(n)
	n.reps[jb.rep].busy--
	n.busy--
	rep := jb.rep
	e.freeJob(j)
	e.drain(n, rep)
	if answer {
		e.answer(l, seq, route, ok)
	}
}

// answer delivers an answer to link l over route: after the network
// delay, or at once (without an event) when the route has none.
func (e *Engine) answer(l int32, seq uint32, route int32, ok bool) {
	r := &e.routes[route]
	if !r.netOn {
		e.onResponse(l, seq, ok)
		return
	}
	kind := evRespFail
	if ok {
		kind = evRespOK
	}
	e.q.push(e.now+e.ticks(r.net.draw(r.netR.Rand)), kind, l, seq)
}

func (e *Engine) freeJob(j int32) {
	jb := e.jobs.at(j)
	jb.gen++
	jb.state = jsFree
	e.jobs.release(j)
}

// onResponse takes an answer to the attempt with sequence seq.
func (e *Engine) onResponse(l int32, seq uint32, ok bool) {
	lk := e.links.at(l)
	if !lk.live || lk.seq != seq || !lk.waiting {
		if ok {
			e.m.late++
		}
		return
	}
	lk.waiting = false
	lk.seq++
	r := &e.routes[lk.route]
	if lk.job >= 0 {
		if n := &e.nodes[r.to]; n.brkOn {
			n.brk.record(e, ok)
		}
	}
	lk.job = -1
	if ok {
		e.linkDone(l, true)
		return
	}
	e.attemptFailed(l)
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
	lk := e.links.at(l)
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
	lk := e.links.at(l)
	if !lk.live || lk.seq != seq || !lk.waiting {
		return
	}
	lk.waiting = false
	lk.seq++
	e.m.timeouts++
	r := &e.routes[lk.route]
	n := &e.nodes[r.to]
	e.nodeFail(n)
	n.nm.timeouts++
	if n.brkOn {
		n.brk.record(e, false)
	}
	if lk.job >= 0 {
		e.abandon(lk.job, lk.jobGen)
	}
	lk.job = -1
	e.attemptFailed(l)
}

// attemptFailed retries the link after its backoff, or ends it failed.
func (e *Engine) attemptFailed(l int32) {
	lk := e.links.at(l)
	r := &e.routes[lk.route]
	rt := &r.retry
	if rt.on && lk.attempt < rt.max && (rt.react >= 1 || r.retryR.Float64() < rt.react) && rt.allow(e) {
		d := rt.wait(lk.attempt, &lk.backoff, r.retryR.Rand)
		lk.seq++
		e.q.push(e.now+e.ticks(d), evRetry, l, lk.seq)
		return
	}
	e.linkDone(l, false)
}

// linkDone ends a logical call and reports it to its parent (or records
// the root request).
func (e *Engine) linkDone(l int32, ok bool) {
	lk := e.links.at(l)
	r := &e.routes[lk.route]
	if r.entry >= 0 {
		e.m.rootDone(e, ok, e.now-lk.first)
		u := lk.user
		e.freeLink(l)
		if u >= 0 {
			e.userDone(u)
		}
		return
	}
	p, pgen, is := lk.parent, lk.parentGen, lk.issue
	e.freeLink(l)
	if p < 0 {
		return
	}
	jb := e.jobs.at(p)
	if jb.gen != pgen || jb.state != jsWaiting {
		return
	}
	jb.pending--
	ed := &e.edges[r.edge]
	var rec *issue
	if is >= 0 {
		rec = e.issues.at(is)
		rec.active--
	}
	if !ok && (r.prop >= 1 || (r.prop > 0 && ed.propR.Float64() < r.prop)) {
		jb.childFail = true
	}
	var pl *pool
	if ed.shared {
		pl = &e.nodes[ed.from].reps[jb.rep].pools[ed.pool]
		pl.free++
	}
	if jb.childFail {
		// Fail fast: the request fails now; calls still out are abandoned.
		e.freeIssues(jb)
		e.abandonKids(p)
		e.finish(p)
		if pl != nil {
			e.servePool(pl)
		}
		return
	}
	if pl != nil {
		e.servePool(pl)
	} else if rec != nil && rec.left > 0 {
		e.pump(is)
	}
	if jb.pending == 0 && jb.state == jsWaiting && jb.gen == pgen {
		e.freeIssues(jb)
		jb.stage++
		e.runStages(p)
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
	jb.abandonAt = e.now
	if jb.state != jsRunning && jb.state != jsWaiting {
		return
	}
	n := &e.nodes[jb.node]
	if !n.deadline {
		for l := jb.kids; l >= 0; l = e.links.at(l).next {
			if lk := e.links.at(l); lk.job >= 0 {
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
	e.touch(n)
	n.reps[jb.rep].busy--
	n.busy--
	rep := jb.rep
	e.freeJob(j)
	e.drain(n, rep)
}

// abandonKids gives up on every call the job still has out.
func (e *Engine) abandonKids(j int32) {
	for {
		jb := e.jobs.at(j)
		l := jb.kids
		if l < 0 {
			return
		}
		lk := e.links.at(l)
		cj, cgen := lk.job, lk.jobGen
		r := &e.routes[lk.route]
		var pl *pool
		if ed := &e.edges[r.edge]; ed.shared {
			pl = &e.nodes[ed.from].reps[jb.rep].pools[ed.pool]
		}
		e.freeLink(l)
		if cj >= 0 {
			e.abandon(cj, cgen)
		}
		if pl != nil {
			pl.free++
			e.servePool(pl)
		}
	}
}
