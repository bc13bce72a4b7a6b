package graph

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

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

// aggEdge is what the servicegraph series say about one client→server
// pair.
type aggEdge struct {
	key                   edgeKey
	requests              float64
	failedTotal           float64 // request_failed_total
	failedLabel           float64 // request_total{failed="true"}
	hasFailedTotal        bool
	direct, async         bool // some series is a direct (or messaging) call
	server, client        hist
	hasServer, hasClients bool
}

// aggService is what the spanmetrics series say about one service.
type aggService struct {
	serverCalls, serverErrors float64 // server and consumer spans
	clientCalls, clientErrors float64 // client and producer spans
	otherCalls                float64 // internal and unspecified spans
	server, client            hist
	ops                       map[string]float64 // server span name → calls
}

func (a *AggregateBuilder) service(m map[string]*aggService, name string) *aggService {
	s := m[name]
	if s == nil {
		s = &aggService{ops: map[string]float64{}}
		m[name] = s
	}
	return s
}

// Finish returns the model the series describe. The builder must not be
// used afterwards.
func (a *AggregateBuilder) Finish() (*Result, error) {
	if len(a.series) == 0 {
		return nil, ErrNoAggregates
	}
	rangeStart := a.minT
	if !a.cfg.SeriesStart.IsZero() {
		rangeStart = a.cfg.SeriesStart.UnixNano()
	}
	keys := make([]string, 0, len(a.series))
	for k := range a.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	// Increases and the window in which the counters rose: the span
	// counters' (each span counts at its end) when there are any, else
	// every series'.
	var win, spanWin [2]int64
	var rose, spanRose bool
	widen := func(w *[2]int64, ok *bool, from, to int64) {
		if !*ok {
			*w, *ok = [2]int64{from, to}, true
			return
		}
		w[0], w[1] = min(w[0], from), max(w[1], to)
	}
	// A histogram without a unit in its name is in seconds when its
	// largest finite bound is at most 300 (the connectors' seconds
	// layout ends at 15, their milliseconds one at 15,000).
	maxLE := map[string]float64{}
	for _, k := range keys {
		ser := a.series[k]
		from, to, ok := ser.increase(rangeStart)
		if ok && ser.part != partBucket {
			widen(&win, &rose, from, to)
			if ser.kind == kindSpanCalls {
				widen(&spanWin, &spanRose, from, to)
			}
		}
		if ser.part == partBucket && !math.IsInf(ser.le, 1) {
			metric := k[:strings.IndexByte(k, 0)]
			maxLE[metric] = max(maxLE[metric], ser.le)
		}
	}
	switch {
	case spanRose:
		win = spanWin
	case !rose:
		win = [2]int64{a.minT, a.maxT}
	}
	seconds := float64(win[1]-win[0]) / 1e9

	edges := map[edgeKey]*aggEdge{}
	services := map[string]*aggService{}
	edgeOf := func(k edgeKey) *aggEdge {
		e := edges[k]
		if e == nil {
			e = &aggEdge{key: k}
			edges[k] = e
		}
		return e
	}
	for _, k := range keys {
		ser := a.series[k]
		scale := float64(ser.unit)
		if scale == 0 {
			scale = 1
			if le := maxLE[k[:strings.IndexByte(k, 0)]]; le > 0 && le <= 300 {
				scale = 1000
			}
		}
		var h *hist
		switch ser.kind {
		case kindEdgeRequests:
			e := edgeOf(ser.edge)
			e.requests += ser.inc
			if ser.fail == "true" {
				e.failedLabel += ser.inc
			}
			switch ser.conn {
			case connVirtual, connDatabase:
			case connMessaging:
				e.direct, e.async = true, true
			default:
				e.direct = true
			}
		case kindEdgeFailed:
			e := edgeOf(ser.edge)
			e.failedTotal += ser.inc
			e.hasFailedTotal = true
		case kindEdgeServerHist:
			e := edgeOf(ser.edge)
			h, e.hasServer = &e.server, true
		case kindEdgeClientHist:
			e := edgeOf(ser.edge)
			h, e.hasClients = &e.client, true
		case kindSpanCalls, kindSpanHist:
			s := a.service(services, ser.span.service)
			server := ser.span.kind == "server" || ser.span.kind == "consumer"
			client := ser.span.kind == "client" || ser.span.kind == "producer"
			if ser.kind == kindSpanCalls {
				switch {
				case server:
					s.serverCalls += ser.inc
					s.ops[ser.span.name] += ser.inc
					if ser.span.failed {
						s.serverErrors += ser.inc
					}
				case client:
					s.clientCalls += ser.inc
					if ser.span.failed {
						s.clientErrors += ser.inc
					}
				default:
					s.otherCalls += ser.inc
				}
				continue
			}
			switch {
			case server:
				h = &s.server
			case client:
				h = &s.client
			}
		}
		if h == nil {
			continue
		}
		switch ser.part {
		case partBucket:
			h.addBucket(ser.le*scale, ser.inc)
		case partSum:
			h.sum += ser.inc * scale
		case partCount:
			h.count += ser.inc
		}
	}
	return a.model(edges, services, win, seconds)
}

