package incident

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"cascade"
	"cascade/internal/numfmt"
	"cascade/replay"
)

// The replay check of the ranked origins: each leading candidate's fault,
// as it was observed at it, is injected into the model and replayed; the
// candidate whose fault reproduces what the other nodes did best comes
// first. See docs/incident.md, "The replay check".

// originCheck re-orders analyse's order of the nodes (indices into
// changes, whose groups are their onset groups) and may fill in their
// replay fields.
type originCheck func(changes []NodeChange, order, groups []int) ([]int, error)

// fault is one candidate's change, as the model's knobs express it.
type fault struct {
	node string
	// scale multiplies the node's service time (its self time's median
	// in the incident over normal; 1 when it did not rise).
	scale float64
	// errRise is added to the node's own failure probability (its error
	// rate's rise).
	errRise float64
	// netMS is added one way to every call into the node (the rise of the
	// time between the two ends of its calls, halved).
	netMS float64
}

// empty reports a fault that changes nothing.
func (f *fault) empty() bool { return f.scale <= 1 && f.errRise <= 0 && f.netMS <= 0 }

// String names the fault in the model's knobs, as --set writes them.
func (f *fault) String() string {
	var parts []string
	if f.scale > 1 {
		parts = append(parts, "service_ms.scale ×"+numfmt.Brief(f.scale))
	}
	if f.errRise > 0 {
		parts = append(parts, "overload.base +"+numfmt.Brief(f.errRise))
	}
	if f.netMS > 0 {
		parts = append(parts, "network_ms.shift_ms +"+numfmt.Brief(f.netMS)+" on calls in")
	}
	return strings.Join(parts, ", ")
}

// scenario returns the fault as a scenario of merge patches on m.
func (f *fault) scenario(m *cascade.Model) *cascade.Scenario {
	s := &cascade.Scenario{Name: "fault at " + f.node}
	n := m.Node(f.node)
	if n == nil {
		return s
	}
	patch := map[string]any{}
	if f.scale > 1 {
		patch["service_ms"] = map[string]any{"scale": n.Service.ScaleValue() * f.scale}
		if n.FailService != nil {
			patch["fail_service_ms"] = map[string]any{"scale": n.FailService.ScaleValue() * f.scale}
		}
	}
	if f.errRise > 0 {
		// Gaps would replace the independent draw of the base.
		patch["overload"] = map[string]any{"base": math.Min(1, n.Overload.Base+f.errRise), "failure_gaps": nil}
	}
	if len(patch) > 0 {
		s.Nodes = replay.NodePatch(f.node, patch)
	}
	if f.netMS > 0 {
		for i := range m.Edges {
			e := &m.Edges[i]
			if e.To != f.node || e.From == e.To {
				continue
			}
			var p map[string]any
			if e.NetworkMS == nil {
				p = map[string]any{"network_ms": replay.DistPatch(cascade.Const(f.netMS))}
			} else {
				p = map[string]any{"network_ms": map[string]any{"shift_ms": e.NetworkMS.ShiftMS + f.netMS}}
			}
			if s.Edges == nil {
				s.Edges = map[string]json.RawMessage{}
			}
			s.Edges[e.From+"->"+e.To] = replay.RawPatch(p)
		}
	}
	return s
}

// seen is one node's requests over some windows: the latency callers
// see, the self time, the counts.
type seen struct {
	lat, self []float64
	n, errs   int64
}

// add pools window x (nil: a window without requests) into s.
func (s *seen) add(x *winAcc) {
	if x == nil {
		return
	}
	s.n += x.n
	s.errs += x.errs
	lat := &x.lat
	if x.shown != nil {
		lat = x.shown
	}
	s.lat = append(s.lat, lat.vals...)
	s.self = append(s.self, x.self.vals...)
}

// errRate is the share of s's requests that failed.
func (s *seen) errRate() float64 { return float64(s.errs) / float64(max(1, s.n)) }

// gapOf returns one edge's time between its two ends over some windows: the
// median latency as the caller saw the calls minus as the callee served
// them, and the calls.
func gapOf(es []*edgeWin) (gap float64, calls int64, ok bool) {
	var lat, srv []float64
	for _, e := range es {
		if e == nil {
			continue
		}
		calls += e.calls
		lat = append(lat, e.lat.vals...)
		srv = append(srv, e.srv.vals...)
	}
	if len(lat) == 0 || len(srv) == 0 {
		return 0, calls, false
	}
	return quantile(lat, 0.5) - quantile(srv, 0.5), calls, true
}

