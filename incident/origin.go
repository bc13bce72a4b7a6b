package incident

import (
	"fmt"
	"slices"
	"sort"

	"cascade"
	"cascade/internal/numfmt"
)

// nodeState is one node's change point while analysing.
type nodeState struct {
	name   string
	change int // window index (from lo), −1 when unchanged
	js     []judgement
	desc   map[string]bool // nodes reachable through calls
}

// analyse finds every node's change point, orders the origins and
// traces the path. check, when not nil, may re-order the nodes (by index
// into changes; groups are their onset groups) before the origins are
// named: the replay check.
func analyse(acc, ref *spanAcc, m *cascade.Model, metrics, refMetrics metricSource, logs logInput, cfg Config, check originCheck) (*Incident, error) {
	a := newAnalysis(acc, ref, m, cfg)
	a.judgeNodes()
	a.joinCountChanges()
	a.attributeCalls()
	if err := a.judgeMetricsAndLogs(metrics, refMetrics, logs); err != nil {
		return nil, err
	}
	a.dateChanges()
	a.redateFromStart()
	a.explain()
	a.scoreChanges()
	order, groups := a.orderChanges()
	if check != nil {
		var err error
		if order, err = check(a.changes, order, groups); err != nil {
			return nil, err
		}
	}
	order = datedFirst(order, a.changes, a.startDiff)
	a.nameOrigins(order)
	return a.inc, nil
}

// analysis is one run of analyse: its inputs, the capture's windows,
// and what each phase has found so far.
type analysis struct {
	acc, ref *spanAcc
	m        *cascade.Model
	cfg      Config
	// The windows lo … lo+nw−1, width ns wide; the changes are judged
	// from window scan on (after the baseline windows; 0 against a
	// reference).
	lo, width int64
	nw, scan  int
	inc       *Incident
	// callees lists each node's callees, sorted: the observed edges and
	// the model's.
	callees map[string][]string
	// names are the nodes, sorted; states, changes and startDiff follow
	// their order.
	names       []string
	states      []*nodeState
	byName      map[string]*nodeState
	changes     []NodeChange
	nodeNormals map[string]normal
	// The count-based changes, each given to one node: the client−server
	// gap's (gapAt: its window), the calls that vanished, the self time.
	gapOwned   map[string]*stepChange
	gapEdgeSet map[[2]string]*gapEdge
	gapAt      map[string]int
	fanOwned   map[string]*fanOwner
	selfOwned  map[string]*stepChange
	// The calls' normals, as the caller saw them (edgeNormals) and as the
	// callee served them (srvNormals), and the edge windows whose change
	// is the callee's.
	edgeNormals, srvNormals map[[2]string]normal
	gapToCallee             map[edgeWindow]bool
	// The metric judgements and the log changes, by node.
	mjs map[string][]judgement
	ljs map[string][]*logChange
	// startDiff marks a change against the reference present from the
	// capture's start that no later step of its own dates.
	startDiff []bool
	scores    []float64
}

// newAnalysis sets out the capture's windows, the baseline the changes
// are judged against and the call graph.
func newAnalysis(acc, ref *spanAcc, m *cascade.Model, cfg Config) *analysis {
	lo, hi := acc.windowRange()
	width := acc.width
	a := &analysis{acc: acc, ref: ref, m: m, cfg: cfg, lo: lo, width: width, nw: int(hi - lo + 1), scan: cfg.BaselineWindows}
	a.inc = &Incident{WindowMS: float64(width) / 1e6, StartNS: lo * width, EndNS: (hi + 1) * width}
	if ref != nil {
		a.scan = 0
		a.inc.Baseline = "the reference capture (all of it)"
	} else {
		a.inc.Baseline = fmt.Sprintf("the first %d windows (%s)", cfg.BaselineWindows,
			numfmt.MS(float64(int64(cfg.BaselineWindows)*width)/1e6))
	}
	a.callees = callGraph(acc, m)
	return a
}

// callGraph lists each node's callees, sorted: the observed edges, and
// the model's.
func callGraph(acc *spanAcc, m *cascade.Model) map[string][]string {
	callees := map[string][]string{}
	seenEdge := map[[2]string]bool{}
	addEdge := func(from, to string) {
		if from == to || seenEdge[[2]string{from, to}] {
			return
		}
		seenEdge[[2]string{from, to}] = true
		callees[from] = append(callees[from], to)
	}
	for k := range acc.edges {
		addEdge(k[0], k[1])
	}
	if m != nil {
		for i := range m.Edges {
			addEdge(m.Edges[i].From, m.Edges[i].To)
		}
	}
	for k := range callees {
		sort.Strings(callees[k])
	}
	return callees
}

