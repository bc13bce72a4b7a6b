package report

import (
	"cascade"

	"fmt"
	"io"
	"strings"

	"cascade/incident"
	"cascade/internal/numfmt"
	"cascade/rank"
)

// RankText writes a rank document for a terminal. By default it is
// compact and fits o.Width columns: the answer first (where the incident
// began, when an origin was found; the best change with its effect, 95%
// interval, verdict, cost and mechanism), then the ranked changes with
// their effects and verdicts, then short sections (the best compatible
// set, the baseline, capacity, metastability, the incident's nodes, the
// run's settings). Long text wraps at spaces; numbers are never cut.
// With o.Wide it writes the full tables instead, as wide as they come.
func RankText(w io.Writer, d *RankDocument, o TextOptions) error {
	if o.Wide {
		return rankTable(w, d)
	}
	width := o.width()
	var sections []func(io.Writer)
	lead := incidentLeads(d)
	if lead {
		sections = append(sections, func(w io.Writer) { incidentHead(d.Incident).write(w, width) })
	}
	if rep := d.Rank; rep != nil {
		sections = append(sections, func(w io.Writer) { answerBlock(rep).write(w, width) })
		if len(rep.Rows) > 0 {
			sections = append(sections, func(w io.Writer) { rankedList(rep).write(w, width) })
		}
		if s := rep.Set; s != nil && len(s.Members) > 1 {
			sections = append(sections, func(w io.Writer) { setBlock(rep).write(w, width) })
		}
		sections = append(sections, func(w io.Writer) { baselineList(rep).write(w, width) })
		if c := rep.Capacity; c != nil {
			sections = append(sections, func(w io.Writer) { capacityBlock(c).write(w, width) })
		}
		if m := rep.Metastability; m != nil {
			sections = append(sections, func(w io.Writer) { metastabilityBlock(m).write(w, width) })
		}
	}
	if inc := d.Incident; inc != nil {
		if !lead {
			sections = append(sections, func(w io.Writer) { incidentHead(inc).write(w, width) })
		}
		sections = append(sections, func(w io.Writer) { incidentNodes(w, inc, width) })
		if len(inc.Path) > 0 {
			sections = append(sections, func(w io.Writer) { incidentPath(w, inc, width) })
		}
		if len(inc.Infectable) > 0 {
			sections = append(sections, func(w io.Writer) { infectableList(w, inc, width) })
		}
	}
	if d.Rank != nil {
		sections = append(sections, func(w io.Writer) { settingsBlock(d).write(w, width) })
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		s(w)
	}
	return nil
}

// effectText is an objective difference with its name and interval:
// "+2.11/s goodput, 95% interval [+2.10/s, +2.12/s]".
func effectText(o rank.Objective, iv rank.Interval) string {
	return fmt.Sprintf("%s %s, 95%% interval [%s, %s]", objectiveValue(o, iv.Mean, true), o,
		objectiveValue(o, iv.Low, true), objectiveValue(o, iv.High, true))
}

// verdictCounts counts the rows by verdict, in the order of the ranking:
// "1 win, 6 no measurable effect, 4 worse".
func verdictCounts(rep *rank.Report) string {
	var (
		order []rank.Verdict
		n     = map[rank.Verdict]int{}
	)
	for i := range rep.Rows {
		v := rep.Rows[i].Verdict
		if n[v] == 0 {
			order = append(order, v)
		}
		n[v]++
	}
	parts := make([]string, len(order))
	for i, v := range order {
		s := string(v)
		if v == rank.Win && n[v] > 1 {
			s = "wins"
		}
		parts[i] = fmt.Sprintf("%d %s", n[v], s)
	}
	return strings.Join(parts, ", ")
}

