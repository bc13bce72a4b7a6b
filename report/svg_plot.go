package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"cascade/fit"
	"cascade/rank"
)

// svgFontFamily is the font of every chart: gonum/plot measures its text
// with Liberation Sans, and Arimo and Arial share its metrics.
const svgFontFamily = `'Liberation Sans', Arimo, Arial, Helvetica, sans-serif`

// sansFont is Liberation Sans, which gonum/plot embeds.
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Chart colours (Tableau 10), in the order series take them.
var seriesColours = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xb0, 0x7a, 0xa1, 0xff},
	{0xf2, 0x8e, 0x2b, 0xff}, {0x76, 0xb7, 0xb2, 0xff}, {0x9c, 0x75, 0x5f, 0xff}, {0xed, 0xc9, 0x48, 0xff},
}

var (
	colBlack  = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colGrey   = color.RGBA{0x8c, 0x8c, 0x8c, 0xff}
	colGrid   = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	colSurge  = color.RGBA{0xfb, 0xe3, 0xc6, 0xff}
	colBand   = color.RGBA{0xc6, 0xdb, 0xef, 0xff}
	colKnee   = color.RGBA{0xd9, 0x73, 0x0d, 0xff}
	colDanger = color.RGBA{0xc0, 0x39, 0x2b, 0xff}
	colFlat   = color.RGBA{0xd9, 0xef, 0xd3, 0xff}
	// The two runs of a timeline: the baseline and the change, in
	// colours no other series of the page takes, so that the Chromium
	// test can find each.
	colBaseline = color.RGBA{0x7b, 0x32, 0x94, 0xff}
	colChange   = color.RGBA{0x1b, 0x9e, 0x77, 0xff}
	dashedLine  = []vg.Length{vg.Points(5), vg.Points(3)}
)

// newPlot returns a plot in the report's style: sans-serif text, a light
// grid behind the data.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansFont, 11)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, 9.5)
		a.Tick.Label.Font = font.From(sansFont, 8.5)
		a.Color, a.Tick.Color = colGrey, colGrey
	}
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	p.Legend.TextStyle.Font = font.From(sansFont, 8.5)
	p.Legend.Padding = vg.Points(1)
	p.Legend.ThumbnailWidth = vg.Points(22)
	gr := plotter.NewGrid()
	gr.Vertical.Color, gr.Horizontal.Color = colGrid, colGrid
	gr.Vertical.Width, gr.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	p.Add(gr)
	return p
}

// niceTicks marks round values (1, 2 or 5 times a power of ten apart),
// as close to five of them as can be, labelled with the decimals the
// step needs.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	count := func(step float64) float64 { return math.Floor(hi/step+1e-9) - math.Ceil(lo/step-1e-9) + 1 }
	mag := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if math.Abs(count(m*mag)-5) < math.Abs(count(step)-5) {
			step = m * mag
		}
	}
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ts []plot.Tick
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
		v := i * step
		if v == 0 {
			v = 0 // not −0
		}
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
	}
	return ts
}

// drawBeside draws p with its legend in a column to its right, where it
// hides no data.
func drawBeside(p *plot.Plot, dc draw.Canvas) {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	r := leg.Rectangle(dc)
	lw := r.Max.X - r.Min.X + vg.Points(16)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	top := vg.Points(10)
	if p.Title.Text != "" {
		top += p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Left, leg.Top = true, true
	leg.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(10), 0, 0, -top))
}

// textStyle is a label style of the given size and colour.
func textStyle(size float64, c color.Color) text.Style {
	return text.Style{Font: font.From(sansFont, font.Length(size)), Color: c, Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YCenter}
}

// renderSVG draws on a w×h point SVG canvas and returns the SVG element
// to inline: without the XML prolog, with title as its <title>, and with
// fallbacks for the font.
func renderSVG(w, h vg.Length, title string, drawFn func(dc draw.Canvas)) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %q: %v", title, r)
		}
	}()
	c := vgsvg.New(w, h)
	drawFn(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(buf.String(), title)
}

