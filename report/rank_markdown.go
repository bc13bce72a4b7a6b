package report

import (
	"fmt"
	"io"
	"strings"
)

// mdCell escapes a table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// rankMarkdown writes the report: where the incident started, when an
// origin was found, as the first answer; then what to change; then an
// incident in which no origin was found, which is no answer to lead with.
func rankMarkdown(w io.Writer, d *RankDocument) error {
	title := "Remediation report"
	if d.Rank != nil && d.Rank.Model != "" {
		title += ": " + d.Rank.Model
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	lead := incidentLeads(d)
	if lead {
		incidentMarkdown(w, d.Incident)
	}
	if err := rankMarkdownRows(w, d); err != nil {
		return err
	}
	if d.Incident != nil && !lead {
		if d.Rank != nil {
			fmt.Fprintln(w)
		}
		incidentMarkdown(w, d.Incident)
	}
	return nil
}

// incidentLeads reports whether the document's incident goes before the
// ranking: when it found an origin, or when there is no ranking.
func incidentLeads(d *RankDocument) bool {
	return d.Incident != nil && (len(d.Incident.Origins) > 0 || d.Rank == nil)
}

func rankMarkdownRows(w io.Writer, d *RankDocument) error {
	rep := d.Rank
	if rep == nil {
		return nil
	}
	fmt.Fprintf(w, "## What to change\n\n")
	if d.Model != "" {
		fmt.Fprintf(w, "Model `%s`. ", d.Model)
	}
	if b := rep.Basis; b != nil {
		fmt.Fprintf(w, "Data: %s. ", basisText(b))
	}
	if rep.Fit != nil {
		fmt.Fprintf(w, "Fit: %s. ", rep.Fit)
	}
	fmt.Fprintf(w, "Objective: %s. Every candidate and the baseline replayed seeds %s (%s each, tick %s) under:\n\n",
		objectiveTitle(rep), seedRange(rep.Seeds), msText(rep.DurationMS), msText(rep.TickMS))
	if rep.TickNote != "" {
		fmt.Fprintf(w, "The %s.\n\n", rep.TickNote)
	}
	for i, r := range rep.Regimes {
		s := rep.Baseline[i]
		fmt.Fprintf(w, "%d. %s — baseline success %s, goodput %s/s, p99 %s ms, amplification %s, collapsed in %d of %d seeds\n",
			i+1, r.Name, pctOf(s.Metric("success_rate").Mean), g4(s.Metric("goodput_per_sec").Mean),
			g4(s.Metric("latency_p99_ms").Mean), g4(s.Metric("amplification").Mean), s.Collapsed, len(s.Seeds))
	}
	fmt.Fprintf(w, "\nΔ is candidate − baseline, paired seed by seed, averaged over the traffics, with its 95%% interval (it covers %s); "+
		"a change whose interval contains zero, or whose effect is within the baseline's seed-to-seed spread (%s), "+
		"has no measurable effect and is not ranked.\n\n", coversText(rep), noiseText(rep))
	head := "| # | Change | Δ " + string(rep.Objective) + " (95% CI) |"
	sep := "|---|---|---|"
	for i := range rep.Regimes {
		head += fmt.Sprintf(" Δ%d |", i+1)
		sep += "---:|"
	}
	head += " Verdict | Cost |"
	sep += "---|---|"
	if len(rep.Regimes) > 1 {
		head += " Recovers |"
		sep += "---:|"
	}
	head += " Why |"
	sep += "---|"
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	for i := range rep.Rows {
		cells := strings.Split(rowLine(rep, &rep.Rows[i], "\x00"), "\x00")
		for j := range cells {
			cells[j] = mdCell(cells[j])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if s := rep.Set; s != nil {
		fmt.Fprintf(w, "\n### Best compatible set\n\n")
		for _, m := range s.Members {
			fmt.Fprintf(w, "- %s\n", describe(rep, m))
		}
		fmt.Fprintf(w, "\nTogether: %s (%s); cost: %s.", objectiveInterval(rep.Objective, s.Row.Objective), s.Row.Verdict, s.Row.Cost.Text)
		if s.Row.Why != "" {
			fmt.Fprintf(w, " Why: %s.", s.Row.Why)
		}
		fmt.Fprintln(w)
		if len(s.Tried) > 0 {
			fmt.Fprintln(w)
			for _, t := range s.Tried {
				fmt.Fprintf(w, "- tried %s: %s\n", t.Name, t.Reason)
			}
		}
	}
	if c := rep.Capacity; c != nil {
		fmt.Fprintf(w, "\n## Capacity\n\nPoisson arrivals at %s … %s × %s/s, seeds %s.\n\n", g4(c.Points[0].Factor),
			g4(c.Points[len(c.Points)-1].Factor), rateText(c.BaseRatePerSec), seedRange(c.Seeds))
		fmt.Fprintf(w, "- **Knee:** %s\n- **Collapse:** %s\n\n", c.Knee, c.Collapse)
		fmt.Fprintln(w, "| Load | Offered/s | Goodput/s (95% CI) | Ratio | Success | p99 ms | Amplification | Collapsed | Little: L vs λW (node) |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, pt := range c.Points {
			mark := ""
			if !pt.Little.Holds {
				mark = " ✗"
			}
			fmt.Fprintf(w, "| ×%s | %s | %s [%s, %s] | %.2f | %s | %s | %s | %d | %s vs %s (%s)%s |\n", g4(pt.Factor),
				g4(pt.Offered.Mean), g4(pt.Goodput.Mean), g4(pt.Goodput.Low), g4(pt.Goodput.High), pt.Ratio,
				pctOf(pt.Success.Mean), g4(pt.P99MS.Mean), g4(pt.Amplification.Mean), pt.Collapsed,
				g4(pt.Little.L), g4(pt.Little.LambdaW), pt.Little.Node, mark)
		}
	}
	if m := rep.Metastability; m != nil {
		fmt.Fprintf(w, "\n## Metastability\n\n%s: %s. Recovery %s.", m.Regime, m.Verdict, recoveryList(m.RecoverMS))
		if len(m.Removed) > 0 {
			fmt.Fprintf(w, " Removed by: %s.", strings.Join(m.Removed, ", "))
		}
		fmt.Fprintln(w)
	}
	return nil
}
