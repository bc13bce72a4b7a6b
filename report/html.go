package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"cascade/fit"
	"cascade/incident"
	"cascade/rank"
)

// AnalysisHTML writes the analysis as one self-contained HTML5 page,
// report.html: the summary, the ranked remediations, the call graph
// coloured by amplification, the baseline against the best change over
// time, the capacity curve, metastability, the incident and the fit.
// Charts are inline SVG; the page loads nothing else (no script, no
// stylesheet, no font), so it opens offline. The same analysis gives the
// same bytes.
func AnalysisHTML(w io.Writer, a *Analysis) error {
	if a == nil {
		return errors.New("analysis: nil")
	}
	p, err := newHTMLPage(a)
	if err != nil {
		return err
	}
	return pageTemplate().Execute(w, p)
}

// pageTemplate is parsed when a page is first rendered rather than when
// the package initialises: parsing costs ~0.4 ms and 2,200 allocations,
// which every cascade command paid at start-up (a seed-000 replay's whole
// process takes ~12 ms).
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html").Parse(pageHTML))
})

// htmlPage is what the template renders: everything formatted.
type htmlPage struct {
	Title   string
	Seed    uint64
	Version int
	Inputs  []string
	// Lead is the paragraph in plain words that opens the page;
	// Examples the traces to open by id.
	Lead     string
	Examples []exampleList
	Summary  []kv
	Services []string
	Notes    []string
	Files    []string
	Rank     *rankView
	Observed *observedView
	Graph    *chartView
	// Painted are the call graph filled by observed error rate and
	// utilisation.
	Painted []chartView
	// GraphNote says why there is no graph.
	GraphNote    string
	Timeline     *timelineView
	TimelineNote string
	Capacity     *capacityView
	CapacityNote string
	Meta         *metaView
	Incident     *incidentView
	// IncidentFirst puts the incident before everything else: the
	// question of an analysis with an incident is where it started.
	IncidentFirst bool
	Fit           *fitView
}

// kv is a labelled value.
type kv struct{ K, V string }

// chartView is one chart: an inline SVG and its caption.
type chartView struct {
	Title   string
	Caption string
	SVG     template.HTML
}

type rankView struct {
	Objective string
	Seeds     string
	Replay    string
	Noise     string
	Covers    string
	// Fit is how well the model's replay matched the capture; OffFit
	// sets its paragraph apart when it did not.
	Fit       string
	OffFit    bool
	Baselines []baselineView
	Rows      []rowView
	Set       *setView
}

type baselineView struct {
	N                                            int
	Regime, Success, Goodput, P99, Amp, Collapse string
}

type rowView struct {
	Rank, Description, Name, Verdict, Class, Interval, Cost, Why string
	InSet                                                        bool
}

type setView struct {
	Members                                     []string
	Interval, Verdict, Class, Cost, Why, Recovs string
	Tried                                       []kv
}

type timelineView struct {
	Regime, Seed, Window, Change string
	Charts                       []chartView
	QueueNote                    string
}

type capacityView struct {
	Chart          chartView
	Sweep          string
	Knee, Collapse string
	Points         [][]string
}

type metaView struct {
	Regime, Verdict, Recovery, Removed string
	Metastable                         bool
}

type incidentView struct {
	Window, Range, Baseline string
	Origins                 []string
	Confidence              string
	Evidence                []string
	Nodes                   [][]string
	Unjudged                []kv
	Path                    [][]string
	Slowdown, Seeds         string
	Infectable              [][]string
}

type fitView struct {
	Facts     []kv
	Best      string
	BestLoss  string
	Tiers     [][]string
	Moved     [][]string
	Surface   [][]string
	Warnings  []string
	Notes     []string
	Charts    []chartView
	ChartNote string
}

