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
