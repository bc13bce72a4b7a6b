package graph

import (
	"cmp"
	"slices"

	"cascade"
)

// finish assembles the model from the accumulated statistics.
func (b *Builder) finish() (*Result, error) {
	spanSeconds := float64(b.endNS-b.startNS) / 1e9
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    b.cfg.Name,
		Source: &cascade.ModelSource{
			Dataset: b.cfg.Dataset,
			Level:   string(b.cfg.Level),
			Spans:   b.stats.Spans,
			Traces:  b.stats.Traces,
			StartNS: b.startNS,
			EndNS:   b.endNS,
		},
	}
	b.finishQueues()
	b.findBlocked()
	b.releaseHeld()
	b.sampleScale = 1
	if s := b.readSampling(); s.scale > minSampleScale {
		b.sampleScale = s.scale
	}
	for _, e := range b.edges {
		if e.from == e.to {
			b.nodes[e.from].selfCall = true
		}
	}
	infos := b.finishNodes(m, spanSeconds)
	b.finishEdges(m)
	m.Entries = b.finishEntries(spanSeconds)
	b.finishQueueModel(m, spanSeconds)
	b.poolDeadlines(m)
	m.Load = loadOf(b.roots, b.rootCount())
	b.scaleSampled(m)
	m.Source.Notes = append(m.Source.Notes, b.curveNotes...)
	m.Sort()

	res := &Result{Model: m, Nodes: infos, Stats: b.stats, Seed: b.cfg.Seed}
	res.Queues = b.queueInfos(infos)
	analyze(res, b.stats.Roots)
	if b.stats.Unresolved > 0 {
		b.warnf("%d client or producer spans name no callee (no child span, no peer attribute)", b.stats.Unresolved)
	}
	if b.stats.Orphans > 0 {
		b.warnf("%d spans have a parent outside their trace; they start requests without a caller", b.stats.Orphans)
	}
	slices.Sort(b.warnings)
	res.Warnings = b.warnings
	return res, nil
}

// finishNodes adds the nodes to m in name order, those dropped left out,
// and returns their infos in the same order.
func (b *Builder) finishNodes(m *cascade.Model, spanSeconds float64) []NodeInfo {
	order := make([]int, len(b.nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(b.nodes[x].name, b.nodes[y].name) })
	infos := make([]NodeInfo, 0, len(order))
	for _, i := range order {
		if b.nodes[i].dropped {
			continue
		}
		n, info := b.nodes[i].finish(b, spanSeconds)
		m.Nodes = append(m.Nodes, n)
		infos = append(infos, info)
	}
	return infos
}

// finishEdges adds the edges to m, with stages per caller, those of a
// dropped node left out.
func (b *Builder) finishEdges(m *cascade.Model) {
	facts := make([]edgeFacts, len(b.edges))
	edges := make([]cascade.Edge, len(b.edges))
	for i, e := range b.edges {
		edges[i], facts[i] = e.finish(b, b.nodes[e.from].requests, b.nodes[e.from].own)
		if to := b.nodes[e.to]; b.nodes[e.from].blocked != nil && to.queue != nil && e.from != e.to {
			markBlocked(&edges[i])
		}
	}
	assignStages(b.edges, edges, facts, b.order)
	m.Edges = edges
	if dropped := b.droppedNames(); len(dropped) > 0 {
		m.Edges = slices.DeleteFunc(m.Edges, func(e cascade.Edge) bool { return dropped[e.From] || dropped[e.To] })
	}
}

// finishEntries returns the entries: the nodes where root spans started,
// each with its dominant root operation, its rate and its share of the
// roots.
func (b *Builder) finishEntries(spanSeconds float64) []cascade.Entry {
	type entry struct {
		roots int64
		op    string
		opN   int64
	}
	ents := map[int32]*entry{}
	var roots int64
	for key, n := range b.entries {
		node, op := int32(key>>32), b.syms.names[int32(uint32(key))]
		roots += n
		en := ents[node]
		if en == nil {
			en = &entry{}
			ents[node] = en
		}
		en.roots += n
		if n > en.opN || (n == en.opN && op < en.op) {
			en.op, en.opN = op, n
		}
	}
	// Entry rates: the roots over the capture. When work outlives the
	// last root (messages waiting in a queue, redeliveries through a
	// delay queue, detached calls), the capture's end says nothing of
	// the arrivals, nor does the last root's end (a publisher held by a
	// full queue or the broker's alarm): the roots' starts are the
	// arrivals, and the window runs to one mean gap past the last.
	arrivalSeconds := spanSeconds
	if n := b.rootCount(); n > 1 && b.rootEndNS < b.endNS && b.rootLastNS > b.rootFirstNS {
		gap := float64(b.rootLastNS-b.rootFirstNS) / float64(n-1)
		arrivalSeconds = (float64(b.rootLastNS-b.startNS) + gap) / 1e9
	}
	var out []cascade.Entry
	for node, en := range ents {
		e := cascade.Entry{Node: b.nodes[node].name, Operation: en.op}
		if arrivalSeconds > 0 {
			e.RatePerSec = round6(float64(en.roots) / arrivalSeconds)
		}
		if roots > 0 {
			e.Share = round6(float64(en.roots) / float64(roots))
		}
		out = append(out, e)
	}
	return out
}

// assignStages orders each caller's outgoing edges into stages: sorted by
// the median start of their first call after the caller's request began,
// an edge opens the next stage when it waits for every edge of the
// current stage: in most of the caller's requests that called on both,
// its first call started at or after their last call ended (order,
// Builder.order). Where no request called on both, the medians decide:
// its median first start at or after the median last end of the edge.
// Medians alone mislead where the edges' requests differ: a call that
// fails ends the request, so the later edge misses the slowest of the
// earlier one's requests, whose median end then passes the later
// edge's median start (HotROD's frontend: route after driver).
func assignStages(accs []*edgeAcc, edges []cascade.Edge, facts []edgeFacts, order map[uint64]*[2]int64) {
	byFrom := map[int32][]int{}
	for i, e := range accs {
		byFrom[e.from] = append(byFrom[e.from], i)
	}
	waits := func(b, a int) bool {
		if c := order[uint64(uint32(a))<<32|uint64(uint32(b))]; c != nil && c[0] > 0 {
			return 2*c[1] > c[0]
		}
		return facts[b].firstStartMS >= facts[a].lastEndMS
	}
	for _, idx := range byFrom {
		slices.SortFunc(idx, func(x, y int) int {
			if c := cmp.Compare(facts[x].firstStartMS, facts[y].firstStartMS); c != 0 {
				return c
			}
			return cmp.Compare(edges[x].To, edges[y].To)
		})
		stage := 0
		var current []int
		for _, i := range idx {
			if len(current) > 0 && !slices.ContainsFunc(current, func(a int) bool { return !waits(i, a) }) {
				stage++
				current = current[:0]
			}
			current = append(current, i)
			edges[i].Stage = stage
		}
	}
}
