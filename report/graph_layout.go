package report

import (
	"math"
	"sort"
	"unicode/utf8"

	"cascade"
)

// The call graph is laid out here, by hand, in the manner of Sugiyama:
// cycles broken by a depth-first search from the entries, layers by the
// longest path from them, long edges split by dummy nodes, the order
// within each layer by barycentre sweeps, and the positions within a
// layer by least squares under the order. Layers run left to right, as
// the calls do.

// Layout constants, in SVG user units (CSS pixels at scale 1).
const (
	cgFont       = 12.0 // node label size
	cgCharW      = 7.0  // width of a label character, generous
	cgNodeH      = 30.0 // node height
	cgNodePad    = 22.0 // horizontal padding inside a node
	cgDummyH     = 16.0 // the slot a long edge takes in a layer
	cgGapNode    = 18.0 // vertical gap between nodes of a layer
	cgGapDummy   = 8.0  // vertical gap next to a dummy
	cgLayerGap   = 120.0
	cgMargin     = 16.0
	cgEntryStub  = 70.0 // room left of the first layer for the entry arrows
	cgLegendH    = 58.0
	cgArrow      = 8.0 // arrowhead length
	cgRounds     = 24  // ordering rounds: a barycentre sweep, then transpositions
	cgPlaceIters = 12  // least-squares placement sweeps
	cgScale      = 1.3 // displayed size over the drawing's (CSS scales it down to fit)
)

// graphNode is a node of the layout: a model node or a dummy on a long
// edge.
type graphNode struct {
	name   string // empty for a dummy
	dummy  bool
	layer  int
	pos    int     // index within the layer
	w, h   float64 // size
	x, y   float64 // left edge and vertical centre
	pre    int     // depth-first discovery order
	node   *cascade.Node
	entry  *cascade.Entry
	origin bool
	loop   bool // calls itself
}

// graphEdge is a model edge and how it is drawn.
type graphEdge struct {
	from, to int // model node indices
	edge     *cascade.Edge
	amp      float64
	observed bool // amp from the observed counts
	back     bool // reversed to break a cycle
	self     bool
	chain    []int // layout nodes from the upper layer to the lower
}

// graphLayout is the laid-out call graph.
type graphLayout struct {
	nodes  []*graphNode // model nodes first, in model order, then dummies
	edges  []*graphEdge
	layers [][]int
	colX   []float64 // left edge of each layer
	colW   []float64
	width  float64
	height float64
}

// amplification returns the calls on edge e per call into its caller: the
// observed calls (attempts, retries included) over the caller's observed
// requests when the model has both, else the fan-out's mean times the
// expected attempts per call, Σ (r·q)^k for k below the policy's maximum
// attempts, with r the policy's reactivation and q the callee's base
// failure probability. observed reports which.
func amplification(m *cascade.Model, e *cascade.Edge) (amp float64, observed bool) {
	if o := e.Observed; o != nil {
		if from := m.Node(e.From); from != nil && from.Observed != nil && from.Observed.Requests > 0 {
			return float64(o.Calls) / float64(from.Observed.Requests), true
		}
	}
	attempts := 1.0
	if r := e.Retry; r != nil && r.MaxAttempts > 1 {
		q := 0.0
		if to := m.Node(e.To); to != nil {
			q = to.Overload.At(0)
		}
		x, term := 0.0, 1.0
		for k := 0; k < r.MaxAttempts; k++ {
			x += term
			term *= r.Reactivation * q
		}
		attempts = x
	}
	return e.FanOut.MeanValue() * attempts, false
}

