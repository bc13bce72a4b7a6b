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
		if e.Retry == nil || o == nil || o.RetryLimit != cascade.RetryLimitUnknown || o.MaxAttemptsSeen >= e.Retry.MaxAttempts {
			continue
		}
		key := e.From + "->" + e.To
		patch, err := json.Marshal(map[string]any{"retry": map[string]any{"max_attempts": o.MaxAttemptsSeen}})
		if err != nil {
			return nil, err
		}
		alt, _, err := replay.Apply(m, &cascade.Scenario{Edges: map[string]json.RawMessage{key: patch}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		s, err := replaySeeds(ctx, alt, rc, r.Seeds)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
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
