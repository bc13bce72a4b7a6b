package report

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/rank"
)

// TestRankFlowObjective checks that a ranking scored on flows says so,
// and reads each regime's difference from the flow metric it scored.
func TestRankFlowObjective(t *testing.T) {
	row := &rank.Row{Verdict: rank.Win, Effects: []rank.Effect{
		{Metric: rank.MetricSuccess, Regime: "normal", Delta: rank.Interval{Mean: 0}},
		{Metric: rank.MetricFlowSuccess, Regime: "normal", Delta: rank.Interval{Mean: 0.045}},
	}}
	tests := []struct {
		name         string
		rep          rank.Report
		title, delta string
	}{
		{"roots", rank.Report{Objective: rank.ObjectiveSuccess}, "success (higher is better)", "0.00 pp"},
		{"flows", rank.Report{Objective: rank.ObjectiveSuccess, Flows: true},
			"success (higher is better; read on flows as flow_success_rate: a root request and the work of every message it published)", "+4.50 pp"},
		{"flows, composite", rank.Report{Objective: rank.ObjectiveComposite, Flows: true},
			"composite (mean relative change of flow success, flow goodput, flow p99, amplification and spread; higher is better)", "-"},
		{"flows, amplification", rank.Report{Objective: rank.ObjectiveAmplification, Flows: true},
			"amplification (lower is better)", "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.title, objectiveTitle(&tc.rep))
			require.Equal(t, tc.delta, regimeDelta(&tc.rep, row, "normal"))
		})
	}
}
