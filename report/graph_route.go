package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file routes the laid-out call graph's edges (graph_layout.go) as
// curves between the nodes' ports, and places each edge's label beside
// its curve, off every line where there is room (svg_graph.go draws
// them).

// Label geometry, in SVG user units.
const (
	cgLabelCharW = 6.4  // width of a label character at font size 11
	cgLabelH     = 13.0 // a label's height
	cgLabelPad   = 4.0  // horizontal padding of a label's ground
	cgLabelGap   = 2.5  // least gap between a label and a line
)

// edgeRoute is how one edge is drawn.
type edgeRoute struct {
	segs  []bezier // from the caller to the callee
	d     string   // the SVG path
	end   point    // the arrowhead's tip
	dir   point    // the arrowhead's direction
	width float64  // stroke width
}

// byAmp returns the edges' indices, faint ones first.
func byAmp(g *graphLayout) []int {
	idx := make([]int, len(g.edges))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return g.edges[idx[i]].amp < g.edges[idx[j]].amp })
	return idx
}

// routes routes every edge. Edges leave a node on its right and enter
// on its left (a back edge the other way round); the ports of a side
// are spread in the order of the other ends' heights.
func (g *graphLayout) routes() []edgeRoute {
	ports := g.edgePorts()
	portY := g.portHeights(ports)
	out := make([]edgeRoute, len(g.edges))
	for i, e := range g.edges {
		r := edgeRoute{width: ampWidth(e.amp)}
		if e.self {
			r.d = g.selfLoop(e, &r)
		} else {
			r.d = g.chainPath(i, e, portY, &r)
		}
		out[i] = r
	}
	return out
}

// edgePort is one end of an edge on a node's side, with the height of the
// node at its other end, which orders the side's ports.
type edgePort struct {
	edge  int
	right bool
	other float64
}

// portKey names one end of an edge: right for its chain's upper end,
// which leaves its node on the right, else the lower end.
type portKey struct {
	edge  int
	right bool
}

// edgePorts lists, per node, the ends of the edges that meet it, so each
// side's ports can be spread apart; self edges have no ports.
func (g *graphLayout) edgePorts() map[int][]edgePort {
	ports := map[int][]edgePort{}
	for i, e := range g.edges {
		if e.self {
			continue
		}
		c := e.chain
		// The upper end of the chain leaves on the right.
		ports[c[0]] = append(ports[c[0]], edgePort{i, true, g.nodes[c[1]].y})
		ports[c[len(c)-1]] = append(ports[c[len(c)-1]], edgePort{i, false, g.nodes[c[len(c)-2]].y})
	}
	return ports
}

// portHeights spreads each side's ports over the middle of the node, in
// the order of the other ends' heights, so edges at a node cross little.
func (g *graphLayout) portHeights(ports map[int][]edgePort) map[portKey]float64 {
	portY := map[portKey]float64{}
	for v := range g.nodes {
		ps := ports[v]
		for _, right := range []bool{false, true} {
			var side []edgePort
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
				portY[portKey{p.edge, p.right}] = y
			}
		}
	}
	return portY
}

// selfLoop routes an edge from a node to itself as one curve over the
// node's top and returns its SVG path.
func (g *graphLayout) selfLoop(e *graphEdge, r *edgeRoute) string {
	var d strings.Builder
	nd := g.nodes[e.from]
	top := nd.y - nd.h/2
	x1, x0 := nd.x+nd.w*0.65, nd.x+nd.w*0.35
	s := bezier{point{x1, top}, point{x1 + 12, top - 26}, point{x0 - 12, top - 26}, point{x0, top - cgArrow}}
	r.segs = append(r.segs, s)
	fmt.Fprintf(&d, "M%s,%s C%s,%s %s,%s %s,%s", f1(s.p0.x), f1(s.p0.y), f1(s.c0.x), f1(s.c0.y),
		f1(s.c1.x), f1(s.c1.y), f1(s.p1.x), f1(s.p1.y))
	r.end, r.dir = point{x0, top}, point{0, 1}
	return d.String()
}