// newHTMLPage formats the analysis and draws its charts.
func newHTMLPage(a *Analysis) (*htmlPage, error) {
	p := &htmlPage{Seed: a.Seed, Version: a.Version, Inputs: a.Inputs, Notes: a.Notes, Files: a.Files}
	name := ""
	switch {
	case a.Model != nil && a.Model.Name != "":
		name = a.Model.Name
	case a.Rank != nil && a.Rank.Model != "":
		name = a.Rank.Model
	}
	p.Title = "Cascade analysis"
	if name != "" {
		p.Title += ": " + name
	}
	p.Lead, p.Examples = summaryParagraph(a), exampleLists(a.Examples)
	p.summary(a)
	if a.Rank != nil {
		p.Rank = rankSection(a.Rank)
	}
	origin := ""
	if a.Incident != nil && len(a.Incident.Origins) > 0 {
		origin = a.Incident.Origins[0]
	}
	if a.Model != nil && len(a.Model.Nodes) > 0 {
		caption := "Nodes in layers by call depth from the entries; each edge is labelled with its amplification, " +
			"the calls it carries per call into its caller"
		caption += " (" + graphSource(a) + ")"
		caption += ". Hover over a node or an edge for its details."
		if origin != "" {
			caption += " The incident's most likely origin, " + origin + ", is outlined in red."
		}
		title := "Call graph coloured by amplification"
		if name != "" {
			title = "Call graph of " + name + " coloured by amplification"
		}
		p.Graph = &chartView{Title: title, Caption: caption, SVG: template.HTML(graphSVG(a.Model, origin, title))}
		if a.Observed != nil && len(a.Observed.Nodes) > 0 {
			for _, pt := range []struct {
				title, caption string
				paint          *nodePaint
			}{
				{"Call graph coloured by observed error rate", "Each node filled by the share of its calls that failed in the capture (hover for the replay's).", errorPaint(a.Observed)},
				{"Call graph coloured by observed utilisation", "Each node with a slot limit filled by the busy share of its slots in the capture; a node without one is white, with its mean calls in flight (hover for the replay's).", utilisationPaint(a.Observed)},
			} {
				p.Painted = append(p.Painted, chartView{Title: pt.title, Caption: pt.caption,
					SVG: template.HTML(paintedGraphSVG(a.Model, origin, pt.title, pt.paint))})
			}
		}
	} else {
		p.GraphNote = "No model: nothing to draw."
	}
	var err error
	if p.Observed, err = observedSection(a.Observed); err != nil {
		return nil, err
	}
	if p.Timeline, err = timelineSection(a.Timeline); err != nil {
		return nil, err
	}
	if a.Timeline == nil {
		p.TimelineNote = "No timeline was replayed."
	}
	switch {
	case a.Rank == nil || a.Rank.Capacity == nil:
		p.CapacityNote = "The capacity sweep did not run, so there is no capacity curve."
	case len(a.Rank.Capacity.Points) == 0:
		p.CapacityNote = "The capacity sweep has no points."
	default:
		var at *OperatingPoint
		if a.Observed != nil {
			at = a.Observed.Point
		}
		if p.Capacity, err = capacitySection(a.Rank.Capacity, at); err != nil {
			return nil, err
		}
	}
	if a.Rank != nil && a.Rank.Metastability != nil {
		m := a.Rank.Metastability
		p.Meta = &metaView{Regime: m.Regime, Verdict: m.Verdict, Recovery: recoveryList(m.RecoverMS),
			Removed: strings.Join(m.Removed, ", "), Metastable: m.Metastable}
	}
	if a.Incident != nil {
		p.Incident = incidentSection(a.Incident)
		p.IncidentFirst = len(a.Incident.Origins) > 0
	}
	if a.Fit != nil {
		if p.Fit, err = fitSection(a.Fit); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// graphSource says where the graph's amplifications come from.
func graphSource(a *Analysis) string {
	obs, model := 0, 0
	for i := range a.Model.Edges {
		if _, o := amplification(a.Model, &a.Model.Edges[i]); o {
			obs++
		} else {
			model++
		}
	}
	switch {
	case model == 0:
		return "observed: calls on the edge over requests of the caller, retries included"
	case obs == 0:
		return "from the model: the fan-out's mean times the attempts the retry policy makes on a call"
	}
	return fmt.Sprintf("observed for %d edges; from the model's fan-out and retry policy for %d", obs, model)
}

func (p *htmlPage) summary(a *Analysis) {
	add := func(k, v string) { p.Summary = append(p.Summary, kv{k, v}) }
	add("seed", strconv.FormatUint(a.Seed, 10))
	if d := a.Dataset; d != nil {
		if d.Dataset != "" {
			add("dataset", d.Dataset)
		}
		add("spans", strconv.FormatInt(d.Spans, 10))
		add("traces", strconv.FormatInt(d.Traces, 10))
		add("services", strconv.Itoa(len(d.Services)))
		add("operations", strconv.Itoa(d.Operations))
		add("error spans", strconv.FormatInt(d.ErrorSpans, 10))
		if d.SpanRange.Start != 0 {
			add("span time range", stamp(d.SpanRange.Start)+" .. "+stamp(d.SpanRange.End))
		}
		if d.Samples > 0 {
			add("metric samples", fmt.Sprintf("%d in %d series", d.Samples, d.Series))
		}
		if d.OrphanSpans+d.TracesWithoutRoot+d.TruncatedTraces+d.ClockSkewSpans > 0 {
			add("anomalies", fmt.Sprintf("%d orphan spans, %d traces without root, %d cut short, %d spans before their parent",
				d.OrphanSpans, d.TracesWithoutRoot, d.TruncatedTraces, d.ClockSkewSpans))
		}
		if len(d.Warnings) > 0 {
			var ws []string
			for _, w := range sortedKV(d.Warnings) {
				ws = append(ws, w.K+" ("+w.V+")")
			}
			add("ingest warnings", strings.Join(ws, "; "))
		}
		p.Services = d.Services
	}
	if m := a.Model; m != nil {
		virtual := 0
		for i := range m.Nodes {
			if m.Nodes[i].Virtual {
				virtual++
			}
		}
		nodes := strconv.Itoa(len(m.Nodes))
		if virtual > 0 {
			nodes += fmt.Sprintf(" (%d virtual)", virtual)
		}
		add("model", fmt.Sprintf("%s nodes, %d edges", nodes, len(m.Edges)))
		var entries []string
		for _, e := range m.Entries {
			entries = append(entries, fmt.Sprintf("%s at %s/s", e.Node, g4(e.RatePerSec)))
		}
		add("entries", strings.Join(entries, ", "))
		calibrated := "no (as built from the traces)"
		if a.Fit != nil {
			calibrated = "yes, by the fit below"
		}
		add("calibrated", calibrated)
	}
}

// verdictClass is a verdict's CSS class.
func verdictClass(v rank.Verdict) string {
	switch v {
	case rank.Win:
		return "win"
	case rank.Worse:
		return "worse"
	case rank.Failed:
		return "failed"
	}
	return "none" // no measurable effect, not enough data
}

func rankSection(rep *rank.Report) *rankView {
	v := &rankView{Objective: objectiveTitle(rep), Seeds: seedRange(rep.Seeds),
		Replay: replayLine(rep),
		Noise:  noiseText(rep), Covers: coversText(rep)}
	if rep.Fit != nil {
		v.Fit, v.OffFit = "The model against its capture: "+rep.Fit.String()+".", !rep.Fit.Within()
	}
	for i, s := range rep.Baseline {
		regime := s.Scenario
		if i < len(rep.Regimes) {
			regime = rep.Regimes[i].Name
		}
		v.Baselines = append(v.Baselines, baselineView{N: i + 1, Regime: regime,
			Success: pctOf(s.Metric("success_rate").Mean), Goodput: g4(s.Metric("goodput_per_sec").Mean) + "/s",
			P99: g4(s.Metric("latency_p99_ms").Mean) + " ms", Amp: g4(s.Metric("amplification").Mean),
			Collapse: fmt.Sprintf("%d of %d", s.Collapsed, len(s.Seeds))})
	}
	members := map[string]bool{}
	if rep.Set != nil {
		for _, m := range rep.Set.Members {
			members[m] = true
		}
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		row := rowView{Rank: rowMark(r), Description: r.Candidate.Description, Name: r.Candidate.Name,
			Verdict: string(r.Verdict), Class: verdictClass(r.Verdict),
			Interval: "-", Cost: r.Cost.Text, Why: orDash(r.Why), InSet: members[r.Candidate.Name]}
		if r.Verdict != rank.Failed {
			row.Interval = objectiveInterval(rep.Objective, r.Objective)
		}
		if r.Error != "" {
			row.Verdict += ": " + r.Error
		}
		v.Rows = append(v.Rows, row)
	}
	if s := rep.Set; s != nil {
		sv := &setView{Interval: objectiveInterval(rep.Objective, s.Row.Objective), Verdict: string(s.Row.Verdict),
			Class: verdictClass(s.Row.Verdict), Cost: s.Row.Cost.Text, Why: s.Row.Why}
		for _, m := range s.Members {
			sv.Members = append(sv.Members, describe(rep, m))
		}
		if s.Row.Recovered >= 0 && len(rep.Regimes) > 1 {
			sv.Recovs = fmt.Sprintf("%d of %d seeds after the surge", s.Row.Recovered, len(rep.Seeds))
		}
		for _, t := range s.Tried {
			sv.Tried = append(sv.Tried, kv{describe(rep, t.Name), t.Reason})
		}
		v.Set = sv
	}
	return v
}

func timelineSection(tl *Timeline) (*timelineView, error) {
	if tl == nil {
		return nil, nil
	}
	v := &timelineView{Regime: tl.Regime, Seed: strconv.FormatUint(tl.Seed, 10), Window: msText(tl.WindowMS)}
	if tl.Changed != nil {
		v.Change = tl.Description
		if v.Change == "" {
			v.Change = tl.Change
		}
	}
	surge := ""
	if tl.SurgeToMS > tl.SurgeFromMS {
		surge = fmt.Sprintf(" The shaded band is the surge, from %s to %s.", msText(tl.SurgeFromMS), msText(tl.SurgeToMS))
	}
	alone := ""
	if tl.Changed == nil {
		alone = " No change won, so the baseline is shown alone."
	}
	title := "Goodput and offered load over time"
	svg, err := throughputSVG(tl, title)
	if err != nil {
		return nil, err
	}
	v.Charts = append(v.Charts, chartView{Title: title, SVG: template.HTML(svg),
		Caption: "Root requests offered (thin, dashed) and served successfully (thick) per second, in windows of " + msText(tl.WindowMS) +
			"; purple: the baseline, green: with the change." + surge + alone})
	if len(tl.Clients) > 0 {
		title = "Offered load: clients in the loop"
		if svg, err = clientsSVG(tl, title); err != nil {
			return nil, err
		}
		v.Charts = append(v.Charts, chartView{Title: title, SVG: template.HTML(svg),
			Caption: "The traffic is closed-loop: each client sends its next request after an answer and a think time, so offered requests per second cannot rise above what the system serves, and a surge shows as more clients waiting (and as queues) rather than as more arrivals." + surge})
	}
	if len(tl.Baseline.Queues) == 0 {
		v.QueueNote = "No node's queue grew in either replay, so there is no queue chart."
		return v, nil
	}
	title = "Queue depth over time"
	if svg, err = queueSVG(tl, title); err != nil {
		return nil, err
	}
	nodes := make([]string, len(tl.Baseline.Queues))
	for i, q := range tl.Baseline.Queues {
		nodes[i] = q.Node
	}
	v.Charts = append(v.Charts, chartView{Title: title, SVG: template.HTML(svg),
		Caption: "Mean calls queued per window at " + strings.Join(nodes, ", ") + " (the nodes whose queues grew most); dashed: the baseline" + queueColours(len(nodes)) + "." + surge + alone})
	return v, nil
}

// queueColours says how the queue chart tells the runs apart beside the
// dashes: by colour when it shows one node.
func queueColours(nodes int) string {
	if nodes == 1 {
		return " (purple), solid: with the change (green)"
	}
	return ", solid: with the change"
}

func capacitySection(c *rank.CapacityCurve, at *OperatingPoint) (*capacityView, error) {
	title := "Capacity curve"
	svg, err := capacitySVG(c, at, title)
	if err != nil {
		return nil, err
	}
	v := &capacityView{Knee: c.Knee, Collapse: c.Collapse,
		Sweep: fmt.Sprintf("Poisson arrivals at %s … %s × %s/s, seeds %s", g4(c.Points[0].Factor),
			g4(c.Points[len(c.Points)-1].Factor), rateText(c.BaseRatePerSec), seedRange(c.Seeds))}
	caption := "Goodput against offered load, each point the mean over the seeds with its 95% interval (band and bars); " +
		"dashed grey: goodput = offered."
	if c.KneePerSec > 0 {
		caption += " The orange line marks the knee, where goodput stops keeping up."
	}
	if c.CollapsePerSec > 0 {
		caption += " The red line marks the collapse."
	} else {
		caption += " No collapse was found within the sweep."
	}
	if at != nil {
		caption += fmt.Sprintf(" The orange triangle is where the capture ran: %s root requests/s offered, %s/s served successfully.",
			g4(at.OfferedPerSec), g4(at.GoodputPerSec))
	}
	v.Chart = chartView{Title: title, Caption: caption, SVG: template.HTML(svg)}
	for _, pt := range c.Points {
		little := fmt.Sprintf("%s vs %s (%s)", g4(pt.Little.L), g4(pt.Little.LambdaW), orDash(pt.Little.Node))
		if !pt.Little.Holds {
			little += " ✗"
		}
		v.Points = append(v.Points, []string{"×" + g4(pt.Factor), g4(pt.Offered.Mean),
			fmt.Sprintf("%s [%s, %s]", g4(pt.Goodput.Mean), g4(pt.Goodput.Low), g4(pt.Goodput.High)),
			fmt.Sprintf("%.2f", pt.Ratio), pctOf(pt.Success.Mean), g4(pt.P99MS.Mean), g4(pt.Amplification.Mean),
			strconv.Itoa(pt.Collapsed), little})
	}
	return v, nil
}

func incidentSection(inc *incident.Incident) *incidentView {
	v := &incidentView{Window: msText(inc.WindowMS), Range: clock(inc.StartNS) + " .. " + clock(inc.EndNS)[11:],
		Baseline: inc.Baseline, Origins: inc.Origins}
	if len(inc.Origins) > 0 {
		if inc.Confidence > 0 {
			v.Confidence = confidenceText(inc)
		}
		v.Evidence = originEvidence(inc)
		v.Origins = nil
		for _, o := range inc.Origins {
			v.Origins = append(v.Origins, o+originNote(nodeOf(inc, o)))
		}
	}
	for i := range inc.Nodes {
		n := &inc.Nodes[i]
		if !n.Changed {
			if n.Note != "" {
				v.Unjudged = append(v.Unjudged, kv{n.Node, n.Note})
			}
			continue
		}
		at, metric, normal, then, z := changeText(n)
		v.Nodes = append(v.Nodes, []string{n.Node, at, metric, normal, then, z, orDash(explainedText(n))})
	}
	for i := range inc.Path {
		s := &inc.Path[i]
		v.Path = append(v.Path, []string{s.Callee + " → " + s.Caller,
			clock(s.CalleeAtNS)[11:] + " → " + clock(s.CallerAtNS)[11:],
			ampText(s.CallsPerParentBefore) + " → " + ampText(s.CallsPerParentDuring),
			g4(s.AttemptsPerCallBefore) + " → " + g4(s.AttemptsPerCallDuring)})
	}
	if len(inc.Infectable) > 0 {
		v.Slowdown, v.Seeds = g4(100*inc.Slowdown)+"%", seedRange(inc.Seeds)
		for _, x := range inc.Infectable {
			v.Infectable = append(v.Infectable, []string{x.Node, g4(x.Infected), g4(x.P99DeltaMS) + " ms", g4(100*x.SuccessDelta) + " pp"})
		}
	}
	return v
}

func fitSection(r *fit.Report) (*fitView, error) {
	v := &fitView{Best: r.Best.Values.String(), BestLoss: g4(r.Best.Loss), Warnings: r.Warnings, Notes: r.Notes}
	add := func(k, val string) { v.Facts = append(v.Facts, kv{k, val}) }
	add("grid", r.Grid)
	add("search", fmt.Sprintf("%s: %d of %d points replayed", r.Search, r.Evaluated, r.Points))
	add("seeds", fmt.Sprintf("%d from %d, the same for every point", r.Seeds, r.Seed))
	add("windows", strconv.Itoa(len(r.Windows)))
	for _, t := range r.Tiers {
		v.Tiers = append(v.Tiers, []string{t.Values.String(), g4(t.Loss)})
	}
	for _, m := range r.Moved {
		steps := "-"
		if m.Steps != 0 {
			steps = g4(m.Steps)
		}
		v.Moved = append(v.Moved, []string{m.Axis, g4(m.Centre), orDash(m.Source), g4(m.Best), signed(m.Delta), steps})
	}
	for i := range r.Surface {
		s := &r.Surface[i]
		flat := "-"
		if s.Low != "" || s.High != "" {
			flat = s.Low + " … " + s.High
		}
		v.Surface = append(v.Surface, []string{s.Axis, s.Value, flat, s.Verdict})
	}
	if pl := r.Plane; pl != nil {
		title := fmt.Sprintf("Loss over %s and %s", pl.X, pl.Y)
		svg, err := planeSVG(pl, title)
		if err != nil {
			return nil, err
		}
		v.Charts = append(v.Charts, chartView{Title: title, SVG: template.HTML(svg),
			Caption: fmt.Sprintf("The loss around the best point over %s and %s, every other axis at its best value: "+
				"the relative increase over the best loss in each cell (0 at the best; 1 doubles it), on a logarithmic colour scale. "+
				"The outlined cell is the best point.", pl.X, pl.Y)})
		return v, nil
	}
	values := gridValues(r.Grid)
	for i := range r.Surface {
		s := &r.Surface[i]
		if len(s.Profile) < 2 || s.Axis == fit.ParamTier {
			continue
		}
		title := "Loss along " + s.Axis
		svg, err := profileSVG(s, values[s.Axis], title)
		if err != nil {
			return nil, err
		}
		v.Charts = append(v.Charts, chartView{Title: title, SVG: template.HTML(svg),
			Caption: fmt.Sprintf("The relative loss increase at each value of %s, the other axes at the best point (ringed); "+
				"shaded: the flat range around the best. %s.", s.Axis, capitalise(s.Verdict))})
	}
	if len(v.Charts) == 0 {
		v.ChartNote = "The grid has no numeric axis of two or more values, so there is no loss surface to draw."
	} else {
		v.ChartNote = "The fit recorded no loss plane, so each numeric axis is drawn on its own."
	}
	return v, nil
}

func signed(x float64) string {
	s := g4(x)
	if x > 0 {
		s = "+" + s
	}
	return s
}

// capitalise upper-cases the first letter.
func capitalise(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortedKV returns a map's entries by key.
func sortedKV(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, n := range m {
		out = append(out, kv{k, strconv.FormatInt(n, 10)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}
