package fit_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/graph"
	"cascade/replay"
)

// chainFit returns the chain model's synthetic observations (two short
// windows) and the scrambled model to fit.
func chainFit(t testing.TB) (*cascade.Model, *fit.Observations) {
	truth := chainModel()
	truthValues{tier: "p95", p: 0.3, r: 0.6, k: 1, th: 0.8}.set(truth)
	obs := synthObservations(t, truth, []synthWindow{{250, 1}, {500, 1}, {600, 1}})
	start := chainModel()
	truthValues{tier: "tiers", p: 1, r: 0.1, k: 0, th: 1}.set(start)
	return start, obs
}

// TestRunParallelIsIdentical holds the determinism contract: the report
// (its loss plane included) and the calibrated model are the same bytes
// at any parallelism, for both searches.
func TestRunParallelIsIdentical(t *testing.T) {
	m, obs := chainFit(t)
	for _, search := range []string{fit.SearchExhaustive, fit.SearchRefine} {
		var want []byte
		for _, par := range []int{1, 2, 4} {
			cfg := fit.DefaultConfig()
			cfg.Grid = "tier=p50|p95,p=0.1:0.5:0.2,r=0.2:1:0.4,k=0:2:1,theta=0.8|1"
			cfg.Search, cfg.Parallel = search, par
			res, err := fit.Run(context.Background(), cfg, m, obs)
			require.NoError(t, err)
			require.NotNil(t, res.Report.Plane, "the plane is held to the contract too")
			rep, err := json.Marshal(res.Report)
			require.NoError(t, err)
			doc, err := cascade.EncodeModel(res.Model)
			require.NoError(t, err)
			got := append(rep, doc...)
			if want == nil {
				want = got
				continue
			}
			require.Equal(t, string(want), string(got), "%s at parallel %d (seed %d)", search, par, cfg.Seed)
		}
	}
}

func TestRunReport(t *testing.T) {
	m, obs := chainFit(t)
	cfg := fit.DefaultConfig()
	cfg.Grid = "tier=p50|p95,p=0.1:0.5:0.2,k=0:2:1,theta=0.8"
	cfg.Holdout = -1
	var calls, last int64
	cfg.Progress = func(done, total int64) {
		calls++
		require.GreaterOrEqual(t, done, last)
		require.LessOrEqual(t, done, total)
		last = done
	}
	res, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	rep := res.Report
	require.Positive(t, calls)
	require.Equal(t, fit.SearchExhaustive, rep.Search)
	require.Equal(t, 2*3*3, rep.Points)
	require.Equal(t, rep.Points, rep.Evaluated)
	require.Len(t, rep.Windows, 3)
	require.Len(t, rep.Tiers, 2)
	require.Equal(t, "p95", rep.Best.Value("tier"))
	require.Len(t, rep.Holdout, 3, "-1 backtests every window")
	for _, h := range rep.Holdout {
		require.NotEmpty(t, h.Nodes)
		require.GreaterOrEqual(t, h.Loss, h.InSample*0.999, "a point fitted without the window predicts it no better than the one fitted with it")
	}
	require.Len(t, rep.HoldoutNodes, 3)
	require.Len(t, rep.Nodes, 3)
	for _, s := range rep.Surface {
		require.NotEmpty(t, s.Verdict, s.Axis)
	}
	axes := map[string]bool{}
	for _, mv := range rep.Moved {
		axes[mv.Axis] = true
	}
	require.Equal(t, map[string]bool{"p": true, "k": true, "theta": true}, axes)

	// The calibrated model: the best values, provenance, the summary.
	cal := res.Model
	// (r is not searched and starts far from the truth, so p makes up
	// for it: the best p need not be the truth's 0.3.)
	require.Equal(t, rep.Best.Value("p"), strconv.FormatFloat(cal.Edges[0].Propagation, 'g', -1, 64))
	require.Equal(t, cascade.Fitted, cal.Edges[0].Provenance["propagation"])
	require.Equal(t, cascade.Fitted, cal.Node("api").Provenance["service_ms"])
	require.Equal(t, cascade.Fitted, cal.Node("db").Provenance["overload.slope"])
	require.Equal(t, cascade.Const(cal.Node("api").Tiers.P95), cal.Node("api").Service)
	doc, err := cascade.EncodeModel(cal)
	require.NoError(t, err)
	back, err := cascade.DecodeModel(doc)
	require.NoError(t, err, "the calibrated model reads back strictly")
	var sum fit.Summary
	require.NoError(t, json.Unmarshal(back.Fit, &sum))
	require.Equal(t, rep.Best.Values, sum.Best.Values)
	require.Equal(t, []int{0, 1, 2}, sum.Windows)
	require.Nil(t, m.Fit, "the input model is left alone")
	require.Equal(t, 1.0, m.Edges[0].Propagation)
}

