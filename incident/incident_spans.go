package incident

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"cascade"
)

// tspan is what the incident pass keeps of a span while its trace is
// read.
type tspan struct {
	id, parent string
	service    string
	op         string
	kind       cascade.SpanKind
	start, end int64
	failed     bool
	request    bool
	req        int // the request span this span belongs to
}

// reservoir keeps a uniform sample of at most its capacity of values.
type reservoir struct {
	seen int64
	vals []float64
}

func (r *reservoir) add(x float64, cap int, rng *rand.Rand) {
	r.seen++
	if len(r.vals) < cap {
		r.vals = append(r.vals, x)
		return
	}
	if j := rng.Int64N(r.seen); j < int64(cap) {
		r.vals[j] = x
	}
}

// winAcc is one node's requests that started in one window.
type winAcc struct {
	n, errs   int64
	lat, self reservoir
	// shown is the latency as callers see it where lat judges something
	// else (a serialised node's time holding its slot, or times scaled
	// for the mix of operations); nil otherwise. shownSelf is the self
	// time before scaling, where it was scaled.
	shown, shownSelf *reservoir
}

// serialReq is one request of a serialised node.
type serialReq struct {
	start, end, calls int64 // calls: time waiting for synchronous calls
}

// maxSerialReqs bounds the requests kept per serialised node (24 bytes
// each).
const maxSerialReqs = 1 << 20

// edgeWin counts one edge's calls by the window of the caller request's
// start, and samples their latency as the caller sees it.
type edgeWin struct {
	calls, retries int64
	lat            reservoir
	// srv samples the same calls' latency as the callee served them
	// (its request span): where lat rises and srv does not, the time
	// was added between the two — the network, or the caller's own
	// starved client.
	srv reservoir
}

// spanAcc accumulates per-node and per-edge windows from spans grouped
// by trace.
type spanAcc struct {
	width int64 // window, ns
	cap   int
	rng   *rand.Rand
	nodes map[string]map[int64]*winAcc
	edges map[[2]string]map[int64]*edgeWin
	roots map[string]int64
	// rootWin counts the root requests (spans without a parent) by the
	// window they started in.
	rootWin map[int64]int64
	// clientTimed marks the edges whose calls the caller records (a
	// client span); opCallee names the callee that answered a caller's
	// client operation; unanswered counts, per caller and client
	// operation and window, client spans no request answered: calls to
	// a callee that did not answer (see unansweredTo).
	clientTimed map[[2]string]bool
	opCallee    map[[2]string]string
	unanswered  map[[2]string]map[int64]int64

	// serial names the nodes that serve one request at a time (the
	// model's proven single slot: a lock); reqs keeps their requests to
	// tell the wait for the slot from the time holding it.
	serial map[string]bool
	reqs   map[string][]serialReq

	// recs are the requests' latency and self time, held until fill
	// knows each operation's normal (see fill).
	recs     []reqRec
	callRecs []callRec
	// gaps are the synchronous calls the caller timed with its own
	// span, for the gap test (kept after fill).
	gaps []gapRec
	// selfs are the requests' self times, scaled for the mix of
	// operations as their windows judge them, for the self-time count
	// test (kept after fill; see selftime.go).
	selfs []selfRec
	// fans are the requests' calls per callee and descendants, for the
	// fan-out and truncation tests (kept after fill; see truncation.go).
	fans    []fanRec
	fanOuts []fanOut
	// opIDs and ops number the (node, operation) pairs of recs; edgeIDs
	// and edgeList the edges of callRecs.
	opIDs    map[opKey]int32
	ops      []opKey
	edgeIDs  map[[2]string]int32
	edgeList [][2]string
	// Per span of the trace being read: its request's index in recs,
	// the caller's request of its synchronous call, the sum of its
	// synchronous calls' durations (buffers reused across traces).
	recIdx, callerOf []int
	callDur          []int64

	trace string
	spans []tspan
	// tree links the spans of the trace being read to their parents
	// (tree.Parent, -1 for none) and counts their children.
	tree  cascade.TraceTree[string]
	names map[string]string // interned service, operation and kind names
}

func newSpanAcc(width int64, capacity int, seed uint64) *spanAcc {
	return &spanAcc{
		width: width, cap: capacity, rng: rand.New(rand.NewPCG(seed, 0x1ac1de17)),
		nodes: map[string]map[int64]*winAcc{}, edges: map[[2]string]map[int64]*edgeWin{},
		roots: map[string]int64{}, rootWin: map[int64]int64{},
		clientTimed: map[[2]string]bool{}, opCallee: map[[2]string]string{}, unanswered: map[[2]string]map[int64]int64{},
		names: map[string]string{},
		opIDs: map[opKey]int32{}, edgeIDs: map[[2]string]int32{},
		serial: map[string]bool{}, reqs: map[string][]serialReq{},
	}
}

// intern returns a copy of name that outlives the span it came from,
// the same copy for equal names.
func (a *spanAcc) intern(name string) string {
	if v, ok := a.names[name]; ok {
		return v
	}
	v := strings.Clone(name)
	a.names[v] = v
	return v
}

