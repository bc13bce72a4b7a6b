package rank

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
	"cascade/replay"
)

// hotrodModel is graph's model of the bundled HotROD capture, as
// `cascade graph testdata/hotrod-baseline/traces-otlp.json.gz` writes it.
func hotrodModel(t *testing.T) *cascade.Model {
	t.Helper()
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{"../testdata/hotrod-baseline/traces-otlp.json.gz"}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(t, err)
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(cfg.Out, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, nil)
	require.NoError(t, err)
	return res.Model
}

// TestHotRODDatabaseFixed: with HotROD's database change made
// (--fix-disable-db-conn-mutex --fix-db-query-delay 100ms: no lock around
// the query, so mysql's one slot becomes no limit, and a mean query delay
// of 100 ms instead of the default 300 ms, its standard deviation a tenth
// of it either way, so the service time scales by a third), the route
// worker pool on frontend→route (3 workers for 10 calls per dispatch) is
// what holds dispatches back, and rank puts its raise in its top 2.
func TestHotRODDatabaseFixed(t *testing.T) {
	m := hotrodModel(t)
	e := slices.IndexFunc(m.Edges, func(e cascade.Edge) bool { return e.From == "frontend" && e.To == "route" })
	require.GreaterOrEqual(t, e, 0)
	require.True(t, m.Edges[e].SharedPool, "the route worker pool is a shared pool on frontend→route")
	require.Equal(t, 3, m.Edges[e].Parallelism)
	require.Equal(t, 1, m.Node("mysql").Concurrency, "the lock is one slot at mysql")

	fixed, _, err := replay.Apply(m, &cascade.Scenario{Name: "database fixed", Nodes: map[string]json.RawMessage{
		"mysql": json.RawMessage(`{"concurrency": 0, "service_ms": {"scale": 0.3333333333}}`),
	}})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Seeds = 4
	cfg.FitCheck = false // the model was changed on purpose: its capture is the old database's
	rep, err := Run(context.Background(), fixed, cfg)
	require.NoError(t, err)
	for _, r := range rep.Rows[:min(5, len(rep.Rows))] {
		t.Logf("seeds %v: %d %s %+.3f %s", rep.Seeds, r.Rank, r.Verdict, r.Gain, r.Candidate.Description)
	}
	i := slices.IndexFunc(rep.Rows, func(r Row) bool { return r.Candidate.Name == "pool×2 frontend->route" })
	require.GreaterOrEqual(t, i, 0, "no raise of the route pool")
	require.Equal(t, "frontend→route: shared worker pool 3→6 (10 calls per request)", rep.Rows[i].Candidate.Description)
	require.Equal(t, Win, rep.Rows[i].Verdict)
	require.LessOrEqual(t, rep.Rows[i].Rank, 2, "the route pool raise ranks in the top 2")
}

// TestHotRODTwiceTheLoad: HotROD's model replayed at twice the captured
// load (6.66 dispatches/s, Poisson) runs past mysql's one slot. The
// dispatches still queued when the arrivals and the drain end are not
// successes (the real app completed 195 of 408 in 60 s), and the replay
// is called overloaded, with the backlog's growth. At the captured load
// it keeps up and everything ends in the drain.
func TestHotRODTwiceTheLoad(t *testing.T) {
	m := hotrodModel(t)
	tests := []struct {
		name       string
		traffic    *cascade.Traffic
		overloaded bool
		successMin float64
		successMax float64
	}{
		{"captured load", m.ObservedTraffic(), false, 1, 1},
		{"twice the load", &cascade.Traffic{Kind: cascade.TrafficPoisson, RatePerSec: 6.66}, true, 0.3, 0.7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := replay.DefaultConfig()
			cfg.Traffic = tc.traffic
			res, err := replay.Replay(m, cfg)
			require.NoError(t, err)
			o := res.Outcome
			t.Logf("offered %d, succeeded %d, unfinished %d, success %.3f, backlog %+.2f/s, drain %.0f ms",
				o.Roots, o.Succeeded, o.Unfinished, o.SuccessRate, o.BacklogPerSec, o.DrainMS)
			require.Equal(t, tc.overloaded, o.Overloaded)
			require.GreaterOrEqual(t, o.SuccessRate, tc.successMin)
			require.LessOrEqual(t, o.SuccessRate, tc.successMax)
			require.Equal(t, o.Roots, o.Succeeded+res.Counts.Failed+o.Unfinished)
			require.InDelta(t, float64(o.Succeeded)/float64(o.Roots), o.SuccessRate, 1e-6, "success is of the offered")
			if tc.overloaded {
				require.Greater(t, o.BacklogPerSec, 2.0, "about 6.7/s offered against 3.4/s served")
				require.Positive(t, o.Unfinished)
			} else {
				require.Zero(t, o.Unfinished)
			}
		})
	}
}
