package report

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
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

// ampColour maps an amplification to a colour on a grey → orange → red
// scale, logarithmic in the amplification: grey up to 1, orange at 3,
// red at 10, dark red from 30.
func ampColour(a float64) string {
	stops := []struct {
		at      float64
		r, g, b float64
	}{{1, 0xa0, 0xa0, 0xa0}, {3, 0xf2, 0x8e, 0x2b}, {10, 0xd6, 0x27, 0x28}, {30, 0x7f, 0x00, 0x00}}
	if !(a > stops[0].at) {
		return "#a0a0a0"
	}
	for i := 1; i < len(stops); i++ {
		s0, s1 := stops[i-1], stops[i]
		if a <= s1.at {
			t := math.Log(a/s0.at) / math.Log(s1.at/s0.at)
			mix := func(x, y float64) int { return int(math.Round(x + t*(y-x))) }
			return fmt.Sprintf("#%02x%02x%02x", mix(s0.r, s1.r), mix(s0.g, s1.g), mix(s0.b, s1.b))
		}
	}
	return "#7f0000"
}

// ampWidth is an edge's stroke width: wider for more calls.
func ampWidth(a float64) float64 {
	return math.Min(5, 1.3+1.4*math.Log10(math.Max(1, a)))
}

// ampText formats an amplification for a label: "×13.5", "×0.0324".
func ampText(a float64) string {
	if a >= 1000 {
		return "×" + strconv.FormatFloat(a, 'f', 0, 64)
	}
	return "×" + strconv.FormatFloat(a, 'g', 3, 64)
}

