package graph

import (
	"errors"
	"slices"

	gonumgraph "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/network"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
	"gonum.org/v1/gonum/graph/traverse"
)

// directed returns the model's call graph as a gonum directed graph whose
// node IDs are indices into m.Nodes. Self-calls are left out (a simple
// graph has no loops; the model marks them with SelfCall instead).
func directed(res *Result) *simple.DirectedGraph {
	m := res.Model
	g := simple.NewDirectedGraph()
	ids := make(map[string]int64, len(m.Nodes))
	for i := range m.Nodes {
		ids[m.Nodes[i].Name] = int64(i)
		g.AddNode(simple.Node(i))
	}
	for _, e := range m.Edges {
		if e.From == e.To {
			continue
		}
		g.SetEdge(g.NewEdge(simple.Node(ids[e.From]), simple.Node(ids[e.To])))
	}
	return g
}

// byID orders gonum nodes by ID, which is name order here.
func byID(ns []gonumgraph.Node) {
	slices.SortFunc(ns, func(a, b gonumgraph.Node) int {
		switch {
		case a.ID() < b.ID():
			return -1
		case a.ID() > b.ID():
			return 1
		}
		return 0
	})
}

// analyze runs the graph algorithms: strongly connected components and a
// topological order (topo.SortStabilized, so ties break by name), node
// betweenness (network.Betweenness), and breadth-first depth from the
// entry nodes; it writes the component and betweenness into each node's
// Observed and fills res.Order, res.Cycles and the infos' Depth and
// Amplification (requests per root request, given roots).
func analyze(res *Result, roots int64) {
	m := res.Model
	g := directed(res)
	sorted, err := topo.SortStabilized(g, byID)
	var cyclic topo.Unorderable
	if err != nil && !errors.As(err, &cyclic) {
		panic("graph: " + err.Error())
	}
	comp, next := 0, 0
	for _, n := range sorted {
		comp++
		members := []gonumgraph.Node{n}
		if n == nil {
			members = cyclic[next]
			next++
			names := make([]string, len(members))
			for i, c := range members {
				names[i] = m.Nodes[c.ID()].Name
			}
			res.Cycles = append(res.Cycles, names)
		}
		for _, c := range members {
			m.Nodes[c.ID()].Observed.Component = comp
			res.Order = append(res.Order, m.Nodes[c.ID()].Name)
		}
	}
	for id, v := range network.Betweenness(g) {
		m.Nodes[id].Observed.Betweenness = round6(v)
	}

	for i := range res.Nodes {
		res.Nodes[i].Depth = -1
		if roots > 0 {
			res.Nodes[i].Amplification = round6(float64(m.Nodes[i].Observed.Requests) / float64(roots))
		}
	}
	ids := make(map[string]int64, len(m.Nodes))
	for i := range m.Nodes {
		ids[m.Nodes[i].Name] = int64(i)
	}
	for _, e := range m.Entries {
		var bf traverse.BreadthFirst
		bf.Walk(g, simple.Node(ids[e.Node]), func(n gonumgraph.Node, d int) bool {
			info := &res.Nodes[n.ID()]
			if info.Depth < 0 || d < info.Depth {
				info.Depth = d
			}
			return false
		})
	}
}
