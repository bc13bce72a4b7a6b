package graph_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestShapes builds the model of every fixture shape and holds each edge
// and node to the generator's truth: fan-out mean within 5%, the most
// attempts seen exact and the retry limit observed only where a chain
// ran out of attempts, retry share within 2 points, the timeout within
// 10% (unknown where the capture holds no cut attempt), how retries and
// timeouts were found, and whether each node's capacity is proven.
func TestShapes(t *testing.T) {
	for _, format := range []string{shapes.OTLP, shapes.ZipkinBrave, shapes.Jaeger, shapes.NezhaCSV} {
		for _, name := range shapes.Names() {
			if format == shapes.NezhaCSV && !shapes.Writable(name, format) {
				continue
			}
			t.Run(format+"/"+name, func(t *testing.T) {
				testShape(t, shapes.Config{Shape: name, Format: format})
			})
		}
	}
}

// TestShapesEvidence holds captures made to mislead to the truth (with
// testShape): retry limits higher than any chain reached, or reached; a
// callee's "timeout" message passed up to its callers, which is no
// deadline of theirs; a caller's own deadline error, which is.
func TestShapesEvidence(t *testing.T) {
	tests := []struct {
		name string
		cfg  shapes.Config
		// check holds what testShape does not.
		check func(t *testing.T, m *cascade.Model, truth *shapes.Truth)
	}{{
		name: "retries never ran out: limit unknown",
		cfg:  shapes.Config{Shape: "client-only", Attempts: 6},
		check: func(t *testing.T, m *cascade.Model, truth *shapes.Truth) {
			e := edge(t, m, "stock", "ledger")
			require.Equal(t, cascade.RetryLimitUnknown, e.Observed.RetryLimit)
			require.Less(t, e.Observed.MaxAttemptsSeen, 6)
		},
	}, {
		name: "retries ran out: limit observed",
		cfg:  shapes.Config{Shape: "client-only", Attempts: 2},
		check: func(t *testing.T, m *cascade.Model, truth *shapes.Truth) {
			e := edge(t, m, "stock", "ledger")
			require.Equal(t, cascade.RetryLimitObserved, e.Observed.RetryLimit)
			require.Equal(t, 2, e.Retry.MaxAttempts)
		},
	}, {
		name: "a callee's timeout message passed up is no caller's deadline",
		cfg:  shapes.Config{Shape: "pairs", ErrorMessage: "redis timeout"},
	}, {
		name: "a callee's own span's timeout message is no caller's deadline",
		cfg:  shapes.Config{Shape: "client-only", ErrorMessage: "redis timeout"},
	}, {
		name: "a caller's own deadline error is its timeout",
		cfg:  shapes.Config{Shape: "staggered-retries", DeadlineMessage: "context deadline exceeded"},
		check: func(t *testing.T, m *cascade.Model, truth *shapes.Truth) {
			e := edge(t, m, "orders", "stock")
			require.Equal(t, graph.EvidenceErrType, e.Observed.TimeoutEvidence)
			require.InEpsilon(t, 80, e.TimeoutMS, 0.05)
		},
	}}
	for _, format := range []string{shapes.OTLP, shapes.ZipkinBrave, shapes.Jaeger} {
		for _, tc := range tests {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				cfg := tc.cfg
				cfg.Format = format
				m, truth := testShape(t, cfg)
				if tc.check != nil {
					tc.check(t, m, truth)
				}
			})
		}
	}
}