// observation is what the replay check compares at one node: the log
// ratio of its median latency to normal and the rise of its error rate
// over the incident, rises only (a node that got faster is not a
// fault's doing, as in analyse).
type observation struct {
	lat, err float64
}

// verifier holds what the replay check reads.
type verifier struct {
	acc, ref *spanAcc
	m        *cascade.Model
	cfg      Config
	lo, hi   int64 // the windows seen
	from     int64 // the first window of the incident period
}

// normalWins returns a node's normal windows (the reference's, else the
// first BaselineWindows).
func (v *verifier) normalWins(node string) []*winAcc {
	var out []*winAcc
	if v.ref != nil {
		for _, w := range sortedWindows(v.ref.nodes[node]) {
			out = append(out, v.ref.nodes[node][w])
		}
		return out
	}
	for w := v.lo; w < v.lo+int64(v.cfg.BaselineWindows); w++ {
		out = append(out, v.acc.nodes[node][w])
	}
	return out
}

// normalEdge returns edge k's normal windows (normalEdgeWins).
func (v *verifier) normalEdge(k [2]string) []*edgeWin {
	return normalEdgeWins(v.acc, v.ref, k, v.lo, v.cfg.BaselineWindows)
}

// normalAndIncident pools a node's normal windows and its windows of
// the incident period.
func (v *verifier) normalAndIncident(node string) (nb, in seen) {
	for _, x := range v.normalWins(node) {
		nb.add(x)
	}
	for w := v.from; w <= v.hi; w++ {
		in.add(v.acc.nodes[node][w])
	}
	return nb, in
}

// baselineQuantiles is how many quantiles of a node's normal self time
// make its service distribution in the baseline model.
const baselineQuantiles = 32

// baseline returns the model in its normal range: each node that served
// at least MinCount requests in it draws its service time from the
// quantiles of its normal self time and fails on its own at no more
// than its normal error rate, and each call with a network delay
// takes the normal time between its two ends (halved, each way). The
// model is usually built from the incident's own spans, so its service
// times hold the fault already; replayed as is, a fault injected on top
// would be measured against itself.
func (v *verifier) baseline() (*cascade.Model, error) {
	base, _, err := replay.Apply(v.m)
	if err != nil {
		return nil, err
	}
	for i := range base.Nodes {
		n := &base.Nodes[i]
		var nb seen
		for _, x := range v.normalWins(n.Name) {
			nb.add(x)
		}
		if nb.n < int64(v.cfg.MinCount) || len(nb.self) == 0 {
			continue
		}
		pts := make([]float64, baselineQuantiles)
		for k := range pts {
			pts[k] = numfmt.Round3(quantile(nb.self, (float64(k)+0.5)/baselineQuantiles))
		}
		n.Service = cascade.Dist{Kind: cascade.DistEmpirical, Points: pts}
		n.Tiers = nil
		if r := nb.errRate(); r < n.Overload.Base {
			n.Overload.Base, n.Overload.Gaps = numfmt.Round3(r), nil
		}
	}
	for i := range base.Edges {
		e := &base.Edges[i]
		if e.NetworkMS == nil {
			continue
		}
		if gap, _, ok := gapOf(v.normalEdge([2]string{e.From, e.To})); ok {
			d := cascade.Const(numfmt.Round3(math.Max(0, gap) / 2))
			e.NetworkMS = &d
		}
	}
	if err := base.Validate(); err != nil {
		return nil, err
	}
	return base, nil
}

