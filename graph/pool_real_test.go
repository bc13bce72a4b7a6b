package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// TestHiddenPoolNotify reads the pool nobody traces in the real notify
// chain (testdata/notify-rights: every span of rights in a run of the
// chain before its fix, every trace recorded): rights' database has 4
// slots of a fixed 40 ms query, and a request gives up at its 120 ms
// deadline (testdata/notify/README.md). The spans show only the waits;
// graph reads the slots, the query time and the deadline from them.
func TestHiddenPoolNotify(t *testing.T) {
	dir := ingested(t, "notify-rights", "notify-rights/traces.otlp.json.gz")
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), readSpans(dir), nil)
	require.NoError(t, err)
	n := res.Model.Node("rights")
	require.NotNil(t, n)
	require.Equal(t, 4, n.Concurrency, "the database's slots")
	require.Equal(t, graph.CapacityPool, n.Observed.CapacitySource)
	require.Equal(t, cascade.Inferred, n.Provenance["concurrency"])
	require.InDelta(t, 40.5, n.Tiers.P50, 1, "the query, without the waits: %+v", n.Tiers)
	require.Less(t, n.Tiers.P99, 60.0)
	require.Greater(t, n.Observed.LatencyP95MS, 90.0, "the spans hold the waits")
	require.True(t, n.DeadlinePropagation, "a request that gives up ends its work")
	require.Less(t, n.Overload.Base, n.Observed.ErrorRate/2, "the deadline's failures are the waits', not its own")
}
