package graph

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"cascade"
)

// mermaidText escapes s for a quoted Mermaid label.
func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "|", "#124;")
	return r.Replace(s)
}

// WriteMermaid writes the model as a Mermaid flowchart: nodes n0, n1, …
// in model order labelled with their names, entry nodes as stadiums,
// virtual nodes as cylinders, asynchronous edges dotted, edges labelled
// with calls, fan-out, retry share and error rate.
func WriteMermaid(w io.Writer, m *cascade.Model) error {
	bw := bufio.NewWriter(w)
	entry := map[string]bool{}
	for _, e := range m.Entries {
		entry[e.Node] = true
	}
	ids := make(map[string]string, len(m.Nodes))
	fmt.Fprintf(bw, "flowchart LR\n")
	for i := range m.Nodes {
		n := &m.Nodes[i]
		id := fmt.Sprintf("n%d", i)
		ids[n.Name] = id
		label := `"` + mermaidText(strings.Join(nodeLabel(n), "<br/>")) + `"`
		label = strings.ReplaceAll(label, "#lt;br/#gt;", "<br/>")
		switch {
		case n.Virtual:
			fmt.Fprintf(bw, "  %s[(%s)]\n", id, label)
		case entry[n.Name]:
			fmt.Fprintf(bw, "  %s([%s])\n", id, label)
		default:
			fmt.Fprintf(bw, "  %s[%s]\n", id, label)
		}
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		arrow := "-->"
		if e.Async {
			arrow = "-.->"
		}
		from, to := ids[e.From], ids[e.To]
		if from == "" || to == "" {
			return fmt.Errorf("edges[%d]: %s → %s names an unknown node", i, e.From, e.To)
		}
		fmt.Fprintf(bw, "  %s %s|\"%s\"| %s\n", from, arrow, mermaidText(strings.Join(edgeLabel(e), " · ")), to)
	}
	return bw.Flush()
}
