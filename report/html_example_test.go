package report_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"cascade"
	"cascade/rank"
	"cascade/report"
)

// ExampleAnalysisHTML ranks remediations for a retrying client in front
// of a database of four slots and renders the page: one self-contained
// HTML document whose charts are inline SVG.
func ExampleAnalysisHTML() {
	m := &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "small",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 330, Share: 1, TimeoutMS: 60,
			Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3}}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Service: cascade.Const(1)},
			{Name: "db", Replicas: 1, Concurrency: 4, Service: cascade.Dist{Kind: cascade.DistExp, Mean: 10}},
		},
		Edges: []cascade.Edge{{From: "api", To: "db", FanOut: cascade.Const(1), Propagation: 1}},
	}
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.CapacityPoints = 2, 5*time.Second, 4
	rep, err := rank.Run(context.Background(), m, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := &report.Analysis{Version: report.AnalysisVersion, Seed: cfg.Seed, Model: m, Rank: rep}
	var page bytes.Buffer
	if err := report.AnalysisHTML(&page, a); err != nil {
		fmt.Println(err)
		return
	}
	s := page.String()
	fmt.Println(strings.HasPrefix(s, "<!DOCTYPE html>"))
	fmt.Println(strings.Contains(s, "Seed <code>1</code>"))
	fmt.Println("charts:", strings.Count(s, "<svg "))
	fmt.Println("external references:", strings.Count(s, `src="http`)+strings.Count(s, `href="http`))
	// Output:
	// true
	// true
	// charts: 2
	// external references: 0
}
