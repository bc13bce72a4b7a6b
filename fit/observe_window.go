package fit

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"cascade"
	"cascade/replay"
)

// observer measures the selected windows during the second pass.
type observer struct {
	cfg     Config
	obs     *Observations
	width   int64
	win     map[int]*winAcc
	entries map[string]bool
	capac   map[string]float64
	syms    map[string]string
	tr      *traceReader
	cur     []byte
	buf     []tspan
	own     map[string]*OwnFailures
	rng     *rand.Rand
	calls   []callRec
	seen    int64
}

// winAcc accumulates one window.
type winAcc struct {
	w      Window
	nodes  map[string]*nodeAcc
	bins   int
	roots  []float64            // roots per load bin
	flight map[string][]float64 // per node: request-seconds per load bin
	queue  map[string]map[int64]float64
}

type nodeAcc struct {
	requests, failures, own int64
	n                       int64
	lat                     []float64
}

// callRec is a sampled call whose features are computed once its
// window's loads are complete.
type callRec struct {
	win            *winAcc
	node, upstream string
	bin            int
	attempt        int32
	failed         bool
}

func newObserver(cfg Config, m *cascade.Model, obs *Observations, width int64, sel []int) *observer {
	o := &observer{
		cfg: cfg, obs: obs, width: width, win: map[int]*winAcc{},
		entries: map[string]bool{}, capac: map[string]float64{}, syms: map[string]string{},
		tr: newTraceReader(obs.Level), own: map[string]*OwnFailures{},
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x6f6273657276)),
	}
	for _, e := range m.Entries {
		o.entries[e.Node] = true
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		c := float64(n.Concurrency * max(1, n.Replicas))
		if c == 0 && n.Observed != nil {
			c = float64(n.Observed.PeakInFlight)
		}
		o.capac[n.Name] = max(1, c)
	}
	for _, i := range sel {
		start := obs.StartNS + int64(i)*width
		length := min(width, obs.EndNS-start+1)
		if length < int64(time.Millisecond) {
			length = int64(time.Millisecond)
		}
		bins := int((length+loadBin-1)/loadBin) + 1
		o.win[i] = &winAcc{
			w:     Window{Index: i, StartNS: start, LengthMS: float64(length) / 1e6},
			nodes: map[string]*nodeAcc{}, bins: bins, roots: make([]float64, bins),
			flight: map[string][]float64{}, queue: map[string]map[int64]float64{},
		}
	}
	return o
}

func (o *observer) intern(s string) string {
	if v, ok := o.syms[s]; ok {
		return v
	}
	v := strings.Clone(s)
	o.syms[v] = v
	return v
}

func (o *observer) add(s *cascade.Span) {
	if len(o.buf) > 0 && string(o.cur) != s.TraceID {
		o.flush()
	}
	if len(o.buf) == 0 {
		o.cur = append(o.cur[:0], s.TraceID...)
	}
	t := tspan{
		id: spanKey(s.SpanID), svc: o.intern(s.Service), op: o.intern(s.Operation),
		peer: o.intern(s.Peer), kind: cascade.SpanKind(o.intern(string(s.Kind))), start: s.Start, end: s.Start + max(0, s.Duration),
		failed: s.Status == cascade.StatusError, resend: s.ResendCount, delivered: s.Delivered(),
	}
	if s.ParentSpanID != "" {
		t.parent, t.hasParent = spanKey(s.ParentSpanID), true
	}
	o.buf = append(o.buf, t)
}

