package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// handModel is a small model with one of everything Derive looks at: a
// retrying client, a retrying edge, a fan-out edge, a replicated node, a
// node with a slot limit and observed rate and p99.
func handModel() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "hand",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 50, Share: 1, TimeoutMS: 500,
			Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3, Backoff: cascade.Backoff{Kind: cascade.BackoffFixed, BaseMS: 10}}}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Concurrency: 20, Service: cascade.Const(1)},
			{Name: "cache", Replicas: 3, Concurrency: 0, Service: cascade.Dist{Kind: cascade.DistExp, Mean: 2},
				Tiers: &cascade.Tiers{P50: 1, P95: 5, P99: 8, Mean: 2}},
			{Name: "db", Replicas: 2, Concurrency: 4, Service: cascade.Const(10),
				Observed: &cascade.NodeObserved{RatePerSec: 100, LatencyP99MS: 50}},
		},
		Edges: []cascade.Edge{
			{From: "api", To: "cache", FanOut: cascade.Const(8), Parallelism: 0, Propagation: 1, TimeoutMS: 20},
			{From: "api", To: "db", FanOut: cascade.Const(1), Parallelism: 1, Propagation: 1, TimeoutMS: 100,
				Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 2}},
		},
	}
}

func TestDeriveHandModel(t *testing.T) {
	m := handModel()
	ev := &Evidence{
		Queued:      map[string]bool{"db": true},
		Failing:     map[string]bool{"db": true, "cache": false},
		Zombies:     map[string]bool{"cache": true},
		Utilisation: map[string]float64{"api": 0.2, "db": 0.7},
		KneePerSec:  120,
		// The knee itself lies past the highest swept load before it:
		// the description names both, apart (issue 39: one number per
		// fact).
		CapacityKneePerSec: 125,
	}
	cands := Derive(m, ev, 0)
	want := []struct{ name, desc, kind string }{
		{"attempts=1 entry api", "client→api: max attempts 3→1 (no retries)", KindAttempts},
		{"attempts=2 entry api", "client→api: max attempts 3→2 (one retry)", KindAttempts},
		{"backoff entry api", "client→api: exponential backoff 100 ms + full jitter, capped at 1 s (was fixed 10 ms)", KindBackoff},
		{"budget entry api", "client→api: retry budget of 10% of calls (was unlimited)", KindBudget},
		{"cap=4 api->cache", "api→cache: at most 4 calls at once per request (was all at once)", KindCap},
		{"batch=8 api->cache", "api→cache: batch 8 calls into 1 (batches of 8, cache service ×4.5, timeout ×4.5)", KindBatching},
		{"attempts=1 api->db", "api→db: max attempts 2→1 (no retries)", KindAttempts},
		{"backoff api->db", "api→db: exponential backoff 100 ms + full jitter, capped at 1 s (was none)", KindBackoff},
		{"budget api->db", "api→db: retry budget of 10% of calls (was unlimited)", KindBudget},
		{"fallback api->db", "api→db: a fallback, api answers degraded (a default or cached answer) for 90% of the failed calls instead of failing (degraded answers count as successes)", KindFallback},
		{"deadline cache", "cache: deadline propagation (drop work whose caller gave up)", KindDeadline},
		{"lb=random cache", "cache: load balancing random (was round-robin)", KindBalancer},
		{"lb=least-loaded cache", "cache: load balancing least-loaded (was round-robin)", KindBalancer},
		{"lb=p2c cache", "cache: load balancing p2c (was round-robin)", KindBalancer},
		// Little: 100/s over 2 replicas = 50/s, W = 2 × 50 ms: L = 5, minus 4 slots.
		{"queue=1 db", "db: bounded queue of 1 per replica (Little: 50/s × 100 ms (2× p99) = 5 in system − 4 slots)", KindQueue},
		{"breaker db", "db: circuit breaker (opens at 50% errors over 20 calls, open 5 s, 3 probes)", KindBreaker},
		{"pool÷2 db", "db: pool 4→2 slots per replica (calls queued, 70% busy)", KindPool},
		{"lb=random db", "db: load balancing random (was round-robin)", KindBalancer},
		{"lb=least-loaded db", "db: load balancing least-loaded (was round-robin)", KindBalancer},
		{"lb=p2c db", "db: load balancing p2c (was round-robin)", KindBalancer},
		{"rate-limit api", "api: rate limit 120/s, burst 12 (the highest swept load below the capacity knee of 125/s)", KindRateLimit},
		{"replicas+1 db", "db (bottleneck, 70% busy): replicas 2→3", KindReplicas},
		{"pool×2 db", "db (bottleneck, 70% busy): pool 4→8 slots per replica", KindPool},
	}
	got := make([]struct{ name, desc, kind string }, len(cands))
	for i, c := range cands {
		got[i] = struct{ name, desc, kind string }{c.Name, c.Description, c.Kind}
	}
	require.Equal(t, want, got)
	// Every candidate applies to the model and changes it.
	for _, c := range cands {
		cm, _, err := replay.Apply(m, c.Scenario)
		require.NoError(t, err, c.Name)
		require.NotEqual(t, m, cm, c.Name)
		require.NotEmpty(t, c.Fields, c.Name)
	}
}