// answerBlock is the best change: what it is, its effect, verdict, cost
// and why; or that no change wins.
func answerBlock(rep *rank.Report) *kvBlock {
	var b kvBlock
	var best *rank.Row
	for i := range rep.Rows {
		if rep.Rows[i].Rank == 1 {
			best = &rep.Rows[i]
			break
		}
	}
	if best == nil {
		b.add("BEST CHANGE", "none: no change improves %s measurably (a 95%% interval clear of zero, an effect beyond the noise, %s)", rep.Objective, noiseText(rep))
		if len(rep.Rows) > 0 {
			b.add("candidates", "%d: %s", len(rep.Rows), verdictCounts(rep))
		}
		if rep.Basis != nil {
			b.add("data", "%s", basisText(rep.Basis))
		}
		if rep.Fit != nil {
			b.add("fit", "%s", rep.Fit)
		}
		return &b
	}
	b.add("BEST CHANGE", "%s", best.Candidate.Description)
	b.add("effect", "%s", effectText(rep.Objective, best.Objective))
	if also := alsoText(rep, best); also != "" {
		b.add("also", "%s", also)
	}
	b.add("interval", "covers %s", coversText(rep))
	b.add("verdict", "%s (of %d candidates: %s)", best.Verdict, len(rep.Rows), verdictCounts(rep))
	b.add("cost", "%s", best.Cost.Text)
	if best.Why != "" {
		b.add("why", "%s", best.Why)
	}
	if best.Recovered >= 0 && len(rep.Regimes) > 1 {
		b.add("recovers", "%d of %d seeds after the surge", best.Recovered, len(rep.Seeds))
	}
	if s := rep.Set; s != nil && len(s.Members) > 1 {
		b.add("together", "the best compatible set of %d changes: %s, %s (below)",
			len(s.Members), effectText(rep.Objective, s.Row.Objective), s.Row.Verdict)
	}
	if load := loadText(rep); load != "" {
		b.add("load", "%s", load)
	}
	if rep.Basis != nil {
		b.add("data", "%s", basisText(rep.Basis))
	}
	if rep.Fit != nil {
		b.add("fit", "%s", rep.Fit)
	}
	return &b
}

// alsoText is the best change's other measurable effects under the
// first traffic (the observed one): success, p50 and p99, each whose
// 95% interval clears zero, as baseline → with the change.
func alsoText(rep *rank.Report, row *rank.Row) string {
	if len(rep.Regimes) == 0 {
		return ""
	}
	regime := rep.Regimes[0].Name
	var parts []string
	for _, m := range []struct{ metric, name string }{
		{rank.MetricSuccess, "success"}, {rank.MetricP50, "p50"}, {rank.MetricP99, "p99"},
	} {
		if m.metric == rep.ObjectiveMetric() {
			continue
		}
		for _, e := range row.Effects {
			if e.Metric != m.metric || e.Regime != regime {
				continue
			}
			if e.Delta.Low <= 0 && e.Delta.High >= 0 {
				break // not measurable
			}
			if m.metric == rank.MetricSuccess {
				parts = append(parts, fmt.Sprintf("success %.1f%% → %.1f%% (%+.1f pp, 95%% interval [%+.1f, %+.1f])",
					100*e.Baseline, 100*e.Candidate, 100*e.Delta.Mean, 100*e.Delta.Low, 100*e.Delta.High))
			} else {
				parts = append(parts, fmt.Sprintf("%s %s → %s ms (%+.0f ms, [%+.0f, %+.0f])", m.name,
					g4(e.Baseline), g4(e.Candidate), e.Delta.Mean, e.Delta.Low, e.Delta.High))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ", under " + regime
}

// loadText says where the system runs against its capacity knee.
func loadText(rep *rank.Report) string {
	c := rep.Capacity
	if c == nil || c.KneePerSec <= 0 || len(rep.Baseline) == 0 {
		return ""
	}
	offered := rep.Baseline[0].Metric("offered_per_sec").Mean
	if offered <= 0 {
		return ""
	}
	s := fmt.Sprintf("the system runs at %s/s offered in the baseline replay, against a capacity knee of %s/s (%.0f%% of it)",
		numfmt.Brief(offered), numfmt.Brief(c.KneePerSec), 100*offered/c.KneePerSec)
	if t := rep.Regimes[0].Traffic; t != nil && t.Kind == cascade.TrafficClosed {
		s += "; its clients wait for their answers (a closed loop), so their load stays at what is served, while the knee is of open arrivals"
	}
	return s
}

// rankedList is every change, ranked: effect with interval, verdict and
// the change's short text last, where it wraps.
func rankedList(rep *rank.Report) *textTable {
	t := &textTable{head: []string{"#", "Δ " + strings.ToUpper(string(rep.Objective)) + " [95% CI]", "VERDICT", "CHANGE"}}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		effect := "-"
		if r.Verdict != rank.Failed {
			effect = objectiveInterval(rep.Objective, r.Objective)
		}
		change := shortDescription(r.Candidate.Description)
		if r.Error != "" {
			change += " (" + r.Error + ")"
		}
		t.add(rowMark(r), effect, string(r.Verdict), change)
	}
	return t
}

// shortDescription is a change's description without its closing
// parenthesis, the detail of how ("(batches of 10, route service ×5.5)"),
// which the wide table and the answer keep.
func shortDescription(s string) string {
	if !strings.HasSuffix(s, ")") {
		return s
	}
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
		}
		if depth == 0 {
			if short := strings.TrimRight(s[:i], " "); short != "" && !strings.HasSuffix(short, ":") {
				return short
			}
			return s
		}
	}
	return s
}

