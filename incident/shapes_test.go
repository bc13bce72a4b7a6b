package incident

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestShapesIncident slows stock's own work (×3 from the middle of a two
// minute capture) in every fixture shape and checks that the incident
// pass names stock first: not orders, which waits for it, nor ledger,
// which it calls. The normal range is the capture's own first windows.
func TestShapesIncident(t *testing.T) {
	for _, name := range shapes.Names() {
		t.Run(name, func(t *testing.T) {
			n := int(shapes.Rate(name) * 120)
			dir, _ := shapetest.Dataset(t, shapes.Config{Shape: name, Traces: n, Slow: "stock", SlowFactor: 3})
			inc := shapeIncident(t, dir)
			t.Logf("origins %v", inc.Origins)
			require.NotEmpty(t, inc.Origins, "%+v", inc.Nodes)
			require.Equal(t, "stock", inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
		})
	}
}

// TestShapesHealthy checks that a capture without a fault reports no
// change at any node.
func TestShapesHealthy(t *testing.T) {
	for _, name := range shapes.Names() {
		t.Run(name, func(t *testing.T) {
			n := int(shapes.Rate(name) * 120)
			dir, _ := shapetest.Dataset(t, shapes.Config{Shape: name, Traces: n})
			inc := shapeIncident(t, dir)
			require.Empty(t, inc.Origins, "%+v", brief(inc))
		})
	}
}

// shapeIncident runs the incident pass on a dataset as `cascade rank
// MODEL --incident DATASET` does, with the model graph builds from the
// same dataset (without the infectability replays, which do not move
// the origins).
func shapeIncident(t *testing.T, dir string) *Incident {
	t.Helper()
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, nil)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Slowdown = 0
	inc, err := RootCause(context.Background(), src, nil, res.Model, cfg)
	require.NoError(t, err)
	return inc
}

// shapeIncidentRef is shapeIncident against the fault-free capture in
// refDir.
func shapeIncidentRef(t *testing.T, dir, refDir string) *Incident {
	t.Helper()
	spans := func(d string) cascade.SpanSource {
		return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(d, fn) }
	}
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), spans(dir), nil)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Slowdown = 0
	inc, err := RootCause(context.Background(), spans(dir), spans(refDir), res.Model, cfg)
	require.NoError(t, err)
	return inc
}

func brief(inc *Incident) []NodeChange {
	out := make([]NodeChange, len(inc.Nodes))
	for i, n := range inc.Nodes {
		n.Series = nil
		out[i] = n
	}
	return out
}