// TestRunOwnBase: a node whose failures are mostly its callee's keeps
// only its own share as overload base.
func TestRunOwnBase(t *testing.T) {
	m := twoNodeModel()
	// a fails 1 − (1 − base_a)(1 − base_b) of its requests through p = 1:
	// 75% with a's whole rate, 56% with its own share, as observed.
	var arr []replay.Arrival
	for i := range 100 {
		arr = append(arr, replay.Arrival{AtMS: float64(10 * i)})
	}
	obs := &fit.Observations{
		Windows: []fit.Window{{LengthMS: 1000, Arrivals: arr, Roots: len(arr), Nodes: []fit.NodeObs{
			{Name: "a", Requests: 100, Failures: 56, P50MS: 2, P95MS: 2, P99MS: 2},
			{Name: "b", Requests: 100, Failures: 50, P50MS: 1, P95MS: 1, P99MS: 1},
		}}},
		Own: []fit.OwnFailures{{Node: "a", Failed: 4, Own: 1}, {Node: "b", Failed: 3, Own: 3}},
	}
	cfg := fit.DefaultConfig()
	cfg.Grid = "k=0"
	res, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	require.Empty(t, res.Report.Calibrated.Kept, "the own share fits better")
	require.Equal(t, []fit.BaseChange{{Node: "a", From: 0.5, To: 0.125, Share: 0.25}}, res.Report.Base)
	require.Equal(t, 0.125, res.Model.Node("a").Overload.Base)
	require.Equal(t, cascade.Fitted, res.Model.Node("a").Provenance["overload.base"])
	require.Equal(t, 0.5, res.Model.Node("b").Overload.Base)
}

func TestRunErrors(t *testing.T) {
	m, obs := chainFit(t)
	for _, tc := range []struct {
		name   string
		edit   func(*fit.Config)
		obs    *fit.Observations
		errHas string
	}{
		{"no windows", nil, &fit.Observations{}, "no observation window"},
		{"bad grid", func(c *fit.Config) { c.Grid = "k=x" }, obs, `"x" is not a number`},
		{"bad search", func(c *fit.Config) { c.Search = "random" }, obs, "search"},
		{"bad tier", func(c *fit.Config) { c.Tier = "p42" }, obs, "tier"},
		{"negative weight", func(c *fit.Config) { c.Weights.Queue = -1 }, obs, "weights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fit.DefaultConfig()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			_, err := fit.Run(context.Background(), cfg, m, tc.obs)
			require.ErrorContains(t, err, tc.errHas)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := fit.DefaultConfig()
	cfg.Grid = "k=0:2:0.5"
	_, err := fit.Run(ctx, cfg, m, obs)
	require.ErrorIs(t, err, context.Canceled)
}

// TestRunHotROD fits the bundled HotROD capture in 30-second windows with
// a small grid. The model's failure process (every 5th GetDriver fails,
// so the retry, the next call, succeeds) already explains why no dispatch
// failed: p changes nothing the windows show, its profile is flat, and
// the fit keeps the grid's value nearest graph's (p = 1 observed: 0.5)
// instead of the grid's first. The held-out windows are predicted within
// a few percent of their requests.
func TestRunHotROD(t *testing.T) {
	dir := hotrodDataset(t)
	m := buildModel(t, dir, graph.LevelService).Model
	cfg := fit.DefaultConfig()
	cfg.Window = 30 * time.Second
	cfg.Grid = "tier=p50|empirical,p=0.01|0.25|0.5,r=0.8:1:0.1,k=0|1"
	obs := observe(t, cfg, m, spansOf(dir), nil)
	res, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	rep := res.Report
	t.Logf("seed %d: best %s loss %g", rep.Seed, rep.Best.Values, rep.Best.Loss)
	require.Equal(t, "0.5", rep.Best.Value("p"))
	for _, sa := range rep.Surface {
		if sa.Axis == "p" {
			require.False(t, sa.Identifiable, sa.Verdict)
		}
	}
	// What the windows cannot see, the calibrated model does not change.
	for i, e := range res.Model.Edges {
		require.Equal(t, m.Edges[i].Propagation, e.Propagation, "%s->%s", e.From, e.To)
	}
	require.Equal(t, "empirical", rep.Best.Value("tier"))
	require.Len(t, rep.Holdout, 3)
	require.NotNil(t, rep.Logistic)
	require.Equal(t, 750, rep.Logistic.Failures)
	for _, n := range rep.HoldoutNodes {
		require.InDelta(t, 0, n.CallsErr, 0.1, n.Node)
		require.InDelta(t, 0, n.FailErr, 0.02, n.Node)
	}
}
