package rank

import (
	"context"
	"encoding/json"

	"cascade"
	"cascade/replay"
)

// This file is what the incident stage, which stands above rank, uses of
// it: the parallel replay runner and the scenario patches.

// Job is one model under one traffic, replayed over a run's seeds.
type Job struct {
	Model   *cascade.Model
	Traffic *cascade.Traffic
	// Seeds is how many seeds the job replays; 0 means Config.Seeds.
	Seeds int
	// Series keeps per-node time series in the results.
	Series bool
}

// Replays replays every job over its seeds (Config.Seed onwards), up to
// Config.Parallel replays at once, with Config's duration, tick, window
// and tier. out[i] holds job i's results in seed order, or nil when the
// job failed; errs[i] says why. The error is the context's, if it ended.
// Results do not depend on the parallelism.
func Replays(ctx context.Context, cfg Config, jobs []Job) (out [][]*replay.Result, errs []error, err error) {
	js := make([]job, len(jobs))
	for i, j := range jobs {
		js[i] = job{model: j.Model, traffic: j.Traffic, seeds: j.Seeds, series: j.Series}
	}
	return newRunner(cfg).run(ctx, js)
}

// NodePatch returns a scenario's node patches holding one merge patch for
// the node name.
func NodePatch(name string, patch map[string]any) map[string]json.RawMessage {
	return nodePatch(name, patch)
}

// SlowNode returns a node merge patch that makes n's service f times
// longer (f > 0), its observed tiers too.
func SlowNode(n *cascade.Node, f float64) map[string]any { return slowNode(n, f) }

// DistPatch returns a merge patch that replaces a distribution by d,
// nulling the fields d leaves out.
func DistPatch(d cascade.Dist) map[string]any { return replaceDist(d) }

// RawPatch marshals a merge patch.
func RawPatch(v any) json.RawMessage { return raw(v) }
