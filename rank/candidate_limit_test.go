package rank

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
	"cascade/testdata/shapes"
)

// limitModel is api → db: root requests at rate per second, each calling
// db fanOut times, parallelism par at a time (shared by api's requests
// when shared); change sets the limit under test.
func limitModel(rate float64, fanOut float64, par int, shared bool, change func(*cascade.Model)) *cascade.Model {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "limit",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: rate, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Service: cascade.Const(1), Overload: cascade.Overload{Threshold: 1}},
			{Name: "db", Replicas: 1, Service: cascade.Const(10), Overload: cascade.Overload{Threshold: 1}},
		},
		Edges: []cascade.Edge{{From: "api", To: "db", FanOut: cascade.Const(fanOut), Parallelism: par, SharedPool: shared, Propagation: 1}},
	}
	if change != nil {
		change(m)
	}
	return m
}

// TestLimitCandidates: every limit of the model (a node's pool, an
// edge's pool per request or shared, a queue cap, a rate limit, a
// breaker) gets a candidate that raises it and one that cuts it where
// the baseline replay shows it binds, and none where it does not. The
// lock of the fixture generator's lock-pool shape is a node pool of one
// slot: raised, not cut (there is nothing below one slot).
func TestLimitCandidates(t *testing.T) {
	db := func(f func(n *cascade.Node)) func(*cascade.Model) {
		return func(m *cascade.Model) { f(&m.Nodes[1]) }
	}
	tests := []struct {
		name      string
		model     func(t *testing.T) *cascade.Model
		raise     string // the raise's name and description, "" for none
		raiseDesc string
		cut       string
		cutDesc   string
	}{
		{"node pool binds", func(*testing.T) *cascade.Model {
			// 360 calls/s of 10 ms into 4 slots: 90% busy.
			return limitModel(360, 1, 1, false, db(func(n *cascade.Node) { n.Concurrency = 4 }))
		}, "pool×2 db", "db (bottleneck, ", "pool÷2 db", "db: pool 4→2 slots per replica (calls queued, "},
		{"node pool idle", func(*testing.T) *cascade.Model {
			return limitModel(5, 1, 1, false, db(func(n *cascade.Node) { n.Concurrency = 4 }))
		}, "", "", "", ""},
		{"lock-pool shape: one slot", func(t *testing.T) *cascade.Model {
			m, _ := remedyShape(t, shapes.Config{Shape: "lock-pool"})
			return m
		}, "pool×2 orders", "orders (bottleneck, ", "", ""},
		{"edge pool binds", func(*testing.T) *cascade.Model {
			return limitModel(5, 6, 2, false, nil)
		}, "pool×2 api->db", "api→db: per-request concurrency cap 2→4 (6 calls per request)",
			"pool÷2 api->db", "api→db: per-request concurrency cap 2→1 (6 calls per request)"},
		{"edge pool idle", func(*testing.T) *cascade.Model {
			return limitModel(5, 2, 2, false, nil)
		}, "", "", "", ""},
		{"shared pool binds", func(*testing.T) *cascade.Model {
			// 90 calls/s × 10 ms = 0.9 of 1 worker… of 2 workers here:
			// 180 calls/s hold 1.8 of 2 (90%).
			return limitModel(180, 1, 2, true, nil)
		}, "pool×2 api->db", "api→db: shared worker pool 2→4 (", "pool÷2 api->db", "api→db: shared worker pool 2→1 ("},
		{"shared pool idle", func(*testing.T) *cascade.Model {
			return limitModel(20, 1, 2, true, nil)
		}, "", "", "", ""},
		{"queue cap binds", func(*testing.T) *cascade.Model {
			return limitModel(150, 1, 1, false, db(func(n *cascade.Node) { n.Concurrency, n.QueueCap = 1, 4 }))
		}, "queue×2 db", "db: queue cap 4→8 per replica (the queue filled)", "queue÷2 db", "db: queue cap 4→2 per replica (the queue filled)"},
		{"queue cap idle", func(*testing.T) *cascade.Model {
			return limitModel(5, 1, 1, false, db(func(n *cascade.Node) { n.Concurrency, n.QueueCap = 1, 4 }))
		}, "", "", "", ""},
		{"rate limit binds", func(*testing.T) *cascade.Model {
			return limitModel(50, 1, 1, false, func(m *cascade.Model) { m.Entries[0].RateLimit = &cascade.RateLimit{RatePerSec: 20, Burst: 2} })
		}, "rate-limit×2 api", "api: rate limit 20/s→40/s, burst 2→4 (it turned requests away)",
			"rate-limit÷2 api", "api: rate limit 20/s→10/s, burst 2→1 (it turned requests away)"},
		{"rate limit idle", func(*testing.T) *cascade.Model {
			return limitModel(5, 1, 1, false, func(m *cascade.Model) { m.Entries[0].RateLimit = &cascade.RateLimit{RatePerSec: 200, Burst: 20} })
		}, "", "", "", ""},
		{"breaker binds", func(*testing.T) *cascade.Model {
			return limitModel(20, 1, 1, false, db(func(n *cascade.Node) {
				n.Overload.Base = 0.6
				n.Breaker = &cascade.Breaker{ErrorRate: 0.5, Window: 10, OpenMS: 500, HalfOpenProbes: 1}
			}))
		}, "breaker↑ db", "db: breaker opens at 50%→75% errors (it opened)", "breaker↓ db", "db: breaker opens at 50%→25% errors (it opened)"},
		{"breaker idle", func(*testing.T) *cascade.Model {
			return limitModel(20, 1, 1, false, db(func(n *cascade.Node) {
				n.Breaker = &cascade.Breaker{ErrorRate: 0.5, Window: 10, OpenMS: 500, HalfOpenProbes: 1}
			}))
		}, "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model(t)
			cfg := DefaultConfig()
			cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.SurgeFactor, cfg.TickCheck = 2, 10*time.Second, false, 0, false
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			rows := map[string]Row{}
			for _, r := range rep.Rows {
				rows[r.Candidate.Name] = r
			}
			for _, want := range []struct{ name, desc, what string }{{tc.raise, tc.raiseDesc, "raise"}, {tc.cut, tc.cutDesc, "cut"}} {
				if want.name == "" {
					continue
				}
				r, ok := rows[want.name]
				require.True(t, ok, "seeds %v: no %s %q among %v", rep.Seeds, want.what, want.name, names(rep.Rows))
				require.Contains(t, r.Candidate.Description, want.desc)
				require.NotEqual(t, Failed, r.Verdict, r.Error)
				cm, _, err := replay.Apply(m, r.Candidate.Scenario)
				require.NoError(t, err)
				require.NotEqual(t, m, cm, "the %s changes the model", want.what)
			}
			if tc.raise == "" && tc.cut == "" {
				// The limit of the case's name, which does not bind.
				prefixes := map[string][]string{"node": {"pool"}, "edge": {"pool"}, "shared": {"pool"},
					"queue": {"queue×2", "queue÷2"}, "rate": {"rate-limit×2", "rate-limit÷2"}, "breaker": {"breaker↑", "breaker↓"}}
				kind := strings.Fields(tc.name)[0]
				require.Contains(t, prefixes, kind)
				for _, r := range rep.Rows {
					for _, prefix := range prefixes[kind] {
						require.False(t, strings.HasPrefix(r.Candidate.Name, prefix+"×2 ") || strings.HasPrefix(r.Candidate.Name, prefix+"÷2 ") ||
							strings.HasPrefix(r.Candidate.Name, prefix+" "), "seeds %v: %q for a limit that does not bind", rep.Seeds, r.Candidate.Name)
					}
				}
			}
		})
	}
}

