package incident

// This file folds one trace into the pass's records: its requests and
// the calls between them, their retries, and the calls nothing answered.

import (
	"sort"

	"cascade"
)

// call is one call between requests of a trace.
type call struct {
	caller, callee int // request spans
	timing         int // the span that times the call
	async          bool
}

// flush analyses the buffered trace: its requests (a span with no parent
// in the trace, a server or consumer span, or a span of another service
// than its parent's), the calls between them, each request's latency
// as its caller sees it and its self time.
func (a *spanAcc) flush() {
	ss := a.spans
	if len(ss) == 0 {
		return
	}
	defer func() { a.spans = a.spans[:0] }()
	a.tree.Link(len(ss), func(i int) (string, string, bool) { return ss[i].id, ss[i].parent, ss[i].parent != "" })
	parent, children := a.tree.Parent, a.tree.Children
	markRequests(ss, parent)
	calls := traceCalls(ss, parent, children)
	retry := markRetries(ss, calls)
	recIdx, callerOf, callDur := a.numberRequests(ss)
	spans := a.recordCalls(ss, calls, retry, recIdx, callerOf, callDur)
	a.addFans(ss, calls)
	a.countUnanswered(ss, children)
	a.recordRequests(ss, parent, spans, recIdx, callerOf, callDur)
}

// markRequests marks the spans that are requests and points every span
// at the request it belongs to (-1 for none), which the calls and the
// records are built on.
func markRequests(ss []tspan, parent []int32) {
	for i := range ss {
		s := &ss[i]
		p := parent[i]
		s.request = p < 0 || s.kind == cascade.KindServer || s.kind == cascade.KindConsumer || ss[p].service != s.service
		s.req = -1
	}
	for i := range ss {
		// Walk up to the request, bounded against parent cycles.
		j, steps := i, 0
		for !ss[j].request && steps < len(ss) {
			j = int(parent[j])
			steps++
		}
		if ss[j].request {
			ss[i].req = j
		}
	}
}

// traceCalls returns the calls between the trace's requests, each with
// the span that times it as graph reads it, in span order.
func traceCalls(ss []tspan, parent, children []int32) []call {
	var calls []call
	for i := range ss {
		s := &ss[i]
		p := int(parent[i])
		if !s.request || p < 0 || ss[p].req < 0 {
			continue
		}
		t := i
		pk := ss[p].kind
		// The caller's own client span times the call, as graph reads it;
		// a client span that is itself a request (the caller's work, from
		// an instrumentation that writes only client spans) does not.
		if (pk == cascade.KindClient || pk == cascade.KindProducer || pk == cascade.KindUnspecified && children[p] == 1) && !ss[p].request {
			t = p
		}
		async := s.kind == cascade.KindConsumer || ss[t].kind == cascade.KindProducer
		calls = append(calls, call{caller: ss[p].req, callee: i, timing: t, async: async})
	}
	return calls
}

// markRetries sorts calls by caller and start and reports which are
// retries: a call repeating the operation of a failed call on the same
// edge under the same request, after that call ended.
func markRetries(ss []tspan, calls []call) []bool {
	sort.SliceStable(calls, func(x, y int) bool {
		cx, cy := &calls[x], &calls[y]
		if cx.caller != cy.caller {
			return cx.caller < cy.caller
		}
		return ss[cx.timing].start < ss[cy.timing].start
	})
	retry := make([]bool, len(calls))
	for x := range calls {
		cx := &calls[x]
		for y := x - 1; y >= 0 && calls[y].caller == cx.caller; y-- {
			cy := &calls[y]
			ty, tx := &ss[cy.timing], &ss[cx.timing]
			if ss[cy.callee].service == ss[cx.callee].service && ty.op == tx.op &&
				(ty.failed || ss[cy.callee].failed) && ty.end <= tx.start {
				retry[x] = true
				break
			}
		}
	}
	return retry
}

// numberRequests returns, per span, where its request's record will be
// in a.recs (-1 for a span that is no request), with callerOf (the
// caller's request of a synchronous call) and callDur (the sum of a
// request's synchronous calls' durations) cleared; the buffers are
// reused across traces.
func (a *spanAcc) numberRequests(ss []tspan) (recIdx, callerOf []int, callDur []int64) {
	n := len(ss)
	if cap(a.recIdx) < n {
		a.recIdx, a.callerOf, a.callDur = make([]int, n), make([]int, n), make([]int64, n)
	}
	recIdx, callerOf, callDur = a.recIdx[:n], a.callerOf[:n], a.callDur[:n]
	next := len(a.recs)
	for i := range ss {
		recIdx[i], callerOf[i], callDur[i] = -1, -1, 0
		if ss[i].request {
			recIdx[i] = next
			next++
		}
	}
	return recIdx, callerOf, callDur
}

