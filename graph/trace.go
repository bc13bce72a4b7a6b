package graph

import (
	"cmp"
	"math"
	"slices"
	"time"

	"cascade"
)

// Span kinds as small integers.
const (
	kUnspecified uint8 = iota
	kServer
	kClient
	kProducer
	kConsumer
	kInternal
)

func kindOf(k cascade.SpanKind) uint8 {
	switch k {
	case cascade.KindServer:
		return kServer
	case cascade.KindClient:
		return kClient
	case cascade.KindProducer:
		return kProducer
	case cascade.KindConsumer:
		return kConsumer
	case cascade.KindInternal:
		return kInternal
	}
	return kUnspecified
}

func calling(kind uint8) bool { return kind == kClient || kind == kProducer }

// tspan is the builder's copy of a span of the trace being read.
type tspan struct {
	id, parent          uint64
	start, end          int64
	svc, op, inst, peer int32
	errT, code, resend  int32
	kind                uint8
	// msg is the span's messaging role (msgPublish, …; msgNone for the
	// rest); its attributes are in Builder.mq.spans, by span id.
	msg uint8
	// envelope marks a receive span whose processing spans are its
	// children: it starts no request of its own.
	envelope           bool
	failed, hasParent  bool
	hasCallee, request bool
	childFailed        bool // a synchronous call of this request failed
	// childFinal: a synchronous call of this request failed for good (the
	// last attempt of some operation on some edge failed), so its own
	// failure may be that call's, not its own.
	childFinal bool
	req, node  int32 // the span's request, its node (a request's)
	excl       int64
	// firstCall is when the request's first synchronous call started, 0
	// when it made none.
	firstCall int64
}

// call is one call between nodes found in a trace.
type call struct {
	req        int32 // the caller's request span
	callee     int32 // the callee's request span, -1 for a virtual node
	edge       int32
	span       int32 // the span whose times and status are the call's
	op         int32 // operation matched when looking for retries
	start, end int64 // end: when the caller stopped waiting
	failed     bool  // failed in the caller's eyes (cut calls included)
	// timeout: the caller's own record of the call says its deadline ran
	// out (see callerTimeout).
	timeout bool
	// cut marks a call the caller abandoned while the callee still
	// worked: the callee's span ended after the caller's client span, or
	// after the caller's own request. zombie is the callee's time past
	// the abandonment.
	cut    bool
	zombie int64
	resend int32
	async  bool
	// nack marks a publish that failed: the publisher learnt that the
	// broker refused it (a nack of a confirmed publish, a full queue's
	// reject-publish) or that its send failed, and its request answers
	// for it as for a failed synchronous call.
	nack bool
}

// traceWork is scratch memory reused from trace to trace.
type traceWork struct {
	// tree links the trace's spans to their parents (tree.Parent) and
	// children (tree.First, tree.Next), parents first in tree.Order.
	tree   cascade.TraceTree[uint64]
	calls  []call
	ivs    [][2]int64
	starts []int64
	ends   []int64
	att    []int32 // per call of a retry group: attempt number
	root   []int32 // per call: first attempt of its chain
	last   []int32 // per chain root: last attempt
	used   []bool  // per call: already followed by a retry
	spans  []edgeSpan
	// pubs: per request span, its fire-and-forget publishes (see
	// held.go), for this trace.
	pubs map[int32][]pubCall
}

func newTraceWork() traceWork { return traceWork{} }

// grpcDeadlineExceeded is gRPC's status code DEADLINE_EXCEEDED.
const grpcDeadlineExceeded = 4

