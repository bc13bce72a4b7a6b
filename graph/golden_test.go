package graph_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
	"cascade/internal/testutil"
)

// TestGolden renders the HotROD graph in every output format, at service
// and operation level.
func TestGolden(t *testing.T) {
	for _, level := range []graph.Level{graph.LevelService, graph.LevelOperation} {
		res := build(t, hotrodDataset(t, "otlp"), level)
		name := "hotrod-" + string(level)
		renders := []struct {
			ext    string
			render func(*bytes.Buffer) error
		}{
			{"json", func(b *bytes.Buffer) error {
				data, err := cascade.EncodeModel(res.Model)
				b.Write(data)
				return err
			}},
			{"table", func(b *bytes.Buffer) error { return graph.WriteTable(b, res) }},
			{"dot", func(b *bytes.Buffer) error { return graph.WriteDOT(b, res.Model) }},
			{"mermaid", func(b *bytes.Buffer) error { return graph.WriteMermaid(b, res.Model) }},
		}
		for _, r := range renders {
			t.Run(name+"."+r.ext, func(t *testing.T) {
				var b bytes.Buffer
				require.NoError(t, r.render(&b))
				testutil.Golden(t, name+"."+r.ext, b.Bytes())
			})
		}
	}
}

// TestRenderHandWritten renders a model without observations, as a user
// might write it.
func TestRenderHandWritten(t *testing.T) {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 100, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 2, Concurrency: 16, Service: cascade.Const(5)},
			{Name: `db "main"`, Virtual: true, Replicas: 1, Concurrency: 4, Service: cascade.Const(20)},
			{Name: "queue|audit", Replicas: 1, Service: cascade.Const(1)},
		},
		Edges: []cascade.Edge{
			{From: "api", To: `db "main"`, FanOut: cascade.Const(3), Parallelism: 0, Propagation: 1,
				Retry: &cascade.Retry{Reactivation: 0.5, MaxAttempts: 3, Backoff: cascade.Backoff{Kind: cascade.BackoffNone}}},
			{From: "api", To: "queue|audit", Async: true, FanOut: cascade.Const(1), Parallelism: 1, Propagation: 0},
		},
	}
	require.NoError(t, m.Validate())
	var dot, mermaid bytes.Buffer
	require.NoError(t, graph.WriteDOT(&dot, m))
	require.NoError(t, graph.WriteMermaid(&mermaid, m))
	testutil.Golden(t, "handwritten.dot", dot.Bytes())
	testutil.Golden(t, "handwritten.mermaid", mermaid.Bytes())
	require.Equal(t, 9.0, graph.Amplification(&m.Edges[0]))
}