// f1 formats a coordinate with at most one decimal.
func f1(x float64) string {
	s := strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

type point struct{ x, y float64 }

// box is a placed label, to keep labels from overlapping.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

// bezier is a cubic Bézier segment.
type bezier struct{ p0, c0, c1, p1 point }

func (b bezier) at(t float64) point {
	u := 1 - t
	f := func(a, c0, c1, d float64) float64 {
		return u*u*u*a + 3*u*u*t*c0 + 3*u*t*t*c1 + t*t*t*d
	}
	return point{f(b.p0.x, b.c0.x, b.c1.x, b.p1.x), f(b.p0.y, b.c0.y, b.c1.y, b.p1.y)}
}

// graphSVG draws the laid-out graph as an inline SVG element.
func graphSVG(m *cascade.Model, origin, title string) string {
	g := layoutGraph(m, origin)
	var b strings.Builder
	w, h := math.Ceil(g.width), math.Ceil(g.height)
	var marks legendMarks
	for _, nd := range g.nodes {
		marks.origin = marks.origin || nd.origin
		marks.virtual = marks.virtual || nd.node != nil && nd.node.Virtual
	}
	for _, e := range g.edges {
		marks.cycle = marks.cycle || e.back
	}
	w = max(w, marks.width()+2*cgMargin) // room for the legend
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 %s %s" width="%s" height="%s" role="img" font-family="%s" font-size="%s">`+"\n",
		f1(w), f1(h), f1(w*cgScale), f1(h*cgScale), svgFontFamily, f1(cgFont))
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")

	// Ports: where each edge leaves and enters its nodes. Edges leave a
	// node on its right and enter on its left (a back edge the other way
	// round); the ports of a side are spread in the order of the other
	// ends' heights.
	type port struct {
		edge  int
		right bool
		other float64
	}
	ports := map[int][]port{}
	for i, e := range g.edges {
		if e.self {
			continue
		}
		c := e.chain
		// The upper end of the chain leaves on the right.
		ports[c[0]] = append(ports[c[0]], port{i, true, g.nodes[c[1]].y})
		ports[c[len(c)-1]] = append(ports[c[len(c)-1]], port{i, false, g.nodes[c[len(c)-2]].y})
	}
	type key struct {
		edge  int
		right bool
	}
	portY := map[key]float64{}
	for v := range g.nodes {
		ps := ports[v]
		for _, right := range []bool{false, true} {
			var side []port
			for _, p := range ps {
				if p.right == right {
					side = append(side, p)
				}
			}
			sort.SliceStable(side, func(i, j int) bool {
				if side[i].other != side[j].other {
					return side[i].other < side[j].other
				}
				return side[i].edge < side[j].edge
			})
			nd := g.nodes[v]
			span := nd.h * 0.6
			for k, p := range side {
				y := nd.y
				if len(side) > 1 {
					y = nd.y - span/2 + span*float64(k)/float64(len(side)-1)
				}
				portY[key{p.edge, p.right}] = y
			}
		}
	}

	// Edges, faint ones first so the strong ones draw on top.
	idx := make([]int, len(g.edges))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return g.edges[idx[i]].amp < g.edges[idx[j]].amp })
	var labels []box
	for _, nd := range g.nodes {
		if !nd.dummy {
			labels = append(labels, box{nd.x, nd.y - nd.h/2, nd.x + nd.w, nd.y + nd.h/2})
		}
	}
	var labelSVG strings.Builder
	b.WriteString("<g fill=\"none\" stroke-linecap=\"round\">\n")
	for _, i := range idx {
		e := g.edges[i]
		col := ampColour(e.amp)
		sw := ampWidth(e.amp)
		tip := edgeTip(m, e)
		var segs []bezier
		var d strings.Builder
		var end, dir point
		if e.self {
			nd := g.nodes[e.from]
			top := nd.y - nd.h/2
			x1, x0 := nd.x+nd.w*0.65, nd.x+nd.w*0.35
			s := bezier{point{x1, top}, point{x1 + 12, top - 26}, point{x0 - 12, top - 26}, point{x0, top - cgArrow}}
			segs = append(segs, s)
			fmt.Fprintf(&d, "M%s,%s C%s,%s %s,%s %s,%s", f1(s.p0.x), f1(s.p0.y), f1(s.c0.x), f1(s.c0.y),
				f1(s.c1.x), f1(s.c1.y), f1(s.p1.x), f1(s.p1.y))
			end, dir = point{x0, top}, point{0, 1}
		} else {
			// Points along the chain, from the caller to the callee.
			pts := []point{}
			c := e.chain
			for k, v := range c {
				nd := g.nodes[v]
				switch {
				case k == 0:
					pts = append(pts, point{nd.x + nd.w, portY[key{i, true}]})
				case k == len(c)-1:
					pts = append(pts, point{nd.x, portY[key{i, false}]})
				default:
					l := nd.layer
					pts = append(pts, point{g.colX[l], nd.y}, point{g.colX[l] + g.colW[l], nd.y})
				}
			}
			if e.back {
				// Drawn from the caller (the lower end) to the callee.
				for l, r := 0, len(pts)-1; l < r; l, r = l+1, r-1 {
					pts[l], pts[r] = pts[r], pts[l]
				}
			}
			last := len(pts) - 1
			dir = point{1, 0}
			if pts[last].x < pts[last-1].x {
				dir = point{-1, 0}
			}
			end = pts[last]
			pts[last].x -= dir.x * cgArrow
			fmt.Fprintf(&d, "M%s,%s", f1(pts[0].x), f1(pts[0].y))
			for k := 1; k < len(pts); k++ {
				a, z := pts[k-1], pts[k]
				if a.y == z.y {
					fmt.Fprintf(&d, " L%s,%s", f1(z.x), f1(z.y))
					segs = append(segs, bezier{a, a, z, z})
					continue
				}
				dx := (z.x - a.x) / 2
				s := bezier{a, point{a.x + dx, a.y}, point{z.x - dx, z.y}, z}
				segs = append(segs, s)
				fmt.Fprintf(&d, " C%s,%s %s,%s %s,%s", f1(s.c0.x), f1(s.c0.y), f1(s.c1.x), f1(s.c1.y), f1(z.x), f1(z.y))
			}
		}
		dash := ""
		if e.back {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<g class="edge"><title>%s</title><path d="%s" stroke="%s" stroke-width="%s"%s/>`,
			html.EscapeString(tip), d.String(), col, f1(sw), dash)
		// The arrowhead, pointing along dir, its tip at end.
		hw := 3.5 + sw/2
		bx, by := end.x-dir.x*cgArrow, end.y-dir.y*cgArrow
		px, py := -dir.y*hw, dir.x*hw
		fmt.Fprintf(&b, `<path d="M%s,%s L%s,%s L%s,%s Z" fill="%s"/></g>`+"\n",
			f1(end.x), f1(end.y), f1(bx+px), f1(by+py), f1(bx-px), f1(by-py), col)

		// The label: on the segment, where it overlaps nothing placed.
		text := ampText(e.amp)
		tw := 6.4*float64(utf8.RuneCountInString(text)) + 4
		th := 13.0
		var at point
		placed := false
		mid := len(segs) / 2
		order := []int{mid}
		for k := 1; k < len(segs); k++ {
			if mid-k >= 0 {
				order = append(order, mid-k)
			}
			if mid+k < len(segs) {
				order = append(order, mid+k)
			}
		}
	search:
		for _, si := range order {
			for _, t := range []float64{0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8} {
				p := segs[si].at(t)
				bb := box{p.x - tw/2, p.y - th/2, p.x + tw/2, p.y + th/2}
				ok := true
				for _, o := range labels {
					if bb.overlaps(o) {
						ok = false
						break
					}
				}
				if ok {
					at, placed = p, true
					labels = append(labels, bb)
					break search
				}
			}
		}
		if !placed {
			at = segs[mid].at(0.5)
			labels = append(labels, box{at.x - tw/2, at.y - th/2, at.x + tw/2, at.y + th/2})
		}
		fmt.Fprintf(&labelSVG, `<text x="%s" y="%s" fill="%s">%s</text>`+"\n", f1(at.x), f1(at.y), ampLabelColour(e.amp), html.EscapeString(text))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g class="amp" font-size="11" text-anchor="middle" dominant-baseline="central" stroke="#ffffff" stroke-width="3.5" stroke-linejoin="round" paint-order="stroke">` + "\n")
	b.WriteString(labelSVG.String())
	b.WriteString("</g>\n")

	// Nodes.
	b.WriteString(`<g class="nodes" text-anchor="middle" dominant-baseline="central">` + "\n")
	for _, nd := range g.nodes {
		if nd.dummy {
			continue
		}
		fill, stroke, sw := "#ffffff", "#4a4a4a", 1.2
		switch {
		case nd.origin:
			fill, stroke, sw = "#fdecea", "#c0392b", 2.5
		case nd.entry != nil:
			fill, stroke, sw = "#eef3fb", "#1f4e99", 2.2
		}
		dash := ""
		if nd.node.Virtual {
			dash = ` stroke-dasharray="4 3"`
		}
		top := nd.y - nd.h/2
		fmt.Fprintf(&b, `<g class="node"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s" stroke-width="%s"%s/>`,
			html.EscapeString(nodeTip(nd)), f1(nd.x), f1(top), f1(nd.w), f1(nd.h), fill, stroke, f1(sw), dash)
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#1a1a1a">%s</text>`, f1(nd.x+nd.w/2), f1(nd.y), html.EscapeString(nd.name))
		if nd.origin {
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#c0392b" font-size="10" font-weight="bold">origin</text>`, f1(nd.x+nd.w/2), f1(nd.y+nd.h/2+9))
		}
		b.WriteString("</g>\n")
		if en := nd.entry; en != nil {
			x0, x1 := nd.x-cgEntryStub+6, nd.x-2
			fmt.Fprintf(&b, `<g class="entry"><title>entry: root requests arrive here</title><path d="M%s,%s L%s,%s" stroke="#1f4e99" stroke-width="2"/><path d="M%s,%s L%s,%s L%s,%s Z" fill="#1f4e99"/>`,
				f1(x0), f1(nd.y), f1(x1-cgArrow), f1(nd.y), f1(x1), f1(nd.y), f1(x1-cgArrow), f1(nd.y-4.5), f1(x1-cgArrow), f1(nd.y+4.5))
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#1f4e99" font-size="10">%s</text></g>`+"\n", f1((x0+x1-cgArrow)/2), f1(nd.y-9), html.EscapeString(g4(en.RatePerSec)+"/s"))
		}
	}
	b.WriteString("</g>\n")
	graphLegend(&b, h-cgLegendH+6, marks)
	b.WriteString("</svg>")
	return b.String()
}