// callerTimeout reports whether a failed call timed by span callSpan ran
// into its caller's deadline, by the caller's own record of it: the span
// is the caller's (not the callee's own span, whose error is the
// callee's), and either its status code is gRPC's DEADLINE_EXCEEDED, which
// the client library sets when its deadline passes, or its error type
// names a timeout ("context deadline exceeded", "Read timed out") while
// the callee answered no failure of its own. An error the callee answered
// with ("redis timeout" in HotROD, passed up the chain as a gRPC status
// message) names the callee's trouble, not the caller's deadline; HTTP
// 408 and 504 are answers from the server or a gateway, likewise.
func (b *Builder) callerTimeout(sp []tspan, callee, callSpan int32) bool {
	c := &sp[callSpan]
	if !c.failed || callSpan == callee {
		return false
	}
	if c.code == grpcDeadlineExceeded {
		return true
	}
	return b.syms.isTimeout(c.errT) && (callee < 0 || !sp[callee].failed)
}

// flushTrace analyses the trace in b.tr and forgets it.
func (b *Builder) flushTrace() {
	sp := b.tr
	w := &b.work
	b.stats.Traces++
	// Datasets come sorted by start within a trace: check before sorting.
	byStart := func(x, y tspan) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	}
	if !slices.IsSortedFunc(sp, byStart) {
		slices.SortFunc(sp, byStart)
	}
	for i := range sp {
		sp[i].req, sp[i].node = -1, -1
	}
	t := &w.tree
	t.Link(len(sp), func(i int) (uint64, uint64, bool) { return sp[i].id, sp[i].parent, sp[i].hasParent })
	// Root requests are counted by classify.
	b.stats.Orphans += int64(t.Orphans)
	b.stats.Unreached += int64(len(sp) - len(t.Order))

	w.calls = w.calls[:0]
	for _, i := range t.Order {
		b.classify(sp, i)
	}
	// Client and producer spans whose callee was not seen call the peer
	// they name: a virtual node (a database, a cache, a queue, an
	// uninstrumented service).
	for _, i := range t.Order {
		s := &sp[i]
		if s.msg == msgPublish {
			// A publish goes to its queue whatever else its span shows:
			// a consumer under it in this trace takes the message from
			// the queue, and a producer span that starts a request (a
			// root) still sends its message.
			if s.req >= 0 {
				b.addPublish(sp, i)
			}
			continue
		}
		if s.request || s.hasCallee || !calling(s.kind) || s.req < 0 {
			continue
		}
		if s.peer < 0 {
			b.stats.Unresolved++
			continue
		}
		to := b.virtualNode(s)
		b.addCall(sp, s.req, to, -1, i, s.kind == kProducer)
		b.stats.Requests++
		b.nodes[to].addRequest(b, s.start, s.end, s.failed, s.failed, -1, nsToMS(float64(s.end-s.start)))
	}
	b.finishTrace(sp)
	if len(b.mq.spans) > 0 {
		b.mq.spans = b.mq.spans[:0]
		clear(b.mq.idx)
		clear(b.mq.procOf)
	}
	clear(sp)
	b.tr = sp[:0]
}

