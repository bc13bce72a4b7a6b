package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"cascade"
)

// This file draws the laid-out call graph (graph_layout.go) as SVG.

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

// graphSVG draws the laid-out graph as an inline SVG element, its edges
// coloured and labelled by amplification.
func graphSVG(m *cascade.Model, origin, title string) string {
	return paintedGraphSVG(m, origin, title, nil)
}

// paintedGraphSVG draws the laid-out graph; with paint, its nodes are
// filled by a measure (paint.node) and its edges drawn grey without
// labels, with paint's legend in place of the amplification scale.
func paintedGraphSVG(m *cascade.Model, origin, title string, paint *nodePaint) string {
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
	if paint != nil {
		w = max(w, paint.legendW+2*cgMargin)
	} else {
		w = max(w, marks.width()+2*cgMargin) // room for the legend
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 %s %s" width="%s" height="%s" role="img" font-family="%s" font-size="%s">`+"\n",
		f1(w), f1(h), f1(w*cgScale), f1(h*cgScale), svgFontFamily, f1(cgFont))
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")

	routes := g.routes()
	spots := labelSpots(g, routes)

	graphEdges(&b, m, g, routes, paint)
	edgeLabels(&b, g, spots, paint)
	graphNodes(&b, g, paint)
	if paint != nil {
		paint.legend(&b, h-cgLegendH+6)
	} else {
		graphLegend(&b, h-cgLegendH+6, marks)
	}
	b.WriteString("</svg>")
	return b.String()
}

// graphEdges draws the edges with their arrowheads: coloured by amplification, or grey with paint.
func graphEdges(b *strings.Builder, m *cascade.Model, g *graphLayout, routes []edgeRoute, paint *nodePaint) {
	// Edges, faint ones first so the strong ones draw on top.
	b.WriteString("<g fill=\"none\" stroke-linecap=\"round\">\n")
	for _, i := range byAmp(g) {
		e, r := g.edges[i], routes[i]
		col := ampColour(e.amp)
		if paint != nil {
			col = "#b4b4b4"
		}
		dash := ""
		if e.back {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<g class="edge"><title>%s</title><path d="%s" stroke="%s" stroke-width="%s"%s/>`,
			html.EscapeString(edgeTip(m, e)), r.d, col, f1(r.width), dash)
		// The arrowhead, pointing along dir, its tip at end.
		hw := 3.5 + r.width/2
		bx, by := r.end.x-r.dir.x*cgArrow, r.end.y-r.dir.y*cgArrow
		px, py := -r.dir.y*hw, r.dir.x*hw
		fmt.Fprintf(b, `<path d="M%s,%s L%s,%s L%s,%s Z" fill="%s"/></g>`+"\n",
			f1(r.end.x), f1(r.end.y), f1(bx+px), f1(by+py), f1(bx-px), f1(by-py), col)
	}
	b.WriteString("</g>\n")
}

// edgeLabels draws each edge's amplification beside it at its spot, unless paint is set.
func edgeLabels(b *strings.Builder, g *graphLayout, spots []box, paint *nodePaint) {
	// The labels, each beside its edge on a pale ground, off the line.
	b.WriteString(`<g class="amp" font-size="11" text-anchor="middle" dominant-baseline="central">` + "\n")
	for i, e := range g.edges {
		if paint != nil {
			break
		}
		sp := spots[i]
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" rx="3" fill="#ffffff" fill-opacity="0.9"/><text x="%s" y="%s" fill="%s">%s</text>`+"\n",
			f1(sp.x0), f1(sp.y0), f1(sp.x1-sp.x0), f1(sp.y1-sp.y0), f1((sp.x0+sp.x1)/2), f1((sp.y0+sp.y1)/2),
			ampLabelColour(e.amp), html.EscapeString(ampText(e.amp)))
	}
	b.WriteString("</g>\n")
}

// graphNodes draws the nodes, filled by paint when it is set, and the entries' arrows.
func graphNodes(b *strings.Builder, g *graphLayout, paint *nodePaint) {
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
		tip, label := nodeTip(nd), ""
		if paint != nil {
			var more string
			fill, label, more = paint.node(nd.name)
			tip += "; " + more
		}
		top := nd.y - nd.h/2
		fmt.Fprintf(b, `<g class="node"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s" stroke-width="%s"%s/>`,
			html.EscapeString(tip), f1(nd.x), f1(top), f1(nd.w), f1(nd.h), fill, stroke, f1(sw), dash)
		if label == "" {
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="#1a1a1a">%s</text>`, f1(nd.x+nd.w/2), f1(nd.y), html.EscapeString(nd.name))
		} else {
			ink := "#1a1a1a"
			if hexLuminance(fill) < 0.5 {
				ink = "#ffffff"
			}
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s">%s</text><text x="%s" y="%s" fill="%s" font-size="10">%s</text>`,
				f1(nd.x+nd.w/2), f1(nd.y-6), ink, html.EscapeString(nd.name), f1(nd.x+nd.w/2), f1(nd.y+8), ink, html.EscapeString(label))
		}
		if nd.origin {
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="#c0392b" font-size="10" font-weight="bold">origin</text>`, f1(nd.x+nd.w/2), f1(nd.y+nd.h/2+9))
		}
		b.WriteString("</g>\n")
		if en := nd.entry; en != nil {
			x0, x1 := nd.x-cgEntryStub+6, nd.x-2
			fmt.Fprintf(b, `<g class="entry"><title>entry: root requests arrive here</title><path d="M%s,%s L%s,%s" stroke="#1f4e99" stroke-width="2"/><path d="M%s,%s L%s,%s L%s,%s Z" fill="#1f4e99"/>`,
				f1(x0), f1(nd.y), f1(x1-cgArrow), f1(nd.y), f1(x1), f1(nd.y), f1(x1-cgArrow), f1(nd.y-4.5), f1(x1-cgArrow), f1(nd.y+4.5))
			fmt.Fprintf(b, `<text x="%s" y="%s" fill="#1f4e99" font-size="10">%s</text></g>`+"\n", f1((x0+x1-cgArrow)/2), f1(nd.y-9), html.EscapeString(g4(en.RatePerSec)+"/s"))
		}
	}
	b.WriteString("</g>\n")
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
