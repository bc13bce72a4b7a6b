package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/rank"
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
			cfg := rank.DefaultConfig()
			cfg.Seeds, cfg.Duration, cfg.TickCheck = 4, 20*time.Second, false
			cfg.SurgeFactor, cfg.Derive, cfg.Capacity = 0, false, false
			r, err := rank.Run(context.Background(), m, cfg)
			require.NoError(t, err)
			ss, err := sensitivity(context.Background(), m, cfg, r)
			require.NoError(t, err)
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
