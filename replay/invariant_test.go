package replay

import (
	"testing"
	"time"

	"cascade"
)

// TestInvariants replays stressful models and checks the engine's
// bookkeeping after every event: queue lists match their lengths and
// hold only queued jobs, and slot counts match the jobs holding them.
func TestInvariants(t *testing.T) {
	seed002 := loadModel(t, "seed002.json")
	set, err := ParseSet(seed002, []string{"edge.dispatcher->worker.fan_out.value=8", "node.worker.overload.slope=0", "node.worker.queue_cap=50"})
	if err != nil {
		t.Fatal(err)
	}
	capped, _, err := Apply(seed002, set)
	if err != nil {
		t.Fatal(err)
	}
	storm := loadModel(t, "seed000.json")
	storm.Node("server").DeadlinePropagation = true
	storm.Node("server").QueueCap = 20
	storm.Node("server").Breaker = &cascade.Breaker{ErrorRate: 0.5, Window: 20, OpenMS: 100, HalfOpenProbes: 2}
	pool := fanout30()
	for i := range pool.Edges {
		pool.Edges[i].SharedPool = pool.Edges[i].Parallelism > 0
		pool.Edges[i].TimeoutMS = 3
		pool.Edges[i].Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
	}
	for i := range pool.Nodes {
		pool.Nodes[i].Concurrency = 2
		pool.Nodes[i].DeadlinePropagation = i%2 == 0
	}
	// The same graph with bulkheads on every other edge, two replicas
	// (least-loaded) per node, a fallback, and a priority split.
	remedies := fanout30()
	for i := range remedies.Edges {
		e := &remedies.Edges[i]
		e.SharedPool = e.Parallelism > 0
		e.TimeoutMS = 3
		e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
		if i%2 == 0 {
			e.Bulkhead = 1
		}
		e.Fallback = &cascade.Fallback{Probability: 0.5}
	}
	for i := range remedies.Nodes {
		n := &remedies.Nodes[i]
		n.Concurrency, n.Replicas, n.LoadBalancer = 2, 2, "least-loaded"
		n.QueueCap, n.ShedLowAt = 4, 1
		n.DeadlinePropagation = i%2 == 0
	}
	for i := range remedies.Entries {
		remedies.Entries[i].LowPriority = 0.5
	}
	tests := []struct {
		name    string
		m       *cascade.Model
		traffic *cascade.Traffic
	}{
		{"seed002 capped queue under a surge", capped, &cascade.Traffic{RatePerSec: 1200, Surges: []cascade.Surge{{AtMS: 1000, ForMS: 1000, Factor: 1.5}}}},
		{"seed000 storm with cancellation, cap and breaker", storm, &cascade.Traffic{RatePerSec: 150}},
		{"fan-out graph with pools, timeouts and retries", pool, &cascade.Traffic{RatePerSec: 100}},
		{"the same with bulkheads, replicas, fallbacks and a priority split", remedies, &cascade.Traffic{RatePerSec: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Duration = 3 * time.Second
			cfg.Tick = 10 * time.Microsecond
			cfg.Traffic = tc.traffic
			e, err := NewEngine(tc.m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var events int
			e.check = func(ev event) {
				events++
				for i := range e.nodes {
					n := &e.nodes[i]
					var busy, queued int32
					for r := range n.reps {
						rp := &n.reps[r]
						c := int32(0)
						for j := rp.qhead; j >= 0; j = e.jobs.at(j).qnext() {
							c++
							if st := e.jobs.at(j).state; st != jsQueued {
								t.Fatalf("seed 1, event %d %+v: node %s: queued job %d has state %d", events, ev, n.name, j, st)
							}
						}
						if c != rp.qlen || rp.busy < 0 || (rp.conc > 0 && rp.busy > rp.conc) {
							t.Fatalf("seed 1, event %d %+v: node %s replica %d: qlen %d, list %d, busy %d", events, ev, n.name, r, rp.qlen, c, rp.busy)
						}
						busy += rp.busy
						queued += rp.qlen
					}
					if busy != n.busy || queued != n.queued {
						t.Fatalf("seed 1, event %d: node %s: totals %d/%d, replicas %d/%d", events, n.name, n.busy, n.queued, busy, queued)
					}
				}
			}
			r := e.Run(1)
			if r.Counts.Calls == 0 || events == 0 {
				t.Fatal("nothing happened")
			}
			if tc.m == remedies && (r.Counts.Shed == 0 || r.Counts.Degraded == 0 || r.Counts.LowRoots == 0) {
				t.Fatalf("the remedies did not act: %+v", r.Counts)
			}
		})
	}
}