// chainPath routes edge i along its chain of layers, from port to port,
// straight where it runs level and curved where it changes height, and
// returns its SVG path.
func (g *graphLayout) chainPath(i int, e *graphEdge, portY map[portKey]float64, r *edgeRoute) string {
	var d strings.Builder
	// Points along the chain, from the caller to the callee.
	pts := []point{}
	c := e.chain
	for k, v := range c {
		nd := g.nodes[v]
		switch {
		case k == 0:
			pts = append(pts, point{nd.x + nd.w, portY[portKey{i, true}]})
		case k == len(c)-1:
			pts = append(pts, point{nd.x, portY[portKey{i, false}]})
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
	r.dir = point{1, 0}
	if pts[last].x < pts[last-1].x {
		r.dir = point{-1, 0}
	}
	r.end = pts[last]
	pts[last].x -= r.dir.x * cgArrow
	fmt.Fprintf(&d, "M%s,%s", f1(pts[0].x), f1(pts[0].y))
	for k := 1; k < len(pts); k++ {
		a, z := pts[k-1], pts[k]
		if a.y == z.y {
			fmt.Fprintf(&d, " L%s,%s", f1(z.x), f1(z.y))
			r.segs = append(r.segs, bezier{a, a, z, z})
			continue
		}
		dx := (z.x - a.x) / 2
		s := bezier{a, point{a.x + dx, a.y}, point{z.x - dx, z.y}, z}
		r.segs = append(r.segs, s)
		fmt.Fprintf(&d, " C%s,%s %s,%s %s,%s", f1(s.c0.x), f1(s.c0.y), f1(s.c1.x), f1(s.c1.y), f1(z.x), f1(z.y))
	}
	return d.String()
}

// tangent returns the unit direction of the segment at t.
func (b bezier) tangent(t float64) point {
	u := 1 - t
	f := func(a, c0, c1, d float64) float64 {
		return 3*u*u*(c0-a) + 6*u*t*(c1-c0) + 3*t*t*(d-c1)
	}
	v := point{f(b.p0.x, b.c0.x, b.c1.x, b.p1.x), f(b.p0.y, b.c0.y, b.c1.y, b.p1.y)}
	n := math.Hypot(v.x, v.y)
	if n == 0 {
		v = point{b.p1.x - b.p0.x, b.p1.y - b.p0.y}
		if n = math.Hypot(v.x, v.y); n == 0 {
			return point{1, 0}
		}
	}
	return point{v.x / n, v.y / n}
}

// inkPoint is a sample of a drawn line: a point and the line's half
// width there.
type inkPoint struct {
	p    point
	half float64
}

// ink samples the route's line, every few units.
func (r *edgeRoute) ink() []inkPoint {
	var out []inkPoint
	for _, s := range r.segs {
		n := max(4, int(math.Hypot(s.p1.x-s.p0.x, s.p1.y-s.p0.y)/3))
		for k := 0; k <= n; k++ {
			out = append(out, inkPoint{s.at(float64(k) / float64(n)), r.width / 2})
		}
	}
	return out
}

// hits reports whether the box comes within gap of a sampled line.
func (a box) hits(ink []inkPoint, gap float64) bool {
	for _, q := range ink {
		d := q.half + gap
		if q.p.x > a.x0-d && q.p.x < a.x1+d && q.p.y > a.y0-d && q.p.y < a.y1+d {
			return true
		}
	}
	return false
}

// labelSpots places each edge's label: beside its line (offset along
// the normal, above first, then below), at the first point from the
// middle of the route outwards whose box stays on the drawing, overlaps
// no node and no label placed before, and stays clear of every line; failing that, of its own
// line only; failing that, beside the middle of the route. The strongest
// edges choose first. The result is indexed like g.edges.
func labelSpots(g *graphLayout, routes []edgeRoute) []box {
	taken := []box{}
	for _, nd := range g.nodes {
		if !nd.dummy {
			taken = append(taken, box{nd.x, nd.y - nd.h/2, nd.x + nd.w, nd.y + nd.h/2})
		}
	}
	inks := make([][]inkPoint, len(routes))
	var all []inkPoint
	for i := range routes {
		inks[i] = routes[i].ink()
		all = append(all, inks[i]...)
	}
	out := make([]box, len(g.edges))
	order := byAmp(g)
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		r := &routes[i]
		tw := cgLabelCharW*float64(utf8.RuneCountInString(ampText(g.edges[i].amp))) + cgLabelPad
		cands := labelCandidates(r, tw)
		free := func(bb box) bool {
			if bb.x0 < 0 || bb.y0 < 0 || bb.x1 > g.width || bb.y1 > g.height-cgLegendH {
				return false // off the drawing, or on the legend
			}
			for _, o := range taken {
				if bb.overlaps(o) {
					return false
				}
			}
			return true
		}
		chosen, ok := box{}, false
		for _, clear := range [][]inkPoint{all, inks[i]} {
			for _, bb := range cands {
				if free(bb) && !bb.hits(clear, cgLabelGap-0.5) {
					chosen, ok = bb, true
					break
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			chosen = cands[0]
		}
		out[i] = chosen
		taken = append(taken, chosen)
	}
	return out
}

// labelCandidates returns the boxes a label of width tw may take beside
// the route, best first: from the middle segment outwards, at points
// from each segment's middle outwards, above the line before below it.
func labelCandidates(r *edgeRoute, tw float64) []box {
	mid := len(r.segs) / 2
	order := []int{mid}
	for k := 1; k < len(r.segs); k++ {
		if mid-k >= 0 {
			order = append(order, mid-k)
		}
		if mid+k < len(r.segs) {
			order = append(order, mid+k)
		}
	}
	var out []box
	for _, si := range order {
		s := r.segs[si]
		for _, t := range []float64{0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8} {
			p, tan := s.at(t), s.tangent(t)
			n := point{tan.y, -tan.x} // the normal pointing up (or right)
			if n.y > 0 || n.y == 0 && n.x < 0 {
				n = point{-n.x, -n.y}
			}
			// The centre's distance from the line that keeps the box's
			// nearest corner clear of the stroke.
			off := math.Abs(n.x)*tw/2 + math.Abs(n.y)*cgLabelH/2 + r.width/2 + cgLabelGap
			for _, side := range []float64{1, -1} {
				c := point{p.x + side*n.x*off, p.y + side*n.y*off}
				out = append(out, box{c.x - tw/2, c.y - cgLabelH/2, c.x + tw/2, c.y + cgLabelH/2})
			}
		}
	}
	return out
}