func TestDeriveDetails(t *testing.T) {
	m := handModel()
	byName := func(cs []Candidate, name string) *cascade.Model {
		for i := range cs {
			if cs[i].Name == name {
				out, _, err := replay.Apply(m, cs[i].Scenario)
				require.NoError(t, err)
				return out
			}
		}
		t.Fatalf("no candidate %q", name)
		return nil
	}
	cands := Derive(m, nil, 0)
	b := byName(cands, "batch=8 api->cache")
	require.Equal(t, cascade.Const(1), b.Edges[0].FanOut)
	require.Equal(t, 90.0, b.Edges[0].TimeoutMS)
	require.Equal(t, cascade.Dist{Kind: cascade.DistExp, Mean: 9}, b.Node("cache").Service)
	require.Equal(t, 36.0, b.Node("cache").Tiers.P99)
	bo := byName(cands, "backoff entry api")
	require.Equal(t, cascade.Backoff{Kind: cascade.BackoffFullJitter, BaseMS: 100, MaxMS: 1000}, bo.Entries[0].Retry.Backoff)
	require.Equal(t, 3, bo.Entries[0].Retry.MaxAttempts, "other retry fields are kept")
	bu := byName(cands, "budget api->db")
	require.Equal(t, &cascade.RetryBudget{Ratio: 0.1}, bu.Edges[1].Retry.Budget)

	// Without evidence there is no knee and no bottleneck, and every node
	// gets a breaker and deadline propagation; a latency target sizes the
	// queue instead of the p99.
	names := map[string]bool{}
	for _, c := range Derive(m, nil, 200) {
		names[c.Name] = true
	}
	require.True(t, names["breaker db"] && names["breaker cache"] && names["deadline api"])
	require.True(t, names["queue=6 db"], "50/s × 200 ms = 10 in system − 4 slots")
	require.False(t, names["rate-limit api"] || names["replicas+1 db"])
}

// TestDeriveSensible holds Derive to candidates that make sense: no
// batching of a fan-out below 2 (often retries read as repeats), one
// capacity change for a single-replica bottleneck (a second replica and a
// pool twice the size are the same slots), and a pool candidate that
// raises a caller's shared pool holding the same limit with it.
func TestDeriveSensible(t *testing.T) {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "front", RatePerSec: 10, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "front", Replicas: 1, Service: cascade.Const(1)},
			{Name: "redis", Replicas: 1, Service: cascade.Const(1)},
			{Name: "route", Replicas: 1, Concurrency: 3, Service: cascade.Const(5)},
		},
		Edges: []cascade.Edge{
			{From: "front", To: "redis", FanOut: cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 1, 1, 1, 2}}, Propagation: 1,
				Observed: &cascade.EdgeObserved{FanOutMean: 1.2}},
			{From: "front", To: "route", FanOut: cascade.Const(10), Parallelism: 3, SharedPool: true, Propagation: 1},
		},
	}
	ev := &Evidence{Utilisation: map[string]float64{"route": 0.9}}
	byKind := map[string][]Candidate{}
	for _, c := range Derive(m, ev, 0) {
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	for _, c := range byKind[KindBatching] {
		require.NotContains(t, c.Name, "front->redis", "batching a fan-out of 1.2")
	}
	require.Len(t, byKind[KindBatching], 1, "front->route's 10 calls can batch")
	require.Empty(t, byKind[KindReplicas], "one replica: replicas+1 is the pool candidate's twin")
	// The bottleneck's raise, the cut of its pool and the raise and cut
	// of front→route's shared pool (10 calls per request outnumber it).
	require.Len(t, byKind[KindPool], 4)
	p := byKind[KindPool][3]
	require.Equal(t, "route (bottleneck, 90% busy): 3→6 slots (pool 3→6; a second replica is the same capacity), and front→route's shared pool 3→6", p.Description)
	out, _, err := replay.Apply(m, p.Scenario)
	require.NoError(t, err)
	require.Equal(t, 6, out.Node("route").Concurrency)
	require.Equal(t, 6, out.Edges[1].Parallelism)
}