// layoutGraph lays out the model's call graph. origin names the node to
// mark as an incident's origin; empty for none.
func layoutGraph(m *cascade.Model, origin string) *graphLayout {
	g := &graphLayout{}
	index := map[string]int{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		index[n.Name] = i
		g.nodes = append(g.nodes, &graphNode{name: n.Name, node: n, h: cgNodeH, pre: -1,
			w: cgCharW*float64(utf8.RuneCountInString(n.Name)) + cgNodePad, origin: n.Name == origin})
	}
	for i := range m.Entries {
		if j, ok := index[m.Entries[i].Node]; ok && g.nodes[j].entry == nil {
			g.nodes[j].entry = &m.Entries[i]
		}
	}
	out := make([][]int, len(m.Nodes))
	for i := range m.Edges {
		e := &m.Edges[i]
		f, ok1 := index[e.From]
		t, ok2 := index[e.To]
		if !ok1 || !ok2 {
			continue
		}
		amp, obs := amplification(m, e)
		out[f] = append(out[f], len(g.edges))
		g.edges = append(g.edges, &graphEdge{from: f, to: t, edge: e, amp: amp, observed: obs, self: f == t})
		g.nodes[f].loop = g.nodes[f].loop || f == t
	}
	g.breakCycles(m, index, out)
	g.assignLayers(out)
	g.addDummies()
	g.order()
	g.place()
	return g
}

// breakCycles runs a depth-first search from the entries, then from the
// other nodes in model order, and marks the edges that close a cycle.
func (g *graphLayout) breakCycles(m *cascade.Model, index map[string]int, out [][]int) {
	n := len(m.Nodes)
	state := make([]int8, n) // 0 new, 1 on the stack, 2 done
	next := 0
	var visit func(u int)
	visit = func(u int) {
		state[u] = 1
		g.nodes[u].pre = next
		next++
		for _, ei := range out[u] {
			e := g.edges[ei]
			switch {
			case e.self:
			case state[e.to] == 1:
				e.back = true
			case state[e.to] == 0:
				visit(e.to)
			}
		}
		state[u] = 2
	}
	for i := range m.Entries {
		if u, ok := index[m.Entries[i].Node]; ok && state[u] == 0 {
			visit(u)
		}
	}
	for u := 0; u < n; u++ {
		if state[u] == 0 {
			visit(u)
		}
	}
}

// assignLayers puts each node one layer past its furthest caller: the
// longest path from the sources of the graph without its back edges.
func (g *graphLayout) assignLayers(out [][]int) {
	n := len(out)
	indeg := make([]int, n)
	for _, e := range g.edges {
		if !e.back && !e.self {
			indeg[e.to]++
		}
	}
	// Kahn's algorithm, taking the ready node first discovered.
	var ready []int
	for u := 0; u < n; u++ {
		if indeg[u] == 0 {
			ready = append(ready, u)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return g.nodes[ready[i]].pre < g.nodes[ready[j]].pre })
		u := ready[0]
		ready = ready[1:]
		for _, ei := range out[u] {
			e := g.edges[ei]
			if e.back || e.self {
				continue
			}
			g.nodes[e.to].layer = max(g.nodes[e.to].layer, g.nodes[u].layer+1)
			if indeg[e.to]--; indeg[e.to] == 0 {
				ready = append(ready, e.to)
			}
		}
	}
	top := 0
	for _, nd := range g.nodes {
		top = max(top, nd.layer)
	}
	g.layers = make([][]int, top+1)
}

// addDummies gives every edge its chain of layout nodes, one per layer it
// spans, from the upper end (the caller, or the callee of a back edge).
func (g *graphLayout) addDummies() {
	for _, e := range g.edges {
		if e.self {
			continue
		}
		hi, lo := e.from, e.to
		if e.back {
			hi, lo = e.to, e.from
		}
		e.chain = []int{hi}
		for l := g.nodes[hi].layer + 1; l < g.nodes[lo].layer; l++ {
			d := &graphNode{dummy: true, layer: l, h: cgDummyH, pre: g.nodes[hi].pre}
			e.chain = append(e.chain, len(g.nodes))
			g.nodes = append(g.nodes, d)
		}
		e.chain = append(e.chain, lo)
	}
}

// links returns, for every layout node, its neighbours in the layer
// above and in the layer below.
func (g *graphLayout) links() (up, down [][]int) {
	up = make([][]int, len(g.nodes))
	down = make([][]int, len(g.nodes))
	for _, e := range g.edges {
		for i := 1; i < len(e.chain); i++ {
			a, b := e.chain[i-1], e.chain[i]
			down[a] = append(down[a], b)
			up[b] = append(up[b], a)
		}
	}
	return up, down
}