// spanKey hashes a span id (FNV-1a, 64 bits).
func spanKey(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// flush measures the buffered trace.
func (o *observer) flush() {
	sp := o.buf
	o.buf = o.buf[:0]
	if len(sp) == 0 {
		return
	}
	start := sp[0].start
	hasRoot := false
	for i := range sp {
		if !sp[i].hasParent && (!hasRoot || sp[i].start < start) {
			start, hasRoot = sp[i].start, true
		}
	}
	if !hasRoot {
		for i := range sp {
			start = min(start, sp[i].start)
		}
	}
	wa := o.win[int((start-o.obs.StartNS)/o.width)]
	if wa == nil {
		return
	}
	reqs, truncated := o.tr.read(sp)
	if o.obs.StatusFromTraces && truncated {
		// No span records a status: a cut-short trace failed, at the
		// top of each of its fragments.
		for i := range reqs {
			if reqs[i].top {
				reqs[i].failed = true
			}
		}
	}
	for i := range reqs {
		r := &reqs[i]
		na := wa.nodes[r.node]
		if na == nil {
			na = &nodeAcc{}
			wa.nodes[r.node] = na
		}
		na.requests++
		if r.failed {
			na.failures++
			of := o.own[r.node]
			if of == nil {
				of = &OwnFailures{Node: r.node}
				o.own[r.node] = of
			}
			of.Failed++
			if !r.childFail {
				of.Own++
				na.own++
			}
		}
		na.n++
		ms := float64(r.end-r.start) / 1e6
		if len(na.lat) < reservoirSize {
			na.lat = append(na.lat, ms)
		} else if j := o.rng.Int64N(na.n); j < reservoirSize {
			na.lat[j] = ms
		}
		rel := r.start - wa.w.StartNS
		if r.root {
			a := replay.Arrival{AtMS: float64(rel) / 1e6}
			if o.entries[r.node] {
				a.Entry = r.node
			}
			wa.w.Arrivals = append(wa.w.Arrivals, a)
			wa.roots[wa.bin(rel)]++
		}
		wa.addFlight(r.node, rel, r.end-wa.w.StartNS)
		if r.parent >= 0 {
			o.sampleCall(callRec{win: wa, node: r.node, upstream: reqs[r.parent].node,
				bin: wa.bin(rel), attempt: r.attempt, failed: r.failed})
		}
	}
}

func (wa *winAcc) bin(rel int64) int {
	return min(wa.bins-1, max(0, int(rel/loadBin)))
}

// addFlight adds the request [from, to) (ns from the window's start) to
// the node's in-flight bins.
func (wa *winAcc) addFlight(node string, from, to int64) {
	f := wa.flight[node]
	if f == nil {
		f = make([]float64, wa.bins)
		wa.flight[node] = f
	}
	from, to = max(0, from), min(to, int64(wa.bins)*loadBin)
	for b := from / loadBin; from < to; b++ {
		end := min(to, (b+1)*loadBin)
		f[b] += float64(end-from) / float64(loadBin)
		from = end
	}
}

// sampleCall keeps a uniform sample of calls (reservoir sampling).
func (o *observer) sampleCall(c callRec) {
	o.seen++
	if len(o.calls) < o.cfg.LogitSample {
		o.calls = append(o.calls, c)
		return
	}
	if j := o.rng.Int64N(o.seen); j < int64(len(o.calls)) {
		o.calls[j] = c
	}
}

// addSample adds a queue-depth point to its window.
func (o *observer) addSample(s *cascade.Sample) {
	if s.Kind != cascade.MetricQueueDepth || s.Service == "" || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return
	}
	if s.Time < o.obs.StartNS {
		return
	}
	wa := o.win[int((s.Time-o.obs.StartNS)/o.width)]
	if wa == nil || s.Time >= wa.w.StartNS+int64(wa.w.LengthMS*1e6) {
		return
	}
	svc := o.intern(s.Service)
	q := wa.queue[svc]
	if q == nil {
		q = map[int64]float64{}
		wa.queue[svc] = q
	}
	q[s.Time] += s.Value
}

// finish turns the accumulators into windows and calls.
func (o *observer) finish() {
	idx := make([]int, 0, len(o.win))
	for i := range o.win {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		wa := o.win[i]
		w := wa.w
		sort.SliceStable(w.Arrivals, func(a, b int) bool { return w.Arrivals[a].AtMS < w.Arrivals[b].AtMS })
		w.Roots = len(w.Arrivals)
		names := make([]string, 0, len(wa.nodes))
		for name := range wa.nodes {
			names = append(names, name)
		}
		if o.obs.Level == "service" {
			for svc := range wa.queue {
				if wa.nodes[svc] == nil {
					names = append(names, svc)
				}
			}
		}
		slices.Sort(names)
		for _, name := range names {
			no := NodeObs{Name: name}
			if na := wa.nodes[name]; na != nil {
				no.Requests, no.Failures, no.Own = na.requests, na.failures, na.own
				slices.Sort(na.lat)
				no.P50MS = roundMS(quantile(na.lat, 0.5))
				no.P95MS = roundMS(quantile(na.lat, 0.95))
				no.P99MS = roundMS(quantile(na.lat, 0.99))
			}
			if q := wa.queue[name]; o.obs.Level == "service" && len(q) > 0 {
				var sum float64
				for _, v := range q {
					sum += v
				}
				no.QueueDepth, no.HasQueue = round6(sum/float64(len(q))), true
			}
			w.Nodes = append(w.Nodes, no)
		}
		o.obs.Windows = append(o.obs.Windows, w)
	}
	names := make([]string, 0, len(o.own))
	for name := range o.own {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o.obs.Own = append(o.obs.Own, *o.own[name])
	}
	binSec := float64(loadBin) / 1e9
	for _, c := range o.calls {
		load := func(node string) float64 {
			f := c.win.flight[node]
			if f == nil {
				return 0
			}
			cp, ok := o.capac[node]
			if !ok {
				cp = 1
			}
			return f[c.bin] / cp
		}
		o.obs.Calls = append(o.obs.Calls, Call{
			UpstreamLoad: load(c.upstream), NodeLoad: load(c.node),
			ArrivalRate: c.win.roots[c.bin] / binSec, Attempt: float64(c.attempt), Failed: c.failed,
		})
	}
	if o.obs.StatusFromTraces {
		o.obs.Notes = append(o.obs.Notes, "no span records a status: a request failed when its trace looks cut short (no root span, or spans whose parent is missing), at the top of each fragment")
	}
	if o.obs.Level == "operation" {
		o.obs.Notes = append(o.obs.Notes, "operation level: queue-depth metrics name services, not nodes, and are not compared")
	}
}