// judgeNodes judges every node's windows against its normal range: its
// latency, errors and self time, and its requests per root request.
func (a *analysis) judgeNodes() {
	a.names = sortedKeys(a.acc.nodes)
	a.nodeNormals = map[string]normal{}
	a.states = make([]*nodeState, len(a.names))
	a.byName = map[string]*nodeState{}
	a.changes = make([]NodeChange, len(a.names))
	for i, name := range a.names {
		st, nc, nb := a.judgeNode(name)
		a.states[i], a.byName[name] = st, st
		a.nodeNormals[name] = nb
		a.changes[i] = nc
	}
}

// judgeNode judges one node's windows and returns them with its series
// and its normal range.
func (a *analysis) judgeNode(name string) (*nodeState, NodeChange, normal) {
	acc, ref, cfg, lo := a.acc, a.ref, a.cfg, a.lo
	st := &nodeState{name: name, change: -1, js: make([]judgement, a.nw)}
	wins := acc.nodes[name]
	var baseWins []*winAcc
	if ref != nil {
		for _, w := range sortedWindows(ref.nodes[name]) {
			baseWins = append(baseWins, ref.nodes[name][w])
		}
	} else {
		for w := lo; w < lo+int64(cfg.BaselineWindows); w++ {
			if x := wins[w]; x != nil {
				baseWins = append(baseWins, x)
			}
		}
	}
	nb := normalOf(baseWins)
	// Requests per root request in the normal range, for the
	// throughput judgement; entries (whose requests are the roots)
	// are not judged by it.
	perRoot := 0.0
	if acc.roots[name] == 0 {
		var baseRoots int64
		if ref != nil {
			for _, r := range ref.rootWin {
				baseRoots += r
			}
		} else {
			for w := lo; w < lo+int64(cfg.BaselineWindows); w++ {
				baseRoots += acc.rootWin[w]
			}
		}
		if baseRoots > 0 {
			perRoot = float64(nb.n) / float64(baseRoots)
		}
	}
	nc := NodeChange{Node: name}
	if nb.n < int64(cfg.MinCount) {
		noun := "requests"
		if nb.n == 1 {
			noun = "request"
		}
		nc.Note = fmt.Sprintf("%d %s in the normal range: too few to judge", nb.n, noun)
	}
	for k := 0; k < a.nw; k++ {
		w := wins[lo+int64(k)]
		ws := WindowStat{StartNS: (lo + int64(k)) * a.width}
		if w != nil {
			ws.Requests, ws.Errors = w.n, w.errs
			lat := &w.lat
			if w.shown != nil {
				lat = w.shown
			}
			ws.P50MS = numfmt.Round3(quantile(lat.vals, 0.5))
			ws.P99MS = numfmt.Round3(quantile(lat.vals, 0.99))
			self := &w.self
			if w.shownSelf != nil {
				self = w.shownSelf
			}
			ws.SelfP50MS = numfmt.Round3(quantile(self.vals, 0.5))
		}
		if k >= a.scan && nc.Note == "" {
			st.js[k] = nb.judge(w, cfg.Threshold, cfg.MinChange, cfg.MinCount)
			var n int64
			if w != nil {
				n = w.n
			}
			st.js[k] = merge(st.js[k], judgeThroughput(n, acc.rootWin[lo+int64(k)], perRoot, cfg.Threshold, cfg.MinCount))
		}
		nc.Series = append(nc.Series, ws)
	}
	return st, nc, nb
}

// join merges judgements into the node's from window from on: a judged
// window where the node's is not judged, or out of range.
func (st *nodeState) join(js []judgement, from int) {
	for k, j := range js {
		if k >= from && j.judged && (!st.js[k].judged || j.out) {
			st.js[k] = merge(st.js[k], j)
		}
	}
}

