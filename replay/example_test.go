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