// inlineSVG turns a standalone SVG document into an element to inline.
func inlineSVG(doc, title string) (string, error) {
	i := strings.Index(doc, "<svg")
	if i < 0 {
		return "", errors.New("no <svg> element")
	}
	doc = doc[i:]
	j := strings.Index(doc, ">")
	doc = `<svg class="chart" role="img"` + doc[len("<svg"):j+1] + "\n<title>" + html.EscapeString(title) + "</title>" + doc[j+1:]
	doc = strings.ReplaceAll(doc, "font-family:Liberation Sans;", "font-family:"+svgFontFamily+";")
	return strings.TrimSpace(doc), nil
}

// line returns a line plotter over xs and ys.
func line(xs, ys []float64, c color.Color, width float64, dashed bool) *plotter.Line {
	pts := make(plotter.XYs, min(len(xs), len(ys)))
	for i := range pts {
		pts[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	l := &plotter.Line{XYs: pts, LineStyle: draw.LineStyle{Color: c, Width: vg.Points(width)}}
	if dashed {
		l.LineStyle.Dashes = dashedLine
	}
	return l
}

// rect returns a filled rectangle without outline.
func rect(x0, x1, y0, y1 float64, c color.Color) *plotter.Polygon {
	return &plotter.Polygon{XYs: []plotter.XYs{{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}}, Color: c}
}

// labels returns text at points, in the report's style.
func labels(xs, ys []float64, texts []string, size float64, c color.Color) *plotter.Labels {
	l := &plotter.Labels{}
	for i := range texts {
		l.XYs = append(l.XYs, plotter.XY{X: xs[i], Y: ys[i]})
		l.Labels = append(l.Labels, texts[i])
		l.TextStyle = append(l.TextStyle, textStyle(size, c))
	}
	return l
}

// windowTimes returns the middle of each window, in seconds.
func windowTimes(n int, windowMS float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = (float64(i) + 0.5) * windowMS / 1000
	}
	return xs
}

func maxOf(xss ...[]float64) float64 {
	m := 0.0
	for _, xs := range xss {
		for _, x := range xs {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				m = max(m, x)
			}
		}
	}
	return m
}

// Chart sizes.
var (
	wideW, wideH   = 8 * vg.Inch, 3.1 * vg.Inch
	smallW, smallH = 3.4 * vg.Inch, 2.5 * vg.Inch
)

// surgeShade adds the surge window to p, behind the data.
func surgeShade(p *plot.Plot, tl *Timeline, top float64) {
	if tl.SurgeToMS <= tl.SurgeFromMS {
		return
	}
	s := rect(tl.SurgeFromMS/1000, tl.SurgeToMS/1000, 0, top, colSurge)
	p.Add(s)
	p.Legend.Add("surge", s)
}

// throughputSVG charts root requests offered and served per second, the
// baseline and the change each in its own colour: goodput solid, offered
// load thin and dashed.
func throughputSVG(tl *Timeline, title string) (string, error) {
	b, c := &tl.Baseline, tl.Changed
	n := len(b.OfferedPerSec)
	top := maxOf(b.OfferedPerSec, b.GoodputPerSec)
	if c != nil {
		top = max(top, maxOf(c.OfferedPerSec, c.GoodputPerSec))
		n = max(n, len(c.OfferedPerSec))
	}
	top = max(top, 1) * 1.08
	p := newPlot(title, "time (s)", "root requests/s")
	surgeShade(p, tl, top)
	xs := windowTimes(n, tl.WindowMS)
	runs := []struct {
		name string
		run  *TimelineRun
		col  color.RGBA
	}{{"baseline", b, colBaseline}}
	if c != nil {
		runs = append(runs, struct {
			name string
			run  *TimelineRun
			col  color.RGBA
		}{"with the change", c, colChange})
	}
	for _, r := range runs {
		off := line(xs, r.run.OfferedPerSec, r.col, 0.9, true)
		p.Add(off)
		p.Legend.Add("offered, "+r.name, off)
	}
	for _, r := range runs {
		g := line(xs, r.run.GoodputPerSec, r.col, 2, false)
		p.Add(g)
		p.Legend.Add("goodput, "+r.name, g)
	}
	p.X.Min, p.X.Max = 0, float64(n)*tl.WindowMS/1000
	p.Y.Min, p.Y.Max = 0, top
	return renderSVG(wideW, wideH, title, func(dc draw.Canvas) { drawBeside(p, dc) })
}