// model assembles the model from the per-edge and per-service sums.
func (a *AggregateBuilder) model(edges map[edgeKey]*aggEdge, services map[string]*aggService, win [2]int64, seconds float64) (*Result, error) {
	rate := func(n float64) float64 {
		if seconds <= 0 {
			return 0
		}
		return round6(n / seconds)
	}
	share := func(n, of float64) float64 {
		if of <= 0 {
			return 0
		}
		return round6(n / of)
	}
	notes := slices.Clone(aggregateNotes)
	var warnings []string

	// Edges: the user's calls are entries; a virtual node that is the
	// client itself (peer.service names it) or an unnamed peer of a
	// service without server spans (one that reports its work as client
	// spans, as HotROD's mysql and redis-manual) is the client's own work.
	ekeys := make([]edgeKey, 0, len(edges))
	for k := range edges {
		ekeys = append(ekeys, k)
	}
	slices.SortFunc(ekeys, func(x, y edgeKey) int {
		if c := cmp.Compare(x.client, y.client); c != 0 {
			return c
		}
		return cmp.Compare(x.server, y.server)
	})
	entryCalls := map[string]float64{}
	var model []*aggEdge
	incoming := map[string][]*aggEdge{}
	outgoing := map[string][]*aggEdge{}
	for _, k := range ekeys {
		e := edges[k]
		if k.client == userNode {
			entryCalls[k.server] += e.requests
			continue
		}
		own := services[k.client]
		selfReport := !e.direct && (k.server == k.client ||
			(k.server == unknownPeer && (own == nil || own.serverCalls == 0)))
		if selfReport {
			notes = append(notes, fmt.Sprintf("%s: its %.0f virtual-node calls to %q are its own work (its spans are client spans the connector could not pair), counted as its requests", k.client, e.requests, k.server))
			continue
		}
		model = append(model, e)
		incoming[k.server] = append(incoming[k.server], e)
		outgoing[k.client] = append(outgoing[k.client], e)
	}

	// Nodes.
	names := map[string]bool{}
	for s := range services {
		names[s] = true
	}
	for _, e := range model {
		names[e.key.client], names[e.key.server] = true, true
	}
	for n := range entryCalls {
		names[n] = true
	}
	nodeNames := make([]string, 0, len(names))
	for n := range names {
		nodeNames = append(nodeNames, n)
	}
	slices.Sort(nodeNames)

	type nodeFacts struct {
		requests, errors float64
		lat              hist
		meanMS           float64
	}
	facts := map[string]*nodeFacts{}
	concurrent := map[string]bool{} // callers whose calls overlap
	for _, name := range nodeNames {
		f := &nodeFacts{}
		s := services[name]
		var in, inFailed float64
		var inHist hist
		for _, e := range incoming[name] {
			in += e.requests
			inFailed += e.failed()
			inHist.merge(e.serverSide())
		}
		switch {
		case s != nil && s.serverCalls > 0:
			f.requests, f.errors = s.serverCalls, s.serverErrors
			f.lat.merge(&s.server)
		case in > 0 || s == nil:
			f.requests, f.errors = in+entryCalls[name], inFailed
			f.lat.merge(&inHist)
		default:
			f.requests, f.errors = s.clientCalls, s.clientErrors
			f.lat.merge(&s.client)
			if len(incoming[name]) == 0 && entryCalls[name] == 0 {
				warnings = append(warnings, fmt.Sprintf("node %s: no caller in the service graph: its spans are client spans, whose callers the connectors do not record; a trace set places it", name))
			}
		}
		f.meanMS = f.lat.mean()
		if f.meanMS == 0 {
			f.meanMS = f.lat.quantile(0.5)
		}
		facts[name] = f
	}

	m := &cascade.Model{
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
	var stats Stats
	stats.Samples = a.read
	for _, name := range nodeNames {
		f := facts[name]
		s := services[name]
		obs := &cascade.NodeObserved{
			Requests:       int64(math.Round(f.requests)),
			RatePerSec:     rate(f.requests),
			ErrorRate:      share(f.errors, f.requests),
			LatencyP50MS:   roundMS(f.lat.quantile(0.5)),
			LatencyP95MS:   roundMS(f.lat.quantile(0.95)),
			LatencyP99MS:   roundMS(f.lat.quantile(0.99)),
			CapacitySource: CapacityAggregate,
			SelfCall:       edges[edgeKey{name, name}] != nil && slices.Contains(model, edges[edgeKey{name, name}]),
		}
		obs.LittleL = round6(rate(f.requests) * f.meanMS / 1e3)
		obs.MeanInFlight = obs.LittleL
		if obs.Requests > 0 {
			obs.PeakInFlight = max(1, int(math.Ceil(obs.LittleL-0.05)))
		}
		stats.Requests += obs.Requests
		prov := map[string]cascade.Provenance{
			"replicas":           cascade.Default,
			"concurrency":        cascade.Default,
			"queue_cap":          cascade.Default,
			"overload.base":      cascade.Aggregated,
			"overload.slope":     cascade.Default,
			"overload.threshold": cascade.Default,
			"service_ms":         cascade.Aggregated,
		}
		// Service time: the latency, less the time spent waiting for the
		// callees, as they were called one after another when the latency
		// leaves room for that, else all at once.
		scale := 1.0
		if out := outgoing[name]; len(out) > 0 {
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
				concurrent[name] = true
			}
			if f.meanMS > 0 {
				scale = max(0, f.meanMS-wait) / f.meanMS
			}
			prov["service_ms"] = cascade.Inferred
		}
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
		m.Nodes = append(m.Nodes, cascade.Node{
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
	for _, e := range model {
		caller := facts[e.key.client].requests
		calls := int64(math.Round(e.requests))
		lat := e.clientSide()
		obs := &cascade.EdgeObserved{
			Calls:           calls,
			ErrorRate:       share(e.failed(), e.requests),
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
		stats.Calls += calls
		m.Edges = append(m.Edges, cascade.Edge{
			From:        e.key.client,
			To:          e.key.server,
			Async:       e.async,
			FanOut:      fan,
			Parallelism: parallelism(concurrent[e.key.client]),
			Propagation: 1,
			Observed:    obs,
			Provenance:  prov,
		})
	}

	// Entries: the user's calls; without them, the nodes nothing calls.
	var roots float64
	for _, n := range entryCalls {
		roots += n
	}
	if roots == 0 {
		for _, name := range nodeNames {
			if len(incoming[name]) == 0 && facts[name].requests > 0 && services[name] != nil && services[name].serverCalls > 0 {
				entryCalls[name] = facts[name].requests
				roots += facts[name].requests
			}
		}
		if roots > 0 {
			warnings = append(warnings, "no calls from \"user\" (root spans) in the service graph: entries are the nodes that serve requests and have no caller")
		}
	}
	for _, name := range nodeNames {
		n, ok := entryCalls[name]
		if !ok {
			continue
		}
		en := cascade.Entry{Node: name, RatePerSec: rate(n), Share: share(n, roots)}
		if s := services[name]; s != nil {
			en.Operation = topOp(s.ops)
		}
		m.Entries = append(m.Entries, en)
	}
	if len(m.Entries) == 0 {
		return nil, errors.New("service-graph series: no entry node (no calls from \"user\" and no node that serves requests without a caller)")
	}
	if a.skipped > 0 {
		warnings = append(warnings, fmt.Sprintf("%d points of service-graph or span-metrics series left out: labels that do not parse, or no client and server, service or le label", a.skipped))
	}
	stats.Roots = int64(math.Round(roots))
	m.Source.Notes = notes
	// One call after another: each of a caller's edges its own stage, in
	// callee order (the edges are in client, server order); calls that
	// overlap all in stage 0.
	for i := range m.Edges {
		if i > 0 && m.Edges[i].From == m.Edges[i-1].From && !concurrent[m.Edges[i].From] {
			m.Edges[i].Stage = m.Edges[i-1].Stage + 1
		}
	}
	m.Sort()

	res := &Result{Model: m, Stats: stats, Seed: a.cfg.Seed}
	for i := range m.Nodes {
		res.Nodes = append(res.Nodes, NodeInfo{Name: m.Nodes[i].Name})
	}
	analyze(res, stats.Roots)
	slices.Sort(warnings)
	res.Warnings = warnings
	return res, nil
}

// parallelism is an aggregate edge's: 1 (one call after another), or 0
// (all at once) for a caller whose calls overlap.
func parallelism(concurrent bool) int {
	if concurrent {
		return 0
	}
	return 1
}

// failed returns the edge's failed requests: request_failed_total when
// the edge has it, else the requests labelled failed="true".
func (e *aggEdge) failed() float64 {
	if e.hasFailedTotal {
		return e.failedTotal
	}
	return e.failedLabel
}

// clientSide returns the client-side latency histogram, or the server
// side when the edge has no client histogram (the legacy server-only
// series).
func (e *aggEdge) clientSide() *hist {
	if e.hasClients {
		return &e.client
	}
	return &e.server
}

func (e *aggEdge) serverSide() *hist {
	if e.hasServer {
		return &e.server
	}
	return &e.client
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
