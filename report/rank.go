package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"cascade/incident"
	"cascade/internal/numfmt"
	"cascade/rank"
)

// RankDocument is what `cascade rank` prints: the root cause of an
// incident, the ranked remediations, or both.
type RankDocument struct {
	// Model names the model file.
	Model string `json:"model,omitempty"`
	// Incident is the root-cause analysis; nil without --incident.
	Incident *incident.Incident `json:"incident,omitempty"`
	// Rank is the ranking; nil when only the root cause was asked for.
	Rank *rank.Report `json:"rank,omitempty"`
}

// Rank renders a rank document as a table, JSON or Markdown. The table
// is the compact one of RankText at DefaultWidth.
func Rank(w io.Writer, d *RankDocument, f Format) error {
	switch f {
	case FormatJSON:
		return JSON(w, d)
	case FormatMarkdown:
		return rankMarkdown(w, d)
	case FormatTable, "":
		return RankText(w, d, TextOptions{})
	}
	return fmt.Errorf("output %q: want table, json or markdown", f)
}

// objectiveValue formats an objective difference with its unit.
func objectiveValue(o rank.Objective, x float64, sign bool) string {
	f := func(v float64, prec int) string {
		// A difference that rounds to zero has no sign: "0.00", not
		// "-0.00" or "+0.00".
		s := numfmt.NoNegZero(strconv.FormatFloat(v, 'f', prec, 64))
		if sign && v > 0 && strings.Trim(s, "0.") != "" {
			s = "+" + s
		}
		return s
	}
	switch o {
	case rank.ObjectiveSuccess:
		return f(100*x, 2) + " pp"
	case rank.ObjectiveGoodput:
		return f(x, 2) + "/s"
	case rank.ObjectiveP99:
		return f(x, 1) + " ms"
	case rank.ObjectiveAmplification:
		return f(x, 3)
	case rank.ObjectiveSpread:
		return f(x, 3) + " nodes"
	}
	return f(100*x, 1) + "%"
}

func objectiveInterval(o rank.Objective, iv rank.Interval) string {
	return fmt.Sprintf("%s [%s, %s]", objectiveValue(o, iv.Mean, true),
		objectiveValue(o, iv.Low, true), objectiveValue(o, iv.High, true))
}

// noiseText is the baseline's seed-to-seed spread of the objective, in
// the objective's units.
func noiseText(rep *rank.Report) string {
	return "±" + strings.TrimPrefix(objectiveValue(rep.Objective, rep.NoiseFloor, true), "+")
}

// coversText says what a ranking's intervals cover.
func coversText(rep *rank.Report) string {
	if rep.Resampled {
		return "the replay's noise and the capture's uncertainty (each seed draws the measured service times, failure rates and entry rates anew)"
	}
	return "the replay's seed noise only"
}

// basisText is the data a ranking rests on, and what is too thin to
// rank on.
func basisText(b *rank.Basis) string {
	if b.Thin != "" {
		return b.String() + "; too thin to rank: no change is called a win or worse"
	}
	return b.String()
}

func objectiveTitle(rep *rank.Report) string {
	o := rep.Objective
	dir := "higher is better"
	if !o.HigherIsBetter() {
		dir = "lower is better"
	}
	if o == rank.ObjectiveComposite && rep.Flows {
		return "composite (mean relative change of flow success, flow goodput, flow p99, amplification and spread; higher is better)"
	}
	if o == rank.ObjectiveComposite {
		return "composite (mean relative change of success, goodput, p99, amplification and spread; higher is better)"
	}
	if m := rep.ObjectiveMetric(); rep.Flows && m != o.Metric() {
		// A flow is the root request and every message it set off: an
		// async publish leaves the root's own figures blind to them.
		return fmt.Sprintf("%s (%s; read on flows as %s: a root request and the work of every message it published)", o, dir, m)
	}
	return fmt.Sprintf("%s (%s)", o, dir)
}

func seedRange(s []uint64) string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d to %d (%d)", s[0], s[len(s)-1], len(s))
}

// regimeDelta is a row's objective difference under one regime (single
// metric objectives only).
func regimeDelta(rep *rank.Report, r *rank.Row, regime string) string {
	o, m := rep.Objective, rep.ObjectiveMetric()
	if m == "" || r.Verdict == rank.Failed {
		return "-"
	}
	for _, e := range r.Effects {
		if e.Metric == m && e.Regime == regime {
			return objectiveValue(o, e.Delta.Mean, true)
		}
	}
	return "-"
}

func recoveredText(r *rank.Row, seeds int) string {
	if r.Recovered < 0 || r.Verdict == rank.Failed {
		return "-"
	}
	return fmt.Sprintf("%d/%d", r.Recovered, seeds)
}

func rowMark(r *rank.Row) string {
	if r.Rank > 0 {
		return strconv.Itoa(r.Rank)
	}
	return "-"
}

