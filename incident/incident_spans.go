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