// joinCountChanges gives the count-based changes each to one node and
// joins them to its judgements: the client−server gap's (see
// gapOwners), the calls that vanished, a caller's drop of calls or a
// node's truncated requests (see fanOwners), and the self time counted
// in requests (see selfOwners).
func (a *analysis) joinCountChanges() {
	acc, ref, lo, scan, cfg := a.acc, a.ref, a.lo, a.scan, a.cfg
	a.gapOwned, a.gapEdgeSet = gapOwners(acc, ref, lo, scan, cfg)
	a.gapAt = map[string]int{}
	for _, name := range sortedKeys(a.gapOwned) {
		ch := a.gapOwned[name]
		st := a.byName[name]
		if st == nil {
			continue
		}
		a.gapAt[name] = int(floorDiv(ch.onset, a.width) - lo)
		st.join(gapJudgements(ch, a.width, lo, a.nw), scan)
	}
	a.fanOwned = fanOwners(acc, ref, lo, scan, cfg, a.callees)
	for _, name := range sortedKeys(a.fanOwned) {
		if st := a.byName[name]; st != nil {
			st.join(fanJudgements(a.fanOwned[name].change, a.width, lo, a.nw), scan)
		}
	}
	a.selfOwned = selfOwners(acc, ref, lo, scan, cfg, a.callees, a.gapOwned)
	for _, name := range sortedKeys(a.selfOwned) {
		if st := a.byName[name]; st != nil {
			st.join(selfJudgements(a.selfOwned[name], a.width, lo, a.nw), scan)
		}
	}
}

// attributeCalls reads the calls' normals and gives each edge window's
// change to one end. A callee that owns its inbound gap owns the time on
// the wire of every call into it from its onset on: its callers are
// explained by it, their calls read as they saw them (normal: the
// edge's, or the gap test's where the edge had too few calls per window
// to have one).
func (a *analysis) attributeCalls() {
	a.edgeNormals, a.srvNormals, a.gapToCallee = attributeCalls(a.acc, a.ref, a.byName, a.lo, a.nw, a.scan, a.cfg, a.gapOwned, a.gapAt)
	for _, name := range sortedKeys(a.gapOwned) {
		if a.gapOwned[name].metric != "gap_in" {
			continue
		}
		for k, e := range a.gapEdgeSet {
			if k[1] != name {
				continue
			}
			if _, ok := a.edgeNormals[k]; !ok {
				a.edgeNormals[k] = normal{n: int64(e.normalN), latMed: e.latMed}
			}
			for w := a.gapAt[name]; w < a.nw; w++ {
				a.gapToCallee[edgeWindow{k[0], k[1], a.lo + int64(w)}] = true
			}
		}
	}
}

// judgeMetricsAndLogs judges the metric samples and, count-based, the
// logs, and adds what they warn of to the incident.
func (a *analysis) judgeMetricsAndLogs(metrics, refMetrics metricSource, logs logInput) error {
	present := map[string]bool{}
	for _, name := range a.names {
		present[name] = true
	}
	mjs, mt, err := metricJudgements(metrics, refMetrics, present, a.lo, a.width, a.nw, a.scan, a.cfg)
	if err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	a.mjs = mjs
	a.inc.Warnings = append(a.inc.Warnings, mt.warnings(metrics != nil, refMetrics != nil)...)
	ljs, lw := judgeLogs(logs, a.acc, a.ref, a.states, a.names, a.lo, a.nw, a.scan, a.cfg)
	a.ljs = ljs
	a.inc.Warnings = append(a.inc.Warnings, lw...)
	return nil
}

// dateChanges joins the metric judgements to each node's, writes its
// series' judgements, and dates its change: its first change point
// (against a reference, one out against the capture's own windows
// before it too).
func (a *analysis) dateChanges() {
	for i, st := range a.states {
		nc := &a.changes[i]
		st.join(a.mjs[st.name], 0)
		for k := range st.js {
			nc.Series[k].Z, nc.Series[k].Out = numfmt.Round3(st.js[k].z), st.js[k].out
		}
		c := changeAt(st.js, a.cfg.Persist)
		if a.ref != nil {
			c = ownChangeAt(st.js, a.acc.nodes[st.name], a.lo, c, a.cfg)
		}
		if c >= 0 {
			st.change = c
			j := st.js[c]
			nc.Changed, nc.AtNS = true, (a.lo+int64(c))*a.width
			nc.Metric, nc.Baseline, nc.Value, nc.Z = j.metric, numfmt.Round3(j.base), numfmt.Round3(j.value), numfmt.Round3(j.z)
		}
	}
}

