package graph_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestShapesPropagation holds graph's p_uv (parent error given child
// error) to the generator's truth on every shape, and on error bursts at
// stock and at ledger: hard dependencies (1), an edge whose caller
// carries on (fan-out: 0) and a fallback that answers 60% of the failed
// calls (0.4). Where the truth has enough failed calls to read p, the
// estimate is within three binomial standard errors (plus 0.02); where
// no call failed, p is the default and says so. The captures that Nezha's
// CSV can hold are read from it too, where no span records a status and
// Spring's error dispatches are the only evidence of a failure.
//
// It also holds the volume a replay of the model makes on each edge: a
// request that fails on its own answers at once without calling its
// children, so the caller's requests × (1 − its overload base) × the mean
// of the edge's fan-out, zeros included, must give the logical calls the
// generator made (within 3%).
func TestShapesPropagation(t *testing.T) {
	var cfgs []shapes.Config
	for _, n := range shapes.Names() {
		cfgs = append(cfgs, shapes.Config{Shape: n})
	}
	for _, n := range []string{"pairs", "client-only", "server-only", "fan-out", "fallback"} {
		for _, f := range []string{"stock", "ledger"} {
			cfgs = append(cfgs, shapes.Config{Shape: n, Fail: f})
		}
	}
	// The same in Nezha's CSV, where only the error dispatches say which
	// requests failed.
	for _, c := range slices.Clone(cfgs) {
		if shapes.Writable(c.Shape, shapes.NezhaCSV) {
			c.Format = shapes.NezhaCSV
			cfgs = append(cfgs, c)
		}
	}
	for _, c := range cfgs {
		t.Run(c.Format+"/"+c.Shape+"/"+c.Fail, func(t *testing.T) {
			dir, truth := shapetest.Dataset(t, c)
			m := build(t, dir, graph.LevelService).Model
			callerRequests := int64(truth.Traces)
			for _, want := range truth.Edges {
				e := edge(t, m, want.From, want.To)
				what := want.From + " → " + want.To
				t.Logf("%-16s p %.3f (truth %.2f, %d failed logical calls) from %s", what, e.Propagation,
					want.Propagation, want.FailedLogical, e.Provenance["propagation"])
				switch n := float64(want.FailedLogical); {
				case n == 0:
					require.Equal(t, cascade.Default, e.Provenance["propagation"], what)
				case n >= 20:
					p := want.Propagation
					tol := 3*math.Sqrt(p*(1-p)/n) + 0.02
					require.InDelta(t, p, e.Propagation, tol, what)
					require.Equal(t, cascade.Observed, e.Provenance["propagation"], what)
				}
				var calls, reqs int64
				for k, c := range e.Observed.FanOutHistogram {
					calls += int64(k) * c
					reqs += c
				}
				base := m.Node(want.From).Overload.Base
				sim := float64(callerRequests) * (1 - base) * float64(calls) / float64(reqs)
				t.Logf("%-16s logical calls %d, the model's %.1f (base %.4f, fan-out histogram %v)", what,
					want.Logical, sim, base, e.Observed.FanOutHistogram)
				require.InEpsilon(t, float64(want.Logical), sim, 0.03, "%s: the model's volume", what)
				callerRequests = want.Attempts
			}
		})
	}
}