// clientsSVG charts the closed-loop clients over time: the offered load
// of a closed loop, where a surge adds clients.
func clientsSVG(tl *Timeline, title string) (string, error) {
	top := max(maxOf(tl.Clients), 1) * 1.15
	p := newPlot(title, "time (s)", "clients")
	surgeShade(p, tl, top)
	xs := make([]float64, 0, 2*len(tl.Clients))
	ys := make([]float64, 0, 2*len(tl.Clients))
	for i, v := range tl.Clients {
		xs = append(xs, float64(i)*tl.WindowMS/1000, float64(i+1)*tl.WindowMS/1000)
		ys = append(ys, v, v)
	}
	l := line(xs, ys, colBlack, 1.6, false)
	p.Add(l)
	p.Legend.Add("clients in the loop", l)
	p.X.Min, p.X.Max = 0, float64(len(tl.Clients))*tl.WindowMS/1000
	p.Y.Min, p.Y.Max = 0, top
	return renderSVG(wideW, smallH, title, func(dc draw.Canvas) { drawBeside(p, dc) })
}

// queueSVG charts the queue depth of the timeline's nodes, dashed for
// the baseline.
func queueSVG(tl *Timeline, title string) (string, error) {
	b, c := &tl.Baseline, tl.Changed
	top, n := 0.0, 0
	for _, q := range b.Queues {
		top, n = max(top, maxOf(q.Depth)), max(n, len(q.Depth))
	}
	if c != nil {
		for _, q := range c.Queues {
			top, n = max(top, maxOf(q.Depth)), max(n, len(q.Depth))
		}
	}
	top = max(top, 1) * 1.08
	p := newPlot(title, "time (s)", "calls queued")
	surgeShade(p, tl, top)
	xs := windowTimes(n, tl.WindowMS)
	if len(b.Queues) == 1 {
		// One node: the runs in their colours, as in the goodput chart.
		lb := line(xs, b.Queues[0].Depth, colBaseline, 1.6, true)
		p.Add(lb)
		p.Legend.Add(b.Queues[0].Node+", baseline", lb)
		if c != nil && len(c.Queues) == 1 {
			lc := line(xs, c.Queues[0].Depth, colChange, 1.8, false)
			p.Add(lc)
			p.Legend.Add(b.Queues[0].Node+", with the change", lc)
		}
		p.X.Min, p.X.Max = 0, float64(n)*tl.WindowMS/1000
		p.Y.Min, p.Y.Max = 0, top
		return renderSVG(wideW, wideH, title, func(dc draw.Canvas) { drawBeside(p, dc) })
	}
	for i, q := range b.Queues {
		col := seriesColours[i%len(seriesColours)]
		lb := line(xs, q.Depth, col, 1.6, true)
		p.Add(lb)
		if c != nil && i < len(c.Queues) {
			lc := line(xs, c.Queues[i].Depth, col, 1.8, false)
			p.Add(lc)
			p.Legend.Add(q.Node, lc)
		} else {
			p.Legend.Add(q.Node, lb)
		}
	}
	if c != nil {
		p.Legend.Add("baseline", line(nil, nil, colBlack, 1.4, true))
		p.Legend.Add("with the change", line(nil, nil, colBlack, 1.4, false))
	}
	p.X.Min, p.X.Max = 0, float64(n)*tl.WindowMS/1000
	p.Y.Min, p.Y.Max = 0, top
	return renderSVG(wideW, wideH, title, func(dc draw.Canvas) { drawBeside(p, dc) })
}

