package report

import (
	"fmt"
	"strconv"
	"strings"

	"cascade/replay"
)

// Sensitivity is how the baseline's answer moves with a model value the
// capture does not show: the retry limit of an edge whose retries never
// ran out of attempts (observed.retry_limit "unknown"), which the model
// states as a default, replayed again at the most attempts seen, the
// lower bound the capture proves; whether an edge's pool is shared by all
// requests or one per request (observed.pool_sharing "unknown"), replayed
// again the other way. A reader sees how much the answer rests on the
// default.
type Sensitivity struct {
	// Edge is the edge, "FROM->TO"; Field the model value,
	// "retry.max_attempts" or "shared_pool".
	Edge  string `json:"edge"`
	Field string `json:"field"`
	// Why says why the value is not known; empty on a what-if's runs
	// (WhatIf), which follow the baseline's.
	Why string `json:"why,omitempty"`
	// WhatIf, when set, is the change (the ranking's first win) both
	// runs replayed in place of the baseline: a value the baseline does
	// not exercise (a pool no two requests met on) can matter once a
	// change lets requests meet.
	WhatIf string `json:"what_if,omitempty"`
	// Regime is the traffic both replays ran under (the ranking's first)
	// and Seeds their seeds (the ranking's baseline's).
	Regime string   `json:"regime"`
	Seeds  []uint64 `json:"seeds"`
	// Runs are the replays: the model's value first (the ranking's
	// baseline), then the alternative.
	Runs []SensitivityRun `json:"runs"`
}

// SensitivityRun is the baseline replayed with one value of the field.
type SensitivityRun struct {
	// Value is the field's value (shared_pool: 1 true, 0 false); Label
	// says what it is ("default", "most seen"; "default, shared", "per
	// request").
	Value float64 `json:"value"`
	Label string  `json:"label"`
	// Success and P50MS are the share of root requests that succeeded
	// and their median latency, means over the seeds with 95% intervals.
	Success replay.Estimate `json:"success_rate"`
	P50MS   replay.Estimate `json:"latency_p50_ms"`
}

// sensitivityMarkdown writes the sensitivity section: a paragraph per
// uncertain value and one table of the replays.
func sensitivityMarkdown(b *strings.Builder, ss []Sensitivity) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Sensitivity: values the capture does not show\n\n")
	for _, s := range ss {
		if s.Why != "" {
			fmt.Fprintf(b, "- %s `%s`: %s\n", edgeText(s.Edge), s.Field, s.Why)
		}
	}
	s0 := ss[0]
	what := "The baseline"
	for _, s := range ss {
		if s.WhatIf != "" {
			what = "The baseline, and the change named,"
		}
	}
	fmt.Fprintf(b, "\n%s replayed with each value (%s, seeds %s):\n\n", what, s0.Regime, seedsText(s0.Seeds))
	fmt.Fprintf(b, "| Edge | Value | Success | Δ success | p50 ms | Δ p50 |\n|---|---|---:|---:|---:|---:|\n")
	for _, s := range ss {
		for i, r := range s.Runs {
			name, dSucc, dP50 := "", "–", "–"
			if i == 0 {
				name = edgeText(s.Edge) + " `" + s.Field + "`"
				if s.WhatIf != "" {
					name += ", with " + s.WhatIf
				}
			} else {
				base := s.Runs[0]
				dSucc = signed(100*(r.Success.Mean-base.Success.Mean)) + " pp"
				if base.P50MS.Mean > 0 {
					dP50 = signed(100*(r.P50MS.Mean/base.P50MS.Mean-1)) + "%"
				}
			}
			value := g4(r.Value) + " (" + r.Label + ")"
			if s.Field == "shared_pool" {
				value = r.Label // a yes or no: its words say it
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, value,
				pctOf(r.Success.Mean), dSucc, g4(r.P50MS.Mean), dP50)
		}
	}
}

// edgeText turns "FROM->TO" into "FROM → TO".
func edgeText(e string) string { return strings.Replace(e, "->", " → ", 1) }

// seedsText lists seeds as "1–5" when they run in order, else "1, 3, 7".
func seedsText(seeds []uint64) string {
	if len(seeds) == 0 {
		return "none"
	}
	run := true
	for i := 1; i < len(seeds); i++ {
		run = run && seeds[i] == seeds[i-1]+1
	}
	if run && len(seeds) > 1 {
		return fmt.Sprintf("%d–%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatUint(s, 10)
	}
	return strings.Join(parts, ", ")
}
