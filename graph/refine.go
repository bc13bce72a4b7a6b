package graph

import (
	"fmt"
	"slices"
	"strings"

	"cascade"
)

// Refine returns the trace-built result with what only the aggregates
// hold added: traces win wherever both have a node or an edge (their
// fan-out, retries, parallelism and tiers come from requests, the
// aggregates' only from counts), and the nodes and edges no trace showed
// (sampling left them out) come from the aggregates, with their
// provenance. The model's source says both were read. Neither input is
// modified.
func Refine(traces, aggregates *Result) *Result {
	m := *traces.Model
	m.Nodes = slices.Clone(m.Nodes)
	m.Edges = slices.Clone(m.Edges)
	src := cascade.ModelSource{}
	if traces.Model.Source != nil {
		src = *traces.Model.Source
	}
	src.From = cascade.FromBoth
	src.Notes = slices.Clone(src.Notes) // the traces' own (a sample's scale)
	if as := aggregates.Model.Source; as != nil {
		src.Series = as.Series
	}
	m.Source = &src
	res := &Result{Model: &m, Stats: traces.Stats, Seed: traces.Seed, Warnings: slices.Clone(traces.Warnings)}
	info := map[string]NodeInfo{}
	for _, n := range traces.Nodes {
		info[n.Name] = n
	}
	nodes := map[string]bool{}
	for _, n := range m.Nodes {
		nodes[n.Name] = true
	}
	type pair struct{ from, to string }
	edges := map[pair]bool{}
	for _, e := range m.Edges {
		edges[pair{e.From, e.To}] = true
	}
	var addedNodes, addedEdges []string
	byName := map[string]*cascade.Node{}
	for i := range aggregates.Model.Nodes {
		byName[aggregates.Model.Nodes[i].Name] = &aggregates.Model.Nodes[i]
	}
	addNode := func(name string) {
		if nodes[name] {
			return
		}
		nodes[name] = true
		if n := byName[name]; n != nil {
			m.Nodes = append(m.Nodes, *n)
		} else {
			m.Nodes = append(m.Nodes, cascade.Node{Name: name, Virtual: true, Replicas: 1, Service: cascade.Const(0), Observed: &cascade.NodeObserved{}})
		}
		addedNodes = append(addedNodes, name)
	}
	for _, e := range aggregates.Model.Edges {
		if edges[pair{e.From, e.To}] {
			continue
		}
		addNode(e.From)
		addNode(e.To)
		m.Edges = append(m.Edges, e)
		addedEdges = append(addedEdges, e.From+" → "+e.To)
	}
	for _, n := range aggregates.Model.Nodes {
		if !nodes[n.Name] && n.Observed != nil && n.Observed.Requests > 0 {
			addNode(n.Name)
		}
	}
	src.Notes = append(src.Notes, "traces win where traces and aggregates both hold a node or an edge")
	if len(addedNodes)+len(addedEdges) > 0 {
		src.Notes = append(src.Notes, fmt.Sprintf("from aggregates only (no trace showed them; their values carry provenance aggregate, inferred or default): nodes %s; edges %s",
			listOrNone(addedNodes), listOrNone(addedEdges)))
		src.Notes = append(src.Notes, aggregateNotes[1:4]...)
	}
	m.Sort()
	// analyze writes into the nodes' measurements: give them copies.
	for i := range m.Nodes {
		if o := m.Nodes[i].Observed; o != nil {
			c := *o
			m.Nodes[i].Observed = &c
		}
	}
	for _, n := range m.Nodes {
		ni, ok := info[n.Name]
		if !ok {
			ni = NodeInfo{Name: n.Name}
		}
		res.Nodes = append(res.Nodes, ni)
	}
	analyze(res, traces.Stats.Roots)
	slices.Sort(res.Warnings)
	return res
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
