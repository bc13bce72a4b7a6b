package graph

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"cascade"
)

// CapacityAggregate is the capacity source of a node built from
// aggregates, which observe no concurrency.
const CapacityAggregate = "aggregates (no concurrency observed)"

// Connection types of the servicegraph connector.
const (
	connVirtual   = "virtual_node"
	connDatabase  = "database"
	connMessaging = "messaging_system"
	// userNode is the client the servicegraph connector names for a
	// server span without a parent: the outside world.
	userNode = "user"
	// unknownPeer is the server it names when a client span's callee
	// never reported and no peer attribute names it.
	unknownPeer = "unknown"
)

// Notes every model built from aggregates carries (ModelSource.Notes).
var aggregateNotes = []string{
	"built from aggregated series (servicegraph and spanmetrics connectors): counts, failure counts and latency histograms, nothing per request",
	"fan_out is the edge's request rate ÷ the caller's request rate, a mean drawn as a mix of the two nearest counts: aggregates hold no fan-out per request",
	"no retries: aggregates count a re-sent call as another request, so retry, timeout_ms and propagation are defaults",
	"parallelism and stages are read from the latency budget: a caller's calls run one after another (each edge its own stage, by callee name; parallelism 1) when its mean latency covers its callees' in sequence, else all at once (stage 0, parallelism 0); concurrency is not observable (nodes are unbounded)",
	"service_ms of a node with callees is its latency less the wait for them (fan-out × their mean latency in sequence, or the longest callee when its calls overlap), at least 0",
	"the load's shape is not observable from aggregates: replay sends Poisson arrivals at the entries' rates",
}

// model assembles the model from the per-edge and per-service sums,
// phase by phase: it sorts the edges into entries, own work and the
// model's, names the nodes and reads their facts, then adds the nodes,
// the edges and the entries, and stages each caller's calls. Each phase
// leaves its part in an aggModel.
func (a *AggregateBuilder) model(edges map[edgeKey]*aggEdge, services map[string]*aggService, win [2]int64, seconds float64) (*Result, error) {
	g := &aggModel{
		a: a, edges: edges, services: services, seconds: seconds,
		notes:      slices.Clone(aggregateNotes),
		entryCalls: map[string]float64{},
		incoming:   map[string][]*aggEdge{},
		outgoing:   map[string][]*aggEdge{},
		facts:      map[string]*aggNodeFacts{},
		concurrent: map[string]bool{},
	}
	g.sortEdges()
	g.nameNodes()
	g.readNodeFacts()
	g.newModel(win)
	for _, name := range g.nodeNames {
		g.addNode(name)
	}
	for _, e := range g.model {
		g.addEdge(e)
	}
	if err := g.addEntries(); err != nil {
		return nil, err
	}
	if a.skipped > 0 {
		g.warnings = append(g.warnings, fmt.Sprintf("%d points of service-graph or span-metrics series left out: labels that do not parse, or no client and server, service or le label", a.skipped))
	}
	g.stats.Roots = int64(math.Round(g.roots))
	g.m.Source.Notes = g.notes
	g.stageEdges()
	g.m.Sort()
	return g.result(), nil
}

// aggModel is what model's phases read and leave for the next.
type aggModel struct {
	a        *AggregateBuilder
	edges    map[edgeKey]*aggEdge
	services map[string]*aggService
	seconds  float64
	notes    []string
	warnings []string
	// entryCalls are the user's calls per node (the entries); model the
	// edges of the model, with incoming and outgoing per node.
	entryCalls         map[string]float64
	model              []*aggEdge
	incoming, outgoing map[string][]*aggEdge
	nodeNames          []string // sorted
	facts              map[string]*aggNodeFacts
	concurrent         map[string]bool // callers whose calls overlap
	m                  *cascade.Model
	stats              Stats
	roots              float64 // the entries' calls
}

// aggNodeFacts is what the series say of one node's requests.
type aggNodeFacts struct {
	requests, errors float64
	lat              hist
	meanMS           float64
}

// rate returns n over the series' seconds, per second (0 without any).
func (g *aggModel) rate(n float64) float64 {
	if g.seconds <= 0 {
		return 0
	}
	return round6(n / g.seconds)
}