// add takes the next span; spans must come grouped by trace. The span
// and its strings are only valid during the call (dataset.ReadSpans lends
// them), so what is kept is copied.
func (a *spanAcc) add(s *cascade.Span) {
	if s.TraceID != a.trace {
		a.flush()
		a.trace = strings.Clone(s.TraceID)
	}
	a.spans = append(a.spans, tspan{
		id: strings.Clone(s.SpanID), parent: strings.Clone(s.ParentSpanID),
		service: a.intern(s.Service), op: a.intern(s.Operation), kind: cascade.SpanKind(a.intern(string(s.Kind))),
		start: s.Start, end: s.End(), failed: s.Status == cascade.StatusError,
	})
}

// holdSerial replaces, for each serialised node, the latency and self
// time its windows are judged by: a request that arrives while the slot
// is taken waits for the previous request to end (one at a time, in
// order), so it holds the slot from max(its start, the previous end) to
// its end; its own work is that time less its waits for calls. The queue
// wait is left out: it follows from the load and the holding time, and
// swings widely by chance near saturation. The latency callers see stays
// in the windows' series.
func (a *spanAcc) holdSerial() {
	for name, rs := range a.reqs {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].end != rs[j].end {
				return rs[i].end < rs[j].end
			}
			return rs[i].start < rs[j].start
		})
		held := map[int64]*winAcc{}
		prev := int64(math.MinInt64)
		for _, r := range rs {
			from := max(r.start, prev)
			prev = r.end
			w := floorDiv(r.start, a.width)
			x := held[w]
			if x == nil {
				x = &winAcc{}
				held[w] = x
			}
			x.lat.add(float64(r.end-from)/1e6, a.cap, a.rng)
			x.self.add(float64(max(0, r.end-from-r.calls))/1e6, a.cap, a.rng)
		}
		for w, x := range a.nodes[name] {
			h := held[w]
			if h == nil {
				continue
			}
			if x.shown == nil {
				shown := x.lat
				x.shown = &shown
			}
			x.lat, x.self = h.lat, h.self
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (a *spanAcc) win(node string, w int64) *winAcc {
	m := a.nodes[node]
	if m == nil {
		m = map[int64]*winAcc{}
		a.nodes[node] = m
	}
	x := m[w]
	if x == nil {
		x = &winAcc{}
		m[w] = x
	}
	return x
}

func (a *spanAcc) edgeWin(from, to string, w int64) *edgeWin {
	k := [2]string{from, to}
	m := a.edges[k]
	if m == nil {
		m = map[int64]*edgeWin{}
		a.edges[k] = m
	}
	x := m[w]
	if x == nil {
		x = &edgeWin{}
		m[w] = x
	}
	return x
}

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

// reqRec is one request's latency and self time (ms), by node,
// operation and window.
type reqRec struct {
	op int32 // the node's operation, in spanAcc.ops
	// parent is the caller's request of a synchronous call (its index
	// in recs), −1 for none; share is the part of this request's calls'
	// summed durations that its latency waited (less than 1 where calls
	// overlapped).
	parent           int32
	at               int64 // the start (ns)
	lat, self, share float64
}

func (a *spanAcc) opID(service, op string) int32 {
	k := opKey{service, op}
	id, ok := a.opIDs[k]
	if !ok {
		id = int32(len(a.ops))
		a.opIDs[k] = id
		a.ops = append(a.ops, k)
	}
	return id
}

func (a *spanAcc) edgeID(from, to string) int32 {
	k := [2]string{from, to}
	id, ok := a.edgeIDs[k]
	if !ok {
		id = int32(len(a.edgeList))
		a.edgeIDs[k] = id
		a.edgeList = append(a.edgeList, k)
	}
	return id
}

// callRec is one call's latency as its caller saw it and as the
// callee served it (ms), by edge, the callee's operation and the
// caller's window.
type callRec struct {
	edge   int32 // in spanAcc.edgeList
	callee int32 // the callee's request, its index in recs
	w      int64
	lat    float64
}

// opKey is one node's operation.
type opKey struct{ service, op string }

// opScale is, per operation of a node, the factor that brings its
// requests' latency and self time to the node's normal: the node's
// median over its operation's, both in the normal range.
type opScale map[opKey][2]float64

// mixScale reads each operation's normal from the requests of base for
// which in is true: a node serves several operations (a route that
// reads, one that writes), and a shift in their mix moves the node's
// median with nothing slower. An operation with fewer than minCount
// normal requests, or a node with one operation, keeps its times.
func mixScale(a *spanAcc, in func(*reqRec) bool, minCount int) opScale {
	base := a.recs
	lat, self := map[opKey][]float64{}, map[opKey][]float64{}
	nodeLat, nodeSelf := map[string][]float64{}, map[string][]float64{}
	for i := range base {
		r := &base[i]
		if !in(r) {
			continue
		}
		k := a.ops[r.op]
		lat[k] = append(lat[k], r.lat)
		self[k] = append(self[k], r.self)
		nodeLat[k.service] = append(nodeLat[k.service], r.lat)
		nodeSelf[k.service] = append(nodeSelf[k.service], r.self)
	}
	ops := map[string]int{}
	for k := range lat {
		ops[k.service]++
	}
	sc := opScale{}
	for k, xs := range lat {
		if ops[k.service] < 2 || len(xs) < minCount {
			continue
		}
		f := [2]float64{1, 1}
		if m := quantile(xs, 0.5); m > 0 {
			f[0] = quantile(nodeLat[k.service], 0.5) / m
		}
		if m := quantile(self[k], 0.5); m > 0 {
			f[1] = quantile(nodeSelf[k.service], 0.5) / m
		}
		sc[k] = f
	}
	return sc
}

// fill puts the requests' latency and self time into their windows, in
// the order they were read, adjusted for the mix of operations: a
// request's self time by its operation's factor (1 where sc has none),
// its latency by the factor after its synchronous calls' own latencies
// are replaced by theirs adjusted (deepest first, weighted by the share
// of the calls its latency waited). A caller whose callee was asked for
// more of its slow operation waits longer with nothing slower; adjusted
// this way it is not a change, at the callee or above it. Calls take
// their callee's adjusted latency likewise.
func (a *spanAcc) fill(sc opScale) {
	scaled := map[string]bool{}
	for k := range sc {
		scaled[k.service] = true
	}
	shownRNG := rand.New(rand.NewPCG(0x5e1f, 0x5e1f))
	factor := func(r *reqRec) [2]float64 {
		if f, ok := sc[a.ops[r.op]]; ok {
			return f
		}
		return [2]float64{1, 1}
	}
	n := len(a.recs)
	adj := make([]float64, n)
	if len(sc) == 0 {
		for i := range a.recs {
			adj[i] = a.recs[i].lat
		}
	} else {
		// Deepest first: requests by depth (counting sort, stable).
		depth := make([]int32, n)
		var most int32
		for i := range a.recs {
			for p, steps := a.recs[i].parent, 0; p >= 0 && steps < n; p, steps = a.recs[p].parent, steps+1 {
				depth[i]++
			}
			most = max(most, depth[i])
		}
		start := make([]int, most+2)
		for _, d := range depth {
			start[most-d+1]++
		}
		for d := 1; d < len(start); d++ {
			start[d] += start[d-1]
		}
		order := make([]int, n)
		for i, d := range depth {
			order[start[most-d]] = i
			start[most-d]++
		}
		delta := make([]float64, n)
		for _, i := range order {
			r := &a.recs[i]
			adj[i] = factor(r)[0] * max(0, r.lat+delta[i]*r.share)
			if r.parent >= 0 {
				delta[r.parent] += adj[i] - r.lat
			}
		}
	}
	for i := range a.recs {
		r := &a.recs[i]
		svc := a.ops[r.op].service
		w := a.win(svc, floorDiv(r.at, a.width))
		w.lat.add(adj[i], a.cap, a.rng)
		w.self.add(r.self*factor(r)[1], a.cap, a.rng)
		a.selfs = append(a.selfs, selfRec{op: r.op, at: r.at, self: r.self * factor(r)[1]})
		if scaled[svc] || adj[i] != r.lat {
			// What the windows show stays the times as measured; its
			// own generator keeps the judged samples what they were.
			if w.shown == nil {
				w.shown, w.shownSelf = &reservoir{}, &reservoir{}
			}
			w.shown.add(r.lat, a.cap, shownRNG)
			w.shownSelf.add(r.self, a.cap, shownRNG)
		}
	}
	for i := range a.callRecs {
		r := &a.callRecs[i]
		k := a.edgeList[r.edge]
		e := a.edgeWin(k[0], k[1], r.w)
		d := adj[r.callee] - a.recs[r.callee].lat
		e.lat.add(max(0, r.lat+d), a.cap, a.rng)
		e.srv.add(adj[r.callee], a.cap, a.rng)
	}
	a.recs, a.callRecs = nil, nil
}

// covered returns the length of the union of intervals within [lo, hi].
func covered(iv [][2]int64, lo, hi int64) int64 {
	if len(iv) == 0 {
		return 0
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	var total int64
	curLo, curHi := int64(0), int64(0)
	open := false
	for _, x := range iv {
		s, e := max(x[0], lo), min(x[1], hi)
		if e <= s {
			continue
		}
		if open && s <= curHi {
			curHi = max(curHi, e)
			continue
		}
		if open {
			total += curHi - curLo
		}
		curLo, curHi, open = s, e, true
	}
	if open {
		total += curHi - curLo
	}
	return total
}

// unansweredTo counts the calls to callee in window w that nothing
// answered: client spans without a child whose caller's operation
// another call showed callee answering.
func (a *spanAcc) unansweredTo(callee string, w int64) int64 {
	var n int64
	for k, m := range a.unanswered {
		if a.opCallee[k] == callee {
			n += m[w]
		}
	}
	return n
}