// ampLabelColour darkens the pale end of the scale so labels stay
// readable on white.
func ampLabelColour(a float64) string {
	if !(a > 1) {
		return "#666666"
	}
	return ampColour(math.Max(a, 2.2))
}

// legendMarks says which marks the graph uses, for its legend.
type legendMarks struct{ origin, virtual, cycle bool }

// width is the legend's width.
func (m legendMarks) width() float64 {
	w := 6*36 + 20 + 72.0
	if m.origin {
		w += 76
	}
	if m.virtual {
		w += 168
	}
	if m.cycle {
		w += 110
	}
	return w
}

// graphLegend draws the colour scale and the marks the graph uses, from
// height y.
func graphLegend(b *strings.Builder, y float64, marks legendMarks) {
	fmt.Fprintf(b, `<g class="legend" font-size="11" dominant-baseline="central" transform="translate(%s,%s)">`+"\n", f1(cgMargin), f1(y))
	b.WriteString(`<text x="0" y="6" fill="#333333">calls per call into the caller:</text>` + "\n")
	x := 0.0
	for _, s := range []struct {
		amp  float64
		text string
	}{{1, "≤1"}, {2, "2"}, {3, "3"}, {5, "5"}, {10, "10"}, {30, "≥30"}} {
		fmt.Fprintf(b, `<rect x="%s" y="16" width="34" height="10" fill="%s"/><text x="%s" y="35" text-anchor="middle" fill="#333333">%s</text>`+"\n",
			f1(x), ampColour(s.amp), f1(x+17), html.EscapeString(s.text))
		x += 36
	}
	x += 20
	fmt.Fprintf(b, `<rect x="%s" y="12" width="26" height="16" rx="4" fill="#eef3fb" stroke="#1f4e99" stroke-width="2"/><text x="%s" y="20" fill="#333333">entry</text>`+"\n", f1(x), f1(x+32))
	x += 72
	if marks.origin {
		fmt.Fprintf(b, `<rect x="%s" y="12" width="26" height="16" rx="4" fill="#fdecea" stroke="#c0392b" stroke-width="2.5"/><text x="%s" y="20" fill="#333333">origin</text>`+"\n", f1(x), f1(x+32))
		x += 76
	}
	if marks.virtual {
		fmt.Fprintf(b, `<rect x="%s" y="12" width="26" height="16" rx="4" fill="#ffffff" stroke="#4a4a4a" stroke-dasharray="4 3"/><text x="%s" y="20" fill="#333333">virtual (uninstrumented)</text>`+"\n", f1(x), f1(x+32))
		x += 168
	}
	if marks.cycle {
		fmt.Fprintf(b, `<path d="M%s,20 L%s,20" stroke="#a0a0a0" stroke-width="2" stroke-dasharray="6 4"/><text x="%s" y="20" fill="#333333">closes a cycle</text>`+"\n", f1(x), f1(x+26), f1(x+32))
	}
	b.WriteString("</g>\n")
}