// share returns n over of (0 when of is not positive).
func (g *aggModel) share(n, of float64) float64 {
	if of <= 0 {
		return 0
	}
	return round6(n / of)
}

// sortEdges sorts the edges, in client, server order: the user's calls
// are entries; a virtual node that is the client itself (peer.service
// names it) or an unnamed peer of a service without server spans (one
// that reports its work as client spans, as HotROD's mysql and
// redis-manual) is the client's own work; the rest are the model's.
func (g *aggModel) sortEdges() {
	ekeys := make([]edgeKey, 0, len(g.edges))
	for k := range g.edges {
		ekeys = append(ekeys, k)
	}
	slices.SortFunc(ekeys, func(x, y edgeKey) int {
		if c := cmp.Compare(x.client, y.client); c != 0 {
			return c
		}
		return cmp.Compare(x.server, y.server)
	})
	for _, k := range ekeys {
		e := g.edges[k]
		if k.client == userNode {
			g.entryCalls[k.server] += e.requests
			continue
		}
		own := g.services[k.client]
		selfReport := !e.direct && (k.server == k.client ||
			(k.server == unknownPeer && (own == nil || own.serverCalls == 0)))
		if selfReport {
			g.notes = append(g.notes, fmt.Sprintf("%s: its %.0f virtual-node calls to %q are its own work (its spans are client spans the connector could not pair), counted as its requests", k.client, e.requests, k.server))
			continue
		}
		g.model = append(g.model, e)
		g.incoming[k.server] = append(g.incoming[k.server], e)
		g.outgoing[k.client] = append(g.outgoing[k.client], e)
	}
}

// nameNodes names the nodes, sorted: the services, both ends of the
// model's edges and the entries.
func (g *aggModel) nameNodes() {
	names := map[string]bool{}
	for s := range g.services {
		names[s] = true
	}
	for _, e := range g.model {
		names[e.key.client], names[e.key.server] = true, true
	}
	for n := range g.entryCalls {
		names[n] = true
	}
	g.nodeNames = make([]string, 0, len(names))
	for n := range names {
		g.nodeNames = append(g.nodeNames, n)
	}
	slices.Sort(g.nodeNames)
}

// readNodeFacts reads each node's requests, errors and latency: its
// server spans', else its callers' calls (and the entries'), else, for
// a service that reports client spans only, those.
func (g *aggModel) readNodeFacts() {
	for _, name := range g.nodeNames {
		f := &aggNodeFacts{}
		s := g.services[name]
		var in, inFailed float64
		var inHist hist
		for _, e := range g.incoming[name] {
			in += e.requests
			inFailed += e.failed()
			inHist.merge(e.serverSide())
		}
		switch {
		case s != nil && s.serverCalls > 0:
			f.requests, f.errors = s.serverCalls, s.serverErrors
			f.lat.merge(&s.server)
		case in > 0 || s == nil:
			f.requests, f.errors = in+g.entryCalls[name], inFailed
			f.lat.merge(&inHist)
		default:
			f.requests, f.errors = s.clientCalls, s.clientErrors
			f.lat.merge(&s.client)
			if len(g.incoming[name]) == 0 && g.entryCalls[name] == 0 {
				g.warnings = append(g.warnings, fmt.Sprintf("node %s: no caller in the service graph: its spans are client spans, whose callers the connectors do not record; a trace set places it", name))
			}
		}
		f.meanMS = f.lat.mean()
		if f.meanMS == 0 {
			f.meanMS = f.lat.quantile(0.5)
		}
		g.facts[name] = f
	}
}

// newModel starts the model, with its source: the series over window
// win.
func (g *aggModel) newModel(win [2]int64) {
	a := g.a
	g.m = &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    a.cfg.Name,
		Source: &cascade.ModelSource{
			Dataset: a.cfg.Dataset,
			Level:   string(a.cfg.Level),
			StartNS: win[0],
			EndNS:   win[1],
			From:    cascade.FromAggregates,
			Series:  int64(len(a.series)),
		},
	}
	g.stats.Samples = a.read
}

