package incident

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cascade"
	"cascade/internal/numfmt"
	"cascade/replay"
)

// Infectability is how far a small slowdown of one node spreads in
// replay.
type Infectability struct {
	// Node is the slowed node.
	Node string `json:"node"`
	// Infected is the mean number of other nodes infected in the slowed
	// replay that were not in the baseline replay of the same seed.
	Infected float64 `json:"infected"`
	// P99DeltaMS is the mean rise of the root requests' p99 latency.
	P99DeltaMS float64 `json:"p99_delta_ms"`
	// SuccessDelta is the mean change of the root success rate.
	SuccessDelta float64 `json:"success_delta"`
}

// infectability slows each node's service by Config.Slowdown in
// turn, replays the model at its entry rates over the seeds, and ranks
// the nodes by the other nodes they newly infect, then by the root p99
// they add.
func infectability(ctx context.Context, m *cascade.Model, cfg Config) ([]Infectability, []uint64, error) {
	base, _, err := replay.Apply(m)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	rc := replay.BatchSettings{Seed: cfg.Seed, Seeds: cfg.Seeds, Parallel: cfg.Parallel, Duration: cfg.Duration,
		Tick: cfg.Tick, Window: time.Second}
	// Under the load the traces showed: a closed loop slows with its
	// servers, an open load does not.
	t := base.ObservedTraffic()
	jobs := []replay.BatchJob{{Model: base, Traffic: t}}
	names := make([]string, 0, len(base.Nodes))
	for i := range base.Nodes {
		n := &base.Nodes[i]
		sm, _, err := replay.Apply(base, &cascade.Scenario{Nodes: replay.NodePatch(n.Name, replay.SlowNode(n, 1+cfg.Slowdown))})
		if err != nil {
			return nil, nil, fmt.Errorf("slow %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
		jobs = append(jobs, replay.BatchJob{Model: sm, Traffic: t})
	}
	res, errs, err := replay.NewBatch(rc).Run(ctx, jobs)
	if err != nil {
		return nil, nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("infectability: %w", err)
	}
	b := res[0]
	out := make([]Infectability, len(names))
	for i, name := range names {
		inf := Infectability{Node: name}
		k := float64(len(b))
		for s, r := range res[i+1] {
			was := map[string]bool{}
			for _, n := range b[s].Nodes {
				was[n.Name] = n.Infected
			}
			for _, n := range r.Nodes {
				if n.Name != name && n.Infected && !was[n.Name] {
					inf.Infected += 1 / k
				}
			}
			inf.P99DeltaMS += (r.LatencyP99MS - b[s].LatencyP99MS) / k
			inf.SuccessDelta += (r.SuccessRate - b[s].SuccessRate) / k
		}
		inf.Infected, inf.P99DeltaMS, inf.SuccessDelta = numfmt.Round3(inf.Infected), numfmt.Round3(inf.P99DeltaMS), numfmt.Round3(inf.SuccessDelta)
		out[i] = inf
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Infected != out[j].Infected {
			return out[i].Infected > out[j].Infected
		}
		return out[i].P99DeltaMS > out[j].P99DeltaMS
	})
	seeds := make([]uint64, rc.Seeds)
	for i := range seeds {
		seeds[i] = rc.Seed + uint64(i)
	}
	return out, seeds, nil
}
