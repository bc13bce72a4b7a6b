package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// fanOutCandidates adds a concurrency cap and batching for an edge whose
// calls fan out.
func fanOutCandidates(m *cascade.Model, e *cascade.Edge, key, label string, callers []string, add func(Candidate)) {
	mean := e.FanOut.MeanValue()
	if e.Observed != nil && e.Observed.FanOutMean > 0 {
		mean = e.Observed.FanOutMean
	}
	if mean <= 1 || e.Async {
		return
	}
	// Concurrency cap where there is none: half the parallelism seen (at
	// least 1). An edge with a pool has its cut among the limits
	// (edgeLimits), where it binds.
	par := mean
	if e.Observed != nil && e.Observed.ObservedParallel > 0 {
		par = e.Observed.ObservedParallel
	}
	if cap := max(1, int(math.Floor(par/2))); e.Parallelism == 0 && float64(cap) < par {
		add(Candidate{
			Name:        fmt.Sprintf("cap=%d %s", cap, key),
			Description: fmt.Sprintf("%s: at most %d calls at once per request (was all at once)", label, cap),
			Kind:        KindCap,
			Scenario:    &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"parallelism": cap})}},
		})
	}
	// Batching, when this edge is the callee's only caller (the callee's
	// service time changes for every caller) and there are at least two
	// calls to batch: a mean below 2 is mostly single calls (or retries
	// read as repeats), and "batch 1.2 calls into 1" changes nothing real.
	callee := m.Node(e.To)
	if callee == nil || len(callers) != 1 || mean < 2 {
		return
	}
	k := min(maxBatch, int(math.Ceil(mean)))
	calls := math.Ceil(mean / float64(k))
	f := 1 + batchItemCost*float64(k-1)
	patch := map[string]any{"fan_out": replay.DistPatch(cascade.Const(calls))}
	timeout := ""
	if e.TimeoutMS > 0 {
		// The timeout was set for one item; a batch gets as much more
		// time as it takes.
		patch["timeout_ms"] = round3(e.TimeoutMS * f)
		timeout = ", timeout ×" + num(f)
	}
	add(Candidate{
		Name: fmt.Sprintf("batch=%d %s", k, key),
		Description: fmt.Sprintf("%s: batch %s calls into %s (batches of %d, %s service ×%s%s)",
			label, num(round3(mean)), num(calls), k, e.To, num(f), timeout),
		Kind: KindBatching,
		Scenario: &cascade.Scenario{
			Edges: map[string]json.RawMessage{key: replay.RawPatch(patch)},
			Nodes: replay.NodePatch(e.To, replay.SlowNode(callee, f)),
		},
	})
}