// faultOf builds a node's fault from what was observed at it over the
// incident period.
func (v *verifier) faultOf(node string) fault {
	f := fault{node: node, scale: 1}
	nb, in := v.normalAndIncident(node)
	if nb.n < int64(v.cfg.MinCount) || in.n < int64(v.cfg.MinCount) {
		return f
	}
	if b, x := quantile(nb.self, 0.5), quantile(in.self, 0.5); b > 0 && x > b {
		f.scale = x / b
	}
	f.errRise = math.Max(0, in.errRate()-nb.errRate())
	// The time calls into the node spent between the two ends, over its
	// normal, weighted by the calls.
	var sum float64
	var calls int64
	for _, k := range sortedEdgeKeys(v.acc.edges) {
		if k[1] != node || k[0] == node {
			continue
		}
		base, _, ok := gapOf(v.normalEdge(k))
		if !ok {
			continue
		}
		var es []*edgeWin
		for w := v.from; w <= v.hi; w++ {
			es = append(es, v.acc.edges[k][w])
		}
		g, c, ok := gapOf(es)
		if !ok || c < int64(v.cfg.MinCount) {
			continue
		}
		sum += (g - base) * float64(c)
		calls += c
	}
	if calls > 0 && sum > 0 {
		f.netMS = sum / float64(calls) / 2
	}
	return f
}

// observed returns the nodes' changes over the incident period, for
// the nodes judged (with MinCount requests in the normal range and in
// the period) that the model holds. Nodes that stayed in their range
// count with what they measured too: a fault that would have moved them
// fits worse.
func (v *verifier) observed(changes []NodeChange) map[string]observation {
	out := map[string]observation{}
	for i := range changes {
		c := &changes[i]
		if c.Note != "" || v.m.Node(c.Node) == nil {
			continue
		}
		nb, in := v.normalAndIncident(c.Node)
		if in.n < int64(v.cfg.MinCount) || nb.n < int64(v.cfg.MinCount) {
			continue
		}
		var o observation
		if b, x := quantile(nb.lat, 0.5), quantile(in.lat, 0.5); b > 0 && x > b {
			o.lat = math.Log(x / b)
		}
		o.err = math.Max(0, in.errRate()-nb.errRate())
		out[c.Node] = o
	}
	return out
}

// predicted is the change each node shows in the replays of one fault
// against the baseline replays of the same seeds: the mean over seeds
// of the log ratio of its median latency (each plus a tick, so that a
// time under a tick does not divide by zero) and of its failure rate's
// change, rises only.
func predicted(base, faulty []*replay.Result, tickMS float64) map[string]observation {
	out := map[string]observation{}
	k := float64(len(base))
	for s := range base {
		b, f := base[s], faulty[s]
		bn := map[string]*cascade.NodeOutcome{}
		for i := range b.Nodes {
			bn[b.Nodes[i].Name] = &b.Nodes[i]
		}
		for i := range f.Nodes {
			x := &f.Nodes[i]
			y := bn[x.Name]
			if y == nil {
				continue
			}
			o := out[x.Name]
			if x.Calls > 0 && y.Calls > 0 {
				o.lat += math.Log((x.LatencyP50MS+tickMS)/(y.LatencyP50MS+tickMS)) / k
				o.err += (float64(x.Failures)/float64(x.Calls) - float64(y.Failures)/float64(y.Calls)) / k
			}
			out[x.Name] = o
		}
	}
	for name, o := range out {
		o.lat, o.err = math.Max(0, o.lat), math.Max(0, o.err)
		out[name] = o
	}
	return out
}

// fitOf is the share of the observed pattern's squared size at the
// nodes other than the faulty one that the prediction reproduces: 1 −
// Σ (predicted − observed)² / Σ observed² over them, latency log
// ratios and error-rate rises alike. 1 is a perfect fit, 0 no better
// than no fault at all. The faulty node is left out: its own change is
// what its fault was built from, and counting it would credit a large
// change of its own like analyse's score does, not its spread.
func fitOf(obs, pred map[string]observation, faulty string) float64 {
	var sse, sso float64
	for _, name := range sortedKeys(obs) {
		if name == faulty {
			continue
		}
		o, p := obs[name], pred[name]
		sse += sq(p.lat-o.lat) + sq(p.err-o.err)
		sso += sq(o.lat) + sq(o.err)
	}
	if sso == 0 {
		return 0
	}
	return numfmt.Round3(1 - sse/sso)
}

// sq is x squared.
func sq(x float64) float64 { return x * x }

// How the replay check re-orders the leading candidates: not at all
// (the fits are only reported), all of them by fit, only within each
// onset group of each class (the candidates analyse counts as
// simultaneous, unexplained or explained), or within each class. The
// leave-one-out of TestNezhaOriginChoice compares them. All three tie
// verifyOff on OnlineBoutique, where the choice is made, and a tie keeps
// the method that was there: the fits are reported beside the scores and
// the order stays analyse's. (verifyAll also loses a synthetic fault,
// TestShapesFaults.)
const (
	verifyOff = iota
	verifyAll
	verifyGroup
	verifyClass
)