// redateFromStart re-dates a change present from the capture's first
// windows against a reference: that is a baseline difference, not this
// incident's onset. Its onset is a later step against the capture's own
// first windows, or, with none, it is never the first origin while a
// change dated inside the capture stands (startDiff).
func (a *analysis) redateFromStart() {
	a.startDiff = make([]bool, len(a.states))
	if a.ref == nil {
		return
	}
	for i, st := range a.states {
		if st.change < 0 || st.change >= fromStartWindows {
			continue
		}
		c, j := ownStep(a.acc.nodes[st.name], a.lo, a.nw, a.cfg)
		if c < 0 {
			a.startDiff[i] = true
			continue
		}
		st.change = c
		nc := &a.changes[i]
		nc.AtNS = (a.lo + int64(c)) * a.width
		nc.Metric, nc.Baseline, nc.Value, nc.Z = j.metric, numfmt.Round3(j.base), numfmt.Round3(j.value), numfmt.Round3(j.z)
	}
}

// explain names, for each changed node, the nodes whose changes explain
// it (explainers), then drops a callee that fell silent because the node
// changed: it does not explain it back.
func (a *analysis) explain() {
	for _, st := range a.states {
		st.desc = reach(st.name, a.callees)
	}
	callers := map[string][]string{}
	for from, tos := range a.callees {
		for _, to := range tos {
			callers[to] = append(callers[to], from)
		}
	}
	for k := range callers {
		sort.Strings(callers[k])
	}
	for i, st := range a.states {
		if st.change >= 0 {
			a.changes[i].ExplainedBy = a.explainers(st, callers[st.name])
		}
	}
	index := map[string]int{}
	for i, st := range a.states {
		index[st.name] = i
	}
	for i := range a.states {
		var keep []string
		for _, callee := range a.changes[i].ExplainedBy {
			c := index[callee]
			if a.states[c].js[a.states[c].change].metric == "throughput" && slices.Contains(a.changes[c].ExplainedBy, a.states[i].name) {
				continue
			}
			keep = append(keep, callee)
		}
		a.changes[i].ExplainedBy = keep
	}
}

// explainers returns the nodes that explain changed node st's change.
// In general that is a changed direct callee, changed no later than
// Slack windows after the node, whose calls account for at least half
// the node's latency change; silence, errors and the count-based changes
// each have their own rule. callers are the node's callers.
func (a *analysis) explainers(st *nodeState, callers []string) []string {
	acc, cfg, lo := a.acc, a.cfg, a.lo
	var out []string
	if st.js[st.change].metric == "throughput" {
		// Silence propagates downstream: a node that fell silent got no
		// calls to serve — unless its callers' calls to it went
		// unanswered, when it stopped answering. A caller that records
		// its calls and changed within Slack windows (or earlier)
		// stopped calling; a caller whose calls leave no record of
		// their own explains the silence only when it fell silent too,
		// or changed more than Slack windows before (a node that stops
		// answering falls silent within Slack windows of its callers'
		// first failures).
		w := lo + int64(st.change)
		var unanswered int64
		for k := int64(0); k <= int64(cfg.Slack); k++ {
			unanswered += acc.unansweredTo(st.name, w+k)
		}
		for _, caller := range callers {
			other := a.byName[caller]
			if unanswered > 0 || other == nil || other.change < 0 || other.change > st.change+cfg.Slack {
				continue
			}
			silent := other.js[other.change].metric == "throughput"
			// A caller that dropped its calls to it (returned early),
			// when the calls it still got were served as before.
			dropped := a.fanOwned[caller] != nil && a.fanOwned[caller].lost[st.name] && servedAsBefore(st.js, st.change)
			if silent || dropped || acc.clientTimed[[2]string{caller, st.name}] || other.change < st.change-cfg.Slack {
				out = append(out, caller)
			}
		}
		return out // silence does not come from below
	}
	if errorLed(st.js[st.change].metric) {
		// Errors climb the call graph: a caller logs or returns the
		// error its callee answered. A change whose first signal is
		// an error (its error rate, its error records, a template
		// new or risen) is explained only by a direct callee whose
		// own errors rose no later than Slack windows after it, never
		// by a callee's latency.
		for _, callee := range a.callees[st.name] {
			if other := a.byName[callee]; other != nil && other.change >= 0 && other.change <= st.change+cfg.Slack &&
				(logErrorsBy(a.ljs[callee], st.change+cfg.Slack) || errorsBy(other.js, st.change+cfg.Slack)) {
				out = append(out, callee)
			}
		}
		return out
	}
	if ch := a.selfOwned[st.name]; ch != nil && ch.down && a.gapOwned[st.name] == nil && a.fanOwned[st.name] == nil {
		// Work the node no longer does is its own, unless a callee
		// changed first (or within Slack windows): a request that
		// ends at a failed call skips what came after it.
		for _, callee := range a.callees[st.name] {
			if other := a.byName[callee]; other != nil && other.change >= 0 && other.change <= st.change+cfg.Slack {
				out = append(out, callee)
			}
		}
		return out
	}
	if a.gapOwned[st.name] != nil || a.fanOwned[st.name] != nil || a.selfOwned[st.name] != nil {
		// The time between a caller's span and its callee's is not
		// spent in the callees of either end, nor is a node's self
		// time; calls a node dropped, or a trace it ended early, are
		// its own doing.
		return out
	}
	for _, callee := range a.callees[st.name] {
		other := a.byName[callee]
		if other == nil || other.change < 0 || other.change > st.change+cfg.Slack {
			continue
		}
		// What the callee served slower is the callee's; the time
		// added between the two ends is too only when the calls'
		// change was given to the callee (its network), not the
		// caller (its starved client, its own network).
		w := lo + int64(st.change)
		en, served := a.srvNormals, true
		if a.gapToCallee[edgeWindow{st.name, callee, w}] {
			en, served = a.edgeNormals, false
		}
		if accounts(acc, en, served, a.nodeNormals[st.name], st, other, w, cfg.MinCount, cfg.Persist+cfg.Slack) {
			out = append(out, callee)
		}
	}
	return out
}

