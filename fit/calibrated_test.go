package fit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/graph"
)

// writtenLoss encodes the calibrated model as `cascade fit -o` writes it,
// reads it back, and scores it with the fit's loss, seeds and tick.
func writtenLoss(t *testing.T, cfg fit.Config, res *fit.Result, obs *fit.Observations) float64 {
	t.Helper()
	doc, err := cascade.EncodeModel(res.Model)
	require.NoError(t, err)
	m, err := cascade.DecodeModel(doc)
	require.NoError(t, err)
	cfg.Tick = time.Duration(math.Round(res.Report.TickMS * 1e6))
	cfg.TickCheck = false
	l, err := fit.Loss(cfg, m, obs)
	require.NoError(t, err)
	return l
}

// TestFitNeverWorse holds the fit to its guarantees on every real capture
// in testdata: the model it writes scores exactly the loss it reports
// (same seeds: replay is deterministic), it is a point the fit replayed
// (a flat p held at the model's values), and it is the model as it came
// unless it beats that model in sample and predicts the held-out windows
// no worse. The grids are small to keep the test fast; the zipkin
// capture holds one window, so it has no back-test.
func TestFitNeverWorse(t *testing.T) {
	tests := []struct {
		name    string
		dir     func(testing.TB) string
		window  time.Duration
		grid    string
		holdout bool
	}{
		{"hotrod-baseline", hotrodDataset, 30 * time.Second, "tier=model|p50|empirical,p=0.01|0.25|0.5,r=0.8:1:0.1,k=0|1", true},
		{"nezha-onlineboutique", func(tb testing.TB) string {
			return ingested(tb, "onlineboutique", "nezha-onlineboutique/trace/05_19_trace.csv.gz")
		}, 30 * time.Second, "tier=model|p50|empirical,p=0.1|0.5|0.9,k=0|1", true},
		{"nezha-trainticket", trainTicketDataset, 10 * time.Second, "tier=model|p50|empirical,p=0.1|0.5|0.9,k=0|1", true},
		{"nezha-trainticket one window", trainTicketDataset, time.Minute, "tier=model|p50|empirical,p=0.1|0.5|0.9,k=0|1", false},
		{"zipkin", func(tb testing.TB) string {
			return ingested(tb, "zipkin", "zipkin/hotrod-traces.json")
		}, 30 * time.Second, "tier=model|p50|empirical,p=0.1|0.5|0.9,k=0|1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			m := buildModel(t, dir, graph.LevelService).Model
			cfg := fit.DefaultConfig()
			cfg.Window, cfg.Grid, cfg.Holdout = tc.window, tc.grid, -1
			obs := observe(t, cfg, m, spansOf(dir), nil)
			res, err := fit.Run(context.Background(), cfg, m, obs)
			require.NoError(t, err)
			rep := res.Report
			c := rep.Calibrated
			t.Logf("seed %d: best %s loss %g; calibrated %s loss %g, uncalibrated %g; back-test %g, uncalibrated %g; kept %q",
				rep.Seed, rep.Best.Values, rep.Best.Loss, c.Values, c.Loss, c.Uncalibrated, c.Backtest, c.BacktestUncalibrated, c.Kept)

			require.Equal(t, c.Loss, writtenLoss(t, cfg, res, obs), "the written model scores the reported loss (seed %d)", rep.Seed)
			var sum float64
			for _, w := range rep.Windows {
				sum += w.Loss
			}
			require.InEpsilon(t, c.Loss, sum, 1e-5, "the windows' losses are the written model's")
			if tc.holdout {
				require.NotEmpty(t, rep.Holdout)
			}
			var bt, bu float64
			for _, h := range rep.Holdout {
				bt += h.Loss
				bu += h.Uncalibrated
			}
			require.InDelta(t, c.Backtest, bt, 1e-5*(1+bt))
			require.InDelta(t, c.BacktestUncalibrated, bu, 1e-5*(1+bu))

			if c.Kept != "" {
				// Kept: the model as it came, its loss the uncalibrated one.
				require.Equal(t, c.Uncalibrated, c.Loss)
				want := *m
				want.Fit = res.Model.Fit
				require.Equal(t, &want, res.Model)
				return
			}
			require.Less(t, c.Loss, c.Uncalibrated, "a calibrated model written beats the model in sample")
			require.LessOrEqual(t, c.Backtest, c.BacktestUncalibrated, "and predicts the held-out windows no worse")
			if len(c.Held) == 0 {
				require.Equal(t, rep.Best.Values, c.Values)
				require.Equal(t, rep.Best.Loss, c.Loss)
			}
		})
	}
}

// TestFitHeldAxisRefit: where p is flat, the calibrated model keeps the
// model's p and its other values come from a search with p held, so
// the model written scores exactly the reported loss; the model's own
// service distributions (tier "model") are among the tiers searched.
func TestFitHeldAxisRefit(t *testing.T) {
	dir := hotrodDataset(t)
	m := buildModel(t, dir, graph.LevelService).Model
	cfg := fit.DefaultConfig()
	cfg.Window = 30 * time.Second
	cfg.Grid = "tier=p50|empirical,p=0.01|0.25|0.5,r=0.8:1:0.1,k=0|1"
	cfg.Holdout = 0
	obs := observe(t, cfg, m, spansOf(dir), nil)
	res, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	c := res.Report.Calibrated
	require.Equal(t, []string{"p"}, c.Held, "HotROD's retries absorb every failure: p is flat")
	require.Equal(t, "model", c.Values.Value("p"))
	require.Equal(t, "tier=p50|empirical,p=model,r=0.8:1:0.1,k=0|1", c.Grid)
	require.Equal(t, 2*3*2, c.Evaluated)
	require.Equal(t, c.Loss, writtenLoss(t, cfg, res, obs), "seed %d", res.Report.Seed)
	// The held grid reads back, and searching it alone finds the same
	// point.
	cfg.Grid = c.Grid
	again, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	require.Equal(t, c.Values, again.Report.Best.Values)
	for i, e := range res.Model.Edges {
		require.Equal(t, m.Edges[i].Propagation, e.Propagation)
		require.NotEqual(t, cascade.Fitted, e.Provenance["propagation"], "%s->%s", e.From, e.To)
	}
}