// order orders each layer to reduce crossings: by discovery order first,
// then rounds of a barycentre sweep (down and up in turn) followed by
// transpositions of neighbours, keeping the best order seen. Every other
// pair of rounds also swaps neighbours whose swap leaves the crossings
// unchanged, to walk off plateaus.
func (g *graphLayout) order() {
	for i, nd := range g.nodes {
		g.layers[nd.layer] = append(g.layers[nd.layer], i)
	}
	for _, l := range g.layers {
		sort.SliceStable(l, func(a, b int) bool { return g.nodes[l[a]].pre < g.nodes[l[b]].pre })
	}
	g.renumber()
	up, down := g.links()
	best := g.crossings()
	bestOrder := g.snapshot()
	for round := 0; round < cgRounds && best > 0; round++ {
		if round%2 == 0 {
			for l := 1; l < len(g.layers); l++ {
				g.sortByBarycentre(g.layers[l], up)
			}
		} else {
			for l := len(g.layers) - 2; l >= 0; l-- {
				g.sortByBarycentre(g.layers[l], down)
			}
		}
		g.transpose(up, down, round%4 >= 2)
		if c := g.crossings(); c < best {
			best, bestOrder = c, g.snapshot()
		}
	}
	g.layers = bestOrder
	g.renumber()
}

// transpose swaps neighbours in a layer while that removes crossings
// (or, sideways, once over each layer, keeps them): swapping u and v
// changes only the crossings between u's segments and v's, to the layer
// above and to the layer below.
func (g *graphLayout) transpose(up, down [][]int, sideways bool) {
	cross := func(u, v int) int { // crossings with u left of v
		n := 0
		for _, nbr := range [][][]int{up, down} {
			for _, a := range nbr[u] {
				for _, b := range nbr[v] {
					if g.nodes[a].pos > g.nodes[b].pos {
						n++
					}
				}
			}
		}
		return n
	}
	passes := 2*len(g.nodes) + 4
	if sideways {
		passes = 1
	}
	for pass := 0; pass < passes; pass++ {
		improved := false
		for _, l := range g.layers {
			for i := 0; i+1 < len(l); i++ {
				u, v := l[i], l[i+1]
				before, after := cross(u, v), cross(v, u)
				if after < before || sideways && after == before && before > 0 {
					l[i], l[i+1] = v, u
					g.nodes[u].pos, g.nodes[v].pos = i+1, i
					improved = true
				}
			}
		}
		if !improved {
			return
		}
	}
}

func (g *graphLayout) renumber() {
	for _, l := range g.layers {
		for i, v := range l {
			g.nodes[v].pos = i
		}
	}
}

func (g *graphLayout) snapshot() [][]int {
	out := make([][]int, len(g.layers))
	for i, l := range g.layers {
		out[i] = append([]int(nil), l...)
	}
	return out
}

// sortByBarycentre orders a layer by the mean position of each node's
// neighbours in the adjacent layer; a node without any keeps its place.
func (g *graphLayout) sortByBarycentre(layer []int, nbr [][]int) {
	bary := make(map[int]float64, len(layer))
	for _, v := range layer {
		if len(nbr[v]) == 0 {
			bary[v] = float64(g.nodes[v].pos)
			continue
		}
		s := 0.0
		for _, u := range nbr[v] {
			s += float64(g.nodes[u].pos)
		}
		bary[v] = s / float64(len(nbr[v]))
	}
	sort.SliceStable(layer, func(a, b int) bool {
		ba, bb := bary[layer[a]], bary[layer[b]]
		if ba != bb {
			return ba < bb
		}
		return g.nodes[layer[a]].pos < g.nodes[layer[b]].pos
	})
	for i, v := range layer {
		g.nodes[v].pos = i
	}
}