// classify decides whether span i starts a request in a node and, if it
// has a caller, records the call.
func (b *Builder) classify(sp []tspan, i int32) {
	s := &sp[i]
	t := &b.work.tree
	pidx := t.Parent[i]
	if delivering(s.msg) || pidx >= 0 && sp[pidx].envelope && b.processing(sp, i) {
		b.classifyDelivery(sp, i)
		return
	}
	if pidx < 0 {
		s.request = true
		s.req = i
		s.node = b.nodeOf(s)
		// A root span is a root request, unless it is a consumer's
		// delivery (above: a message published elsewhere) or carries
		// messages created in other traces (a batch publisher's flush:
		// the requests that created them are the roots).
		if !s.hasParent && !b.carrier(sp, i) {
			b.stats.Roots++
			b.entries[uint64(s.node)<<32|uint64(uint32(s.op))]++
			if b.rootEndNS == 0 || s.start < b.rootFirstNS {
				b.rootFirstNS = s.start
			}
			b.rootLastNS = max(b.rootLastNS, s.start)
			b.rootEndNS = max(b.rootEndNS, s.end)
			if len(b.roots) < maxLoadRoots {
				b.roots = append(b.roots, [2]int64{s.start, s.end})
			}
		}
		return
	}
	p := &sp[pidx]
	switch s.kind {
	case kServer, kConsumer:
		s.request = true
	case kClient, kProducer:
		// A client span of another service than its parent's: the callee
		// reports its own work as a client span (HotROD's mysql and redis).
		s.request = s.svc != p.svc
	default:
		s.request = s.svc != p.svc
	}
	if !s.request {
		s.req = p.req
		return
	}
	s.req = i
	s.node = b.nodeOf(s)
	if p.req < 0 {
		return
	}
	// Which span times the call: the caller's client span when there is
	// one, else the callee's own span.
	callSpan := i
	async := s.kind == kConsumer || s.kind == kProducer
	switch {
	case calling(p.kind) && !p.request:
		// The caller's own client span: it times the call as the caller
		// saw it. A client span that is itself a request (written under
		// the caller's service by an instrumentation that records only
		// client spans) times the caller's work, not this call.
		callSpan = pidx
		p.hasCallee = true
		async = async || p.kind == kProducer
	case calling(s.kind):
	case p.kind == kUnspecified && s.kind == kUnspecified && !p.request && t.Children[pidx] == 1:
		// Kindless spans (Nezha CSV): a span whose only child runs in
		// another service is the caller's side of that call.
		callSpan = pidx
		p.hasCallee = true
	}
	b.addCall(sp, p.req, s.node, i, callSpan, async)
}

// addCall records a call from the request span req to node to, timed by
// span callSpan; callee is the callee's request span (-1 when the callee
// is a virtual node seen only from callSpan).
//
// A synchronous call whose callee outlived the caller was cut off: the
// callee's span ended after the client span that timed the call, or,
// timed by the callee's own span, after the caller's request ended. The
// caller gave up (a deadline) while the callee went on working (zombie
// work), so the call failed in the caller's eyes whatever the callee's
// status, and it ended for the caller when the client span (or the
// caller's request) ended.
func (b *Builder) addCall(sp []tspan, req, to, callee, callSpan int32, async bool) {
	from := sp[req].node
	c := &sp[callSpan]
	k := call{
		req:     req,
		callee:  callee,
		edge:    b.edgeOf(from, to),
		span:    callSpan,
		op:      c.op,
		start:   c.start,
		end:     c.end,
		failed:  c.failed,
		timeout: b.callerTimeout(sp, callee, callSpan),
		resend:  c.resend,
		async:   async,
	}
	if callee >= 0 && !async {
		ce := sp[callee].end
		giveUp := c.end
		if callee == callSpan {
			giveUp = sp[req].end
		}
		// A callee that started after its caller ended was not waited
		// for at all (clock skew, or work handed off): not a cut.
		if giveUp > c.start && ce > giveUp+cutSlack(giveUp-c.start) {
			k.cut, k.zombie = true, ce-giveUp
			k.end = min(k.end, giveUp)
			k.failed = true
		}
	}
	b.work.calls = append(b.work.calls, k)
}

// cutSlack is how much later than the caller a callee may end and still
// count as answering it: 1 ms or 5% of the caller's wait, whichever is
// more, for clock skew between hosts.
func cutSlack(wait int64) int64 { return max(int64(time.Millisecond), wait/20) }

// finishTrace computes exclusive times, feeds the node statistics, and
// groups the calls by caller request and edge for the edge statistics.
func (b *Builder) finishTrace(sp []tspan) {
	w := &b.work
	calls := w.calls
	b.stats.Calls += int64(len(calls))
	sortCalls(calls)
	b.markFailures(sp, calls)
	b.exclusiveTimes(sp, calls)
	b.feedRequests(sp)
	b.feedEdges(sp, calls)
	clear(w.pubs)
}

// sortCalls orders calls by caller request, edge, operation and start, so
// each request's calls on one edge are adjacent and a retry follows the
// attempt it retries.
func sortCalls(calls []call) {
	slices.SortFunc(calls, func(x, y call) int {
		if c := cmp.Compare(x.req, y.req); c != 0 {
			return c
		}
		if c := cmp.Compare(x.edge, y.edge); c != 0 {
			return c
		}
		if c := cmp.Compare(x.op, y.op); c != 0 {
			return c
		}
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.span, y.span)
	})
}

