package replay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// knobModel is a gateway whose calls into a worker pass a shared pool of
// 3 (HotROD's frontend→route), and a worker that calls a db behind a
// lock, at operation level names (svc:op).
func knobModel() *cascade.Model {
	m := mmodel("gw:/", 10, []cascade.Node{
		mnode("gw:/", 1, 0, cascade.Const(1)),
		mnode("worker:run", 1, 0, cascade.Const(2)),
		mnode("worker:check", 1, 0, cascade.Const(3)),
		mnode("db:query", 1, 1, cascade.Const(5)),
	}, medge("gw:/", "worker:run"), medge("gw:/", "worker:check"), medge("worker:run", "db:query"))
	m.Edges[0].Parallelism, m.Edges[0].SharedPool = 3, true
	m.Edges[2].Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 3}
	return m
}

// TestKnobs sets each what-if knob of docs/scenario.md both with --set
// and from a scenario file, and checks both give the same model with the
// knob's effect on it.
func TestKnobs(t *testing.T) {
	tests := []struct {
		name  string
		sets  []string
		yaml  string
		check func(t *testing.T, m *cascade.Model)
	}{
		{
			name: "pool behind a caller's shared pool",
			sets: []string{"node.worker:run.pool=100"},
			yaml: `nodes: {"worker:run": {pool: 100}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 100, m.Edges[0].Parallelism, "the pool the work waits in is the edge's")
				require.Zero(t, m.Node("worker:run").Concurrency, "no second copy of the pool on the node")
			},
		},
		{
			name: "pool of a node's own",
			sets: []string{"node.db:query.pool=4"},
			yaml: `nodes: {"db:query": {pool: 4}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 4, m.Node("db:query").Concurrency)
			},
		},
		{
			name: "a pool's acquire timeout and contention",
			sets: []string{"node.db:query.wait_cap_ms=100", "node.db:query.wait_slowdown=0.2"},
			yaml: `nodes: {"db:query": {wait_cap_ms: 100, wait_slowdown: 0.2}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 100.0, m.Node("db:query").WaitCapMS)
				require.Equal(t, 0.2, m.Node("db:query").WaitSlowdown)
			},
		},
		{
			name: "remove a lock",
			sets: []string{"node.db:query.pool=null"},
			yaml: `nodes: {"db:query": {concurrency: 0}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Zero(t, m.Node("db:query").Concurrency)
			},
		},
		{
			name: "service time ×F",
			sets: []string{"node.db:query.service_ms.scale=1.5"},
			yaml: `nodes: {"db:query": {service_ms: {scale: 1.5}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				d := m.Node("db:query").Service
				require.Equal(t, 7.5, d.MeanValue())
			},
		},
		{
			name: "service time +D ms on every operation of a service",
			sets: []string{"node.worker:*.service_ms.shift_ms=10"},
			yaml: `nodes: {"worker:*": {service_ms: {shift_ms: 10}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 12.0, m.Node("worker:run").Service.MeanValue())
				require.Equal(t, 13.0, m.Node("worker:check").Service.MeanValue())
				require.Equal(t, 5.0, m.Node("db:query").Service.MeanValue())
			},
		},
		{
			name: "timeout",
			sets: []string{"edge.worker:run->db:query.timeout_ms=50"},
			yaml: `edges: {"worker:run->db:query": {timeout_ms: 50}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 50.0, m.Edges[2].TimeoutMS)
			},
		},
		{
			name: "retries",
			sets: []string{"edge.*->db:query.retry.max_attempts=1"},
			yaml: `edges: {"*->db:query": {retry: {max_attempts: 1}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 1, m.Edges[2].Retry.MaxAttempts)
			},
		},
		{
			name: "replicas",
			sets: []string{"node.db:query.replicas=3"},
			yaml: `nodes: {"db:query": {replicas: 3}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 3, m.Node("db:query").Replicas)
			},
		},
		{
			name: "rate limit",
			sets: []string{"entry.gw:/.rate_limit={rate_per_sec: 5, burst: 2}"},
			yaml: `entries: {"gw:/": {rate_limit: {rate_per_sec: 5, burst: 2}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, &cascade.RateLimit{RatePerSec: 5, Burst: 2}, m.Entries[0].RateLimit)
			},
		},
		{
			name: "bulkhead",
			sets: []string{"edge.worker:run->db:query.bulkhead=1", "node.db:query.concurrency=2"},
			yaml: `{edges: {"worker:run->db:query": {bulkhead: 1}}, nodes: {"db:query": {concurrency: 2}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 1, m.Edges[2].Bulkhead)
				require.Equal(t, 2, m.Node("db:query").Concurrency)
			},
		},
		{
			name: "sync→async",
			sets: []string{"edge.gw:/->worker:check.async=true"},
			yaml: `edges: {"gw:/->worker:check": {async: true}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.True(t, m.Edges[1].Async)
			},
		},
		{
			name: "fallback",
			sets: []string{"edge.worker:run->db:query.fallback.probability=0.9"},
			yaml: `edges: {"worker:run->db:query": {fallback: {probability: 0.9}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, &cascade.Fallback{Probability: 0.9}, m.Edges[2].Fallback)
			},
		},
		{
			name: "priority split",
			sets: []string{"entry.gw:/.low_priority=0.3", "node.db:query.shed_low_at=5"},
			yaml: `{entries: {"gw:/": {low_priority: 0.3}}, nodes: {"db:query": {shed_low_at: 5}}}`,
			check: func(t *testing.T, m *cascade.Model) {
				require.Equal(t, 0.3, m.Entries[0].LowPriority)
				require.Equal(t, 5, m.Node("db:query").ShedLowAt)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := knobModel()
			set, err := ParseSet(base, tc.sets)
			require.NoError(t, err)
			fromSet, _, err := Apply(base, set)
			require.NoError(t, err)
			file, err := ParseScenario([]byte(tc.yaml))
			require.NoError(t, err)
			fromFile, _, err := Apply(base, file)
			require.NoError(t, err)
			tc.check(t, fromSet)
			tc.check(t, fromFile)
			a, _ := json.Marshal(fromSet)
			b, _ := json.Marshal(fromFile)
			require.JSONEq(t, string(b), string(a), "--set and the scenario file disagree")
			require.NotEqual(t, mustJSON(t, base), string(a), "the knob changed nothing")
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestKnobErrors(t *testing.T) {
	m := knobModel()
	for _, bad := range []string{
		`nodes: {"db:query": {pool: -1}}`,
		`nodes: {"db:query": {pool: 2.5}}`,
		`nodes: {"db:query": {pool: lots}}`,
		`nodes: {"db:query": {service_ms: {scale: -2}}}`,
		`nodes: {"nothing:*": {pool: 2}}`,
	} {
		s, err := ParseScenario([]byte(bad))
		require.NoError(t, err)
		_, _, err = Apply(m, s)
		require.Error(t, err, bad)
	}
}

// TestServiceKnobsReplay checks the replay draws the transformed service
// time: ×2 doubles a constant 5 ms, +3 ms adds to it, and a scale over a
// random shape scales its mean.
func TestServiceKnobsReplay(t *testing.T) {
	two, zero := 2.0, 0.0
	tests := []struct {
		name   string
		svc    cascade.Dist
		wantMS float64
	}{
		{"const", cascade.Const(5), 5},
		{"const ×2", cascade.Dist{Kind: cascade.DistConst, Value: 5, Scale: &two}, 10},
		{"const +3 ms", cascade.Dist{Kind: cascade.DistConst, Value: 5, ShiftMS: 3}, 8},
		{"const ×0", cascade.Dist{Kind: cascade.DistConst, Value: 5, Scale: &zero}, 0},
		{"const −8 ms clamps at 0", cascade.Dist{Kind: cascade.DistConst, Value: 5, ShiftMS: -8}, 0},
		{"exp ×2", cascade.Dist{Kind: cascade.DistExp, Mean: 2, Scale: &two}, 4},
		{"uniform +1 ms, floor after", cascade.Dist{Kind: cascade.DistUniform, Min: 1, Max: 3, ShiftMS: 1, Floor: 3.5}, 3.5625},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mmodel("a", 20, []cascade.Node{mnode("a", 1, 0, tc.svc)})
			r := replayT(t, m)
			o, c := nodeOf(r, "a")
			require.Positive(t, o.Calls)
			mean := c.LatencyMeanMS
			require.InDelta(t, tc.wantMS, mean, 0.06*tc.wantMS+0.11, "mean service time")
		})
	}
}