// errPoints are a capacity curve's goodput points with their intervals.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// capacitySVG charts goodput against offered load with its 95%
// intervals, the line goodput = offered, the knee and the collapse, and
// the capture's operating point when at is not nil.
func capacitySVG(c *rank.CapacityCurve, at *OperatingPoint, title string) (string, error) {
	var xs, ys, lo, hi []float64
	for _, pt := range c.Points {
		xs = append(xs, pt.Offered.Mean)
		ys = append(ys, pt.Goodput.Mean)
		lo = append(lo, max(0, pt.Goodput.Low))
		hi = append(hi, pt.Goodput.High)
	}
	xmax := max(maxOf(xs), c.KneePerSec, c.CollapsePerSec) * 1.05
	if at != nil {
		xmax = max(xmax, at.OfferedPerSec*1.05)
	}
	top := max(maxOf(hi), maxOf(ys), xmax) * 1.12
	p := newPlot(title, "offered (root requests/s)", "goodput (root requests/s)")
	band := &plotter.Polygon{Color: colBand}
	var ring plotter.XYs
	for i := range xs {
		ring = append(ring, plotter.XY{X: xs[i], Y: lo[i]})
	}
	for i := len(xs) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: xs[i], Y: hi[i]})
	}
	band.XYs = []plotter.XYs{ring}
	p.Add(band)
	diag := line([]float64{0, xmax}, []float64{0, xmax}, colGrey, 1, true)
	p.Add(diag)
	gl := line(xs, ys, seriesColours[0], 1.8, false)
	p.Add(gl)
	ep := errPoints{XYs: gl.XYs}
	for i := range ys {
		ep.YErrors = append(ep.YErrors, struct{ Low, High float64 }{ys[i] - lo[i], hi[i] - ys[i]})
	}
	bars, err := plotter.NewYErrorBars(ep)
	if err != nil {
		return "", err
	}
	bars.LineStyle.Color = seriesColours[0]
	bars.LineStyle.Width = vg.Points(1)
	p.Add(bars)
	sc, err := plotter.NewScatter(gl.XYs)
	if err != nil {
		return "", err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: seriesColours[0], Radius: vg.Points(2.6), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	p.Legend.Add("goodput (mean, 95% interval)", band, gl, sc)
	p.Legend.Add("goodput = offered", diag)
	mark := func(x float64, col color.Color, text string, at float64) {
		l := line([]float64{x, x}, []float64{0, top}, col, 1.4, true)
		p.Add(l)
		p.Add(labels([]float64{x}, []float64{at}, []string{text}, 8.5, col))
	}
	if c.KneePerSec > 0 {
		mark(c.KneePerSec, colKnee, " knee "+g4(c.KneePerSec)+"/s", top*0.93)
	}
	if c.CollapsePerSec > 0 {
		at := top * 0.93
		if math.Abs(c.CollapsePerSec-c.KneePerSec) < 0.25*xmax {
			at = top * 0.83
		}
		mark(c.CollapsePerSec, colDanger, " collapse "+g4(c.CollapsePerSec)+"/s", at)
	}
	if at != nil {
		op, err := plotter.NewScatter(plotter.XYs{{X: at.OfferedPerSec, Y: at.GoodputPerSec}})
		if err != nil {
			return "", err
		}
		op.GlyphStyle = draw.GlyphStyle{Color: colObserved, Radius: vg.Points(5), Shape: draw.PyramidGlyph{}}
		p.Add(op)
		p.Legend.Add("observed operating point", op)
	}
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = 0, top
	return renderSVG(wideW, wideH, title, func(dc draw.Canvas) { drawBeside(p, dc) })
}

// planeGrid is a loss plane as a heat map's grid, its losses on a log
// scale: z = ln(1 + loss).
type planeGrid struct{ *fit.LossPlane }

func (g planeGrid) Dims() (c, r int)   { return len(g.XValues), len(g.YValues) }
func (g planeGrid) X(c int) float64    { return g.XValues[c] }
func (g planeGrid) Y(r int) float64    { return g.YValues[r] }
func (g planeGrid) Z(c, r int) float64 { return math.Log1p(g.Loss[r][c]) }

