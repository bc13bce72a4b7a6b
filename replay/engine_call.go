package replay

// This file holds the life of a call: a link (the caller's side, with its
// attempts, timer and retries) sends jobs (attempts) to the callee, where
// they queue, work, call their own children stage by stage, and answer.

import "math/bits"

// maxDepth bounds chains of calls: a job this deep in its request's call
// tree does not call its children (Counts.Truncated counts them), so a
// cycle in the graph (a node that calls itself) cannot recurse forever.
const maxDepth = 64

// Job and link records keep depths (at most maxDepth+1) in an int8: this
// fails to compile if maxDepth outgrows it.
const _ = int8(maxDepth + 1)

// maxJobs bounds the attempts in flight at once. A replay that needs more
// (fan-out on a cycle multiplies calls at every turn) stops early, and
// Replay and RunSeeds report ErrRunaway.
const maxJobs = 1 << 22

// loop runs events until the queue is empty or the replay ends.
func (e *Engine) loop() {
	q := &e.q
	for {
		// q.pop(), by hand: the call and its copy of the event cost more
		// than the pop itself. The next event's tick is found from the
		// bitmap, now's bucket included, rather than by testing now's
		// bucket first: in a dense replay whether now's tick holds another
		// event is a coin toss, while the next event lying within the
		// bitmap word is nearly sure.
		cur := int(q.now & wheelMask)
		m := q.w.bits[cur>>6] >> (cur & 63)
		if m == 0 {
			if !q.advance() { // now's bucket is empty
				break
			}
		} else {
			// q.advance's end, for a bucket at most 63 ticks on (0 when
			// now's holds an event: the heap's first event is then past
			// the horizon, so the test below fails).
			next := q.now + int64(bits.TrailingZeros64(m))
			if q.overAt-next < wheelSize {
				if q.overAt < next {
					next = q.overAt
				}
				q.now = next
				q.pullOver()
			} else {
				q.now = next
			}
		}
		b := int(q.now & wheelMask)
		i := q.ev[b].next
		s := &q.ev[i]
		id, gen, kind := s.id, s.gen, s.kind
		// q.unlink(b, i, s), by hand: it is over the inliner's budget.
		next := s.next
		q.ev[b].next = next
		s.next = q.free
		q.free = i
		empty := next >> 31
		w := q.w
		t := w.tail[b]
		w.tail[b] = t ^ (t^int32(b))&empty
		wd := w.bits[b>>6] &^ (uint64(int64(empty)) & (1 << (b & 63)))
		w.bits[b>>6] = wd
		var z uint64
		if wd == 0 {
			z = 1
		}
		w.sum[0] &^= z << (b >> 6)
		if q.now >= e.end {
			break
		}
		e.now = q.now
		if e.check != nil {
			// Kept for the check after the event, so that id, gen and
			// kind need not live across the handlers.
			e.checked = event{at: e.now, id: id, gen: gen, kind: kind}
		}
		switch kind {
		case evArrival:
			e.onArrival(id)
		case evUser:
			e.onUser(id)
		case evJobArrive:
			if jb := e.jobs.at(id); jb.gen == gen && jb.state == jsNet {
				e.arrive(id, jb)
			}
		case evJobDone:
			if jb := e.jobs.at(id); jb.gen == gen && jb.state == jsRunning {
				// The job's own time is over: it fails, or calls its
				// children.
				switch {
				case jb.failed():
					e.finish(id, jb)
				case len(e.rt(jb).callee.stages) == 0:
					// A leaf: runStages would finish it at once.
					jb.stage = 0
					e.finish(id, jb)
				default:
					jb.stage = 0
					e.runStages(id, jb)
				}
			}
		case evRespOK:
			e.onResponse(id, gen, true)
		case evRespFail:
			e.onResponse(id, gen, false)
		case evTimeout:
			e.fireTimers(id)
		case evRetry:
			if lk := e.link(id); lk.live && lk.seq == gen && !lk.waiting {
				e.send(id, lk)
			}
		case evLeafDone:
			if jb := e.jobs.at(id); jb.gen == gen && jb.state == jsRunning {
				e.finishLeaf(id, jb)
			}
		case evMsgBack:
			e.onMsgBack(id, gen)
		case evBroker:
			e.onBroker(id, gen)
		case evWaitCap:
			e.onWaitCap(id, gen)
		case evBatch:
			if b := e.routes[id].batch; b.gen == gen {
				e.flushBatch(b, &e.routes[id])
			}
		}
		if e.check != nil {
			e.check(e.checked)
		}
		if e.njobs > e.maxJobs {
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
	l, lk := e.newLink(int32(len(e.edges))+en, -1, 0, nil, -1, u)
	if e.flowOn {
		lk.flow = e.newFlow()
	}
	if ent := &e.entries[en]; ent.low > 0 && (ent.low >= 1 || ent.lowR.Float64() < ent.low) {
		lk.low = true
		e.m.lowRoots++
	}
	e.send(l, lk)
}

// newLink allocates a link on route r for parent job p of generation
// pgen (or -1), whose record is jb (nil when p is -1).
func (e *Engine) newLink(r, p int32, pgen uint32, jb *job, is int32, u int32) (int32, *link) {
	l := e.links.alloc()
	lk := e.links.at(l)
	lk.seq++
	lk.live, lk.waiting = true, false
	lk.rt = &e.routes[r]
	lk.parent, lk.parentGen, lk.issue, lk.user = p, pgen, is, u
	lk.attempt, lk.job, lk.prev, lk.next = 0, -1, -1, -1
	lk.first, lk.backoff, lk.depth = e.now, 0, 0
	lk.pj = jb
	lk.low = jb != nil && jb.low()
	if e.flowOn {
		// Read only when flows are kept (linkDone, asyncDone, accept).
		lk.flow = -1
		if jb != nil {
			lk.flow = jb.flow
		}
	}
	if p >= 0 && e.kids {
		e.linkKid(l, lk, jb)
	}
	return l, lk
}

// linkKid puts link l (whose record is lk) at the head of its parent
// job's list of children.
func (e *Engine) linkKid(l int32, lk *link, jb *job) {
	lk.next = jb.kids
	if jb.kids >= 0 {
		e.link(jb.kids).prev = l
	}
	jb.kids = l
}

// callFull is call on a plain route that is not lean. It is newLink,
// send and arrive in one function, doing what they do in the same order;
// a plain route lets it skip the guards, the retry budget, the timer and
// the network.
func (e *Engine) callFull(ri int32, r *route, p int32, pgen uint32, pj *job, is int32) {
	// A new link, as in newLink, and its first attempt.
	l := e.links.alloc()
	lk := e.links.at(l)
	lk.seq += 2 // newLink's and send's
	seq := lk.seq
	lk.live, lk.waiting = true, true
	lk.rt = r
	lk.parent, lk.parentGen, lk.issue, lk.user = p, pgen, is, -1
	lk.attempt, lk.prev, lk.next = 1, -1, -1
	lk.first, lk.backoff, lk.depth = e.now, 0, 0
	lk.pj = pj
	lk.low = pj.low()
	if e.kids {
		e.linkKid(l, lk, pj)
	}
	e.m.calls++
	j := e.jobs.alloc()
	jb := e.jobs.at(j)
	if e.flowOn {
		lk.flow = pj.flow
		jb.flow = lk.flow
	}
	e.njobs++
	n := r.callee
	jb.state = jsNet
	jb.abandoned = false
	jb.link, jb.linkSeq, jb.route = l, seq, r.self
	jb.pending, jb.issues, jb.kids, jb.zoff = 0, -1, -1, 0
	jb.fl = lowFlag(lk.low)
	lk.job, lk.jobGen = j, jb.gen
	jb.depth = pj.depth + 1
	if pj.abandoned {
		// Zombie work from the start (send).
		jb.abandoned = true
	}
	// arrive
	jb.arrive = e.now
	// e.nodeCall(n), by hand, in the node's own window (as in call).
	nm := &n.nm
	if e.now >= nm.wEnd {
		e.roll(n)
	}
	nm.calls++
	nm.wCalls[nm.w]++
	var rep int32
	if n.replicas > 1 {
		if n.lb == lbRoundRobin {
			rep = n.rr
			n.rr = n.nextRR()
		} else {
			rep = e.pickReplica(n, 0)
		}
	}
	jb.rep = rep
	rp := &n.reps[rep]
	if rp.conc != 0 && rp.busy >= rp.conc {
		e.enqueue(j, jb, n)
		return
	}
	if jb.abandoned || n.overOn || n.svc.kind != sExpMean || n.wslow > 0 {
		e.start(j, jb, rp)
		return
	}
	// start, by hand, for work that is wanted, cannot fail from overload
	// and takes an exponential time.
	rp.busy++
	n.busy++ // busyAdd(n, 1), by hand: nm is in e.now's window
	nm.bInt[nm.w] += nm.stop - e.now
	if b := int(n.busy); b > nm.inflightMax {
		nm.inflightMax = b
	}
	jb.state = jsRunning
	jb.start = e.now
	e.m.starts++
	var d int64 // ticks
	if n.svcBatched {
		// The next of svcBuf (see refillSvc).
		k := n.svcK
		if k >= svcBatch {
			n.refillSvc()
			k = 0
		}
		n.svcK = k + 1
		d = n.svcBuf[k]
	} else {
		d = n.svcTicks(n.svcR.Rand.ExpFloat64() * n.svc.a)
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

// call makes a synchronous call of job p (generation pgen, record pj)
// on plain route ri (route.plain), from progress record is (or -1): on a
// lean route (route.lean) itself, else through callFull, so that the
// lean path costs its callers one call, not two.
//
// Nothing in a model with lean routes times a call out, abandons it or
// turns it away on its way (a rejected sibling fails its parent, but the
// parent keeps no list of its calls), so the attempt's link would wait
// for exactly this job and end when it answers. An attempt that starts
// at once therefore keeps only what finishLeaf or finishLean needs: a
// job record and no link, with the caller in the job's link, linkSeq
// and kids (job.leanCaller). An attempt that must queue takes a link as well
// (callQueued). Counters, draws and events are those of callFull, in the
// same order.
//
// A leaf's attempt (route.leaf) is answered exactly when its work ends
// (evLeafDone, finishLeaf). A parent's runs its stages as any job does
// (evJobDone, runStages), and ends in finishLean, which a negative link
// marks: it sets what runStages, its children's answers and finishLean
// read, some twenty stores and checks fewer than callFull's link and job.
func (e *Engine) call(ri int32, r *route, p int32, pgen uint32, pj *job, is int32) {
	if !r.lean {
		e.callFull(ri, r, p, pgen, pj, is)
		return
	}
	e.m.calls++
	n := r.callee
	// e.nodeCall(n), by hand, in the node's own window: after roll,
	// n.nm.w is e.window(), and the busy integral below needs it too.
	nm := &n.nm
	if e.now >= nm.wEnd {
		e.roll(n)
	}
	nm.calls++
	nm.wCalls[nm.w]++
	var rep int32
	if n.replicas > 1 {
		if n.lb == lbRoundRobin {
			rep = n.rr
			n.rr = n.nextRR()
		} else {
			rep = e.pickReplica(n, 0)
		}
	}
	rp := &n.reps[rep]
	if (rp.conc != 0 && rp.busy >= rp.conc) || pj.abandoned {
		e.callQueued(ri, r, p, pgen, pj, is, rep)
		return
	}
	j := e.jobs.alloc()
	jb := e.jobs.at(j)
	e.njobs++
	// The caller, as leanCaller reads it; the negative link also tells
	// finish that the attempt is lean.
	jb.link, jb.linkSeq, jb.kids = ^p, pgen, is
	if e.flowOn {
		jb.flow = pj.flow
	}
	jb.route, jb.rep = r.self, rep
	jb.state = jsRunning
	jb.arrive, jb.start = e.now, e.now
	// What runStages, a parent's children and finishLean read, stored
	// for a leaf's attempt too, which never reads them: whether the
	// callee is a leaf is a coin toss to a predictor, and these stores
	// cost less than its misses.
	jb.abandoned = false
	jb.pending, jb.issues = 0, -1
	jb.depth = pj.depth + 1
	jb.fl = lowFlag(pj.low())
	kind := r.done
	rp.busy++
	n.busy++ // busyAdd(n, 1), by hand: nm is in e.now's window
	nm.bInt[nm.w] += nm.stop - e.now
	if b := int(n.busy); b > nm.inflightMax {
		nm.inflightMax = b
	}
	e.m.starts++
	var d int64 // ticks
	if n.svcBatched {
		// The next of svcBuf (see refillSvc).
		k := n.svcK
		if k >= svcBatch {
			n.refillSvc()
			k = 0
		}
		n.svcK = k + 1
		d = n.svcBuf[k]
	} else if n.svc.kind == sExpMean {
		d = n.svcTicks(n.svcR.Rand.ExpFloat64() * n.svc.a)
	} else {
		d = n.svcTicks(n.svc.draw(n.svcR.Rand))
	}
	// e.q.push(e.now+d, kind, j, jb.gen), by hand: the call and its
	// spills cost a fifth of push.
	q := &e.q
	at, i := e.now+d, q.free
	if uint64(at-q.now) >= wheelSize || i < 0 {
		q.pushSlow(at, kind, j, jb.gen)
		return
	}
	sl := &q.ev[i]
	q.free = sl.next
	*sl = slot{next: -1, id: j, gen: jb.gen, kind: kind}
	q.count++
	q.link(i, at)
}

// callQueued is call on a lean route for an attempt that cannot start
// at once at replica rep: a link and a job as callFull's, queued (or zombie
// work, which a lean model never has; kept for safety).
//
//go:noinline
func (e *Engine) callQueued(ri int32, r *route, p int32, pgen uint32, pj *job, is int32, rep int32) {
	l := e.links.alloc()
	lk := e.links.at(l)
	lk.seq += 2
	seq := lk.seq
	lk.live, lk.waiting = true, true
	lk.rt = r
	lk.parent, lk.parentGen, lk.issue, lk.user = p, pgen, is, -1
	lk.attempt, lk.prev, lk.next = 1, -1, -1
	lk.first, lk.backoff, lk.depth = e.now, 0, 0
	lk.pj = pj
	lk.low = pj.low()
	j := e.jobs.alloc()
	jb := e.jobs.at(j)
	if e.flowOn {
		lk.flow = pj.flow
		jb.flow = lk.flow
	}
	e.njobs++
	n := r.callee
	jb.state = jsNet
	jb.abandoned = false
	jb.link, jb.linkSeq, jb.route = l, seq, r.self
	jb.pending, jb.issues, jb.kids, jb.zoff = 0, -1, -1, 0
	jb.fl = lowFlag(lk.low)
	lk.job, lk.jobGen = j, jb.gen
	jb.depth = pj.depth + 1
	if pj.abandoned {
		jb.abandoned = true
	}
	jb.arrive = e.now
	jb.rep = rep
	if rp := &n.reps[rep]; rp.conc != 0 && rp.busy >= rp.conc {
		e.enqueue(j, jb, n)
		return
	}
	e.start(j, jb, &n.reps[rep])
}

// freeLink ends link l (whose record is lk): events that still name it
// become stale.
func (e *Engine) freeLink(l int32, lk *link) {
	if lk.parent >= 0 && e.kids {
		e.unlinkKid(lk)
	}
	lk.live = false
	lk.seq++
	e.links.release(l)
}

// link returns the record of link l.
func (e *Engine) link(l int32) *link { return e.links.at(l) }

// unlinkKid takes lk off its parent's list of children.
func (e *Engine) unlinkKid(lk *link) {
	jb := lk.pj
	if jb.gen == lk.parentGen {
		if lk.prev >= 0 {
			e.link(lk.prev).next = lk.next
		} else {
			jb.kids = lk.next
		}
		if lk.next >= 0 {
			e.link(lk.next).prev = lk.prev
		}
	}
}

// send sends the next attempt of link l, whose record is lk.
func (e *Engine) send(l int32, lk *link) {
	r := lk.rt
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
	if r.guarded && e.turnedAway(l, r, seq) {
		return
	}
	j := e.jobs.alloc()
	jb := e.jobs.at(j)
	jb.flow = lk.flow
	e.njobs++
	gen := jb.gen
	jb.state = jsNet
	jb.abandoned = false
	jb.link, jb.linkSeq, jb.route = l, seq, r.self
	jb.pending, jb.issues, jb.kids, jb.zoff = 0, -1, -1, 0
	jb.fl = lowFlag(lk.low)
	lk.job, lk.jobGen = j, gen
	jb.depth = lk.depth
	if pj := lk.pj; pj != nil {
		jb.depth = pj.depth + 1
		// A call sent for a request that is already gone is zombie work
		// from the start.
		if pj.gen == lk.parentGen && pj.abandoned {
			jb.abandoned = true
		}
	}
	if r.timeout > 0 {
		e.addTimer(r.self, l, seq)
	}
	if r.netOn {
		e.q.push(e.now+r.netTicks(e.perMS), evJobArrive, j, gen)
		return
	}
	e.arrive(j, jb)
}

// turnedAway fails the attempt (l, seq) on route r at once when the edge
// is down, the entry's rate limit has no token or the callee's breaker
// rejects it.
func (e *Engine) turnedAway(l int32, r *route, seq uint32) bool {
	if r.edge >= 0 {
		if ed := r.ed; ed.availOn && !ed.avail.up(e, &ed.availR) {
			e.m.unavailable++
			e.q.push(e.now, evRespFail, l, seq)
			return true
		}
	} else if en := &e.entries[r.entry]; en.rlOn && !en.rl.take(e) {
		e.m.rejectedLimit++
		e.q.push(e.now, evRespFail, l, seq)
		return true
	}
	if n := r.callee; n.brkOn && !n.brk.allow(e) {
		e.m.rejectedBreaker++
		e.nodeCall(n)
		e.nodeReject(n)
		e.q.push(e.now, evRespFail, l, seq)
		return true
	}
	if r.pub {
		// Not turned away: taken by the queue, which answers it (once
		// its batch goes, for a batching publisher).
		if b := r.batch; b != nil {
			e.batchPublish(b, r, l, seq)
			return true
		}
		e.publish(l, r, seq)
		return true
	}
	return false
}