// recordCalls counts and records each call: it marks the callee failed
// where the call failed, fills callerOf and callDur, and returns each
// caller's synchronous calls' intervals, from which its self time is
// read.
func (a *spanAcc) recordCalls(ss []tspan, calls []call, retry []bool, recIdx, callerOf []int, callDur []int64) map[int][][2]int64 {
	spans := make(map[int][][2]int64)
	for x := range calls {
		c := &calls[x]
		t := &ss[c.timing]
		if t.failed {
			ss[c.callee].failed = true
		}
		if !c.async {
			spans[c.caller] = append(spans[c.caller], [2]int64{t.start, t.end})
			callerOf[c.callee] = c.caller
			callDur[c.caller] += t.end - t.start
		}
		a.recordCall(ss, c, retry[x], recIdx)
	}
	return spans
}

// recordCall adds one call to its edge's window, its call record and,
// for a synchronous call its caller timed, its gap record; it also notes
// who times the edge's calls and which callee answers the caller's
// operation.
func (a *spanAcc) recordCall(ss []tspan, c *call, retry bool, recIdx []int) {
	t := &ss[c.timing]
	caller := &ss[c.caller]
	if c.timing != c.callee || ss[c.callee].kind == cascade.KindClient {
		// The caller's own span times the call, or the callee's
		// request is a client span the caller wrote under the
		// callee's name: either way the caller records its calls.
		k := [2]string{caller.service, ss[c.callee].service}
		if !a.clientTimed[k] {
			a.clientTimed[k] = true
		}
	}
	if c.timing != c.callee {
		ok := [2]string{caller.service, t.op}
		if _, seen := a.opCallee[ok]; !seen {
			a.opCallee[ok] = ss[c.callee].service
		}
	}
	e := a.edgeWin(caller.service, ss[c.callee].service, floorDiv(caller.start, a.width))
	e.calls++
	cs := &ss[c.callee]
	a.callRecs = append(a.callRecs, callRec{edge: a.edgeID(caller.service, cs.service), callee: int32(recIdx[c.callee]), w: floorDiv(caller.start, a.width),
		lat: float64(t.end-t.start) / 1e6})
	if retry {
		e.retries++
	}
	if !c.async && c.timing != c.callee {
		a.gaps = append(a.gaps, gapRec{edge: a.edgeID(caller.service, cs.service), at: t.start,
			gap: float64((t.end-t.start)-(cs.end-cs.start)) / 1e6, lat: float64(t.end-t.start) / 1e6})
	}
}

// countUnanswered counts, per caller, client operation and window, the
// client spans that are no request and have no child: calls that
// nothing answered.
func (a *spanAcc) countUnanswered(ss []tspan, children []int32) {
	for i := range ss {
		if s := &ss[i]; s.kind == cascade.KindClient && !s.request && children[i] == 0 {
			k := [2]string{s.service, s.op}
			m := a.unanswered[k]
			if m == nil {
				m = map[int64]int64{}
				a.unanswered[k] = m
			}
			m[floorDiv(s.start, a.width)]++
		}
	}
}

// recordRequests counts each request in its node's window (and the
// roots in theirs) and records its latency and self time, the time not
// covered by its synchronous calls' spans, with its caller's record and
// its share of its calls' summed durations.
func (a *spanAcc) recordRequests(ss []tspan, parent []int32, spans map[int][][2]int64, recIdx, callerOf []int, callDur []int64) {
	for i := range ss {
		s := &ss[i]
		if !s.request {
			continue
		}
		if parent[i] < 0 {
			a.roots[s.service]++
			a.rootWin[floorDiv(s.start, a.width)]++
		}
		l := float64(s.end-s.start) / 1e6
		wait := covered(spans[i], s.start, s.end)
		self := float64(s.end-s.start-wait) / 1e6
		if a.serial[s.service] && len(a.reqs[s.service]) < maxSerialReqs {
			a.reqs[s.service] = append(a.reqs[s.service], serialReq{s.start, s.end, wait})
		}
		w := a.win(s.service, floorDiv(s.start, a.width))
		w.n++
		if s.failed {
			w.errs++
		}
		rec := reqRec{op: a.opID(s.service, s.op), at: s.start, lat: l, self: self, parent: -1, share: 1}
		if p := callerOf[i]; p >= 0 {
			rec.parent = int32(recIdx[p])
		}
		if d := callDur[i]; d > 0 {
			rec.share = float64(wait) / float64(d)
		}
		a.recs = append(a.recs, rec)
	}
}