// lossTicks returns loss values to mark on a log-scaled legend up to max.
func lossTicks(maxLoss float64) []plot.Tick {
	var cands []float64
	for e := -2.0; e <= 6; e++ {
		for _, m := range []float64{1, 2, 5} {
			cands = append(cands, m*math.Pow(10, e))
		}
	}
	ticks := []plot.Tick{{Value: 0, Label: "0"}}
	step := math.Log1p(maxLoss) / 6
	last := 0.0
	for _, v := range cands {
		z := math.Log1p(v)
		if v > maxLoss*1.0001 || z-last < step {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: z, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		last = z
	}
	return ticks
}

// valueTicks marks every value of an axis when there are at most most.
func valueTicks(vs []float64, most int) plot.Ticker {
	if len(vs) > most {
		return niceTicks{}
	}
	ts := make(plot.ConstantTicks, len(vs))
	for i, v := range vs {
		ts[i] = plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)}
	}
	return ts
}

// luminance is a colour's relative luminance, roughly.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 0xffff
}

// planeSVG draws the loss plane as a heat map with its colour scale and
// the best point marked.
func planeSVG(pl *fit.LossPlane, title string) (string, error) {
	g := planeGrid{pl}
	cols, rows := g.Dims()
	if cols == 0 || rows == 0 || len(pl.Loss) != rows {
		return "", errors.New("loss plane: no cells")
	}
	for _, r := range pl.Loss {
		if len(r) != cols {
			return "", errors.New("loss plane: ragged rows")
		}
	}
	pal, err := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 9)
	if err != nil {
		return "", err
	}
	hm := plotter.NewHeatMap(g, pal)
	hm.Min = 0
	if !(hm.Max > hm.Min) {
		hm.Max = hm.Min + 1
	}
	maxLoss := math.Expm1(hm.Max)
	cols9 := pal.Colors()
	p := newPlot(title, pl.X, pl.Y)
	p.Add(hm)
	if cols*rows <= 169 {
		var xs, ys []float64
		var ts []string
		var styles []text.Style
		ps := float64(len(cols9)-1) / (hm.Max - hm.Min)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				z := g.Z(c, r)
				xs, ys = append(xs, g.X(c)), append(ys, g.Y(r))
				ts = append(ts, strconv.FormatFloat(pl.Loss[r][c], 'g', 2, 64))
				col := color.Color(colBlack)
				if k := int((z-hm.Min)*ps + 0.5); k >= 0 && k < len(cols9) && luminance(cols9[k]) < 0.5 {
					col = color.White
				}
				st := textStyle(7.5, col)
				st.XAlign = draw.XCenter
				styles = append(styles, st)
			}
		}
		l := labels(xs, ys, ts, 7.5, colBlack)
		l.TextStyle = styles
		p.Add(l)
	}
	if pl.BestX >= 0 && pl.BestX < cols && pl.BestY >= 0 && pl.BestY < rows {
		// Outline the best cell, whose edges lie halfway to its
		// neighbours, as the heat map's do.
		x0, x1 := cellEdges(pl.XValues, pl.BestX)
		y0, y1 := cellEdges(pl.YValues, pl.BestY)
		o := &plotter.Polygon{XYs: []plotter.XYs{{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}},
			LineStyle: draw.LineStyle{Color: seriesColours[0], Width: vg.Points(2.5)}}
		p.Add(o)
	}
	xmin, xmax, ymin, ymax := hm.DataRange()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, ymin, ymax
	p.X.Tick.Marker, p.Y.Tick.Marker = valueTicks(pl.XValues, 12), valueTicks(pl.YValues, 12)

	// The colour scale: one band per palette colour.
	bar := newPlot("", "", "loss increase")
	bar.HideX()
	ps := float64(len(cols9)-1) / (hm.Max - hm.Min)
	for k, col := range cols9 {
		lo := max(hm.Min, hm.Min+(float64(k)-0.5)/ps)
		hi := min(hm.Max, hm.Min+(float64(k)+0.5)/ps)
		bar.Add(rect(0, 1, lo, hi, col))
	}
	bar.Y.Min, bar.Y.Max = hm.Min, hm.Max
	bar.Y.Tick.Marker = plot.ConstantTicks(lossTicks(maxLoss))
	barW := 1.3 * vg.Inch
	return renderSVG(wideW, wideH+0.3*vg.Inch, title, func(dc draw.Canvas) {
		left := draw.Crop(dc, 0, -barW, 0, 0)
		// The bar spans the heat map's rows: below the title, above the
		// x axis.
		right := draw.Crop(dc, dc.Max.X-dc.Min.X-barW+vg.Points(10), -vg.Points(30), vg.Points(34), -vg.Points(24))
		p.Draw(left)
		bar.Draw(right)
	})
}

