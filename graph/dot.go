package graph

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"cascade"
)

// edgeLabel returns the figures an edge is labelled with in DOT and
// Mermaid: calls, fan-out (per caller request that made the call, with the
// parallelism when calls run side by side), retry share and error rate;
// without observations, the model's fan-out mean and retry policy.
func edgeLabel(e *cascade.Edge) []string {
	o := e.Observed
	mean := e.FanOut.MeanValue()
	if o != nil && o.ParentRequests > 0 {
		mean = o.FanOutMean
	}
	fan := "fan-out " + num(mean)
	switch {
	case e.Parallelism == 0:
		fan += " (parallel)"
	case e.Parallelism > 1:
		fan += fmt.Sprintf(" (parallel %d)", e.Parallelism)
	}
	if o == nil {
		l := []string{fan}
		if r := e.Retry; r != nil {
			l = append(l, fmt.Sprintf("retry r=%s ×%d", num(r.Reactivation), r.MaxAttempts))
		}
		return l
	}
	return []string{
		fmt.Sprintf("calls %d", o.Calls),
		fan,
		"retry " + pct(o.RetryShare),
		"err " + pct(o.ErrorRate),
	}
}

// nodeLabel returns a node's label lines.
func nodeLabel(n *cascade.Node) []string {
	l := []string{Title(n.Name)}
	if o := n.Observed; o != nil {
		l = append(l, fmt.Sprintf("%d req, %s/s, err %s", o.Requests, num(o.RatePerSec), pct(o.ErrorRate)))
	}
	switch {
	case n.Concurrency == 0 && n.Observed != nil && n.Observed.PeakInFlight > 0:
		l = append(l, fmt.Sprintf("unbounded (peak %d in flight)×%d", n.Observed.PeakInFlight, n.Replicas))
	case n.Concurrency == 0:
		l = append(l, fmt.Sprintf("unbounded×%d", n.Replicas))
	case n.Observed != nil && n.Observed.CapacityProven:
		l = append(l, fmt.Sprintf("capacity %d×%d, proven", n.Concurrency, n.Replicas))
	default:
		l = append(l, fmt.Sprintf("capacity %d×%d", n.Concurrency, n.Replicas))
	}
	return l
}

// dotQuote quotes s as a DOT string.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteDOT writes the model as a Graphviz digraph: entry nodes double
// bordered, virtual nodes as cylinders, queues as arrows (cds),
// asynchronous edges dashed, edges labelled with calls, fan-out, retry
// share and error rate.
func WriteDOT(w io.Writer, m *cascade.Model) error {
	bw := bufio.NewWriter(w)
	entry := map[string]bool{}
	for _, e := range m.Entries {
		entry[e.Node] = true
	}
	fmt.Fprintf(bw, "digraph cascade {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n")
	for i := range m.Nodes {
		n := &m.Nodes[i]
		attrs := []string{"label=" + dotQuote(strings.Join(nodeLabel(n), "\n"))}
		if n.Virtual {
			attrs = append(attrs, "shape=cylinder")
		}
		if n.Queue != nil {
			attrs = append(attrs, "shape=cds")
		}
		if entry[n.Name] {
			attrs = append(attrs, "peripheries=2")
		}
		fmt.Fprintf(bw, "  %s [%s];\n", dotQuote(n.Name), strings.Join(attrs, ", "))
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		attrs := []string{"label=" + dotQuote(strings.Join(edgeLabel(e), "\n"))}
		if e.Async {
			attrs = append(attrs, "style=dashed")
		}
		if a := Amplification(e); a > 1 {
			attrs = append(attrs, fmt.Sprintf("penwidth=%s", num(min(1+a/4, 6))))
		}
		fmt.Fprintf(bw, "  %s -> %s [%s];\n", dotQuote(e.From), dotQuote(e.To), strings.Join(attrs, ", "))
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}