// addNode adds node name to the model: what was observed of it, and
// its service time, its latency less its wait for its callees.
func (g *aggModel) addNode(name string) {
	f := g.facts[name]
	s := g.services[name]
	obs := &cascade.NodeObserved{
		Requests:       int64(math.Round(f.requests)),
		RatePerSec:     g.rate(f.requests),
		ErrorRate:      g.share(f.errors, f.requests),
		LatencyP50MS:   roundMS(f.lat.quantile(0.5)),
		LatencyP95MS:   roundMS(f.lat.quantile(0.95)),
		LatencyP99MS:   roundMS(f.lat.quantile(0.99)),
		CapacitySource: CapacityAggregate,
		SelfCall:       g.edges[edgeKey{name, name}] != nil && slices.Contains(g.model, g.edges[edgeKey{name, name}]),
	}
	obs.LittleL = round6(g.rate(f.requests) * f.meanMS / 1e3)
	obs.MeanInFlight = obs.LittleL
	if obs.Requests > 0 {
		obs.PeakInFlight = max(1, int(math.Ceil(obs.LittleL-0.05)))
	}
	g.stats.Requests += obs.Requests
	prov := map[string]cascade.Provenance{
		"replicas":           cascade.Default,
		"concurrency":        cascade.Default,
		"queue_cap":          cascade.Default,
		"overload.base":      cascade.Aggregated,
		"overload.slope":     cascade.Default,
		"overload.threshold": cascade.Default,
		"service_ms":         cascade.Aggregated,
	}
	scale := g.serviceScale(name, f, prov)
	pts := f.lat.points()
	for i := range pts {
		pts[i] = roundMS(pts[i] * scale)
	}
	tiers := &cascade.Tiers{
		P50:    roundMS(obs.LatencyP50MS * scale),
		P95:    roundMS(obs.LatencyP95MS * scale),
		P99:    roundMS(obs.LatencyP99MS * scale),
		Mean:   roundMS(f.meanMS * scale),
		Points: pts,
	}
	g.m.Nodes = append(g.m.Nodes, cascade.Node{
		Name:       name,
		Virtual:    s == nil,
		Replicas:   1,
		Service:    cascade.Dist{Kind: cascade.DistTiers, P50: tiers.P50, P95: tiers.P95, P99: tiers.P99},
		Tiers:      tiers,
		Overload:   cascade.Overload{Base: obs.ErrorRate, Slope: 0, Threshold: 1},
		Observed:   obs,
		Provenance: prov,
	})
}

// serviceScale returns the share of node name's latency that is its
// service time: the latency, less the time spent waiting for the
// callees, as they were called one after another when the latency
// leaves room for that, else all at once (the node's calls then
// overlap: concurrent). It marks the service time inferred in prov when
// the node has callees.
func (g *aggModel) serviceScale(name string, f *aggNodeFacts, prov map[string]cascade.Provenance) float64 {
	scale := 1.0
	out := g.outgoing[name]
	if len(out) == 0 {
		return scale
	}
	var seq, conc float64
	for _, e := range out {
		if f.requests > 0 {
			seq += e.requests / f.requests * e.clientSide().mean()
		}
		conc = max(conc, e.clientSide().mean())
	}
	wait := seq
	if f.meanMS < seq {
		wait = conc
		g.concurrent[name] = true
	}
	if f.meanMS > 0 {
		scale = max(0, f.meanMS-wait) / f.meanMS
	}
	prov["service_ms"] = cascade.Inferred
	return scale
}

// addEdge adds edge e to the model: what was observed of it, and its
// fan-out, the edge's calls over its caller's requests.
func (g *aggModel) addEdge(e *aggEdge) {
	caller := g.facts[e.key.client].requests
	calls := int64(math.Round(e.requests))
	lat := e.clientSide()
	obs := &cascade.EdgeObserved{
		Calls:           calls,
		ErrorRate:       g.share(e.failed(), e.requests),
		LatencyP50MS:    roundMS(lat.quantile(0.5)),
		LatencyP95MS:    roundMS(lat.quantile(0.95)),
		LatencyP99MS:    roundMS(lat.quantile(0.99)),
		RetryEvidence:   EvidenceNone,
		TimeoutEvidence: EvidenceNone,
		SelfCall:        e.key.client == e.key.server,
	}
	prov := map[string]cascade.Provenance{
		"fan_out":     cascade.Inferred,
		"parallelism": cascade.Inferred,
		"shared_pool": cascade.Default,
		"stage":       cascade.Inferred,
		"timeout_ms":  cascade.Default,
		"retry":       cascade.Default,
		"propagation": cascade.Default,
	}
	fan := cascade.Const(1)
	if caller > 0 {
		obs.FanOutMean = round6(e.requests / caller)
		fan = meanFanOut(obs.FanOutMean)
	} else {
		prov["fan_out"] = cascade.Default
	}
	g.stats.Calls += calls
	g.m.Edges = append(g.m.Edges, cascade.Edge{
		From:        e.key.client,
		To:          e.key.server,
		Async:       e.async,
		FanOut:      fan,
		Parallelism: parallelism(g.concurrent[e.key.client]),
		Propagation: 1,
		Observed:    obs,
		Provenance:  prov,
	})
}

