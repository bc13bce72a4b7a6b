package fit

import (
	"cmp"
	"slices"

	"cascade"
)

// This file finds the requests of one trace the way graph does (see
// docs/graph.md, "Nodes and calls"), so that the windows'
// observations name the model's nodes and count what its statistics
// count.

// tspan is a span of the trace being read.
type tspan struct {
	id, parent     uint64
	hasParent      bool
	delivered      bool // a consumer's receive or process: no arrival when a root
	svc, op, peer  string
	kind           cascade.SpanKind
	start, end     int64
	failed         bool
	resend         int32
	req, rq        int32
	request, calls bool // starts a request; has a request below it
}

// request is one request found in a trace: work started in a node.
type request struct {
	node       string
	service    string
	parent     int32 // the calling request, or -1
	start, end int64
	failed     bool
	root       bool // a root span: an arrival at an entry
	top        bool // a root or orphan span: no caller in the trace
	callOp     string
	resend     int32
	attempt    int32
	childFail  bool // a request it called failed
}

// traceReader is scratch memory reused from trace to trace.
type traceReader struct {
	level string
	// tree links the trace's spans to their parents, parents first in
	// tree.Order.
	tree cascade.TraceTree[uint64]
	reqs []request
}

func newTraceReader(level string) *traceReader {
	return &traceReader{level: level}
}

func isCalling(k cascade.SpanKind) bool { return k == cascade.KindClient || k == cascade.KindProducer }

func (t *traceReader) nodeName(svc, op string) string {
	if t.level == "operation" {
		return svc + ":" + op
	}
	return svc
}

// read returns the requests of a trace (sp is reordered) and whether the
// trace looks cut short: no root span, or spans whose parent is missing.
func (t *traceReader) read(sp []tspan) (reqs []request, truncated bool) {
	slices.SortFunc(sp, func(x, y tspan) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	for i := range sp {
		sp[i].req, sp[i].rq = -1, -1
		sp[i].request, sp[i].calls = false, false
	}
	tr := &t.tree
	tr.Link(len(sp), func(i int) (uint64, uint64, bool) { return sp[i].id, sp[i].parent, sp[i].hasParent })
	truncated = tr.Orphans > 0 || tr.Roots == 0
	t.reqs = t.reqs[:0]
	for _, i := range tr.Order {
		t.classify(sp, i)
	}
	// Client and producer spans with no request below them call the
	// node their peer names.
	for _, i := range tr.Order {
		s := &sp[i]
		if s.request || s.calls || !isCalling(s.kind) || s.req < 0 || s.peer == "" {
			continue
		}
		t.reqs = append(t.reqs, request{
			node: t.nodeName(s.peer, s.op), service: s.peer, parent: sp[s.req].rq,
			start: s.start, end: s.end, failed: s.failed, callOp: s.op, resend: s.resend,
		})
	}
	for i := range t.reqs {
		if p := t.reqs[i].parent; p >= 0 && t.reqs[i].failed {
			t.reqs[p].childFail = true
		}
	}
	t.attempts()
	return t.reqs, truncated
}

// classify decides whether span i starts a request and records it.
func (t *traceReader) classify(sp []tspan, i int32) {
	s := &sp[i]
	pidx := t.tree.Parent[i]
	if pidx < 0 {
		s.request, s.req, s.rq = true, i, int32(len(t.reqs))
		t.reqs = append(t.reqs, request{
			node: t.nodeName(s.svc, s.op), service: s.svc, parent: -1, start: s.start, end: s.end,
			failed: s.failed, root: !s.hasParent && !s.delivered, top: true, callOp: s.op, resend: s.resend,
		})
		return
	}
	p := &sp[pidx]
	switch s.kind {
	case cascade.KindServer, cascade.KindConsumer:
		s.request = true
	default:
		s.request = s.svc != p.svc
	}
	if !s.request {
		s.req = p.req
		return
	}
	s.req, s.rq = i, int32(len(t.reqs))
	r := request{
		node: t.nodeName(s.svc, s.op), service: s.svc, parent: -1, start: s.start, end: s.end,
		failed: s.failed, callOp: s.op, resend: s.resend,
	}
	if p.req >= 0 {
		r.parent = sp[p.req].rq
		switch {
		case isCalling(p.kind):
			p.calls = true
			r.callOp, r.resend = p.op, p.resend
		case isCalling(s.kind):
		case p.kind == cascade.KindUnspecified && s.kind == cascade.KindUnspecified && !p.request && t.tree.Children[pidx] == 1:
			p.calls = true
			r.callOp = p.op
		}
	}
	t.reqs = append(t.reqs, r)
}

// attempts numbers the attempts of each call: a resend count n makes
// attempt n+1; else a call that repeats the operation of a failed call
// from the same request to the same node, starting after that failure
// ended, is the next attempt of it.
func (t *traceReader) attempts() {
	reqs := t.reqs
	order := make([]int32, 0, len(reqs))
	for i := range reqs {
		reqs[i].attempt = 1
		if reqs[i].parent >= 0 {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &reqs[a], &reqs[b]
		if c := cmp.Compare(x.parent, y.parent); c != 0 {
			return c
		}
		if c := cmp.Compare(x.node, y.node); c != 0 {
			return c
		}
		if c := cmp.Compare(x.callOp, y.callOp); c != 0 {
			return c
		}
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for lo := 0; lo < len(order); {
		hi := lo
		a := &reqs[order[lo]]
		for hi < len(order) {
			b := &reqs[order[hi]]
			if b.parent != a.parent || b.node != a.node || b.callOp != a.callOp {
				break
			}
			hi++
		}
		used := map[int32]bool{}
		for k := lo; k < hi; k++ {
			r := &reqs[order[k]]
			if r.resend > 0 {
				r.attempt = r.resend + 1
				continue
			}
			for j := k - 1; j >= lo; j-- {
				q := order[j]
				if prev := &reqs[q]; prev.failed && !used[q] && prev.end <= r.start {
					r.attempt = prev.attempt + 1
					used[q] = true
					break
				}
			}
		}
		lo = hi
	}
}