// rankTable writes the full tables (RankText's Wide): the incident, when
// it found an origin, then the ranking, then an incident without an
// origin (see rankMarkdown).
func rankTable(w io.Writer, d *RankDocument) error {
	lead := incidentLeads(d)
	if lead {
		if err := incidentTable(w, d.Incident); err != nil {
			return err
		}
		if d.Rank != nil {
			fmt.Fprintln(w)
		}
	}
	if err := rankTableRows(w, d); err != nil {
		return err
	}
	if d.Incident != nil && !lead {
		fmt.Fprintln(w)
		return incidentTable(w, d.Incident)
	}
	return nil
}

// rankTableRows prints the ranking as tables: the header, the baseline and
// the ranked changes, then the best set, capacity and metastability when
// the report has them.
func rankTableRows(w io.Writer, d *RankDocument) error {
	rep := d.Rank
	if rep == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	rankTableHeader(p, d, rep)
	rankBaselineTable(p, rep)
	rankCandidateTable(p, rep)
	if err := tw.Flush(); err != nil {
		return err
	}
	if s := rep.Set; s != nil {
		fmt.Fprintln(w)
		if err := bestSetTable(w, rep, s); err != nil {
			return err
		}
	}
	if c := rep.Capacity; c != nil {
		fmt.Fprintln(w)
		if err := capacityTable(w, c); err != nil {
			return err
		}
	}
	if m := rep.Metastability; m != nil {
		fmt.Fprintln(w)
		if err := metastabilityTable(w, m); err != nil {
			return err
		}
	}
	return nil
}

// rankTableHeader prints what the ranking ran on and how, so a reader can
// judge the numbers before reading them.
func rankTableHeader(p func(format string, args ...any), d *RankDocument, rep *rank.Report) {
	if d.Model != "" {
		p("model\t%s", d.Model)
	}
	if rep.Model != "" {
		p("name\t%s", rep.Model)
	}
	if b := rep.Basis; b != nil {
		p("data\t%s", basisText(b))
	}
	if rep.Fit != nil {
		p("fit\t%s", rep.Fit)
	}
	p("objective\t%s", objectiveTitle(rep))
	p("seeds\t%s, the same for every candidate (paired differences, 95%% t-intervals)", seedRange(rep.Seeds))
	p("noise\t%s: the baseline's seed-to-seed spread; a smaller effect is no measurable effect", noiseText(rep))
	p("intervals\tcover %s", coversText(rep))
	p("replay\t%s", replayLine(rep))
	if rep.TickNote != "" {
		p("tick\t%s", rep.TickNote)
	}
	for i, r := range rep.Regimes {
		label := ""
		if i == 0 {
			label = "regimes"
		}
		p("%s\t%d. %s", label, i+1, r.Name)
	}
}

// rankBaselineTable prints the baseline's outcome in each scenario, the
// point every candidate's change is measured from.
func rankBaselineTable(p func(format string, args ...any), rep *rank.Report) {
	p("")
	p("BASELINE\tSUCCESS\tGOODPUT/S\tP50 MS\tP99 MS\tAMPLIFICATION\tCOLLAPSED")
	for _, s := range rep.Baseline {
		p("%s\t%s\t%s\t%s\t%s\t%s\t%d of %d", s.Scenario, pctOf(s.Metric("success_rate").Mean),
			g4(s.Metric("goodput_per_sec").Mean), g4(s.Metric("latency_p50_ms").Mean),
			g4(s.Metric("latency_p99_ms").Mean), g4(s.Metric("amplification").Mean), s.Collapsed, len(s.Seeds))
	}
}

// rankCandidateTable prints one row per candidate change, in rank order,
// with a delta column per regime.
func rankCandidateTable(p func(format string, args ...any), rep *rank.Report) {
	p("")
	head := "#\tCHANGE\tΔ " + strings.ToUpper(string(rep.Objective)) + " [95% CI]"
	for i := range rep.Regimes {
		head += fmt.Sprintf("\tΔ%d", i+1)
	}
	head += "\tVERDICT\tCOST"
	if len(rep.Regimes) > 1 {
		head += "\tRECOVERS"
	}
	head += "\tWHY"
	p("%s", head)
	for i := range rep.Rows {
		r := &rep.Rows[i]
		p("%s", rowLine(rep, r, "\t"))
	}
}

