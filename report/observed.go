package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Observed sets what the capture measured beside what the model replays
// of it: node by node, over time at the entries, and as an operating
// point. A reader judges from it whether to trust the ranking, which
// replays the same model.
type Observed struct {
	// Regime names the traffic of the replays: the ranking's baseline
	// under the observed traffic.
	Regime string `json:"regime"`
	// Seeds and DurationMS are the replays' seeds and simulated time,
	// the ranking's baseline's.
	Seeds      []uint64 `json:"seeds"`
	DurationMS float64  `json:"duration_ms"`
	// Tolerance bounds the gaps that are not flagged.
	Tolerance Tolerance `json:"tolerance"`
	// Nodes are the model's nodes, by name.
	Nodes []NodeFit `json:"nodes"`
	// Point is the capture's operating point; nil when the model holds
	// no observed entry rate.
	Point *OperatingPoint `json:"point,omitempty"`
	// Timeline is the capture over time beside one replay of it; nil
	// when the capture has no time series.
	Timeline *ObservedTimeline `json:"timeline,omitempty"`
}

// Tolerance bounds a gap (replayed − observed) that is not flagged:
// relative for latencies and throughput, in percentage points for
// shares.
type Tolerance struct {
	P50           float64 `json:"p50"`
	P99           float64 `json:"p99"`
	ErrorPP       float64 `json:"error_pp"`
	Throughput    float64 `json:"throughput"`
	UtilisationPP float64 `json:"utilisation_pp"`
}

// DefaultTolerance is the tolerance of the report: the bounds a
// prediction is held to in docs/validation.md (p50 within 15%, p99
// within 25%, errors within 3 pp), and throughput within 10% and
// utilisation within 10 pp.
func DefaultTolerance() Tolerance {
	return Tolerance{P50: 0.15, P99: 0.25, ErrorPP: 3, Throughput: 0.10, UtilisationPP: 10}
}

// NodeFit is one node as observed and as replayed.
type NodeFit struct {
	Node string `json:"node"`
	// Slots is the node's concurrency limit over all replicas; 0 when
	// it has none, and utilisation is then not compared.
	Slots int `json:"slots,omitempty"`
	// ReplayedCalls counts the calls that reached the node in all the
	// replays; with none, its replayed latencies are undefined and have
	// no gap.
	ReplayedCalls int64        `json:"replayed_calls"`
	Observed      NodeMeasures `json:"observed"`
	Replayed      NodeMeasures `json:"replayed"`
	Gap           NodeGap      `json:"gap"`
	// Beyond names the measures whose gap is beyond the tolerance, in
	// the table's order: p50, p99, errors, throughput, utilisation.
	Beyond []string `json:"beyond,omitempty"`
}

// NodeMeasures are a node's requests as measured: latency at the node
// (queued and served), the share of calls that failed there, calls per
// second (attempts, retries included), the mean calls in flight there
// (Little's L) and the busy share of its slots.
type NodeMeasures struct {
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	ErrorRate   float64 `json:"error_rate"`
	PerSec      float64 `json:"per_sec"`
	InFlight    float64 `json:"in_flight"`
	Utilisation float64 `json:"utilisation,omitempty"`
}

// NodeGap is replayed − observed: relative to the observed value for
// latencies, throughput and in flight, in percentage points for the
// error rate and utilisation. A gap is absent where it is undefined (an
// observed value of 0, a node without slots).
type NodeGap struct {
	P50           *float64 `json:"p50,omitempty"`
	P99           *float64 `json:"p99,omitempty"`
	ErrorPP       *float64 `json:"error_pp,omitempty"`
	Throughput    *float64 `json:"throughput,omitempty"`
	InFlight      *float64 `json:"in_flight,omitempty"`
	UtilisationPP *float64 `json:"utilisation_pp,omitempty"`
}