// cellEdges returns the edges of cell i of a heat map axis: halfway to
// the neighbouring values, mirrored at the ends.
func cellEdges(vs []float64, i int) (lo, hi float64) {
	n := len(vs)
	switch {
	case n == 1:
		return vs[0] - 0.5, vs[0] + 0.5
	case i == 0:
		h := (vs[1] - vs[0]) / 2
		return vs[0] - h, vs[0] + h
	case i == n-1:
		h := (vs[n-1] - vs[n-2]) / 2
		return vs[i] - h, vs[i] + h
	}
	return vs[i] - (vs[i]-vs[i-1])/2, vs[i] + (vs[i+1]-vs[i])/2
}

// profileSVG draws the loss profile along one axis of the grid.
func profileSVG(s *fit.SurfaceAxis, values []float64, title string) (string, error) {
	n := len(s.Profile)
	xs := values
	xlabel := s.Axis
	if len(xs) != n {
		xs = make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		xlabel = s.Axis + " (value index)"
	}
	p := newPlot(title, xlabel, "loss increase")
	top := maxOf(s.Profile)
	top = max(top, 0.01) * 1.15
	lo, errLo := strconv.ParseFloat(s.Low, 64)
	hi, errHi := strconv.ParseFloat(s.High, 64)
	if errLo == nil && errHi == nil && len(xs) == len(values) && hi >= lo {
		// Widen a one-value range to half a step each side, so it shows.
		w := 0.0
		if n > 1 {
			w = (xs[n-1] - xs[0]) / float64(n-1) / 2
		}
		if hi == lo {
			lo, hi = lo-w/2, hi+w/2
		}
		p.Add(rect(lo, hi, 0, top, colFlat))
	}
	l := line(xs, s.Profile, seriesColours[0], 1.6, false)
	p.Add(l)
	sc, err := plotter.NewScatter(l.XYs)
	if err != nil {
		return "", err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: seriesColours[0], Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	best := -1
	for i, v := range s.Profile {
		if best < 0 || v < s.Profile[best] {
			best = i
		}
	}
	if v, err := strconv.ParseFloat(s.Value, 64); err == nil && len(xs) == len(values) {
		for i, x := range xs {
			if x == v {
				best = i
			}
		}
	}
	if best >= 0 {
		b, err := plotter.NewScatter(plotter.XYs{{X: xs[best], Y: s.Profile[best]}})
		if err != nil {
			return "", err
		}
		b.GlyphStyle = draw.GlyphStyle{Color: colDanger, Radius: vg.Points(5), Shape: draw.RingGlyph{}}
		p.Add(b)
	}
	p.Y.Min, p.Y.Max = 0, top
	p.X.Tick.Marker = valueTicks(xs, 6)
	return renderSVG(smallW, smallH, title, func(dc draw.Canvas) { p.Draw(dc) })
}

// gridValues returns the values of each numeric axis of a grid
// specification, by axis name; nil when it does not parse.
func gridValues(spec string) map[string][]float64 {
	g, err := fit.ParseGrid(spec, nil)
	if err != nil {
		return nil
	}
	out := map[string][]float64{}
	for i := range g.Axes {
		if a := &g.Axes[i]; a.Numeric() {
			out[a.Name()] = a.Values
		}
	}
	return out
}