var verifyBy = verifyOff

// verifyOrder is the replay check: it replays the baseline model with
// the fault of each of the first candidates of order (changed nodes in
// analyse's order), sets their ReplayFit and ReplayFault, and returns
// the order with those candidates re-ordered by fit within each onset
// group (higher first; analyse's order on ties). A candidate with
// nothing of its own that rose fits 0; one the model lacks, or that
// fell silent, keeps its place.
func verifyOrder(ctx context.Context, acc, ref *spanAcc, m *cascade.Model, cfg Config, changes []NodeChange, order, groups []int) ([]int, error) {
	cands := checkCandidates(changes, order, cfg)
	if len(cands) < 2 {
		return order, nil
	}
	v := newVerifier(acc, ref, m, cfg, changes, cands)
	base, err := v.baseline()
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	t := base.ObservedTraffic()
	fp, err := v.planFaults(base, t, changes, cands)
	if err != nil {
		return nil, err
	}
	if len(fp.ranked) < 2 {
		return order, nil
	}
	res, tickMS, err := replayFaults(ctx, base, cfg, fp)
	if err != nil {
		return nil, err
	}
	v.recordFits(changes, fp, res, tickMS)
	if verifyBy == verifyOff {
		return order, nil
	}
	return reorderByFit(changes, order, groups, fp.ranked, fp.fits), nil
}

// checkCandidates returns the first changed nodes of order: Verify of
// them, and never fewer than the Top origins named, since those are
// what the check may re-order.
func checkCandidates(changes []NodeChange, order []int, cfg Config) []int {
	var cands []int
	for _, i := range order {
		if changes[i].Changed && len(cands) < max(cfg.Top, cfg.Verify) {
			cands = append(cands, i)
		}
	}
	return cands
}

// newVerifier returns the check's reader of the windows, whose incident
// period starts at the earliest onset of the candidates cands.
func newVerifier(acc, ref *spanAcc, m *cascade.Model, cfg Config, changes []NodeChange, cands []int) *verifier {
	lo, hi := acc.windowRange()
	v := &verifier{acc: acc, ref: ref, m: m, cfg: cfg, lo: lo, hi: hi, from: hi + 1}
	for _, i := range cands {
		v.from = min(v.from, floorDiv(changes[i].AtNS, acc.width))
	}
	return v
}

// faultPlan is the check's candidates with their faults and the replays
// that weigh them: the baseline's first, then one per fault.
type faultPlan struct {
	jobs    []replay.BatchJob
	faulted []int // the candidates with a fault, in cands order
	ranked  []int // the candidates the check ranks: in the model
	faults  map[int]fault
	fits    map[int]float64
}

// planFaults builds each candidate's fault and its replay job on the
// baseline model base; a candidate with nothing of its own that rose
// fits 0 without a replay, and one the model lacks, or that fell silent,
// is not ranked.
func (v *verifier) planFaults(base *cascade.Model, t *cascade.Traffic, changes []NodeChange, cands []int) (*faultPlan, error) {
	fp := &faultPlan{jobs: []replay.BatchJob{{Model: base, Traffic: t}}, faults: map[int]fault{}, fits: map[int]float64{}}
	for _, i := range cands {
		f := v.faultOf(changes[i].Node)
		if base.Node(f.node) == nil || changes[i].Metric == "throughput" {
			// Not in the model, or silent: no knob of the model makes a
			// node stop answering, so the check leaves it in place.
			continue
		}
		fp.ranked = append(fp.ranked, i)
		if f.empty() {
			// Nothing of its own rose: injecting nothing reproduces
			// nothing.
			fp.fits[i] = 0
			changes[i].ReplayFault = "none (nothing of its own rose)"
			continue
		}
		fm, _, err := replay.Apply(base, f.scenario(base))
		if err != nil {
			return nil, fmt.Errorf("fault at %s: %w", f.node, err)
		}
		fp.faulted = append(fp.faulted, i)
		fp.faults[i] = f
		fp.jobs = append(fp.jobs, replay.BatchJob{Model: fm, Traffic: t})
	}
	return fp, nil
}

