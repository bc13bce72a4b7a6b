package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
	"cascade/replay"
)

// TestSensitivityMarkdown renders the sensitivity section of an edge
// whose retry limit the capture does not show, and of one whose pool's
// sharing it does not show with another's retry limit, to golden files;
// an analysis without one renders no section.
func TestSensitivityMarkdown(t *testing.T) {
	est := func(m float64) replay.Estimate { return replay.Estimate{Mean: m, Low: m, High: m} }
	tests := []struct {
		name string
		ss   []Sensitivity
	}{
		{"sensitivity", []Sensitivity{{
			Edge: "driver->redis-manual", Field: "retry.max_attempts",
			Why:    "every chain of attempts ended in a success, the longest after 2, so the retry limit is unknown: at least 2; the model replays the default, 3",
			Regime: "observed closed loop, 5 users", Seeds: []uint64{1, 2, 3, 4},
			Runs: []SensitivityRun{
				{Value: 3, Label: "default", Success: est(0.9753), P50MS: est(12.5)},
				{Value: 2, Label: "most seen", Success: est(0.9128), P50MS: est(12.25)},
			},
		}}},
		{"sensitivity-pool", []Sensitivity{{
			Edge: "frontend->route", Field: "shared_pool",
			Why:    "no two requests met on the edge with the pool of 3 full, nor went past it together, so whether each request has its own pool or all share one is unknown; the model replays the default, shared",
			Regime: "observed closed loop, 5 users", Seeds: []uint64{1, 2, 3, 4},
			Runs: []SensitivityRun{
				{Value: 1, Label: "default, shared", Success: est(1), P50MS: est(1496)},
				{Value: 0, Label: "per request", Success: est(1), P50MS: est(1496)},
			},
		}, {
			Edge: "frontend->route", Field: "shared_pool", WhatIf: "mysql (bottleneck, 100% busy): 1→2 slots",
			Regime: "observed closed loop, 5 users", Seeds: []uint64{1, 2, 3, 4},
			Runs: []SensitivityRun{
				{Value: 1, Label: "default, shared", Success: est(0.999), P50MS: est(850.8)},
				{Value: 0, Label: "per request", Success: est(0.999), P50MS: est(768.2)},
			},
		}, {
			Edge: "driver->redis-manual", Field: "retry.max_attempts",
			Why:    "every chain of attempts ended in a success, the longest after 2, so the retry limit is unknown: at least 2; the model replays the default, 3",
			Regime: "observed closed loop, 5 users", Seeds: []uint64{1, 2, 3, 4},
			Runs: []SensitivityRun{
				{Value: 3, Label: "default", Success: est(0.9753), P50MS: est(12.5)},
				{Value: 2, Label: "most seen", Success: est(0.9128), P50MS: est(12.25)},
			},
		}}},
		{"sensitivity-none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			sensitivityMarkdown(&b, tc.ss)
			if tc.ss == nil {
				require.Empty(t, b.String(), "no sensitivity, no section")
				return
			}
			testutil.Golden(t, tc.name+".md", []byte(b.String()))
		})
	}
}
