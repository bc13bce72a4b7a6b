package fit_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/fit"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestShapesFit runs the whole path on captures of the fixture generator,
// whose truth knows p_uv: ingest writes the dataset, graph builds the
// model, the model's p on the edge under test is scrambled, and the fit,
// scoring 10 s windows of the capture against replays (five seeds), must
// find the truth's p again within one grid step. The edges: a hard
// dependency (p = 1) whose callee fails 30% of its requests throughout, a
// fan-out whose caller carries on when a call fails (0), and a fallback
// that answers 60% of the failed calls (0.4).
//
// The same hard dependency under an error burst from the capture's
// middle on is a model the fit cannot express (one base failure rate per
// node): it fits p = 0.8, so the fit must say the windows hold two
// regimes, naming the node, and must not say so of the others.
func TestShapesFit(t *testing.T) {
	tests := []struct {
		name      string
		cfg       shapes.Config
		from, to  string
		scrambled float64
		regime    string // the node the regime warning names, if any
	}{
		{"hard", shapes.Config{Shape: "pairs", Fail: "stock", SlowFrom: 1e-3}, "orders", "stock", 0.3, ""},
		{"fan-out", shapes.Config{Shape: "fan-out", Fail: "stock", SlowFrom: 1e-3}, "orders", "stock", 0.7, ""},
		{"fallback", shapes.Config{Shape: "fallback"}, "orders", "stock", 1, ""},
		{"burst", shapes.Config{Shape: "pairs", Fail: "stock"}, "orders", "stock", 0.3, "stock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, truth := shapetest.Dataset(t, tc.cfg)
			spans := func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
			res, err := graph.Build(context.Background(), graph.DefaultConfig(), spans, nil)
			require.NoError(t, err)
			m := res.Model
			var want float64
			for _, e := range truth.Edges {
				if e.From == tc.from && e.To == tc.to {
					want = e.Propagation
					require.Positive(t, e.FailedLogical, "the truth must have failed calls to read p from")
				}
			}
			for i := range m.Edges {
				if e := &m.Edges[i]; e.From == tc.from && e.To == tc.to {
					// As if graph had not measured p: a measured p holds
					// the fit to its interval (TestFitKeepsMeasured).
					e.Propagation = tc.scrambled
					e.Provenance = maps.Clone(e.Provenance)
					e.Provenance["propagation"] = cascade.Default
				}
			}

			cfg := fit.DefaultConfig()
			cfg.Window = 10 * time.Second
			cfg.Seeds = 5
			axis := "p." + tc.from + "->" + tc.to
			cfg.Grid = axis + "=0:1:0.1,tier=empirical"
			obs, err := fit.Observe(context.Background(), cfg, m, spans, nil)
			require.NoError(t, err)
			fr, err := fit.Run(context.Background(), cfg, m, obs)
			require.NoError(t, err)
			rep := fr.Report
			require.Equal(t, rep.Calibrated.Loss, writtenLoss(t, cfg, fr, obs), "the written model scores the reported loss (seed %d)", rep.Seed)
			got, err := strconv.ParseFloat(rep.Best.Value(axis), 64)
			require.NoError(t, err)
			t.Logf("seed %d, %d windows: %s %.1f (truth %.2f, scrambled to %.1f), loss %.4g",
				rep.Seed, len(obs.Windows), axis, got, want, tc.scrambled, rep.Best.Loss)
			var regime []string
			for _, w := range rep.Warnings {
				t.Logf("warning: %s", w)
				if strings.Contains(w, "regimes") {
					regime = append(regime, w)
				}
			}
			if tc.regime == "" {
				require.InDelta(t, want, got, 0.1+1e-9, "p within one step (seed %d)", rep.Seed)
				require.Empty(t, regime)
				return
			}
			require.Len(t, regime, 1)
			require.True(t, strings.HasPrefix(regime[0], tc.regime+"'s own failures"), regime[0])
		})
	}
}

// TestFitKeepsMeasured fits the hard dependency (p = 1, its callee
// failing 30% of its requests) with graph's model as built, which
// measured p from the failed calls, over the seed's range of p alone
// (0.01 to 0.5): every value lies below the measured interval, so the
// calibrated edge keeps a p within it, and the provenance says observed.
func TestFitKeepsMeasured(t *testing.T) {
	dir, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Fail: "stock", SlowFrom: 1e-3})
	spans := func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), spans, nil)
	require.NoError(t, err)
	m := res.Model
	e := edge(m, "orders", "stock")
	require.Equal(t, cascade.Observed, e.Provenance["propagation"])
	lo, hi, ok := e.Observed.PropagationInterval()
	require.True(t, ok)
	t.Logf("measured p %.3g of %d failed calls, 95%% interval [%.3g, %.3g]", e.Propagation, e.Observed.FinalFailed, lo, hi)
	require.Greater(t, lo, 0.5, "the capture must prove p above the grid")

	cfg := fit.DefaultConfig()
	cfg.Window = 10 * time.Second
	cfg.Seeds = 3
	cfg.Grid = "p=0.01:0.5:0.01,tier=empirical"
	obs, err := fit.Observe(context.Background(), cfg, m, spans, nil)
	require.NoError(t, err)
	fr, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	got := edge(fr.Model, "orders", "stock")
	require.GreaterOrEqual(t, got.Propagation, lo)
	require.LessOrEqual(t, got.Propagation, hi)
	require.Equal(t, cascade.Observed, got.Provenance["propagation"])
}

func edge(m *cascade.Model, from, to string) *cascade.Edge {
	for i := range m.Edges {
		if m.Edges[i].From == from && m.Edges[i].To == to {
			return &m.Edges[i]
		}
	}
	panic("no edge " + from + "->" + to)
}