func setBlock(rep *rank.Report) *kvBlock {
	s := rep.Set
	var b kvBlock
	b.add("BEST COMPATIBLE SET", "%d changes, tried together", len(s.Members))
	for _, m := range s.Members {
		b.add("", "+ %s", describe(rep, m))
	}
	b.add("effect", "%s, %s", objectiveInterval(rep.Objective, s.Row.Objective), s.Row.Verdict)
	b.add("cost", "%s", s.Row.Cost.Text)
	if s.Row.Why != "" {
		b.add("why", "%s", s.Row.Why)
	}
	if s.Row.Recovered >= 0 && len(rep.Regimes) > 1 {
		b.add("recovers", "%d of %d seeds after the surge", s.Row.Recovered, len(rep.Seeds))
	}
	for _, t := range s.Tried {
		b.add("tried", "%s: %s", t.Name, t.Reason)
	}
	return &b
}

// baselineList is the baseline under each regime, the regime's name
// last, where it wraps.
func baselineList(rep *rank.Report) *textTable {
	t := &textTable{head: []string{"SUCCESS", "GOODPUT/S", "P50 MS", "P99 MS", "CALLS/REQ", "COLLAPSED", "BASELINE UNDER"}}
	for _, s := range rep.Baseline {
		t.add(pctOf(s.Metric("success_rate").Mean), g4(s.Metric("goodput_per_sec").Mean),
			g4(s.Metric("latency_p50_ms").Mean), g4(s.Metric("latency_p99_ms").Mean),
			g4(s.Metric("amplification").Mean), fmt.Sprintf("%d of %d", s.Collapsed, len(s.Seeds)), s.Scenario)
	}
	return t
}

// capacityBlock is the capacity curve's knee and collapse; the sweep's
// points are in the wide table.
func capacityBlock(c *rank.CapacityCurve) *kvBlock {
	var b kvBlock
	b.add("CAPACITY", "Poisson sweep of %s/s × %s … %s, seeds %s", rateText(c.BaseRatePerSec),
		g4(c.Points[0].Factor), g4(c.Points[len(c.Points)-1].Factor), seedRange(c.Seeds))
	b.add("knee", "%s", c.Knee)
	b.add("collapse", "%s", c.Collapse)
	return &b
}

func metastabilityBlock(m *rank.Metastability) *kvBlock {
	var b kvBlock
	b.add("METASTABILITY", "%s", m.Regime)
	b.add("verdict", "%s", m.Verdict)
	b.add("recovery", "%s", recoveryList(m.RecoverMS))
	if len(m.Removed) > 0 {
		b.add("removed by", "%s", strings.Join(m.Removed, ", "))
	}
	return &b
}

// settingsBlock is how the ranking was run.
func settingsBlock(d *RankDocument) *kvBlock {
	rep := d.Rank
	var b kvBlock
	if d.Model != "" {
		b.add("model", "%s", d.Model)
	}
	if rep.Model != "" {
		b.add("name", "%s", rep.Model)
	}
	b.add("objective", "%s", objectiveTitle(rep))
	b.add("seeds", "%s, the same for every candidate (paired differences, 95%% t-intervals)", seedRange(rep.Seeds))
	b.add("noise", "%s: the baseline's seed-to-seed spread; a smaller effect is no measurable effect", noiseText(rep))
	b.add("intervals", "cover %s", coversText(rep))
	b.add("replay", "%s", replayLine(rep))
	if rep.TickNote != "" {
		b.add("tick", "%s", rep.TickNote)
	}
	return &b
}