// markFailures flags requests with a failed synchronous call and charges
// each cut call's zombie time to its callee's node.
func (b *Builder) markFailures(sp []tspan, calls []call) {
	for k := range calls {
		if c := &calls[k]; c.failed && !c.async {
			sp[c.req].childFailed = true
		}
		if c := &calls[k]; c.cut {
			b.nodes[sp[c.callee].node].zombie += c.zombie
		}
	}
}

// exclusiveTimes records, per request, the union of its synchronous waits
// (to subtract from its duration), its first call and whether a final
// attempt failed, and collects its publishes for the held-time check.
func (b *Builder) exclusiveTimes(sp []tspan, calls []call) {
	w := &b.work
	// Exclusive time: the request's duration minus the union of its
	// synchronous calls (parallel calls overlap; the union counts the wait
	// once).
	for lo := 0; lo < len(calls); {
		hi := lo
		for hi < len(calls) && calls[hi].req == calls[lo].req {
			hi++
		}
		r := &sp[calls[lo].req]
		w.ivs = w.ivs[:0]
		for k := lo; k < hi; k++ {
			c := &calls[k]
			if c.async && b.nodes[b.edges[c.edge].to].queue != nil {
				// A publish the request does not subtract: its time is
				// the request's own unless the broker held it (held.go).
				if w.pubs == nil {
					w.pubs = map[int32][]pubCall{}
				}
				w.pubs[c.req] = append(w.pubs[c.req], pubCall{edge: c.edge, start: max(c.start, r.start), end: min(c.end, r.end)})
			}
			if !c.async {
				if r.firstCall == 0 || c.start < r.firstCall {
					r.firstCall = c.start
				}
				w.ivs = append(w.ivs, [2]int64{max(c.start, r.start), min(c.end, r.end)})
				// A retry's backoff, from the failed attempt's end to
				// the retry's start, is a wait on the call, not the
				// caller's work (replay adds the backoff itself).
				if p := k - 1; p >= lo && calls[p].edge == c.edge && calls[p].op == c.op && calls[p].failed && c.start >= calls[p].end {
					w.ivs = append(w.ivs, [2]int64{max(calls[p].end, r.start), min(c.start, r.end)})
				}
			}
			// The last call of an operation on an edge (calls sort by
			// edge, operation and start) is its final attempt.
			if last := k+1 == hi || calls[k+1].edge != c.edge || calls[k+1].op != c.op; last && c.failed && !c.async {
				r.childFinal = true
			}
		}
		r.excl = -unionLen(w.ivs)
		lo = hi
	}
}

// feedRequests adds each request span to its node's statistics, parents
// before children (tree.Order), now that its exclusive time is known.
func (b *Builder) feedRequests(sp []tspan) {
	w := &b.work
	for _, i := range w.tree.Order {
		s := &sp[i]
		if !s.request {
			continue
		}
		d := s.end - s.start
		excl := max(0, d+s.excl)
		b.stats.Requests++
		b.nodes[s.node].addRequest(b, s.start, s.end, s.failed, s.failed && !s.childFinal, s.inst, nsToMS(float64(excl)))
		if pc := w.pubs[i]; len(pc) > 0 {
			b.nodes[s.node].addPublishes(s.start, s.failed && !s.childFinal, nsToMS(float64(excl)), pc)
		}
		if s.firstCall != 0 {
			b.nodes[s.node].noteFirstCall(s.firstCall)
		}
	}
}