// crossings counts the pairs of segments between adjacent layers that
// cross.
func (g *graphLayout) crossings() int {
	type seg struct{ a, b int }
	by := make([][]seg, len(g.layers))
	for _, e := range g.edges {
		for i := 1; i < len(e.chain); i++ {
			a, b := g.nodes[e.chain[i-1]], g.nodes[e.chain[i]]
			by[a.layer] = append(by[a.layer], seg{a.pos, b.pos})
		}
	}
	n := 0
	for _, ss := range by {
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				if (ss[i].a-ss[j].a)*(ss[i].b-ss[j].b) < 0 {
					n++
				}
			}
		}
	}
	return n
}

// place sets the coordinates: layers as columns, each node as near the
// mean height of its neighbours as the order and the gaps allow.
func (g *graphLayout) place() {
	x := cgMargin + cgEntryStub
	for _, l := range g.layers {
		w := 0.0
		for _, v := range l {
			w = max(w, g.nodes[v].w)
		}
		g.colX = append(g.colX, x)
		g.colW = append(g.colW, w)
		for _, v := range l {
			nd := g.nodes[v]
			nd.x = x + (w-nd.w)/2
		}
		x += w + cgLayerGap
	}
	g.width = x - cgLayerGap + cgMargin
	// Start stacked from 0, then pull each node towards its neighbours.
	for _, l := range g.layers {
		y := 0.0
		for i, v := range l {
			if i > 0 {
				y += g.sep(l[i-1], v)
			}
			g.nodes[v].y = y
		}
	}
	up, down := g.links()
	both := make([][]int, len(g.nodes))
	for i := range both {
		both[i] = append(append([]int(nil), up[i]...), down[i]...)
	}
	for it := 0; it < cgPlaceIters; it++ {
		nbr := both
		switch it % 3 {
		case 0:
			nbr = up
		case 1:
			nbr = down
		}
		for _, l := range g.layers {
			g.pull(l, nbr)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, nd := range g.nodes {
		lo = min(lo, nd.y-nd.h/2)
		hi = max(hi, nd.y+nd.h/2)
	}
	if len(g.nodes) == 0 {
		lo, hi = 0, 0
	}
	top := cgMargin + 18 // room for a self loop or an origin tag
	for _, nd := range g.nodes {
		nd.y += top - lo
	}
	g.height = top + (hi - lo) + 26 + cgLegendH
}

// sep is the least distance between the centres of two nodes that are
// next to each other in a layer.
func (g *graphLayout) sep(a, b int) float64 {
	na, nb := g.nodes[a], g.nodes[b]
	gap := cgGapNode
	if na.dummy || nb.dummy {
		gap = cgGapDummy
	}
	if na.origin {
		gap += 12 // the origin tag sits under the node
	}
	if nb.loop {
		gap += 26 // the self call loops over the node
	}
	return (na.h+nb.h)/2 + gap
}

// pull moves the nodes of a layer to minimise the squared distance to
// their neighbours' mean heights, keeping the order and the gaps: with
// z_i = y_i − (the gaps before i), the order constraint becomes z
// non-decreasing, and the answer is the isotonic regression of the
// targets (pool adjacent violators).
func (g *graphLayout) pull(layer []int, nbr [][]int) {
	n := len(layer)
	if n == 0 {
		return
	}
	off := make([]float64, n)
	for i := 1; i < n; i++ {
		off[i] = off[i-1] + g.sep(layer[i-1], layer[i])
	}
	type block struct {
		sum   float64
		count int
	}
	var blocks []block
	for i, v := range layer {
		nd := g.nodes[v]
		want := nd.y
		if len(nbr[v]) > 0 {
			s := 0.0
			for _, u := range nbr[v] {
				s += g.nodes[u].y
			}
			want = s / float64(len(nbr[v]))
		}
		blocks = append(blocks, block{want - off[i], 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/float64(a.count) <= b.sum/float64(b.count) {
				break
			}
			blocks = append(blocks[:len(blocks)-2], block{a.sum + b.sum, a.count + b.count})
		}
	}
	i := 0
	for _, b := range blocks {
		z := b.sum / float64(b.count)
		for k := 0; k < b.count; k++ {
			g.nodes[layer[i]].y = z + off[i]
			i++
		}
	}
}
