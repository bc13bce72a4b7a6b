package report

import (
	"fmt"
	"html"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg/draw"
)

// This file draws what the capture measured beside the model's replay:
// the entries over time, the call graph painted by a node measure, and
// the operating point on the capacity curve.

// The observed series and the operating point take a colour no other
// chart of the page takes, so that the Chromium test can find them; the
// replay beside them is the baseline's purple.
var colObserved = color.RGBA{0xd9, 0x5f, 0x02, 0xff}

// observedChart is one measure of an observed timeline.
type observedChart struct {
	title, ylabel string
	obs, rep      []float64
}

// observedCharts lists the charts of an observed timeline.
func observedCharts(tl *ObservedTimeline) []observedChart {
	return []observedChart{
		{"Requests at the entries: observed and replayed", "requests/s", tl.Observed.RequestsPerSec, tl.Replayed.RequestsPerSec},
		{"Failed requests at the entries: observed and replayed", "errors/s", tl.Observed.ErrorsPerSec, tl.Replayed.ErrorsPerSec},
		{"Mean latency at the entries: observed and replayed", "latency (ms)", tl.Observed.LatencyMS, tl.Replayed.LatencyMS},
	}
}

// observedSVG charts one measure of the capture over time (solid) and of
// the replay (dashed) on the same axes.
func observedSVG(tl *ObservedTimeline, c observedChart) (string, error) {
	n := max(len(c.obs), len(c.rep))
	top := max(maxOf(c.obs, c.rep), 1) * 1.1
	p := newPlot(c.title, "time since the capture's start (s)", c.ylabel)
	xs := windowTimes(n, tl.WindowMS)
	lo := line(xs, c.obs, colObserved, 2, false)
	p.Add(lo)
	p.Legend.Add("observed", lo)
	lr := line(xs, c.rep, colBaseline, 1.6, true)
	p.Add(lr)
	p.Legend.Add("replayed", lr)
	p.X.Min, p.X.Max = 0, float64(n)*tl.WindowMS/1000
	p.Y.Min, p.Y.Max = 0, top
	return renderSVG(wideW, smallH, c.title, func(dc draw.Canvas) { drawBeside(p, dc) })
}

// nodePaint fills the call graph's nodes by a measure.
type nodePaint struct {
	// node returns a node's fill, the value to print under its name, and
	// what its tooltip adds.
	node    func(name string) (fill, label, tip string)
	legend  func(b *strings.Builder, y float64)
	legendW float64
}

// colourStop is a point of a colour scale.
type colourStop struct {
	at      float64
	r, g, b float64
}

// scaleColour interpolates the stops linearly at x.
func scaleColour(x float64, stops []colourStop) string {
	hex := func(s colourStop) string { return fmt.Sprintf("#%02x%02x%02x", int(s.r), int(s.g), int(s.b)) }
	if !(x > stops[0].at) {
		return hex(stops[0])
	}
	for i := 1; i < len(stops); i++ {
		s0, s1 := stops[i-1], stops[i]
		if x <= s1.at {
			t := (x - s0.at) / (s1.at - s0.at)
			mix := func(a, b float64) float64 { return math.Round(a + t*(b-a)) }
			return hex(colourStop{0, mix(s0.r, s1.r), mix(s0.g, s1.g), mix(s0.b, s1.b)})
		}
	}
	return hex(stops[len(stops)-1])
}

// hexLuminance is the relative luminance of a "#rrggbb" colour, roughly.
func hexLuminance(s string) float64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil || len(s) != 7 {
		return 1
	}
	return luminance(color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff})
}

// The scales: error rate white → red, on a square-root axis so that a
// few per cent show; utilisation white → blue.
var (
	errorStops = []colourStop{{0, 0xff, 0xff, 0xff}, {0.01, 0xfc, 0xbb, 0xa1}, {0.05, 0xfb, 0x6a, 0x4a}, {0.2, 0xcb, 0x18, 0x1d}, {0.5, 0x67, 0x00, 0x0d}}
	utilStops  = []colourStop{{0, 0xff, 0xff, 0xff}, {0.5, 0x9e, 0xca, 0xe1}, {0.8, 0x31, 0x82, 0xbd}, {1, 0x08, 0x30, 0x6b}}
)

// notMeasured fills a node the capture did not measure.
const notMeasured = "#eeeeee"

// errorPaint fills each node by its observed error rate.
func errorPaint(o *Observed) *nodePaint {
	fits := nodeFitsByName(o)
	return &nodePaint{
		node: func(name string) (string, string, string) {
			f := fits[name]
			if f == nil {
				return notMeasured, "–", "not measured"
			}
			return scaleColour(f.Observed.ErrorRate, errorStops), pctOf(f.Observed.ErrorRate),
				fmt.Sprintf("errors observed %s, replayed %s", pctOf(f.Observed.ErrorRate), pctOf(f.Replayed.ErrorRate))
		},
		legend: func(b *strings.Builder, y float64) {
			scaleLegend(b, y, "observed error rate:", errorStops, []string{"0", "1%", "5%", "20%", "≥50%"})
		},
		legendW: 5 * 36,
	}
}

// utilisationPaint fills each node with a slot limit by its observed
// utilisation.
func utilisationPaint(o *Observed) *nodePaint {
	fits := nodeFitsByName(o)
	return &nodePaint{
		node: func(name string) (string, string, string) {
			f := fits[name]
			switch {
			case f == nil:
				return notMeasured, "–", "not measured"
			case f.Slots == 0:
				return "#ffffff", strconv.FormatFloat(f.Observed.InFlight, 'g', 2, 64),
					fmt.Sprintf("no slot limit; in flight observed %s, replayed %s", g4(f.Observed.InFlight), g4(f.Replayed.InFlight))
			}
			return scaleColour(f.Observed.Utilisation, utilStops), pctOf(f.Observed.Utilisation),
				fmt.Sprintf("utilisation of %d slot(s) observed %s, replayed %s", f.Slots, pctOf(f.Observed.Utilisation), pctOf(f.Replayed.Utilisation))
		},
		legend: func(b *strings.Builder, y float64) {
			scaleLegend(b, y, "observed utilisation (white: no slot limit, labelled with its mean calls in flight):", utilStops, []string{"0", "50%", "80%", "100%"})
		},
		legendW: 4*36 + 330,
	}
}

// scaleLegend draws a colour scale's stops with their labels.
func scaleLegend(b *strings.Builder, y float64, title string, stops []colourStop, texts []string) {
	fmt.Fprintf(b, `<g class="legend" font-size="11" dominant-baseline="central" transform="translate(%s,%s)">`+"\n", f1(cgMargin), f1(y))
	fmt.Fprintf(b, `<text x="0" y="6" fill="#333333">%s</text>`+"\n", html.EscapeString(title))
	for i, s := range stops {
		x := float64(i) * 36
		fmt.Fprintf(b, `<rect x="%s" y="16" width="34" height="10" fill="%s" stroke="#cccccc" stroke-width="0.5"/><text x="%s" y="35" text-anchor="middle" fill="#333333">%s</text>`+"\n",
			f1(x), scaleColour(s.at, stops), f1(x+17), html.EscapeString(texts[i]))
	}
	b.WriteString("</g>\n")
}

func nodeFitsByName(o *Observed) map[string]*NodeFit {
	out := map[string]*NodeFit{}
	for i := range o.Nodes {
		out[o.Nodes[i].Node] = &o.Nodes[i]
	}
	return out
}
