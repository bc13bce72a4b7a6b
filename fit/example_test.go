package fit_test

import (
	"context"
	"fmt"

	"cascade"
	"cascade/fit"
	"cascade/replay"
)

// ExampleRun fits the propagation p of a web server that calls a
// database: the database failed 20% of its calls, the server 10% of its
// requests, so half of the database's failures reached the server's
// callers. The grid tries p from 0 to 1; replaying the observed arrivals
// at each value, p = 0.5 matches.
func ExampleRun() {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "web", RatePerSec: 100, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "db", Replicas: 1, Service: cascade.Const(2), Overload: cascade.Overload{Base: 0.2}},
			{Name: "web", Replicas: 1, Service: cascade.Const(5)},
		},
		Edges: []cascade.Edge{{From: "web", To: "db", FanOut: cascade.Const(1), Propagation: 1}},
	}
	w := fit.Window{LengthMS: 10_000, Nodes: []fit.NodeObs{
		{Name: "db", Requests: 1000, Failures: 200, P50MS: 2, P95MS: 2, P99MS: 2},
		{Name: "web", Requests: 1000, Failures: 100, P50MS: 7, P95MS: 7, P99MS: 7},
	}}
	for i := 0; i < 1000; i++ {
		w.Arrivals = append(w.Arrivals, replay.Arrival{AtMS: float64(10 * i)})
	}
	w.Roots = len(w.Arrivals)
	cfg := fit.DefaultConfig()
	cfg.Grid = "p=0:1:0.25"
	res, err := fit.Run(context.Background(), cfg, m, &fit.Observations{Windows: []fit.Window{w}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := res.Report
	fmt.Println("seed:", rep.Seed)
	fmt.Println("best:", rep.Best.Values)
	fmt.Println("p:", rep.Surface[0].Verdict)
	fmt.Println("calibrated web->db propagation:", res.Model.Edges[0].Propagation, res.Model.Edges[0].Provenance["propagation"])
	// Output:
	// seed: 1
	// best: p=0.5
	// p: sharp minimum
	// calibrated web->db propagation: 0.5 fit
}

// ExampleMerge runs ExampleRun's fit as two shards, as two machines would
// (each writing its partial result to a file the merge reads), and
// merges them into the result Run gives.
func ExampleMerge() {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "web", RatePerSec: 100, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "db", Replicas: 1, Service: cascade.Const(2), Overload: cascade.Overload{Base: 0.2}},
			{Name: "web", Replicas: 1, Service: cascade.Const(5)},
		},
		Edges: []cascade.Edge{{From: "web", To: "db", FanOut: cascade.Const(1), Propagation: 1}},
	}
	w := fit.Window{LengthMS: 10_000, Nodes: []fit.NodeObs{
		{Name: "db", Requests: 1000, Failures: 200, P50MS: 2, P95MS: 2, P99MS: 2},
		{Name: "web", Requests: 1000, Failures: 100, P50MS: 7, P95MS: 7, P99MS: 7},
	}}
	for i := 0; i < 1000; i++ {
		w.Arrivals = append(w.Arrivals, replay.Arrival{AtMS: float64(10 * i)})
	}
	w.Roots = len(w.Arrivals)
	obs := &fit.Observations{Windows: []fit.Window{w}}
	cfg := fit.DefaultConfig()
	cfg.Grid = "p=0:1:0.25"
	var parts []*fit.Partial
	for i := range 2 {
		c := cfg
		c.Shard = replay.Shard{Index: i, Count: 2}
		p, err := fit.RunShard(context.Background(), c, m, obs)
		if err != nil {
			fmt.Println(err)
			return
		}
		data, err := p.Encode() // the partial file's bytes
		if err != nil {
			fmt.Println(err)
			return
		}
		if p, err = fit.DecodePartial(data); err != nil {
			fmt.Println(err)
			return
		}
		var idx []int
		for _, pt := range p.Points {
			idx = append(idx, pt.Index)
		}
		fmt.Printf("shard %s: grid points %v of %d\n", p.Shard, idx, p.Units)
		parts = append(parts, p)
	}
	res, err := fit.Merge(context.Background(), parts, fit.MergeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("best:", res.Report.Best.Values)
	// Output:
	// shard 0/2: grid points [0 2 4] of 5
	// shard 1/2: grid points [1 3] of 5
	// best: p=0.5
}
