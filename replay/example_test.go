package replay_test

import (
	"fmt"
	"time"

	"cascade"
	"cascade/replay"
)

// A service calling a database that is slower than its caller's
// deadline: every call times out, the database keeps working for nobody,
// and the client's three retries triple the load.
func ExampleReplay() {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 10, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Concurrency: 0, Service: cascade.Const(1)},
			{Name: "db", Replicas: 1, Concurrency: 4, Service: cascade.Const(80)},
		},
		Edges: []cascade.Edge{{
			From: "api", To: "db", FanOut: cascade.Const(1), Propagation: 1, TimeoutMS: 50,
			Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3, Backoff: cascade.Backoff{Kind: cascade.BackoffFixed, BaseMS: 10}},
		}},
	}
	cfg := replay.DefaultConfig()
	cfg.Duration = 10 * time.Second
	r, err := replay.Replay(m, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("seed %d: success %.0f%%, amplification %.1f, retry share %.2f, zombie share %.2f\n",
		r.Seed, 100*r.SuccessRate, r.Amplification, r.RetryShare, r.ZombieShare)
	// Output:
	// seed 1: success 0%, amplification 4.0, retry share 0.50, zombie share 0.34
}

// An API that publishes each request into a queue capped at 100 ready
// messages (drop-head) whose one consumer, with prefetch 1, works 40
// messages a second of the 50 offered: the API answers at once, the
// queue fills and drops its oldest messages, one flow in six fails, and
// those that succeed wait about two seconds in the queue.
func ExampleReplay_queue() {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 50, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Service: cascade.Const(1)},
			{Name: "jobs", Replicas: 1, Service: cascade.Const(0), Queue: &cascade.Queue{
				System: "rabbitmq", MaxLength: 100, Overflow: cascade.OverflowDropHead, Consumers: 1, Prefetch: 1}},
			{Name: "worker", Replicas: 1, Concurrency: 1, Service: cascade.Const(25)},
		},
		Edges: []cascade.Edge{
			{From: "api", To: "jobs", FanOut: cascade.Const(1), Propagation: 1},
			{From: "jobs", To: "worker", FanOut: cascade.Const(1), Propagation: 1},
		},
	}
	cfg := replay.DefaultConfig()
	cfg.Duration = 60 * time.Second
	// After the arrivals, 5 s for the queue's backlog to drain: a flow
	// still pending at the end would count against the flows' success.
	cfg.Drain = 5 * time.Second
	r, err := replay.Replay(m, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	q := r.Nodes[1].Queue // jobs
	fmt.Printf("seed %d: success %.0f%%, p50 %.0f ms; published %d, acked %d, dropped %d, peak ready %d; flows %.0f%% ok, %d unfinished, p50 %.0f ms\n",
		r.Seed, 100*r.SuccessRate, r.LatencyP50MS, q.Published, q.Acked, q.Dropped, r.Nodes[1].QueueMax,
		100*r.FlowSuccessRate, r.FlowsUnfinished, r.FlowP50MS)
	// Output:
	// seed 1: success 100%, p50 1 ms; published 2977, acked 2497, dropped 480, peak ready 100; flows 84% ok, 0 unfinished, p50 1964 ms
}