// addEntries adds the entries: the user's calls; without them, the
// nodes that serve requests and nothing calls. It fails when there is
// neither.
func (g *aggModel) addEntries() error {
	for _, n := range g.entryCalls {
		g.roots += n
	}
	if g.roots == 0 {
		for _, name := range g.nodeNames {
			if len(g.incoming[name]) == 0 && g.facts[name].requests > 0 && g.services[name] != nil && g.services[name].serverCalls > 0 {
				g.entryCalls[name] = g.facts[name].requests
				g.roots += g.facts[name].requests
			}
		}
		if g.roots > 0 {
			g.warnings = append(g.warnings, "no calls from \"user\" (root spans) in the service graph: entries are the nodes that serve requests and have no caller")
		}
	}
	for _, name := range g.nodeNames {
		n, ok := g.entryCalls[name]
		if !ok {
			continue
		}
		en := cascade.Entry{Node: name, RatePerSec: g.rate(n), Share: g.share(n, g.roots)}
		if s := g.services[name]; s != nil {
			en.Operation = topOp(s.ops)
		}
		g.m.Entries = append(g.m.Entries, en)
	}
	if len(g.m.Entries) == 0 {
		return errors.New("service-graph series: no entry node (no calls from \"user\" and no node that serves requests without a caller)")
	}
	return nil
}

// stageEdges stages each caller's calls: one call after another, each
// of a caller's edges its own stage, in callee order (the edges are in
// client, server order); calls that overlap all in stage 0.
func (g *aggModel) stageEdges() {
	m := g.m
	for i := range m.Edges {
		if i > 0 && m.Edges[i].From == m.Edges[i-1].From && !g.concurrent[m.Edges[i].From] {
			m.Edges[i].Stage = m.Edges[i-1].Stage + 1
		}
	}
}

// result returns the build's result: the model, its stats and a node
// info per node, analysed, with the warnings sorted.
func (g *aggModel) result() *Result {
	m := g.m
	res := &Result{Model: m, Stats: g.stats, Seed: g.a.cfg.Seed}
	for i := range m.Nodes {
		res.Nodes = append(res.Nodes, NodeInfo{Name: m.Nodes[i].Name})
	}
	analyze(res, g.stats.Roots)
	slices.Sort(g.warnings)
	res.Warnings = g.warnings
	return res
}

// parallelism is an aggregate edge's: 1 (one call after another), or 0
// (all at once) for a caller whose calls overlap.
func parallelism(concurrent bool) int {
	if concurrent {
		return 0
	}
	return 1
}

// topOp returns the operation with the most calls (ties by name).
func topOp(ops map[string]float64) string {
	best, n := "", -1.0
	for op, c := range ops {
		if c > n || (c == n && op < best) {
			best, n = op, c
		}
	}
	return best
}

// meanFanOut returns a fan-out distribution with mean m: the constant
// when m is a whole number, else 100 points of ⌊m⌋ and ⌈m⌉ in the
// proportion that gives the mean (to a hundredth).
func meanFanOut(m float64) cascade.Dist {
	k := math.Floor(m)
	up := int(math.Round((m - k) * 100))
	switch up {
	case 0:
		return cascade.Const(k)
	case 100:
		return cascade.Const(k + 1)
	}
	pts := make([]float64, 100)
	for i := range pts {
		pts[i] = k
		if i >= 100-up {
			pts[i] = k + 1
		}
	}
	return cascade.Dist{Kind: cascade.DistEmpirical, Points: pts}
}