// scoreChanges scores each change and lists its evidence. Magnitude is
// how much slower (or faster) the node got in its change window, the
// same measure for every node whatever flagged it: the largest |log
// ratio| of its latency medians, its own or as a caller sees it, to
// their normal, plus the rise of its error rate. Not the z-score, which
// grows with a node's traffic.
func (a *analysis) scoreChanges() {
	states, changes := a.states, a.changes
	mags := make([]float64, len(states))
	for i, st := range states {
		if st.change >= 0 {
			mags[i] = magnitudeAt(a.acc, a.edgeNormals, a.nodeNormals[st.name], st.name, a.lo+int64(st.change))
		}
	}
	a.scores = make([]float64, len(states))
	for i, st := range states {
		if st.change < 0 {
			continue
		}
		gapSize := 0.0
		if ch := a.gapOwned[st.name]; ch != nil {
			gapSize = ch.size
		}
		if o := a.fanOwned[st.name]; o != nil {
			gapSize += o.change.size
		}
		if ch := a.selfOwned[st.name]; ch != nil {
			gapSize += ch.size
		}
		a.scores[i] = numfmt.Round3(persistence(st.js, st.change) * (mags[i] + metricRise(a.mjs[st.name], st.change) + silence(st.js, st.change) + gapSize +
			logSize(a.ljs[st.name], st.change)))
		changes[i].Score = a.scores[i]
		changes[i].Evidence = evidenceOf(st.js, st.change, a.lo, a.width, a.cfg.Threshold)
		logEvidence(changes[i].Evidence, a.ljs[st.name])
		for _, ch := range []*stepChange{a.gapOwned[st.name], a.selfOwned[st.name]} {
			if ch == nil {
				continue
			}
			for e := range changes[i].Evidence {
				if ev := &changes[i].Evidence[e]; ev.Metric == ch.metric {
					ev.Calls, ev.ValueLow, ev.ValueHigh = ch.n, numfmt.Round3(ch.low), numfmt.Round3(ch.high)
					ev.Value = numfmt.Round3(ch.postMed)
				}
			}
		}
	}
}

