package replay

// Flows: a root request and the work it sets off through async edges
// and queues, pending until the last piece ends.

// newFlow starts a flow for a root request.
func (e *Engine) newFlow() int32 {
	f := e.flows.alloc()
	*e.flows.at(f) = flow{start: e.now, pending: 1}
	return f
}

// flowGain adds a pending piece of work (an async call) to flow f.
func (e *Engine) flowGain(f int32) int32 {
	if f < 0 || !e.flows.at(f).gainOK() {
		return -1
	}
	return f
}

// flowWork ends one pending piece of flow f, a failed one unless ok,
// and the flow with its last.
func (e *Engine) flowWork(f int32, ok bool) {
	fl := e.flows.at(f)
	if fl.done {
		return
	}
	if !ok {
		fl.failed = true
	}
	fl.pending--
	if fl.pending > 0 {
		return
	}
	fl.done = true
	e.m.flows++
	if !fl.failed {
		e.m.flowsOK++
		e.m.flowLat.add(e.now - fl.start)
	}
}

// flowFail marks flow f failed (a publish refused for good).
func (e *Engine) flowFail(f int32) {
	if f >= 0 {
		if fl := e.flows.at(f); !fl.done {
			fl.failed = true
		}
	}
}