// incidentHead is the incident's window, normal range, origin and the
// first origin's evidence.
func incidentHead(inc *incident.Incident) *kvBlock {
	var b kvBlock
	b.add("INCIDENT", "%s .. %s, windows of %s", clock(inc.StartNS), clock(inc.EndNS)[11:], msText(inc.WindowMS))
	b.add("normal range", "%s", inc.Baseline)
	if len(inc.Origins) == 0 {
		b.add("origin", "%s", originText(inc))
	}
	// One origin a line: each carries its score and replay in words.
	for i, o := range inc.Origins {
		key := ""
		if i == 0 {
			key = "origin"
		}
		b.add(key, "%d. %s%s", i+1, o, originNote(nodeOf(inc, o)))
	}
	if len(inc.Origins) > 0 && inc.Confidence > 0 {
		b.add("confidence", "%s", shortConfidence(inc))
	}
	// The terminal gives the first origin's first evidence whole and
	// names the rest; --wide and report.md give each (the origin's line
	// already says what its fault, replayed, reproduced).
	if n := firstOrigin(inc); n != nil && len(n.Evidence) > 0 {
		b.add("evidence", "%s", evidenceText(&n.Evidence[0]))
		if more := n.Evidence[1:]; len(more) > 0 {
			words := make([]string, len(more))
			for i := range more {
				words[i] = metricWords(more[i].Metric)
			}
			b.add("", "and %s out of range too: %s (--wide gives each)", plural(len(more), "more metric"), strings.Join(words, ", "))
		}
	}
	return &b
}

// firstOrigin is the first origin's node, or nil.
func firstOrigin(inc *incident.Incident) *incident.NodeChange {
	if len(inc.Origins) == 0 {
		return nil
	}
	return nodeOf(inc, inc.Origins[0])
}

// incidentNodes writes the nodes that left their normal range as a
// table, and names the others in a line each: in range, or not judged
// (grouped by the note saying why).
func incidentNodes(w io.Writer, inc *incident.Incident, width int) {
	t := &textTable{head: []string{"NODE", "LEFT RANGE AT", headWhat, headNormal, headThen, headZ, "EXPLAINED BY"}}
	var (
		inRange []string
		notes   []string
		noted   = map[string][]string{}
	)
	for i := range inc.Nodes {
		n := &inc.Nodes[i]
		switch {
		case n.Changed:
			at, metric, normal, then, z := changeText(n)
			t.add(n.Node, at, metric, normal, then, z, explainedText(n))
		case n.Note != "":
			if noted[n.Note] == nil {
				notes = append(notes, n.Note)
			}
			noted[n.Note] = append(noted[n.Note], n.Node)
		default:
			inRange = append(inRange, n.Node)
		}
	}
	var b kvBlock
	if len(t.rows) == 0 {
		b.add("changed", "none")
	}
	if len(inRange) > 0 {
		b.add("in range", "%s", strings.Join(inRange, ", "))
	}
	for _, note := range notes {
		b.add("not judged", "%s: %s", strings.Join(noted[note], ", "), note)
	}
	if len(t.rows) > 0 {
		t.write(w, width)
	}
	b.write(w, width)
}

func incidentPath(w io.Writer, inc *incident.Incident, width int) {
	var b kvBlock
	b.add("PATH", "the degradation climbed from the origin towards the entry")
	b.write(w, width)
	for i := range inc.Path {
		for j, line := range Wrap(pathLine(&inc.Path[i]), width-4) {
			indent := "  "
			if j > 0 {
				indent = "    "
			}
			fmt.Fprintf(w, "%s%s\n", indent, line)
		}
	}
}

// infectableList writes the nodes whose slowdown moved anything, and
// names the others in one line.
func infectableList(w io.Writer, inc *incident.Incident, width int) {
	var head kvBlock
	head.add("WHERE A SLOWDOWN SPREADS", "each node's service time +%s%% in replay, seeds %s", g4(100*inc.Slowdown), seedRange(inc.Seeds))
	head.write(w, width)
	t := &textTable{head: []string{"NODE", "OTHERS SATURATED", "ROOT P99 Δ", "SUCCESS Δ"}}
	var none []string
	for _, x := range inc.Infectable {
		infected, p99, success := g4(x.Infected), g4(x.P99DeltaMS), g4(100*x.SuccessDelta)
		if infected == "0" && p99 == "0" && success == "0" {
			none = append(none, x.Node)
			continue
		}
		t.add(x.Node, infected, p99+" ms", success+" pp")
	}
	if len(t.rows) > 0 {
		t.write(w, width)
	}
	if len(none) > 0 {
		var b kvBlock
		b.add("no effect", "%s", strings.Join(none, ", "))
		b.write(w, width)
	}
}