func testShape(t *testing.T, cfg shapes.Config) (*cascade.Model, *shapes.Truth) {
	{
		{
			dir, truth := shapetest.Dataset(t, cfg)
			res := build(t, dir, graph.LevelService)
			m := res.Model
			require.Len(t, m.Edges, len(truth.Edges))
			for _, want := range truth.Edges {
				e := edge(t, m, want.From, want.To)
				o := e.Observed
				what := want.From + " → " + want.To
				attempts := 1
				if e.Retry != nil {
					attempts = o.MaxAttemptsSeen
				}
				t.Logf("%-16s fan-out %.3f (truth %.3f)  attempts %d (%d)  retry share %.4f (%.4f) by %s  timeout %g ms (%g, seen %v) by %s",
					what, o.FanOutMean, want.FanOutMean, attempts, want.MaxAttempts, o.RetryShare, want.RetryShare,
					o.RetryEvidence, e.TimeoutMS, want.TimeoutMS, want.TimeoutSeen, o.TimeoutEvidence)
				require.InEpsilon(t, want.FanOutMean, o.FanOutMean, 0.05, "%s fan-out", what)
				require.Equal(t, want.MaxAttempts, attempts, "%s max attempts", what)
				require.InDelta(t, want.RetryShare, o.RetryShare, 0.02, "%s retry share", what)
				// The generator has no pools: its fan-out runs all at once
				// (retries of a parallel fan-out of 3 after failures make
				// parallelism 3, holding no call back) or one by one.
				require.Empty(t, o.PoolSharing, "%s: parallelism %d is no pool", what, e.Parallelism)
				require.False(t, e.SharedPool, what)
				if e.Retry != nil {
					// The limit shows only where some call ran out of
					// attempts; else the most seen is a lower bound and
					// the model replays the default.
					t.Logf("%-16s limit %s, replayed %d (truth %d, %d calls ran out)", what, o.RetryLimit,
						e.Retry.MaxAttempts, want.Limit, want.Exhausted)
					if want.Exhausted > 0 {
						require.Equal(t, cascade.RetryLimitObserved, o.RetryLimit, what)
						require.Equal(t, want.Limit, e.Retry.MaxAttempts, what)
					} else {
						require.Equal(t, cascade.RetryLimitUnknown, o.RetryLimit, what)
						require.Equal(t, max(want.MaxAttempts, graph.DefaultMaxAttempts), e.Retry.MaxAttempts, what)
						require.NotEqual(t, cascade.Observed, e.Provenance["retry.max_attempts"], what)
					}
				}
				if want.RetryShare > 0 {
					require.NotNil(t, e.Retry, what)
					require.InDelta(t, want.Reactivation, e.Retry.Reactivation, 0.05, "%s re-activation", what)
					if want.BackoffMS > 0 {
						require.InEpsilon(t, want.BackoffMS, e.Retry.Backoff.BaseMS, 0.10, "%s backoff (%s)", what, e.Retry.Backoff.Kind)
					} else {
						require.Less(t, e.Retry.Backoff.BaseMS, 1.0, "%s: re-sent at once (%s)", what, e.Retry.Backoff.Kind)
					}
					require.Equal(t, graph.EvidenceSiblings, o.RetryEvidence, what)
				} else {
					require.Equal(t, graph.EvidenceNone, o.RetryEvidence, what)
				}
				if want.TimeoutSeen {
					require.InEpsilon(t, want.TimeoutMS, e.TimeoutMS, 0.10, "%s timeout (%s)", what, o.TimeoutEvidence)
					require.NotEqual(t, graph.EvidenceNone, o.TimeoutEvidence, what)
					// Every cut attempt is a timeout of the edge, not a
					// success.
					require.GreaterOrEqual(t, o.Timeouts, want.Cut, what)
					require.InDelta(t, float64(want.Cut), float64(o.Timeouts), math.Max(2, 0.05*float64(want.Cut)), what)
				} else {
					require.Zero(t, e.TimeoutMS, "%s: no timeout in the capture, read %g ms by %s", what, e.TimeoutMS, o.TimeoutEvidence)
					require.Equal(t, graph.EvidenceNone, o.TimeoutEvidence, what)
					require.Equal(t, cascade.Default, e.Provenance["timeout_ms"], what)
				}
			}
			for _, want := range truth.Nodes {
				n := m.Node(want.Name)
				require.NotNil(t, n, want.Name)
				t.Logf("%-16s capacity %d proven %v (truth %d, %v) from %s", want.Name, n.Concurrency,
					n.Observed.CapacityProven, want.Concurrency, want.Proven, n.Observed.CapacitySource)
				require.Equal(t, want.Proven, n.Observed.CapacityProven, "%s capacity proven (%s)", want.Name, n.Observed.CapacitySource)
				require.Equal(t, want.Concurrency, n.Concurrency, "%s concurrency", want.Name)
				if !want.Proven {
					require.Equal(t, cascade.ObservedPeak, n.Provenance["concurrency"], want.Name)
					require.GreaterOrEqual(t, n.Observed.PeakInFlight, 1, want.Name)
				}
			}
			return m, truth
		}
	}
}

