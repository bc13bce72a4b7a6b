package replay

// This file holds a job's children, stage by stage: the issues of its
// stage's edges (fan-out, parallelism, a pool shared by the node's
// requests), each sending its calls (engine_call.go) as its slots allow.

// runStages issues the calls of job j's current stage (its record is
// jb), moving on while a stage has nothing to wait for, and finishes the
// job after the last.
func (e *Engine) runStages(j int32, jb *job) {
	n := e.rt(jb).callee
	if jb.depth >= maxDepth && len(n.stages) > 0 {
		// A cycle of calls that never ends: stop it here.
		e.m.truncated++
		jb.stage = int32(len(n.stages))
	}
	for int(jb.stage) < len(n.stages) {
		jb.state = jsWaiting
		for _, ei := range n.stages[jb.stage] {
			ed := &e.edges[ei]
			if ed.direct {
				c := int32(ed.fan.n)
				jb.pending += c
				for k := int32(0); k < c; k++ {
					e.call(ei, ed.rt, j, jb.gen, jb, -1)
				}
				continue
			}
			var c int32
			if ed.fan.kind == sFixed {
				c = int32(ed.fan.n)
			} else {
				c = int32(ed.fan.count(ed.fanR.Rand))
			}
			if c <= 0 {
				continue
			}
			if ed.async {
				for k := int32(0); k < c; k++ {
					l, lk := e.newLink(ei, -1, 0, nil, -1, -1)
					lk.depth, lk.low = jb.depth+1, jb.low()
					if e.flowOn {
						lk.flow = e.flowGain(jb.flow)
					}
					e.send(l, lk)
				}
				continue
			}
			if !ed.shared && (ed.par == 0 || c <= ed.par) {
				// Nothing limits these calls: send them all now, with no
				// progress record.
				jb.pending += c
				if r := &e.routes[ei]; r.plain {
					for k := int32(0); k < c; k++ {
						e.call(ei, r, j, jb.gen, jb, -1)
					}
					continue
				}
				for k := int32(0); k < c; k++ {
					l, lk := e.newLink(ei, j, jb.gen, jb, -1, -1)
					e.send(l, lk)
				}
				continue
			}
			is := e.issues.alloc()
			*e.issues.at(is) = issue{job: j, jobGen: jb.gen, jp: jb, edge: ei, left: c, next: jb.issues, wnext: -1}
			jb.issues = is
			jb.pending += c
		}
		gen := jb.gen
		for is := jb.issues; is >= 0; {
			rec := e.issues.at(is)
			e.pump(is, rec)
			if jb.gen != gen {
				return // cannot happen while sends answer through events; kept as a guard
			}
			is = rec.next
		}
		if jb.pending > 0 {
			return
		}
		e.freeIssues(jb)
		jb.stage++
	}
	e.finish(j, jb)
}

// pump issues as many of issue record i's calls (its record is is) as
// its parallelism (or shared pool) allows.
func (e *Engine) pump(i int32, is *issue) {
	ed := &e.edges[is.edge]
	if ed.shared {
		if is.waiting {
			return
		}
		jb := is.jp
		pl := e.nodes[ed.from].pool(jb.rep, ed.pool)
		for is.left > 0 && pl.free > 0 && pl.whead < 0 {
			pl.free--
			e.issueOne(i, is, ed)
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
		e.issueOne(i, is, ed)
	}
}

// issueOne sends the next call of issue record i (its record is is) on
// edge ed. Records do not move, and a send answers through events, so
// is stays valid across the call.
func (e *Engine) issueOne(i int32, is *issue, ed *edge) {
	is.left--
	is.active++
	if r := ed.rt; r.plain {
		e.call(is.edge, r, is.job, is.jobGen, is.jp, i)
		return
	}
	l, lk := e.newLink(is.edge, is.job, is.jobGen, is.jp, i, -1)
	e.send(l, lk)
}

// servePool hands a shared pool's free calls to its waiters, in order.
func (e *Engine) servePool(pl *pool) {
	for pl.free > 0 && pl.whead >= 0 {
		w := pl.whead
		ws := e.issues.at(w)
		if !ws.dead && ws.left > 0 {
			pl.free--
			e.issueOne(w, ws, &e.edges[ws.edge])
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