// feedEdges adds each caller request's calls on one edge to that edge's
// statistics and notes the order in which each request called its edges.
func (b *Builder) feedEdges(sp []tspan, calls []call) {
	spans := b.work.spans[:0]
	for lo := 0; lo < len(calls); {
		hi := lo
		for hi < len(calls) && calls[hi].req == calls[lo].req && calls[hi].edge == calls[lo].edge {
			hi++
		}
		b.edges[calls[lo].edge].addGroup(b, sp, calls[lo].req, calls[lo:hi])
		if len(spans) > 0 && spans[0].req != calls[lo].req {
			b.noteOrder(spans)
			spans = spans[:0]
		}
		if s, ok := syncSpan(calls[lo:hi]); ok {
			spans = append(spans, s)
		}
		lo = hi
	}
	b.noteOrder(spans)
	b.work.spans = spans[:0]
}

// edgeSpan is when one caller request's synchronous calls on one edge
// began and ended.
type edgeSpan struct {
	req, edge   int32
	first, last int64
}

// syncSpan is the span of the synchronous calls among calls (one
// request's, on one edge); false when all are async.
func syncSpan(calls []call) (edgeSpan, bool) {
	s := edgeSpan{req: calls[0].req, edge: calls[0].edge, first: math.MaxInt64, last: math.MinInt64}
	for i := range calls {
		if c := &calls[i]; !c.async {
			s.first, s.last = min(s.first, c.start), max(s.last, c.end)
		}
	}
	return s, s.first <= s.last
}

// noteOrder counts, for each ordered pair of one request's edges, that
// the request called on both and whether the second's first call came
// after the first's last ended (Builder.order).
func (b *Builder) noteOrder(spans []edgeSpan) {
	for i := range spans {
		for j := range spans {
			if i == j {
				continue
			}
			k := uint64(uint32(spans[i].edge))<<32 | uint64(uint32(spans[j].edge))
			c := b.order[k]
			if c == nil {
				c = &[2]int64{}
				b.order[k] = c
			}
			c[0]++
			if spans[j].first >= spans[i].last {
				c[1]++
			}
		}
	}
}

// unionLen returns the total length covered by intervals (sorted in
// place).
func unionLen(ivs [][2]int64) int64 {
	if len(ivs) == 0 {
		return 0
	}
	slices.SortFunc(ivs, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var total int64
	cs, ce := ivs[0][0], ivs[0][1]
	for _, iv := range ivs[1:] {
		if iv[0] > ce {
			total += max(0, ce-cs)
			cs, ce = iv[0], iv[1]
			continue
		}
		ce = max(ce, iv[1])
	}
	return total + max(0, ce-cs)
}

// nodeKey makes the key of a node: the service (or peer) symbol and, at
// operation level, the operation symbol.
func (b *Builder) nodeKey(svc, op int32) uint64 {
	if b.cfg.Level != LevelOperation {
		op = -1
	}
	return uint64(uint32(svc))<<32 | uint64(uint32(op))
}

// nodeOf returns the node of a request span.
func (b *Builder) nodeOf(s *tspan) int32 {
	n := b.node(b.nodeKey(s.svc, s.op), s.svc, s.op)
	b.nodes[n].virtual = false
	return n
}

// virtualNode returns the node a client span's peer names. A peer that
// names an instrumented service (or service and operation) is that node.
func (b *Builder) virtualNode(s *tspan) int32 {
	return b.node(b.nodeKey(s.peer, s.op), s.peer, s.op)
}

func (b *Builder) node(key uint64, svc, op int32) int32 {
	if n, ok := b.nodeIdx[key]; ok {
		return n
	}
	name := b.syms.names[svc]
	if b.cfg.Level == LevelOperation {
		name += ":" + b.syms.names[op]
	}
	n := int32(len(b.nodes))
	b.nodes = append(b.nodes, newNodeAcc(name, b.syms.names[svc], b))
	b.nodeIdx[key] = n
	return n
}

func (b *Builder) edgeOf(from, to int32) int32 {
	key := uint64(uint32(from))<<32 | uint64(uint32(to))
	if e, ok := b.edgeIdx[key]; ok {
		return e
	}
	e := int32(len(b.edges))
	b.edges = append(b.edges, &edgeAcc{from: from, to: to})
	b.edgeIdx[key] = e
	return e
}
