package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"cascade/rank"
)

// clock formats Unix nanoseconds as a UTC time of day with the date.
func clock(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05Z")
}

func changeText(n *rank.NodeChange) (at, metric, normal, then, z string) {
	if !n.Changed {
		if n.Note != "" {
			return "-", n.Note, "", "", ""
		}
		return "-", "in range", "", "", ""
	}
	return clock(n.AtNS)[11:], n.Metric, g4(n.Baseline), g4(n.Value), g4(n.Z)
}

// pathLine describes one step of the degradation's path.
func pathLine(p *rank.PathStep) string {
	return fmt.Sprintf("%s → %s: %s calls %s %s → %s times per request, %s → %s attempts per call",
		p.Callee, p.Caller, p.Caller, p.Callee, g4(p.CallsPerParentBefore), g4(p.CallsPerParentDuring),
		g4(p.AttemptsPerCallBefore), g4(p.AttemptsPerCallDuring))
}

func incidentTable(w io.Writer, inc *rank.Incident) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("INCIDENT\t%s .. %s, windows of %s", clock(inc.StartNS), clock(inc.EndNS)[11:], msText(inc.WindowMS))
	p("normal range\t%s", inc.Baseline)
	p("origin\t%s", originList(inc.Origins))
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
		p("%s\t%s\t%s\t%s\t%s\t%s\t%s", n.Node, at, metric, normal, then, z, strings.Join(n.ExplainedBy, ", "))
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
		p("MOST INFECTABLE\teach node's service time +%s%% in replay, seeds %s", g4(100*inc.Slowdown), seedRange(inc.Seeds))
		p("NODE\tOTHERS INFECTED\tROOT P99 Δ\tSUCCESS Δ")
		for _, x := range inc.Infectable {
			p("%s\t%s\t%s ms\t%s pp", x.Node, g4(x.Infected), g4(x.P99DeltaMS), g4(100*x.SuccessDelta))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
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

func incidentMarkdown(w io.Writer, inc *rank.Incident) {
	fmt.Fprintf(w, "## Where it started\n\n")
	fmt.Fprintf(w, "Windows of %s from %s to %s; each node's normal range is %s.\n\n",
		msText(inc.WindowMS), clock(inc.StartNS), clock(inc.EndNS), inc.Baseline)
	fmt.Fprintf(w, "**Origin:** %s\n\n", originList(inc.Origins))
	fmt.Fprintln(w, "| Node | Left its range at | Metric | Normal | Then | z | Explained by |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---|")
	for i := range inc.Nodes {
		n := &inc.Nodes[i]
		at, metric, normal, then, z := changeText(n)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", n.Node, at, metric, normal, then, z, strings.Join(n.ExplainedBy, ", "))
	}
	if len(inc.Path) > 0 {
		fmt.Fprintf(w, "\n### Path\n\n")
		for i := range inc.Path {
			fmt.Fprintf(w, "%d. %s\n", i+1, pathLine(&inc.Path[i]))
		}
	}
	if len(inc.Infectable) > 0 {
		fmt.Fprintf(w, "\n### Most infectable\n\nEach node's service time +%s%% in replay (seeds %s).\n\n", g4(100*inc.Slowdown), seedRange(inc.Seeds))
		fmt.Fprintln(w, "| Node | Others infected | Root p99 Δ (ms) | Success Δ (pp) |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		for _, x := range inc.Infectable {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", x.Node, g4(x.Infected), g4(x.P99DeltaMS), g4(100*x.SuccessDelta))
		}
	}
	fmt.Fprintln(w)
}