// Compare fills Gap and Beyond from the measures, judged by tol.
func (n *NodeFit) Compare(tol Tolerance) {
	o, r := &n.Observed, &n.Replayed
	rel := func(obs, rep float64) *float64 {
		if !(obs > 0) {
			return nil
		}
		g := round4((rep - obs) / obs)
		return &g
	}
	pp := func(obs, rep float64) *float64 {
		g := round4(100 * (rep - obs))
		return &g
	}
	n.Gap = NodeGap{ErrorPP: pp(o.ErrorRate, r.ErrorRate), Throughput: rel(o.PerSec, r.PerSec), InFlight: rel(o.InFlight, r.InFlight)}
	if n.ReplayedCalls > 0 {
		n.Gap.P50, n.Gap.P99 = rel(o.P50MS, r.P50MS), rel(o.P99MS, r.P99MS)
	}
	if n.Slots > 0 {
		n.Gap.UtilisationPP = pp(o.Utilisation, r.Utilisation)
	}
	n.Beyond = nil
	for _, c := range []struct {
		name  string
		gap   *float64
		bound float64
	}{{"p50", n.Gap.P50, tol.P50}, {"p99", n.Gap.P99, tol.P99}, {"errors", n.Gap.ErrorPP, tol.ErrorPP},
		{"throughput", n.Gap.Throughput, tol.Throughput}, {"utilisation", n.Gap.UtilisationPP, tol.UtilisationPP}} {
		if c.gap != nil && math.Abs(*c.gap) > c.bound {
			n.Beyond = append(n.Beyond, c.name)
		}
	}
}

// OperatingPoint is where the capture ran: root requests offered and
// served successfully per second.
type OperatingPoint struct {
	OfferedPerSec float64 `json:"offered_per_sec"`
	GoodputPerSec float64 `json:"goodput_per_sec"`
}

// ObservedTimeline is the capture's requests at its entry nodes, window
// by window, beside one replay of the model under the observed traffic
// over as long a time, in the same windows.
type ObservedTimeline struct {
	// Entries name the entry nodes whose requests are counted.
	Entries []string `json:"entries"`
	// StartNS is the capture's first window's start (Unix ns); the
	// replay starts at 0.
	StartNS int64 `json:"start_ns"`
	// Seed is the replay's seed.
	Seed     uint64  `json:"seed"`
	WindowMS float64 `json:"window_ms"`
	Observed Series  `json:"observed"`
	Replayed Series  `json:"replayed"`
	// Note says what was left out (a capture longer than the replay).
	Note string `json:"note,omitempty"`
}

