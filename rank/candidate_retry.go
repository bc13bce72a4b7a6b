package rank

import (
	"fmt"

	"cascade"
)

// retryCandidates adds fewer attempts, backoff with full jitter and a
// retry budget for a policy that retries.
func retryCandidates(r *cascade.Retry, label, key string, scen func(map[string]any) *cascade.Scenario, add func(Candidate)) {
	if r == nil || r.MaxAttempts <= 1 || r.Reactivation <= 0 {
		return
	}
	retry := func(p map[string]any) *cascade.Scenario { return scen(map[string]any{"retry": p}) }
	for _, to := range []int{1, 2} {
		if to >= r.MaxAttempts {
			continue
		}
		what := "no retries"
		if to == 2 {
			what = "one retry"
		}
		add(Candidate{
			Name:        fmt.Sprintf("attempts=%d %s", to, key),
			Description: fmt.Sprintf("%s: max attempts %d→%d (%s)", label, r.MaxAttempts, to, what),
			Kind:        KindAttempts,
			Scenario:    retry(map[string]any{"max_attempts": to}),
		})
	}
	if b := r.Backoff; !(b.Kind == cascade.BackoffFullJitter && b.BaseMS >= backoffBaseMS) {
		was := b.Kind
		if was == "" {
			was = cascade.BackoffNone
		}
		if b.BaseMS > 0 {
			was += " " + ms(b.BaseMS)
		}
		add(Candidate{
			Name:        "backoff " + key,
			Description: fmt.Sprintf("%s: exponential backoff %s + full jitter, capped at %s (was %s)", label, ms(backoffBaseMS), ms(backoffCapMS), was),
			Kind:        KindBackoff,
			Scenario: retry(map[string]any{"backoff": map[string]any{
				"kind": cascade.BackoffFullJitter, "base_ms": backoffBaseMS, "max_ms": backoffCapMS,
			}}),
		})
	}
	if r.Budget == nil {
		add(Candidate{
			Name:        "budget " + key,
			Description: fmt.Sprintf("%s: retry budget of %g%% of calls (was unlimited)", label, 100*budgetRatio),
			Kind:        KindBudget,
			Scenario:    retry(map[string]any{"budget": map[string]any{"ratio": budgetRatio}}),
		})
	}
}
