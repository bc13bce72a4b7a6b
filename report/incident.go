package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"cascade/incident"
)

// clock formats Unix nanoseconds as a UTC time of day with the date.
func clock(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05Z")
}

func changeText(n *incident.NodeChange) (at, metric, normal, then, z string) {
	if !n.Changed {
		if n.Note != "" {
			return "-", n.Note, "", "", ""
		}
		return "-", "in range", "", "", ""
	}
	return clock(n.AtNS)[11:], n.Metric, g4(n.Baseline), g4(n.Value), g4(n.Z)
}

// explainedText is a changed node's changed callees, or, where none
// explains it, why it is not named among the origins: "(from the
// start)", a difference from the baseline the capture cannot date.
func explainedText(n *incident.NodeChange) string {
	if len(n.ExplainedBy) > 0 || n.NotOrigin == "" {
		return strings.Join(n.ExplainedBy, ", ")
	}
	return "(" + n.NotOrigin + ")"
}

// pathLine describes one step of the degradation's path.
func pathLine(p *incident.PathStep) string {
	return fmt.Sprintf("%s → %s: %s calls %s %s → %s times per request, %s → %s attempts per call",
		p.Callee, p.Caller, p.Caller, p.Callee, g4(p.CallsPerParentBefore), g4(p.CallsPerParentDuring),
		g4(p.AttemptsPerCallBefore), g4(p.AttemptsPerCallDuring))
}