// orderChanges orders the nodes (as indices into changes): the changed
// before the unchanged, the unexplained before the explained, then as
// orderBy says. groups are the changes' onset groups.
func (a *analysis) orderChanges() (order, groups []int) {
	states, changes, scores := a.states, a.changes, a.scores
	order = make([]int, len(states))
	for i := range order {
		order[i] = i
	}
	groups = onsetGroups(states, changes, a.cfg.Slack)
	lasts := make([]bool, len(states))
	for i, st := range states {
		lasts[i] = st.change >= 0 && lasting(st)
	}
	common := commonCause(states, changes, groups)
	sort.SliceStable(order, func(i, j int) bool {
		x, y := order[i], order[j]
		sx, sy := states[x], states[y]
		if (sx.change >= 0) != (sy.change >= 0) {
			return sx.change >= 0
		}
		if sx.change < 0 {
			return sx.name < sy.name
		}
		ex, ey := len(changes[x].ExplainedBy), len(changes[y].ExplainedBy)
		if (ex == 0) != (ey == 0) {
			return ex == 0
		}
		// Among the unexplained, a node that owns a change of the
		// client−server gap comes first: the gap leaves out the callee's
		// own time and is given to one end along the graph, so a
		// callee's slowdown or a caller's load does not make one.
		if gx, gy := a.gapOwned[sx.name] != nil, a.gapOwned[sy.name] != nil; ex == 0 && gx != gy {
			return gx
		}
		// Then a change that lasts before one that passed: a fault
		// lasts while it is injected, and a disturbance that came and
		// went (a neighbour's restart, a burst) is not where this
		// incident began, however early (issue 38: TrainTicket's
		// busy services slowed for 20–30 s as faults were injected
		// elsewhere).
		if px, py := lasts[x], lasts[y]; ex == 0 && px != py {
			return px
		}
		// Then a change of its own before latency that several
		// services took up at once: a cause they share outside the
		// call graph (a host, a database), not one service's fault.
		if cx, cy := common[x], common[y]; ex == 0 && cx != cy {
			return cy
		}
		switch orderBy {
		case orderScore:
			if scores[x] != scores[y] {
				return scores[x] > scores[y]
			}
		case orderOnsetGroup:
			if gx, gy := groups[x], groups[y]; gx != gy {
				return gx < gy
			}
			if scores[x] != scores[y] {
				return scores[x] > scores[y]
			}
		}
		if sx.change != sy.change {
			return sx.change < sy.change
		}
		if ex != ey {
			return ex < ey
		}
		if scores[x] != scores[y] {
			return scores[x] > scores[y]
		}
		return sx.name < sy.name
	})
	return order, groups
}

// nameOrigins lists the nodes in order and names the origins: the first
// changed node, then (up to Top) the later unexplained changes the
// capture can date; then it traces the path from the first and says how
// far ahead of the second it is.
func (a *analysis) nameOrigins(order []int) {
	inc, cfg := a.inc, a.cfg
	first := -1
	for _, i := range order {
		n := a.changes[i]
		if n.Changed && first >= 0 && len(n.ExplainedBy) == 0 {
			st := a.states[i]
			// A later change is named too (issue 38: after a small early
			// change, the injected service's came later and larger);
			// a difference the capture cannot date is not.
			if a.ref != nil && windowed(st.js[st.change].metric) && requestsBefore(a.acc.nodes[st.name], a.lo, st.change) < int64(cfg.MinCount) {
				n.NotOrigin = "from the start"
			}
		}
		inc.Nodes = append(inc.Nodes, n)
		if !n.Changed || len(inc.Origins) >= cfg.Top || first >= 0 && (len(n.ExplainedBy) > 0 || n.NotOrigin != "") {
			continue
		}
		if first < 0 {
			first = i
		}
		inc.Origins = append(inc.Origins, n.Node)
	}
	if len(inc.Origins) > 0 {
		inc.Path = climb(inc.Origins[0], a.byName, a.callees, a.acc, a.lo, a.scan, a.ref, cfg)
		inc.Confidence = confidence(inc.Nodes)
		inc.Abstained = inc.Confidence > 0 && inc.Confidence < AbstainBelow
		inc.Track = trackRecord(inc.Confidence)
	}
}

// How the changed nodes of one class (unexplained, explained) are
// ordered: orderOnset by change time, then score; orderScore by score;
// orderOnsetGroup by change time, counting changes within Slack windows
// of the group's first as simultaneous, then by score. The
// leave-one-out of TestNezhaOriginChoice compares them.
const (
	orderOnset = iota
	orderScore
	orderOnsetGroup
)

var orderBy = orderOnsetGroup
