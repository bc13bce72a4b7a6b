package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cascade"
	"cascade/rank"
	"cascade/replay"
	"cascade/report"
)

// sensitivity replays the baseline again for each model value the capture
// does not show, at the value it does show, and returns both answers: an
// edge whose pool's sharing is unknown (observed.pool_sharing) holds the
// default, graph.DefaultSharedPool, replayed again the other way; an
// edge whose retries never ran out of attempts holds a default retry
// limit (graph.DefaultMaxAttempts), replayed again at the most attempts
// seen, the lower bound the capture proves. The default's answer is the
// ranking's baseline under its first regime; the other replays the same
// seeds, duration and tick. Nil when every value is shown.
func sensitivity(ctx context.Context, m *cascade.Model, cfg rank.Config, r *rank.Report) ([]report.Sensitivity, error) {
	if len(r.Regimes) == 0 || len(r.Baseline) == 0 {
		return nil, nil
	}
	reg := r.Regimes[0]
	rc := replay.DefaultConfig()
	rc.Seed, rc.Window, rc.Tier = cfg.Seed, cfg.Window, cfg.Tier
	rc.Duration = time.Duration(r.DurationMS * 1e6)
	rc.Tick = time.Duration(r.TickMS * 1e6)
	rc.Traffic = reg.Traffic
	var out []report.Sensitivity
	for _, e := range m.Edges {
		o := e.Observed
		if o == nil || o.PoolSharing != cascade.PoolSharingUnknown || e.Parallelism <= 1 {
			continue
		}
		key := e.From + "->" + e.To
		other := map[string]any{"shared_pool": !e.SharedPool}
		s, err := replayPatched(ctx, m, key, other, rc, r.Seeds)
		if err != nil {
			return nil, err
		}
		base := report.Sensitivity{
			Edge:  key,
			Field: "shared_pool",
			Why: fmt.Sprintf("no two requests met on the edge with the pool of %d full, nor went past it together, "+
				"so whether each request has its own pool or all share one is unknown; the model replays the default, %s",
				e.Parallelism, poolText(e.SharedPool)),
			Regime: reg.Name,
			Seeds:  r.Seeds,
			Runs: []report.SensitivityRun{
				sensitivityRun(boolValue(e.SharedPool), "default, "+poolText(e.SharedPool), r.Baseline[0]),
				sensitivityRun(boolValue(!e.SharedPool), poolText(!e.SharedPool), s),
			},
		}
		out = append(out, base)
		// The capture's requests never met on the edge, so the baseline
		// hardly moves; a change that lets them meet does. The first win
		// is replayed both ways too.
		top := topWin(r)
		if top == nil || top.Scenario.Traffic != nil {
			continue
		}
		runs := make([]report.SensitivityRun, 2)
		for i, shared := range []bool{e.SharedPool, !e.SharedPool} {
			s, err := replayWhatIf(ctx, m, top.Scenario, key, map[string]any{"shared_pool": shared}, rc, r.Seeds)
			if err != nil {
				return nil, err
			}
			runs[i] = sensitivityRun(boolValue(shared), base.Runs[i].Label, s)
		}
		w := base
		w.Why, w.WhatIf, w.Runs = "", top.Description, runs
		out = append(out, w)
	}
	for _, e := range m.Edges {
		o := e.Observed
		if e.Retry == nil || o == nil || o.RetryLimit != cascade.RetryLimitUnknown || o.MaxAttemptsSeen >= e.Retry.MaxAttempts {
			continue
		}
		key := e.From + "->" + e.To
		s, err := replayPatched(ctx, m, key, map[string]any{"retry": map[string]any{"max_attempts": o.MaxAttemptsSeen}}, rc, r.Seeds)
		if err != nil {
			return nil, err
		}
		out = append(out, report.Sensitivity{
			Edge:  key,
			Field: "retry.max_attempts",
			Why: fmt.Sprintf("every chain of attempts ended in a success, the longest after %d, so the retry limit is unknown: "+
				"at least %d; the model replays the default, %d", o.MaxAttemptsSeen, o.MaxAttemptsSeen, e.Retry.MaxAttempts),
			Regime: reg.Name,
			Seeds:  r.Seeds,
			Runs: []report.SensitivityRun{
				sensitivityRun(float64(e.Retry.MaxAttempts), "default", r.Baseline[0]),
				sensitivityRun(float64(o.MaxAttemptsSeen), "most seen", s),
			},
		})
	}
	return out, nil
}

// replayPatched replays m with the edge key ("FROM->TO") patched by
// patch, once per seed.
func replayPatched(ctx context.Context, m *cascade.Model, key string, patch map[string]any, rc replay.Config, seeds []uint64) (*replay.Summary, error) {
	return replayWhatIf(ctx, m, nil, key, patch, rc, seeds)
}

// topWin returns the ranking's first win, nil when nothing wins.
func topWin(r *rank.Report) *rank.Candidate {
	for i := range r.Rows {
		if r.Rows[i].Rank == 1 && r.Rows[i].Verdict == rank.Win && r.Rows[i].Candidate.Scenario != nil {
			return &r.Rows[i].Candidate
		}
	}
	return nil
}

// replayWhatIf replays m changed by the scenario sc and then the edge key
// patched by patch, once per seed.
func replayWhatIf(ctx context.Context, m *cascade.Model, sc *cascade.Scenario, key string, patch map[string]any, rc replay.Config, seeds []uint64) (*replay.Summary, error) {
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	alt, _, err := replay.Apply(m, sc, &cascade.Scenario{Edges: map[string]json.RawMessage{key: b}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	s, err := replaySeeds(ctx, alt, rc, seeds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return s, nil
}

// poolText names a pool's sharing as the report says it.
func poolText(shared bool) string {
	if shared {
		return "shared"
	}
	return "per request"
}

// boolValue is a yes-or-no model value as a sensitivity run's value.
func boolValue(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// replaySeeds replays m once per seed on one engine and summarises the
// runs.
func replaySeeds(ctx context.Context, m *cascade.Model, rc replay.Config, seeds []uint64) (*replay.Summary, error) {
	eng, err := replay.NewEngine(m, rc)
	if err != nil {
		return nil, err
	}
	res := make([]*replay.Result, len(seeds))
	for i, s := range seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if res[i] = eng.Run(s); res[i].Counts.Aborted {
			return nil, fmt.Errorf("seed %d: %w", s, replay.ErrRunaway)
		}
	}
	return replay.Summarize(res), nil
}

func sensitivityRun(v float64, label string, s *replay.Summary) report.SensitivityRun {
	return report.SensitivityRun{Value: v, Label: label, Success: s.Metric("success_rate"), P50MS: s.Metric("latency_p50_ms")}
}