// edgeTip is an edge's tooltip.
func edgeTip(m *cascade.Model, e *graphEdge) string {
	me := e.edge
	s := fmt.Sprintf("%s → %s: %s calls per call into %s", me.From, me.To, g4(e.amp), me.From)
	if e.observed {
		s += fmt.Sprintf(" (observed: %d calls for %d requests)", me.Observed.Calls, m.Node(me.From).Observed.Requests)
	} else {
		s += fmt.Sprintf(" (fan-out mean %s", g4(me.FanOut.MeanValue()))
		if me.Retry != nil && me.Retry.MaxAttempts > 1 {
			s += fmt.Sprintf(" × expected attempts, up to %d", me.Retry.MaxAttempts)
		}
		s += ")"
	}
	if me.Retry != nil && me.Retry.MaxAttempts > 1 {
		s += fmt.Sprintf("; retries up to %d attempts", me.Retry.MaxAttempts)
	}
	if me.TimeoutMS > 0 {
		s += "; timeout " + msText(me.TimeoutMS)
	}
	if e.back {
		s += "; closes a cycle"
	}
	return s
}

// nodeTip is a node's tooltip.
func nodeTip(nd *graphNode) string {
	n := nd.node
	slots := "unlimited slots"
	if n.Concurrency > 0 {
		slots = fmt.Sprintf("%d slot(s) each", n.Concurrency)
	}
	s := fmt.Sprintf("%s: %d replica(s), %s, service mean %s", n.Name, n.Replicas, slots, msText(round1(n.Service.MeanValue())))
	if n.Virtual {
		s += "; virtual (seen only from its callers)"
	}
	if nd.entry != nil {
		s += fmt.Sprintf("; entry, %s root requests/s", g4(nd.entry.RatePerSec))
	}
	if nd.origin {
		s += "; the incident's most likely origin"
	}
	return s
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
