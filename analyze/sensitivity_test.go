package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/rank"
	"cascade/report"
)

// TestSensitivity replays a model whose only retrying edge fails 30% of
// its attempts at random: with the limit unknown (2 attempts seen, 3
// replayed by default) the sensitivity replays it again at 2, where
// about 9% of the calls run out instead of 2.7%, and reports both, the
// default's being the ranking's baseline; with the limit observed there
// is nothing to replay.
func TestSensitivity(t *testing.T) {
	tests := []struct {
		name  string
		limit string
		want  int // sensitivities reported
	}{
		{"limit unknown", cascade.RetryLimitUnknown, 1},
		{"limit observed", cascade.RetryLimitObserved, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := retryModel(tc.limit)
			ss, r, cfg := sensitivityOf(t, m)
			require.Len(t, ss, tc.want)
			if tc.want == 0 {
				return
			}
			s := ss[0]
			require.Equal(t, "api->db", s.Edge)
			require.Equal(t, "retry.max_attempts", s.Field)
			require.Equal(t, r.Seeds, s.Seeds)
			require.Len(t, s.Runs, 2)
			def, seen := s.Runs[0], s.Runs[1]
			require.Equal(t, 3.0, def.Value)
			require.Equal(t, 2.0, seen.Value)
			require.Equal(t, r.Baseline[0].Metric("success_rate"), def.Success, "the default's answer is the ranking's baseline")
			t.Logf("success %.4f at 3 attempts, %.4f at 2 (seed %d)", def.Success.Mean, seen.Success.Mean, cfg.Seed)
			require.InDelta(t, 1-0.3*0.3*0.3, def.Success.Mean, 0.01)
			require.InDelta(t, 1-0.3*0.3, seen.Success.Mean, 0.015)
		})
	}
}

// retryModel is an entry api calling db once per request, db failing 30%
// of its calls at random, retried at once with 3 attempts; the limit is
// as the capture showed it (limit), after at most 2 attempts.
func retryModel(limit string) *cascade.Model {
	node := func(name string, base float64) cascade.Node {
		return cascade.Node{Name: name, Replicas: 1, Service: cascade.Const(1), Overload: cascade.Overload{Base: base, Threshold: 1}}
	}
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "retry",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 50, Share: 1}},
		Nodes:   []cascade.Node{node("api", 0), node("db", 0.3)},
		Edges: []cascade.Edge{{
			From: "api", To: "db", FanOut: cascade.Const(1), Parallelism: 1, Propagation: 1,
			Retry:    &cascade.Retry{Reactivation: 1, MaxAttempts: 3, Backoff: cascade.Backoff{Kind: cascade.BackoffNone}},
			Observed: &cascade.EdgeObserved{Calls: 1, RetryLimit: limit, MaxAttemptsSeen: 2},
		}},
	}
	if limit == cascade.RetryLimitObserved {
		m.Edges[0].Retry.MaxAttempts = 2
	}
	return m
}

// TestSensitivityPool replays a model whose entry api makes 10 calls of
// 10 ms to db through a pool of 3, at 20 requests a second: with the
// sharing unknown (replayed shared, the default) the sensitivity
// replays it again per request, where no request waits for another's
// calls, so p50 falls; with the sharing seen there is nothing to replay.
func TestSensitivityPool(t *testing.T) {
	tests := []struct {
		name    string
		sharing string
		want    bool // a shared_pool sensitivity reported
	}{
		{"sharing unknown", cascade.PoolSharingUnknown, true},
		{"sharing seen", cascade.PoolShared, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := poolModel(tc.sharing)
			ss, r, _ := sensitivityOf(t, m)
			if !tc.want {
				require.Empty(t, ss)
				return
			}
			require.NotEmpty(t, ss)
			s := ss[0]
			require.Equal(t, "api->db", s.Edge)
			require.Equal(t, "shared_pool", s.Field)
			require.Empty(t, s.WhatIf, "the baseline first")
			require.Contains(t, s.Why, "pool of 3")
			require.Len(t, s.Runs, 2)
			shared, perReq := s.Runs[0], s.Runs[1]
			require.Equal(t, 1.0, shared.Value)
			require.Equal(t, 0.0, perReq.Value)
			require.Equal(t, r.Baseline[0].Metric("latency_p50_ms"), shared.P50MS, "the default's answer is the ranking's baseline")
			t.Logf("p50 %.1f ms shared, %.1f per request", shared.P50MS.Mean, perReq.P50MS.Mean)
			// Per request, 10 calls on 3 slots take 4 rounds of 10 ms.
			require.InDelta(t, 40, perReq.P50MS.Mean, 3)
			require.Greater(t, shared.P50MS.Mean, perReq.P50MS.Mean+5, "a shared pool makes requests wait for each other")
		})
	}
}

// poolModel is an entry api making 10 calls of 10 ms to db through a
// pool of 3, replayed shared, at 20 requests a second; the capture showed
// the pool's sharing as sharing says.
func poolModel(sharing string) *cascade.Model {
	node := func(name string) cascade.Node {
		return cascade.Node{Name: name, Replicas: 1, Service: cascade.Const(0.01), Overload: cascade.Overload{Threshold: 1}}
	}
	db := node("db")
	db.Service = cascade.Const(10)
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "pool",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 20, Share: 1}},
		Nodes:   []cascade.Node{node("api"), db},
		Edges: []cascade.Edge{{
			From: "api", To: "db", FanOut: cascade.Const(10), Parallelism: 3, SharedPool: true, Propagation: 1,
			Observed: &cascade.EdgeObserved{Calls: 10, PoolSharing: sharing},
		}},
	}
}

// sensitivityOf ranks m with no derived candidates, surge or capacity
// sweep (4 seeds, 20 s) and returns the sensitivities analyze reports,
// with the ranking and its config.
func sensitivityOf(t *testing.T, m *cascade.Model) ([]report.Sensitivity, *rank.Report, rank.Config) {
	t.Helper()
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.TickCheck = 4, 20*time.Second, false
	cfg.SurgeFactor, cfg.Derive, cfg.Capacity = 0, false, false
	r, err := rank.Run(context.Background(), m, cfg)
	require.NoError(t, err)
	ss, err := sensitivity(context.Background(), m, cfg, r)
	require.NoError(t, err)
	return ss, r, cfg
}