// TestShapesZombieWork checks that work a caller abandoned shows at the
// callee: stock's time after orders gave up.
func TestShapesZombieWork(t *testing.T) {
	for _, name := range []string{"timeout-ok", "staggered-retries"} {
		t.Run(name, func(t *testing.T) {
			dir, _ := shapetest.Dataset(t, shapes.Config{Shape: name})
			m := build(t, dir, graph.LevelService).Model
			require.Greater(t, m.Node("stock").Observed.ZombieShare, 0.05)
			require.Zero(t, m.Node("ledger").Observed.ZombieShare)
			require.Positive(t, edge(t, m, "orders", "stock").Observed.Cut)
		})
	}
}

// TestShapesSlowdown injects a slowdown of stock's own work (×2 from the
// middle of the capture) in every shape and checks that graph's
// statistics put it at stock: stock's mean self time rises by more than
// a third, its caller's and its callee's by less than 10%.
func TestShapesSlowdown(t *testing.T) {
	for _, name := range shapes.Names() {
		t.Run(name, func(t *testing.T) {
			base, _ := shapetest.Dataset(t, shapes.Config{Shape: name})
			slow, _ := shapetest.Dataset(t, shapes.Config{Shape: name, Slow: "stock", SlowFactor: 2})
			mb := build(t, base, graph.LevelService).Model
			ms := build(t, slow, graph.LevelService).Model
			rise := func(node string) float64 { return ms.Node(node).Tiers.Mean/mb.Node(node).Tiers.Mean - 1 }
			require.Greater(t, rise("stock"), 1.0/3, "stock")
			for _, n := range []string{"orders", "ledger"} {
				require.Less(t, math.Abs(rise(n)), 0.10, "%s self time moved %.0f%%", n, 100*rise(n))
			}
		})
	}
}

// TestShapesLongCapture checks that a capture longer than the node's
// bins hold (24,000 requests over 11 minutes: the 10 ms bins merge to
// 20 ms) still proves the lock: departure gaps come from the requests'
// own ends, not from the bins.
func TestShapesLongCapture(t *testing.T) {
	dir, _ := shapetest.Dataset(t, shapes.Config{Shape: "lock-pool", Traces: 24000})
	m := build(t, dir, graph.LevelService).Model
	orders := m.Node("orders")
	require.True(t, orders.Observed.CapacityProven, orders.Observed.CapacitySource)
	require.Equal(t, 1, orders.Concurrency)
	require.InEpsilon(t, 12, orders.Service.MeanValue(), 0.05, "the lock's hold less its calls: orders' own 12 ms")
}

// TestShapesLockUnderFault holds the lock of lock-pool's orders to being
// proven while a fault below it (a saturated or slowed callee, from the
// capture's middle) makes its holding times two populations, and holds
// the same captures with the lock removed, or a pool of two slots in its
// place, to no proven limit: what the traces prove does not depend on
// whether the capture is healthy.
func TestShapesLockUnderFault(t *testing.T) {
	tests := []struct {
		name   string
		cfg    shapes.Config
		proven bool
	}{
		{"saturated stock", shapes.Config{Saturate: "stock"}, true},
		{"saturated ledger", shapes.Config{Saturate: "ledger"}, true},
		{"slow stock", shapes.Config{Slow: "stock", SlowFactor: 3}, true},
		{"no lock, saturated stock", shapes.Config{Slots: -1, Saturate: "stock"}, false},
		{"no lock, slow stock", shapes.Config{Slots: -1, Slow: "stock", SlowFactor: 3}, false},
		{"two slots, saturated stock", shapes.Config{Slots: 2, Saturate: "stock"}, false},
		{"two slots, slow stock", shapes.Config{Slots: 2, Slow: "stock", SlowFactor: 3}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Shape, cfg.Traces = "lock-pool", int(shapes.Rate("lock-pool")*120)
			dir, _ := shapetest.Dataset(t, cfg)
			n := build(t, dir, graph.LevelService).Model.Node("orders")
			t.Logf("orders: concurrency %d, proven %v, from %s", n.Concurrency, n.Observed.CapacityProven, n.Observed.CapacitySource)
			require.Equal(t, tc.proven, n.Observed.CapacityProven, n.Observed.CapacitySource)
			if tc.proven {
				require.Equal(t, 1, n.Concurrency)
			} else {
				require.Zero(t, n.Concurrency)
			}
		})
	}
}