func incidentTable(w io.Writer, inc *incident.Incident) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("INCIDENT\t%s .. %s, windows of %s", clock(inc.StartNS), clock(inc.EndNS)[11:], msText(inc.WindowMS))
	p("normal range\t%s", inc.Baseline)
	p("origin\t%s", originText(inc))
	if len(inc.Origins) > 0 && inc.Confidence > 0 {
		p("confidence\t%s", confidenceText(inc))
	}
	for _, e := range originEvidence(inc) {
		p("evidence\t%s", e)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p = func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("NODE\tLEFT RANGE AT\tMETRIC\tNORMAL\tTHEN\tZ\tEXPLAINED BY (CHANGED CALLEES)")
	for i := range inc.Nodes {
		n := &inc.Nodes[i]
		at, metric, normal, then, z := changeText(n)
		p("%s\t%s\t%s\t%s\t%s\t%s\t%s", n.Node, at, metric, normal, then, z, explainedText(n))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(inc.Path) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "PATH (the degradation climbed from the origin towards the entry)")
		for i := range inc.Path {
			fmt.Fprintf(w, "  %s\n", pathLine(&inc.Path[i]))
		}
	}
	if len(inc.Infectable) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		p = func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
		p("WHERE A SLOWDOWN SPREADS\teach node's service time +%s%% in replay, seeds %s", g4(100*inc.Slowdown), seedRange(inc.Seeds))
		p("NODE\tOTHERS SATURATED\tROOT P99 Δ\tSUCCESS Δ")
		for _, x := range inc.Infectable {
			p("%s\t%s\t%s ms\t%s pp", x.Node, g4(x.Infected), g4(x.P99DeltaMS), g4(100*x.SuccessDelta))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// nodeOf returns the named node of inc, or nil.
func nodeOf(inc *incident.Incident, name string) *incident.NodeChange {
	for i := range inc.Nodes {
		if inc.Nodes[i].Node == name {
			return &inc.Nodes[i]
		}
	}
	return nil
}

// originText lists the ranked origins with their scores.
func originText(inc *incident.Incident) string {
	if len(inc.Origins) == 0 {
		return originList(nil)
	}
	parts := make([]string, len(inc.Origins))
	for i, o := range inc.Origins {
		parts[i] = fmt.Sprintf("%d. %s", i+1, o) + originNote(nodeOf(inc, o))
	}
	return strings.Join(parts, "  ")
}

// originNote is an origin's score and replay fit, in parentheses, or
// nothing.
func originNote(n *incident.NodeChange) string {
	if n == nil {
		return ""
	}
	var parts []string
	if n.Score > 0 {
		parts = append(parts, "score "+g4(n.Score))
	}
	if n.ReplayFault != "" {
		parts = append(parts, "replay fit "+g4(n.ReplayFit))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// confidenceText says how far the first origin is ahead of the second.
func confidenceText(inc *incident.Incident) string {
	c := inc.Confidence
	switch {
	case c >= 1:
		return "no other unexplained change" + trackText(inc)
	case c <= 0:
		return "none"
	}
	s := fmt.Sprintf("%s of the top two scores (0.5: a tie)", g4(c))
	if inc.Abstained {
		s += fmt.Sprintf(", below %g: no origin stands out", incident.AbstainBelow)
	}
	return s + trackText(inc)
}

// shortConfidence is confidenceText for the terminal: the track record
// in a few words.
func shortConfidence(inc *incident.Incident) string {
	c, s := inc.Confidence, ""
	switch {
	case c >= 1:
		s = "no other unexplained change"
	default:
		s = fmt.Sprintf("%s of the top two scores", g4(c))
		if inc.Abstained {
			s += fmt.Sprintf(" (below %g: no origin stands out)", incident.AbstainBelow)
		}
	}
	if t := inc.Track; t != nil {
		s += fmt.Sprintf("; right %d of %d at %s on held-out faults", t.Right, t.Answers, t.Band)
	}
	return s
}

// trackText says how often a first origin at this confidence was right
// on faults held out from the choice of the constants; empty without a
// record.
func trackText(inc *incident.Incident) string {
	t := inc.Track
	if t == nil {
		return ""
	}
	return fmt.Sprintf("; on held-out faults (%s) first origins at %s were right %d of %d times", t.Day, t.Band, t.Right, t.Answers)
}

// originEvidence lists the first origin's evidence: metric, normal
// value and range, value, onset and z.
func originEvidence(inc *incident.Incident) []string {
	if len(inc.Origins) == 0 {
		return nil
	}
	n := nodeOf(inc, inc.Origins[0])
	if n == nil {
		return nil
	}
	var out []string
	for _, e := range n.Evidence {
		out = append(out, fmt.Sprintf("%s: normal %s (up to %s), then %s from %s, z %s",
			e.Metric, g4(e.Normal), g4(e.NormalHigh), g4(e.Value), clock(e.AtNS)[11:], g4(e.Z)))
	}
	if n.ReplayFault != "" {
		out = append(out, fmt.Sprintf("replay: its fault (%s) reproduces %s of the changes seen at the other nodes (1 all, 0 none)",
			n.ReplayFault, g4(n.ReplayFit)))
	}
	return out
}

func originList(os []string) string {
	if len(os) == 0 {
		return "none: no node left its normal range"
	}
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = fmt.Sprintf("%d. %s", i+1, o)
	}
	return strings.Join(parts, "  ")
}

func incidentMarkdown(w io.Writer, inc *incident.Incident) {
	fmt.Fprintf(w, "## Where it started\n\n")
	fmt.Fprintf(w, "Windows of %s from %s to %s; each node's normal range is %s.\n\n",
		msText(inc.WindowMS), clock(inc.StartNS), clock(inc.EndNS), inc.Baseline)
	fmt.Fprintf(w, "**Origin:** %s\n\n", originText(inc))
	if len(inc.Origins) > 0 && inc.Confidence > 0 {
		fmt.Fprintf(w, "**Confidence:** %s\n\n", confidenceText(inc))
	}
	if ev := originEvidence(inc); len(ev) > 0 {
		fmt.Fprintf(w, "**Evidence for %s:**\n\n", inc.Origins[0])
		for _, e := range ev {
			fmt.Fprintf(w, "- %s\n", e)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| Node | Left its range at | Metric | Normal | Then | z | Explained by |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---|")
	for i := range inc.Nodes {
		n := &inc.Nodes[i]
		at, metric, normal, then, z := changeText(n)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", n.Node, at, metric, normal, then, z, explainedText(n))
	}
	// The path climbs from an origin: without one there is no path to
	// speak of, with one it may have no step.
	switch {
	case len(inc.Path) > 0:
		fmt.Fprintf(w, "\n### Path\n\n")
		for i := range inc.Path {
			fmt.Fprintf(w, "%d. %s\n", i+1, pathLine(&inc.Path[i]))
		}
	case len(inc.Origins) > 0:
		fmt.Fprintf(w, "\n### Path\n\nNo caller of %s changed after it: the path has no step.\n", inc.Origins[0])
	}
	if len(inc.Infectable) > 0 {
		fmt.Fprintf(w, "\n### Where a slowdown spreads\n\nEach node's service time +%s%% in replay (seeds %s).\n\n", g4(100*inc.Slowdown), seedRange(inc.Seeds))
		fmt.Fprintln(w, "| Node | Others saturated | Root p99 Δ (ms) | Success Δ (pp) |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		for _, x := range inc.Infectable {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", x.Node, g4(x.Infected), g4(x.P99DeltaMS), g4(100*x.SuccessDelta))
		}
	}
	fmt.Fprintln(w)
}
