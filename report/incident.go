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

// changeText is a changed node's row: when it left its range, what
// left it in a responder's words, its normal value and its value in the
// first window out of range, with units, and how far out that was in
// spreads; "-" and its note (or "in range") for a node that stayed.
func changeText(n *incident.NodeChange) (at, metric, normal, then, z string) {
	if !n.Changed {
		if n.Note != "" {
			return "-", n.Note, "", "", ""
		}
		return "-", "in range", "", "", ""
	}
	return clock(n.AtNS)[11:], metricWords(n.Metric), metricValue(n.Metric, n.Baseline), metricValue(n.Metric, n.Value), spreadsText(n.Z)
}

// Column heads of the changed nodes' table, the same in every output.
const (
	headWhat   = "WHAT CHANGED"
	headNormal = "NORMAL"
	headThen   = "FIRST WINDOW OUT"
	headZ      = "SPREADS OUT"
)

// metricWords says what an incident metric measures, in a responder's
// words, short enough for a table cell (docs/glossary.md lists them).
func metricWords(m string) string {
	switch m {
	case "latency":
		return "latency (median)"
	case "self_time":
		return "own time (median)"
	case "slow_share":
		return "slow requests"
	case "error_rate":
		return "errors"
	case "throughput":
		return "requests"
	case "call_latency":
		return "latency its callers see"
	case "call_slow_share":
		return "slow calls its callers see"
	case "call_error_rate":
		return "errors its callers see"
	case "gap_in":
		return "network into it"
	case "gap_out":
		return "network out of it"
	case "self_time_calls":
		return "own time per request"
	case "self_time_drop":
		return "own time dropped"
	case "log_errors":
		return "requests logging errors"
	case "log_new":
		return "new log lines"
	case "log_risen":
		return "risen log lines"
	case "log_stopped":
		return "usual log lines stopped"
	case "ended_after":
		return "requests ended after its answer"
	}
	if name, ok := strings.CutPrefix(m, "metric:"); ok {
		return "metric " + name
	}
	return strings.ReplaceAll(m, "_", " ")
}

// metricUnit is what an incident metric's values count: "ms", "%" (a
// share) or "" (a count, or a metric sample's own unit).
func metricUnit(m string) string {
	switch m {
	case "latency", "self_time", "call_latency", "gap_in", "gap_out", "self_time_calls", "self_time_drop":
		return "ms"
	case "slow_share", "error_rate", "call_slow_share", "call_error_rate", "log_errors", "log_new", "log_risen":
		return "%"
	}
	return ""
}

// metricValue formats a value of metric m in its unit: "3990 ms", "36%".
func metricValue(m string, x float64) string {
	switch metricUnit(m) {
	case "ms":
		return g4(x) + " ms"
	case "%":
		return g4(100*x) + "%"
	}
	return g4(x)
}

// spreadsText is a robust z-score in words: how many of its normal
// window-to-window spreads a value lies from normal.
func spreadsText(z float64) string { return g4(z) + "×" }

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
	p("NODE\tLEFT RANGE AT\t%s\t%s\t%s\t%s\tEXPLAINED BY (CHANGED CALLEES)", headWhat, headNormal, headThen, headZ)
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

// originNote is an origin's score and what its fault, replayed,
// reproduced, in parentheses, or nothing.
func originNote(n *incident.NodeChange) string {
	if n == nil {
		return ""
	}
	var parts []string
	if n.Score > 0 {
		parts = append(parts, "score "+g4(n.Score))
	}
	if n.ReplayFault != "" {
		parts = append(parts, "its fault replayed: "+reproducedText(n.ReplayFit)+" of the other nodes' changes")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// reproducedText says how much of the other nodes' changes an origin's
// fault reproduced in replay: "60%", or "none" for a fit at or below
// zero (no better than no fault).
func reproducedText(fit float64) string {
	if fit <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f%%", 100*fit)
}

// leadText is the first origin's share of the top two origins' scores.
func leadText(c float64) string {
	return fmt.Sprintf("the first origin holds %.0f%% of the top two origins' scores (50%%: a tie)", 100*c)
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
	s := leadText(c)
	if inc.Abstained {
		s += fmt.Sprintf(", under %.0f%%: no origin stands out", 100*incident.AbstainBelow)
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
		s = leadText(c)
		if inc.Abstained {
			s += fmt.Sprintf(" (under %.0f%%: no origin stands out)", 100*incident.AbstainBelow)
		}
	}
	if t := inc.Track; t != nil {
		s += fmt.Sprintf("; first origins that led by %s were right %d of %d times on faults held out when counted", bandText(t.Band), t.Right, t.Answers)
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
	return fmt.Sprintf("; on faults held out when counted (%s) first origins that led by %s were right %d of %d times", t.Day, bandText(t.Band), t.Right, t.Answers)
}

// bandText writes a confidence band, "0.7 to 0.8", as the shares of the
// top two scores it spans: "70% to 80%", "under 70%", "90% or more".
func bandText(band string) string {
	var lo, hi float64
	if _, err := fmt.Sscanf(band, "%g to %g", &lo, &hi); err != nil {
		return band
	}
	switch {
	case lo <= 0:
		return fmt.Sprintf("under %.0f%%", 100*hi)
	case hi >= 1:
		return fmt.Sprintf("%.0f%% or more", 100*lo)
	}
	return fmt.Sprintf("%.0f%% to %.0f%%", 100*lo, 100*hi)
}

// originEvidence lists the first origin's evidence, each metric with its
// normal value and range, when it first left the range and, labelled,
// which figure is given: the first window's value, or the median from
// then on over the calls; and the most spreads out it reached.
func originEvidence(inc *incident.Incident) []string {
	if len(inc.Origins) == 0 {
		return nil
	}
	n := nodeOf(inc, inc.Origins[0])
	if n == nil {
		return nil
	}
	var out []string
	for i := range n.Evidence {
		out = append(out, evidenceText(&n.Evidence[i]))
	}
	if n.ReplayFault != "" {
		out = append(out, fmt.Sprintf("replay: its fault (%s) reproduces %s of the changes seen at the other nodes",
			n.ReplayFault, reproducedText(n.ReplayFit)))
	}
	return out
}

// evidenceText is one metric of an origin's evidence in words.
func evidenceText(e *incident.ChangeEvidence) string {
	m, at := e.Metric, clock(e.AtNS)[11:]
	switch {
	case strings.HasPrefix(m, "log_"):
		s := fmt.Sprintf("%s: %s requests from %s on, where the normal share brings %s (%s or more is out of range)",
			metricWords(m), g4(e.Value), at, g4(e.Normal), g4(e.NormalHigh))
		if e.Template != "" {
			s += fmt.Sprintf(": %q", e.Template)
		}
		return s
	case e.Calls > 0:
		return fmt.Sprintf("%s: normal %s (up to %s); from %s on, the median over %d calls %s (95%% interval %s to %s); at most %s spreads out",
			metricWords(m), metricValue(m, e.Normal), metricValue(m, e.NormalHigh), at, e.Calls,
			metricValue(m, e.Value), metricValue(m, e.ValueLow), metricValue(m, e.ValueHigh), g4(e.Z))
	}
	return fmt.Sprintf("%s: normal %s (up to %s); first window out at %s, %s; at most %s spreads out from then on",
		metricWords(m), metricValue(m, e.Normal), metricValue(m, e.NormalHigh), at, metricValue(m, e.Value), g4(e.Z))
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
	fmt.Fprintln(w, "| Node | Left its range at | What changed | Normal | First window out | Spreads out | Explained by |")
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