// replayFaults runs the plan's replays, when any candidate has a fault,
// on a clock fine enough for the model's service times and long enough
// to see checkRoots root requests, and returns them with the clock's
// tick in milliseconds.
func replayFaults(ctx context.Context, base *cascade.Model, cfg Config, fp *faultPlan) ([][]*replay.Result, float64, error) {
	var res [][]*replay.Result
	tickMS := 0.0
	if len(fp.faulted) > 0 {
		tick := checkTick(base, cfg.Tick)
		tickMS = float64(tick) / 1e6
		rc := replay.BatchSettings{Seed: cfg.Seed, Seeds: cfg.Seeds, Parallel: cfg.Parallel, Duration: checkDuration(base, cfg.Duration),
			Tick: tick, Window: time.Second}
		var errs []error
		var err error
		if res, errs, err = replay.NewBatch(rc).Run(ctx, fp.jobs); err != nil {
			return nil, 0, err
		}
		if err := errors.Join(errs...); err != nil {
			return nil, 0, fmt.Errorf("replay check: %w", err)
		}
	}
	return res, tickMS, nil
}

// recordFits sets each faulted candidate's ReplayFit, how well its
// replays reproduce what the other nodes did, and its ReplayFault.
func (v *verifier) recordFits(changes []NodeChange, fp *faultPlan, res [][]*replay.Result, tickMS float64) {
	obs := v.observed(changes)
	for k, i := range fp.faulted {
		fp.fits[i] = fitOf(obs, predicted(res[0], res[k+1], tickMS), changes[i].Node)
		f := fp.faults[i]
		changes[i].ReplayFit, changes[i].ReplayFault = fp.fits[i], f.String()
	}
}

// reorderByFit returns order with the ranked candidates' places
// re-filled by fit (higher first) within each group verifyBy names,
// keeping analyse's order on ties and between groups.
func reorderByFit(changes []NodeChange, order, groups, ranked []int, fits map[int]float64) []int {
	// The candidates' places in order, re-filled by fit.
	pos := map[int]int{}
	for p, i := range order {
		pos[i] = p
	}
	groupOf := func(i int) [2]int {
		e := 0
		if len(changes[i].ExplainedBy) > 0 {
			e = 1
		}
		switch verifyBy {
		case verifyAll:
			return [2]int{}
		case verifyClass:
			return [2]int{e, 0}
		}
		return [2]int{e, groups[i]}
	}
	sorted := append([]int(nil), ranked...)
	sort.SliceStable(sorted, func(a, b int) bool {
		x, y := sorted[a], sorted[b]
		if gx, gy := groupOf(x), groupOf(y); gx != gy {
			return pos[x] < pos[y]
		}
		return fits[x] > fits[y]
	})
	slots := make([]int, len(ranked))
	for k, i := range ranked {
		slots[k] = pos[i]
	}
	sort.Ints(slots)
	out := append([]int(nil), order...)
	for k, p := range slots {
		out[p] = sorted[k]
	}
	return out
}

// checkTick is the replay check's clock: tick, or finer — a tenth of
// the shortest mean service time in the model, at least 1 µs — so that
// a fault at a node of sub-tick service times is not rounded away.
func checkTick(m *cascade.Model, tick time.Duration) time.Duration {
	for i := range m.Nodes {
		if mean := m.Nodes[i].Service.MeanValue(); mean > 0 {
			tick = min(tick, time.Duration(mean*1e6/10))
		}
	}
	return max(tick, time.Microsecond)
}

// checkRoots is the fewest root requests each of the check's replays
// sees: the median of 200 draws is within about 9% of the true median
// (two standard errors of a lognormal's of σ 0.5), finer than the
// MinChange a node must move by.
const checkRoots = 200

// checkDuration is the check's replay duration: d, or longer, to see
// checkRoots root requests at the model's entry rates.
func checkDuration(m *cascade.Model, d time.Duration) time.Duration {
	var rate float64
	for _, e := range m.Entries {
		rate += e.RatePerSec
	}
	if rate > 0 {
		d = max(d, time.Duration(math.Ceil(checkRoots/rate))*time.Second)
	}
	return d
}

func sortedEdgeKeys(m map[[2]string]map[int64]*edgeWin) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}
