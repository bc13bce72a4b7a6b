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
// lower bound the capture proves. A reader sees how much the answer rests
// on the default.
type Sensitivity struct {
	// Edge is the edge, "FROM->TO"; Field the model value,
	// "retry.max_attempts".
	Edge  string `json:"edge"`
	Field string `json:"field"`
	// Why says why the value is not known.
	Why string `json:"why"`
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
	// Value is the field's value; Label says what it is ("default",
	// "most seen").
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
		fmt.Fprintf(b, "- %s `%s`: %s\n", edgeText(s.Edge), s.Field, s.Why)
	}
	s0 := ss[0]
	fmt.Fprintf(b, "\nThe baseline replayed with each value (%s, seeds %s):\n\n", s0.Regime, seedsText(s0.Seeds))
	fmt.Fprintf(b, "| Edge | Value | Success | Δ success | p50 ms | Δ p50 |\n|---|---|---:|---:|---:|---:|\n")
	for _, s := range ss {
		for i, r := range s.Runs {
			name, dSucc, dP50 := "", "–", "–"
			if i == 0 {
				name = edgeText(s.Edge) + " `" + s.Field + "`"
			} else {
				base := s.Runs[0]
				dSucc = signed(100*(r.Success.Mean-base.Success.Mean)) + " pp"
				if base.P50MS.Mean > 0 {
					dP50 = signed(100*(r.P50MS.Mean/base.P50MS.Mean-1)) + "%"
				}
			}
			fmt.Fprintf(b, "| %s | %s (%s) | %s | %s | %s | %s |\n", name, g4(r.Value), r.Label,
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
