package replay_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/replay"
	"cascade/testdata/shapes"
)

// TestFidelityBeforeAfter is the what-if held to the truth: a change is
// replayed from the model graph builds of the "before" capture, and the
// prediction is compared with the "after" capture the generator makes
// with that change really made (same seed, same arrivals). p50 and p99 of
// the root requests must be within 15%, success within 2 points.
func TestFidelityBeforeAfter(t *testing.T) {
	tests := []struct {
		name   string
		before shapes.Config
		after  shapes.Config
		sets   []string
	}{
		{
			name:   "lock removed",
			before: shapes.Config{Shape: "lock-pool", Traces: 6000, Rate: 28},
			after:  shapes.Config{Shape: "lock-pool", Traces: 6000, Rate: 28, Slots: -1},
			sets:   []string{"node.orders.pool=null"},
		},
		{
			name:   "pool raised 1→2",
			before: shapes.Config{Shape: "lock-pool", Traces: 6000, Rate: 28},
			after:  shapes.Config{Shape: "lock-pool", Traces: 6000, Rate: 28, Slots: 2},
			sets:   []string{"node.orders.pool=2"},
		},
		{
			name:   "retries cut (staggered, after timeouts)",
			before: shapes.Config{Shape: "staggered-retries", Traces: 6000},
			after:  shapes.Config{Shape: "staggered-retries", Traces: 6000, Attempts: 1},
			sets:   []string{"edge.orders->stock.retry.max_attempts=1"},
		},
		{
			name:   "retries cut (client spans only)",
			before: shapes.Config{Shape: "client-only", Traces: 6000},
			after:  shapes.Config{Shape: "client-only", Traces: 6000, Attempts: 1},
			sets:   []string{"edge.stock->ledger.retry.max_attempts=1"},
		},
		{
			name:   "fallback added",
			before: shapes.Config{Shape: "fallback", Traces: 6000, Fallback: -1},
			after:  shapes.Config{Shape: "fallback", Traces: 6000},
			sets:   []string{"edge.orders->stock.fallback.probability=0.6"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeSeen := shapeModel(t, tc.before)
			_, afterSeen := shapeModel(t, tc.after)
			s, err := replay.ParseSet(before, tc.sets)
			require.NoError(t, err)
			changed, _, err := replay.Apply(before, s)
			require.NoError(t, err)
			rate := tc.before.Rate
			if rate == 0 {
				rate = shapes.Rate(tc.before.Shape)
			}
			secs := float64(tc.before.Traces) / rate

			// The baseline first: the model reproduces its own capture.
			check(t, "before", predict(t, before, secs), beforeSeen)
			check(t, "after", predict(t, changed, secs), afterSeen)
		})
	}
}

// outcome is the root requests' p50, p99 and success.
type outcome struct{ p50, p99, success float64 }

// shapeModel generates and ingests a capture and returns the model graph
// builds from it and what its root requests did (shapetest.CaptureOutcome).
func shapeModel(t *testing.T, cfg shapes.Config) (*cascade.Model, outcome) {
	t.Helper()
	dir, _ := shapetest.Dataset(t, cfg)
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, nil)
	require.NoError(t, err)
	o := shapetest.CaptureOutcome(t, dir)
	return res.Model, outcome{p50: o.P50, p99: o.P99, success: o.Success}
}

// predict replays the model under Poisson arrivals at its entry rate for
// the capture's length, on 8 seeds, at a 0.1 ms tick (the chain's
// services take a few ms), and averages the seeds.
func predict(t *testing.T, m *cascade.Model, secs float64) outcome {
	t.Helper()
	cfg := replay.DefaultConfig()
	cfg.Seeds = 8
	cfg.Duration = time.Duration(secs * float64(time.Second))
	cfg.Tick = 100 * time.Microsecond
	rs, err := replay.RunSeeds(context.Background(), m, cfg)
	require.NoError(t, err)
	sum := replay.Summarize(rs)
	return outcome{
		p50:     sum.Metric("latency_p50_ms").Mean,
		p99:     sum.Metric("latency_p99_ms").Mean,
		success: sum.Metric("success_rate").Mean,
	}
}

func check(t *testing.T, what string, got, want outcome) {
	t.Helper()
	t.Logf("%-6s predicted p50 %7.2f ms  p99 %7.2f ms  success %.4f;  capture p50 %7.2f ms  p99 %7.2f ms  success %.4f;  errors %+.1f%% %+.1f%% %+.2f pp",
		what, got.p50, got.p99, got.success, want.p50, want.p99, want.success,
		100*(got.p50/want.p50-1), 100*(got.p99/want.p99-1), 100*(got.success-want.success))
	require.InEpsilon(t, want.p50, got.p50, 0.15, "%s p50", what)
	require.InEpsilon(t, want.p99, got.p99, 0.15, "%s p99", what)
	require.LessOrEqual(t, math.Abs(got.success-want.success), 0.02, "%s success", what)
}
