package rank_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cascade"
	"cascade/rank"
)

// A client that retries, and a database behind a pool of four slots.
func exampleModel() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 300, Share: 1, TimeoutMS: 100,
			Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3}}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Service: cascade.Const(1)},
			{Name: "db", Replicas: 1, Concurrency: 4, Service: cascade.Const(10)},
		},
		Edges: []cascade.Edge{{From: "api", To: "db", FanOut: cascade.Const(1), Propagation: 1}},
	}
}

func ExampleDerive() {
	for _, c := range rank.Derive(exampleModel(), nil, 0) {
		fmt.Println(c.Description)
	}
	// Output:
	// client→api: max attempts 3→1 (no retries)
	// client→api: max attempts 3→2 (one retry)
	// client→api: exponential backoff 100 ms + full jitter, capped at 1 s (was none)
	// client→api: retry budget of 10% of calls (was unlimited)
	// api: deadline propagation (drop work whose caller gave up)
	// db: circuit breaker (opens at 50% errors over 20 calls, open 5 s, 3 probes)
	// db: deadline propagation (drop work whose caller gave up)
	// db: pool 4→8 slots per replica (without a baseline replay to show where it binds)
	// db: pool 4→2 slots per replica (without a baseline replay to show where it binds)
}

func ExampleRun() {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.Derive = 4, 10*time.Second, false, false
	cfg.Scenarios = []*cascade.Scenario{
		{Name: "pool×2", Description: "db: pool 4→8", Nodes: map[string]json.RawMessage{"db": json.RawMessage(`{"concurrency": 8}`)}},
		{Name: "nothing", Description: "db: an empty patch", Nodes: map[string]json.RawMessage{"db": json.RawMessage(`{}`)}},
	}
	rep, err := rank.Run(context.Background(), exampleModel(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("seeds", rep.Seeds)
	for _, r := range rep.Rows {
		fmt.Printf("%d %s: %s\n", r.Rank, r.Candidate.Description, r.Verdict)
	}
	// Output:
	// seeds [1 2 3 4]
	// 1 db: pool 4→8: win
	// 0 db: an empty patch: no measurable effect
}
