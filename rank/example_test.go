package rank_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cascade"
	"cascade/rank"
	"cascade/replay"
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

// ExampleMerge ranks the example's candidates (9, under two traffics, 4
// seeds each: 72 replays) in two shards, as two
// machines would (each writing its partial result to a file the merge
// reads), and merges them into the report Run gives.
func ExampleMerge() {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Capacity = 4, 10*time.Second, false
	var parts []*rank.Partial
	for i := range 2 {
		c := cfg
		c.Shard = replay.Shard{Index: i, Count: 2}
		p, err := rank.RunShard(context.Background(), exampleModel(), c)
		if err != nil {
			panic(err)
		}
		data, err := p.Encode() // the partial file's bytes
		if err != nil {
			panic(err)
		}
		if p, err = rank.DecodePartial(data); err != nil {
			panic(err)
		}
		fmt.Printf("shard %s: %d of %d replays\n", p.Shard, len(p.Replays), p.Units)
		parts = append(parts, p)
	}
	merged, err := rank.Merge(context.Background(), parts, rank.MergeOptions{})
	if err != nil {
		panic(err)
	}
	single, err := rank.Run(context.Background(), exampleModel(), cfg)
	if err != nil {
		panic(err)
	}
	a, _ := json.Marshal(merged)
	b, _ := json.Marshal(single)
	fmt.Println("best:", merged.Rows[0].Candidate.Description)
	fmt.Println("the same bytes as Run:", string(a) == string(b))
	// Output:
	// shard 0/2: 36 of 72 replays
	// shard 1/2: 36 of 72 replays
	// best: db (bottleneck, 75% busy): 4→8 slots (pool 4→8; a second replica is the same capacity)
	// the same bytes as Run: true
}

// ExamplePrepare replays the example's baseline (two traffics, 4 seeds)
// once, and gives it to both shards of the ranking, which then replay
// only their candidates' replays; the merge is Run's report.
func ExamplePrepare() {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Capacity = 4, 10*time.Second, false
	pre, err := rank.Prepare(context.Background(), exampleModel(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Printf("prefix: %d traffics × %d seeds\n", len(pre.Prefix.Baseline), len(pre.Prefix.Baseline[0]))
	var parts []*rank.Partial
	for i := range 2 {
		c := cfg
		c.Shard, c.Prefix = replay.Shard{Index: i, Count: 2}, pre
		p, err := rank.RunShard(context.Background(), exampleModel(), c)
		if err != nil {
			panic(err)
		}
		parts = append(parts, p)
	}
	merged, err := rank.Merge(context.Background(), parts, rank.MergeOptions{})
	if err != nil {
		panic(err)
	}
	single, err := rank.Run(context.Background(), exampleModel(), cfg)
	if err != nil {
		panic(err)
	}
	a, _ := json.Marshal(merged)
	b, _ := json.Marshal(single)
	fmt.Println("the same bytes as Run:", string(a) == string(b))
	// Output:
	// prefix: 2 traffics × 4 seeds
	// the same bytes as Run: true
}