// bestSetTable prints the best set of compatible changes tried together,
// its effect and cost, and what became of each win considered for it.
func bestSetTable(w io.Writer, rep *rank.Report, s *rank.Set) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("BEST COMPATIBLE SET\t%d change(s), tried together", len(s.Members))
	for _, m := range s.Members {
		p("\t+ %s", describe(rep, m))
	}
	p("effect\t%s, %s", objectiveInterval(rep.Objective, s.Row.Objective), s.Row.Verdict)
	p("cost\t%s", s.Row.Cost.Text)
	if s.Row.Why != "" {
		p("why\t%s", s.Row.Why)
	}
	if s.Row.Recovered >= 0 && len(rep.Regimes) > 1 {
		p("recovers\t%d of %d seeds after the surge", s.Row.Recovered, len(rep.Seeds))
	}
	for _, t := range s.Tried {
		p("tried\t%s: %s", t.Name, t.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return nil
}

// metastabilityTable prints whether goodput recovers after the surge,
// per seed, and the changes under which most seeds recover.
func metastabilityTable(w io.Writer, m *rank.Metastability) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("METASTABILITY\t%s", m.Regime)
	p("verdict\t%s", m.Verdict)
	p("recovery\t%s", recoveryList(m.RecoverMS))
	if len(m.Removed) > 0 {
		p("removed by\t%s", strings.Join(m.Removed, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return nil
}

// describe returns the description of the candidate named name.
func describe(rep *rank.Report, name string) string {
	for i := range rep.Rows {
		if rep.Rows[i].Candidate.Name == name {
			return rep.Rows[i].Candidate.Description
		}
	}
	return name
}

// rowLine is one ranked row, fields joined by sep.
func rowLine(rep *rank.Report, r *rank.Row, sep string) string {
	f := []string{rowMark(r), r.Candidate.Description}
	if r.Verdict == rank.Failed {
		f = append(f, "-")
	} else {
		f = append(f, objectiveInterval(rep.Objective, r.Objective))
	}
	for _, g := range rep.Regimes {
		f = append(f, regimeDelta(rep, r, g.Name))
	}
	verdict := string(r.Verdict)
	if r.Error != "" {
		verdict += ": " + r.Error
	}
	f = append(f, verdict, r.Cost.Text)
	if len(rep.Regimes) > 1 {
		f = append(f, recoveredText(r, len(rep.Seeds)))
	}
	why := r.Why
	if why == "" {
		why = "-"
	}
	f = append(f, why)
	return strings.Join(f, sep)
}

func capacityTable(w io.Writer, c *rank.CapacityCurve) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("CAPACITY\tPoisson sweep of %s/s × %s … %s, seeds %s", rateText(c.BaseRatePerSec),
		g4(c.Points[0].Factor), g4(c.Points[len(c.Points)-1].Factor), seedRange(c.Seeds))
	p("knee\t%s", c.Knee)
	p("collapse\t%s", c.Collapse)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LOAD\tOFFERED/S\tGOODPUT/S\t95% CI\tRATIO\tSUCCESS\tP99 MS\tCALLS/REQ\tCOLLAPSED\tLITTLE L\tλW\tAT\t")
	for _, pt := range c.Points {
		lw := pt.Little
		holds := lw.Node
		if !lw.Holds {
			holds += " ✗"
		}
		fmt.Fprintf(tw, "×%s\t%s\t%s\t[%s, %s]\t%.2f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", g4(pt.Factor),
			g4(pt.Offered.Mean), g4(pt.Goodput.Mean), g4(pt.Goodput.Low), g4(pt.Goodput.High), pt.Ratio,
			pctOf(pt.Success.Mean), g4(pt.P99MS.Mean), g4(pt.Amplification.Mean), pt.Collapsed,
			g4(lw.L), g4(lw.LambdaW), holds)
	}
	return tw.Flush()
}

func recoveryList(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r < 0 {
			parts[i] = "never"
		} else {
			parts[i] = msText(r)
		}
	}
	return strings.Join(parts, ", ") + " (per seed, after the surge)"
}

func pctOf(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// g4 formats a figure as rank and incident write theirs (numfmt.Brief):
// three significant digits below 100, whole numbers above, so that one
// figure reads the same in every part of a report (issue 39: 1.619/s in
// one place, 1.62/s in another).
func g4(x float64) string { return numfmt.NoNegZero(numfmt.Brief(x)) }

// msText formats milliseconds as "850 ms" or "1.5 s".
func msText(x float64) string {
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(x, 'f', -1, 64) + " ms"
}

// replayLine says how long each replay ran: its arrivals, its drain and
// its tick.
func replayLine(rep *rank.Report) string {
	if rep.DrainMS > 0 {
		return fmt.Sprintf("%s of arrivals then %s of drain per run (a request still out then is unfinished, not a success), tick %s",
			msText(rep.DurationMS), msText(rep.DrainMS), msText(rep.TickMS))
	}
	return fmt.Sprintf("%s simulated per run, tick %s", msText(rep.DurationMS), msText(rep.TickMS))
}

// rateText formats a rate per second as rank names it in its traffic
// ("observed rates (Poisson 1.62/s)"), so that one rate reads the same
// wherever it is printed: three significant digits.
func rateText(x float64) string { return numfmt.Brief(numfmt.Round3(x)) }
