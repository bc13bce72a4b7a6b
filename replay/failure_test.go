package replay

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

// TestFailureProcess replays a callee that fails 20% of its calls, retried
// once at once by its caller, under three failure processes with the same
// share: independent (a retry fails again 20% of the time), a failure
// every 5th call (the retry, the next call, never fails: HotROD's redis)
// and runs of failures (the retry mostly fails too): regular above
// independent above bursty.
func TestFailureProcess(t *testing.T) {
	tests := []struct {
		name     string
		gaps     *cascade.Dist
		lo, hi   float64 // success rate bounds
		failRate float64 // the callee's failure share, ±0.02
	}{
		{"independent", nil, 0.94, 0.98, 0.2},
		{"every 5th call", &cascade.Dist{Kind: cascade.DistConst, Value: 5}, 0.999, 1, 0.2},
		// Gaps of 1 four times in five, else 21: mean 5, in runs of 5.
		{"in runs", &cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 1, 1, 1, 21}}, 0.85, 0.93, 0.2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := mnode("db", 1, 0, cascade.Const(1))
			db.Overload = cascade.Overload{Base: 0.2, Threshold: 1, Gaps: tc.gaps}
			e := medge("api", "db")
			e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
			m := mmodel("api", 50, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), db}, e)
			require.NoError(t, m.Validate())
			r := replayT(t, m)
			o, _ := nodeOf(r, "db")
			t.Logf("success %.4f, db failures %.4f of %d calls", r.SuccessRate, float64(o.Failures)/float64(o.Calls), o.Calls)
			require.GreaterOrEqual(t, r.SuccessRate, tc.lo)
			require.LessOrEqual(t, r.SuccessRate, tc.hi)
			require.InDelta(t, tc.failRate, float64(o.Failures)/float64(o.Calls), 0.02)
		})
	}
}

// TestFailureProcessReusedEngine holds an engine reused across runs to
// what a fresh one gives when a node has a failure process: the calls
// left until its next failure start afresh with each run.
func TestFailureProcessReusedEngine(t *testing.T) {
	db := mnode("db", 1, 0, exp(1))
	db.Overload = cascade.Overload{Base: 0.2, Threshold: 1, Gaps: &cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 1, 1, 1, 21}}}
	e := medge("api", "db")
	e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
	m := mmodel("api", 50, []cascade.Node{mnode("api", 1, 0, exp(1)), db}, e)
	require.NoError(t, m.Validate())
	cfg := DefaultConfig()
	cfg.Duration = 5 * time.Second
	cfg.Series = true
	fresh, err := NewEngine(m, cfg)
	require.NoError(t, err)
	want, err := json.Marshal(fresh.Run(2))
	require.NoError(t, err)
	reused, err := NewEngine(m, cfg)
	require.NoError(t, err)
	for _, s := range []uint64{1, 3, 4} {
		reused.Run(s)
		got, err := json.Marshal(reused.Run(2))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "seed 2 after seed %d on one engine", s)
	}
}
