package replay

import "sync"

// scratch is the memory of a run that does not depend on the model: the
// event queue's wheel and lists, the record slabs, spare histogram
// octaves and timer lists. Engines take one from scratchPool when a run
// starts and give it back when the run's Result is built (the Result
// holds none of it), so that the many short-lived engines of a grid
// search or a ranking reuse the memory the first ones grew, whatever
// their model, and engines running in parallel each hold their own.
//
// Nothing a run computes depends on the memory it is given: slabs hand
// out indices from 0 after a reset, records carry generation counters
// that only events of the same run compare, and histogram octaves come
// zeroed.
type scratch struct {
	w      *wheel
	ev     []slot
	over   []overflowItem
	jobs   slab[job]
	links  slab[link]
	issues slab[issue]
	octs   []*octave
	timers [][]timer
}

var scratchPool sync.Pool // of *scratch

// maxPooledChunks bounds the job and link records (in slab chunks of
// 1,024, about 100 KiB each) of a scratch that goes back to the pool:
// the memory of a replay that ran away is left to the collector.
const maxPooledChunks = 256

// take installs a scratch from the pool, or a new one, for a run.
func (e *Engine) take() {
	s, _ := scratchPool.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	e.scr = s
	e.q.w, e.q.ev, e.q.over = s.w, s.ev, s.over
	e.jobs, e.links, e.issues = s.jobs, s.links, s.issues
	e.octs = s.octs
	for i := range e.routes {
		if r := &e.routes[i]; r.timeout > 0 && r.timers == nil && len(s.timers) > 0 {
			r.timers = s.timers[len(s.timers)-1]
			s.timers[len(s.timers)-1] = nil
			s.timers = s.timers[:len(s.timers)-1]
		}
	}
	*s = scratch{timers: s.timers}
}

// give returns the run's scratch to the pool. The engine keeps no
// reference to it.
func (e *Engine) give() {
	s := e.scr
	if s == nil {
		return
	}
	e.scr = nil
	e.m.latency.detach(&e.octs)
	e.m.flowLat.detach(&e.octs)
	for i := range e.nodes {
		e.nodes[i].nm.latency.detach(&e.octs)
	}
	for i := range e.routes {
		if r := &e.routes[i]; r.timers != nil {
			s.timers = append(s.timers, r.timers[:0])
			r.timers, r.timerHead = nil, 0
		}
	}
	pooled := len(e.jobs.chunks)+len(e.links.chunks) <= maxPooledChunks
	if pooled {
		e.clearRecords()
	}
	s.w, s.ev, s.over = e.q.w, e.q.ev, e.q.over
	s.jobs, s.links, s.issues = e.jobs, e.links, e.issues
	s.octs = e.octs
	e.q.w, e.q.ev, e.q.over = nil, nil, nil
	e.jobs, e.links, e.issues = slab[job]{}, slab[link]{}, slab[issue]{}
	e.octs = nil
	if pooled {
		scratchPool.Put(s)
	}
}

// clearRecords clears the pointers into this engine's routes and jobs
// that the link records keep, so that a pooled scratch does not keep
// the engine alive; job records hold none. (A scratch left to the
// collector is not walked: a million records of a collapse, 2% of its
// CPU.)
func (e *Engine) clearRecords() {
	for i := int32(0); i < e.links.n; i++ {
		lk := e.links.at(i)
		lk.rt, lk.pj = nil, nil
	}
}