// Series are requests at the entries per window: started per second,
// failed per second, and their mean latency by Little's law (the mean
// requests in flight over those started per second; 0 in a window
// without requests).
type Series struct {
	RequestsPerSec []float64 `json:"requests_per_sec"`
	ErrorsPerSec   []float64 `json:"errors_per_sec"`
	LatencyMS      []float64 `json:"latency_ms"`
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// observedMarkdown writes the section "The model against what was
// observed".
func observedMarkdown(b *strings.Builder, o *Observed) {
	if o == nil {
		return
	}
	fmt.Fprintf(b, "\n## The model against what was observed\n\n")
	fmt.Fprintf(b, "Each cell is observed → replayed (gap). %s A flagged gap carries ⚠.\n\n", observedIntro(o))
	b.WriteString("| Node | p50 ms | p99 ms | errors | calls/s | in flight | utilisation | beyond tolerance |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for i := range o.Nodes {
		c := observedCells(&o.Nodes[i])
		fmt.Fprintf(b, "| %s |\n", strings.Join(c, " | "))
	}
	if p := o.Point; p != nil {
		fmt.Fprintf(b, "\nOperating point: %s root requests/s offered, %s/s served successfully (marked on the capacity curve).\n",
			g4(p.OfferedPerSec), g4(p.GoodputPerSec))
	}
	if tl := o.Timeline; tl != nil {
		fmt.Fprintf(b, "\nOver time at %s, windows of %s (the replay: seed %d, as long as the capture):\n\n",
			strings.Join(tl.Entries, ", "), msText(tl.WindowMS), tl.Seed)
		b.WriteString("| Series | Observed mean | Observed peak | Replayed mean | Replayed peak |\n|---|---:|---:|---:|---:|\n")
		for _, s := range timelineSeries(tl) {
			om, op := meanPeak(s.obs)
			rm, rp := meanPeak(s.rep)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", s.name, om, op, rm, rp)
		}
		if tl.Note != "" {
			fmt.Fprintf(b, "\n%s\n", tl.Note)
		}
	}
}

// observedIntro says what the table compares and what it flags.
func observedIntro(o *Observed) string {
	t := o.Tolerance
	return fmt.Sprintf("The gap is replayed − observed, relative for latencies, calls/s and in flight, "+
		"in percentage points for errors and utilisation. The replays are the ranking's baseline under %s, seeds %s, %s each. "+
		"A gap beyond %s on p50, %s on p99, %s pp on errors, %s on calls/s or %s pp on utilisation is flagged. "+
		"Latency is the time at the node, queued and served; in flight is the mean calls at the node (Little's L); "+
		"utilisation is the busy share of its slots, for nodes with a slot limit (observed: the mean in flight over the slots, at most 100%%).",
		o.Regime, seedRange(o.Seeds), msText(o.DurationMS), pctText(t.P50), pctText(t.P99), g4(t.ErrorPP), pctText(t.Throughput), g4(t.UtilisationPP))
}

// observedCells are a node's table cells.
func observedCells(n *NodeFit) []string {
	beyond := map[string]bool{}
	for _, b := range n.Beyond {
		beyond[b] = true
	}
	flag := func(name, s string) string {
		if beyond[name] {
			return s + " ⚠"
		}
		return s
	}
	o, r, g := &n.Observed, &n.Replayed, &n.Gap
	util := "–"
	if n.Slots > 0 {
		util = flag("utilisation", fmt.Sprintf("%s → %s (%s)", pctOf(o.Utilisation), pctOf(r.Utilisation), ppGap(g.UtilisationPP)))
	}
	verdict := "–"
	if len(n.Beyond) > 0 {
		verdict = strings.Join(n.Beyond, ", ")
	}
	rp50, rp99 := g4(r.P50MS), g4(r.P99MS)
	if n.ReplayedCalls == 0 {
		rp50, rp99 = "no calls", "no calls"
	}
	return []string{n.Node,
		flag("p50", fmt.Sprintf("%s → %s (%s)", g4(o.P50MS), rp50, relGap(g.P50))),
		flag("p99", fmt.Sprintf("%s → %s (%s)", g4(o.P99MS), rp99, relGap(g.P99))),
		flag("errors", fmt.Sprintf("%s → %s (%s)", pctOf(o.ErrorRate), pctOf(r.ErrorRate), ppGap(g.ErrorPP))),
		flag("throughput", fmt.Sprintf("%s → %s (%s)", g4(o.PerSec), g4(r.PerSec), relGap(g.Throughput))),
		fmt.Sprintf("%s → %s (%s)", g4(o.InFlight), g4(r.InFlight), relGap(g.InFlight)),
		util, verdict}
}

// relGap formats a relative gap: "+3.2%", "−12%", "–" when undefined.
func relGap(g *float64) string {
	if g == nil {
		return "–"
	}
	return signedText(100**g, "%")
}

// ppGap formats a gap in percentage points.
func ppGap(g *float64) string {
	if g == nil {
		return "–"
	}
	return signedText(*g, " pp")
}

// signedText formats x to 2 significant digits (at least one decimal
// below 10) with its sign, a true minus, and unit.
func signedText(x float64, unit string) string {
	a := math.Abs(x)
	var s string
	switch {
	case a < 0.05:
		return "0" + unit
	case a < 10:
		s = strconv.FormatFloat(a, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(math.Round(a), 'f', 0, 64)
	}
	if x < 0 {
		return "−" + s + unit
	}
	return "+" + s + unit
}

// pctText formats a share as a whole percentage: "15%".
func pctText(x float64) string { return g4(100*x) + "%" }

// timelineSeries lists an observed timeline's series by name.
func timelineSeries(tl *ObservedTimeline) []struct {
	name     string
	obs, rep []float64
} {
	return []struct {
		name     string
		obs, rep []float64
	}{
		{"requests/s", tl.Observed.RequestsPerSec, tl.Replayed.RequestsPerSec},
		{"errors/s", tl.Observed.ErrorsPerSec, tl.Replayed.ErrorsPerSec},
		{"mean latency ms", tl.Observed.LatencyMS, tl.Replayed.LatencyMS},
	}
}

// observedView is the HTML section "The model against what was
// observed".
type observedView struct {
	Intro    string
	Columns  []string
	Rows     []observedRow
	Point    string
	Window   string
	Charts   []chartView
	Note     string
	NoSeries string
}

type observedRow struct {
	Node   string
	Cells  []observedCell
	Beyond string
}

type observedCell struct {
	Obs, Rep, Gap string
	Beyond        bool
}

// RepGap is the replayed value with its gap.
func (c observedCell) RepGap() string {
	if c.Rep == "–" {
		return c.Gap
	}
	return c.Rep + " (" + c.Gap + ")"
}

// observedSection formats the comparison and draws the capture's
// timeline beside the replay's.
func observedSection(o *Observed) (*observedView, error) {
	if o == nil {
		return nil, nil
	}
	v := &observedView{Intro: observedIntro(o) + " Calls in flight, observed and replayed, are in the tooltips of the call graph coloured by utilisation below, and in report.md.",
		Columns: []string{"p50 ms", "p99 ms", "errors", "calls/s", "utilisation"}}
	for i := range o.Nodes {
		n := &o.Nodes[i]
		beyond := map[string]bool{}
		for _, b := range n.Beyond {
			beyond[b] = true
		}
		ob, r, g := &n.Observed, &n.Replayed, &n.Gap
		rp50, rp99 := g4(r.P50MS), g4(r.P99MS)
		if n.ReplayedCalls == 0 {
			rp50, rp99 = "no calls", "no calls"
		}
		row := observedRow{Node: n.Node, Beyond: orDash(strings.Join(n.Beyond, ", ")), Cells: []observedCell{
			{g4(ob.P50MS), rp50, relGap(g.P50), beyond["p50"]},
			{g4(ob.P99MS), rp99, relGap(g.P99), beyond["p99"]},
			{pctOf(ob.ErrorRate), pctOf(r.ErrorRate), ppGap(g.ErrorPP), beyond["errors"]},
			{g4(ob.PerSec), g4(r.PerSec), relGap(g.Throughput), beyond["throughput"]},
		}}
		if n.Slots > 0 {
			row.Cells = append(row.Cells, observedCell{pctOf(ob.Utilisation), pctOf(r.Utilisation), ppGap(g.UtilisationPP), beyond["utilisation"]})
		} else {
			row.Cells = append(row.Cells, observedCell{"–", "–", "no slot limit", false})
		}
		v.Rows = append(v.Rows, row)
	}
	if p := o.Point; p != nil {
		v.Point = fmt.Sprintf("The capture ran at %s root requests/s offered and %s/s served successfully; the capacity curve below marks that point.",
			g4(p.OfferedPerSec), g4(p.GoodputPerSec))
	}
	tl := o.Timeline
	if tl == nil {
		v.NoSeries = "The capture has no time series at its entries, so there is no observed timeline."
		return v, nil
	}
	v.Window, v.Note = fmt.Sprintf("at %s, windows of %s; the replay: seed %d, as long as the capture", strings.Join(tl.Entries, ", "), msText(tl.WindowMS), tl.Seed), tl.Note
	for _, c := range observedCharts(tl) {
		svg, err := observedSVG(tl, c)
		if err != nil {
			return nil, err
		}
		v.Charts = append(v.Charts, chartView{Title: c.title, SVG: template.HTML(svg),
			Caption: "Orange, solid: the capture; purple, dashed: the model's replay under the observed traffic, on the same axes. " + observedCaption(c.ylabel)})
	}
	return v, nil
}

// observedCaption says how a timeline's measure is read.
func observedCaption(ylabel string) string {
	switch ylabel {
	case "requests/s":
		return "Requests that started at the entries per second."
	case "errors/s":
		return "Requests at the entries that failed, per second."
	}
	return "The mean time of a request at the entries, by Little's law: the mean requests in flight over those started per second (so a window that starts fewer requests than it finishes reads slow)."
}
