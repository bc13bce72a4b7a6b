package rank

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestShapesRemedies holds the remediation ranking, what a postmortem acts
// on, to changes really made: the ranking is run on the model graph
// builds of a "before" capture, and the generator makes the "after"
// capture with the change made in the system it simulates (same seed,
// same arrivals). Where the ranking calls a change a win, the after
// capture must be better by the same measure, and where it calls it
// worse, the after capture must be worse; for success, the predicted
// change under the observed traffic must be the after capture's within
// 3 points.
//
//   - a lock at orders, 97% busy (lock-pool at 35/s): raising it to two
//     slots is the first win; the after capture's p99 falls below half;
//   - a hard dependency on a stock that fails 20% of its requests
//     (fallback without its fallback): a fallback at orders is the first
//     win; made at the candidate's share, success rises as predicted;
//   - retries that save stock's slow tail (staggered-retries): no retries
//     is worse; made, success falls as predicted.
func TestShapesRemedies(t *testing.T) {
	tests := []struct {
		name          string
		before, after shapes.Config
		kind, target  string // the candidate
		first         bool   // it must rank first among the wins
		verdict       Verdict
	}{
		{"lock raised", shapes.Config{Shape: "lock-pool"}, shapes.Config{Shape: "lock-pool", Slots: 2},
			KindPool, "orders", true, Win},
		{"fallback added", shapes.Config{Shape: "fallback", Fallback: -1}, shapes.Config{Shape: "fallback", Fallback: 0.9},
			KindFallback, "orders→stock", true, Win},
		{"retries cut", shapes.Config{Shape: "staggered-retries"}, shapes.Config{Shape: "staggered-retries", Attempts: 1},
			KindAttempts, "orders→stock: max attempts 3→1", false, Worse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, before := remedyShape(t, tc.before)
			_, after := remedyShape(t, tc.after)
			cfg := DefaultConfig()
			cfg.Seeds, cfg.Capacity = 4, false
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			i := slices.IndexFunc(rep.Rows, func(r Row) bool {
				return r.Candidate.Kind == tc.kind && strings.Contains(r.Candidate.Description, tc.target)
			})
			require.GreaterOrEqual(t, i, 0, "no %s candidate for %s", tc.kind, tc.target)
			row := rep.Rows[i]
			t.Logf("seeds %v: %q: %s, rank %d, gain %.3f", rep.Seeds, row.Candidate.Description, row.Verdict, row.Rank, row.Gain)
			t.Logf("capture before: success %.4f, p99 %.1f ms; after: success %.4f, p99 %.1f ms",
				before.Success, before.P99, after.Success, after.P99)
			require.Equal(t, tc.verdict, row.Verdict)
			if tc.first {
				require.Equal(t, 1, row.Rank)
			}
			regime := rep.Regimes[0].Name
			for _, e := range row.Effects {
				if e.Regime != regime {
					continue
				}
				switch e.Metric {
				case MetricSuccess:
					t.Logf("success under %s: predicted %+.4f, made %+.4f", regime, e.Delta.Mean, after.Success-before.Success)
					require.InDelta(t, after.Success-before.Success, e.Delta.Mean, 0.03)
				case MetricP99:
					t.Logf("p99 under %s: predicted %.1f → %.1f ms, made %.1f → %.1f ms", regime, e.Baseline, e.Candidate, before.P99, after.P99)
				}
			}
			switch tc.kind {
			case KindPool:
				require.Less(t, after.P99, before.P99/2, "the lock raised: p99")
			case KindFallback:
				require.Greater(t, after.Success, before.Success+0.1, "the fallback: success")
			case KindAttempts:
				require.Less(t, after.Success, before.Success-0.1, "no retries: success")
			}
		})
	}
}

// remedyShape generates and ingests a capture and returns graph's model
// of it and its root requests' outcome.
func remedyShape(t *testing.T, cfg shapes.Config) (*cascade.Model, shapetest.Outcome) {
	t.Helper()
	dir, _ := shapetest.Dataset(t, cfg)
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, nil)
	require.NoError(t, err)
	return res.Model, shapetest.CaptureOutcome(t, dir)
}

// TestFitCheck: the model of a capture replays it within the tolerance,
// and the ranking names its wins; the same model with one node made
// three times slower than the capture saw misses it, says where, and
// calls no change a win or worse.
func TestFitCheck(t *testing.T) {
	tests := []struct {
		shape  string
		slower string // a node whose service is tripled behind the capture's back
		off    []string
	}{
		{shape: "lock-pool"},
		{shape: "staggered-retries"},
		{shape: "lock-pool", slower: "orders", off: []string{"gateway p50", "gateway p99", "orders p50", "orders p99"}},
	}
	for _, tc := range tests {
		t.Run(tc.shape+" "+tc.slower, func(t *testing.T) {
			m, _ := remedyShape(t, shapes.Config{Shape: tc.shape})
			if tc.slower != "" {
				three := 3.0
				m.Node(tc.slower).Service.Scale = &three
			}
			cfg := DefaultConfig()
			cfg.Seeds, cfg.Capacity = 4, false
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			require.NotNil(t, rep.Fit)
			t.Log(rep.Fit)
			var off []string
			for _, m := range rep.Fit.Off {
				off = append(off, m.Node+" "+m.Measure)
			}
			require.Equal(t, tc.off, off)
			require.Equal(t, len(tc.off) == 0, rep.Fit.Within())
			var wins, distrusted int
			for _, r := range rep.Rows {
				switch r.Verdict {
				case Win, Worse:
					wins++
				case OffCapture:
					distrusted++
				}
			}
			if tc.off == nil {
				require.Positive(t, wins)
				require.Zero(t, distrusted)
				require.Contains(t, rep.Fit.String(), "at all 4 nodes")
			} else {
				require.Zero(t, wins, "a model off its capture calls nothing a win or worse")
				require.Positive(t, distrusted)
				require.Nil(t, rep.Set)
				require.Contains(t, rep.Fit.String(), "no change is called a win or worse")
			}
		})
	}
}