func names(rows []Row) []string {
	out := make([]string, len(rows))
	for i := range rows {
		out[i] = rows[i].Candidate.Name
	}
	return out
}

// TestFailureRise: a change that costs success names the node where the
// failures begin (followed down from the largest rise to the callee that
// accounts for it) and why they rose.
func TestFailureRise(t *testing.T) {
	db := func(f func(n *cascade.Node)) func(*cascade.Model) {
		return func(m *cascade.Model) { f(&m.Nodes[1]) }
	}
	m := limitModel(10, 1, 1, false, db(func(n *cascade.Node) { n.Concurrency, n.Overload.Slope, n.Overload.Threshold = 2, 0.5, 0.5 }))
	m.Edges[0].Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
	res := func(api, db cascade.NodeOutcome, dbc replay.NodeCounts) []*replay.Result {
		api.Name, db.Name, dbc.Name = "api", "db", "db"
		if api.Calls == 0 {
			api.Calls = 100
		}
		if db.Calls == 0 {
			db.Calls = 100
		}
		return []*replay.Result{{Outcome: cascade.Outcome{Roots: 100, Nodes: []cascade.NodeOutcome{api, db}},
			NodeCounts: []replay.NodeCounts{{Name: "api"}, dbc}}}
	}
	base := res(cascade.NodeOutcome{}, cascade.NodeOutcome{Failures: 1}, replay.NodeCounts{MeanLoad: 0.3, InFlightMax: 2})
	tests := []struct {
		name string
		cand []*replay.Result
		want *FailureRise
	}{
		{"overload", res(cascade.NodeOutcome{Failures: 10}, cascade.NodeOutcome{Failures: 20}, replay.NodeCounts{MeanLoad: 0.9}),
			&FailureRise{Node: "db", Baseline: 0.01, Candidate: 0.2,
				Mechanism: "more concurrency reaches db (mean load 0.3 → 0.9), which fails under load (its overload curve)"}},
		{"queue full", res(cascade.NodeOutcome{Failures: 10}, cascade.NodeOutcome{Failures: 11, Rejected: 10}, replay.NodeCounts{MeanLoad: 0.3}),
			&FailureRise{Node: "db", Baseline: 0.01, Candidate: 0.11, Mechanism: "db's queue fills and turns calls away"}},
		{"breaker", res(cascade.NodeOutcome{Failures: 10}, cascade.NodeOutcome{Failures: 11, Rejected: 10}, replay.NodeCounts{MeanLoad: 0.3, BreakerOpened: 3}),
			&FailureRise{Node: "db", Baseline: 0.01, Candidate: 0.11, Mechanism: "db's breaker opens more often (0 → 3 times a run) and turns calls away"}},
		{"timeouts", res(cascade.NodeOutcome{Failures: 10}, cascade.NodeOutcome{Failures: 11}, replay.NodeCounts{MeanLoad: 0.3, Timeouts: 10}),
			&FailureRise{Node: "db", Baseline: 0.01, Candidate: 0.11, Mechanism: "its callers give up on db more often (timeouts 0 → 0.1 per root request)"}},
		// db fails as often as before; api's retries save fewer of its
		// failures.
		{"retries save fewer", res(cascade.NodeOutcome{Failures: 5}, cascade.NodeOutcome{Failures: 1}, replay.NodeCounts{MeanLoad: 0.3, InFlightMax: 4}),
			&FailureRise{Node: "api", Baseline: 0, Candidate: 0.05,
				Mechanism: "its calls to db fail it more often (db fails 1.0% of its calls either way; api's retries save fewer of them)"}},
		{"no rise", base, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := failureRise(m, base, tc.cand)
			if tc.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.want.Node, got.Node)
			require.InDelta(t, tc.want.Baseline, got.Baseline, 1e-9)
			require.InDelta(t, tc.want.Candidate, got.Candidate, 1e-9)
			require.Equal(t, tc.want.Mechanism, got.Mechanism)
		})
	}
}
