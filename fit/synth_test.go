package fit_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"cascade"
	"cascade/fit"
	"cascade/graph"
	"cascade/replay"
)

// This file is the proof that the fit recovers a known truth: a model
// with known p, r, k, θ and tier is replayed (with seeds the fit never
// uses) through windows of Poisson arrivals; an observer reads each
// window's per-node requests, failures, latency quantiles and queue
// depth with sampling noise; the fit, given the model with those values
// scrambled, must find them again within one grid step (the tier
// exactly).

// synthWindow is a window of Poisson arrivals.
type synthWindow struct {
	rate    float64 // roots per second
	seconds float64
}

// truthSeed seeds the truth's replays and the observer's noise: far from
// the fit's seeds (1, 2, …).
const truthSeed = 900_001

// synthObservations replays truth through windows and observes them. The
// observer samples half of each node's calls to read failures (the
// failure count is scaled back, so it is binomially noisy), and reads
// latencies and queue depths with 3% log-normal noise.
func synthObservations(t testing.TB, truth *cascade.Model, wins []synthWindow) *fit.Observations {
	t.Helper()
	rng := rand.New(rand.NewPCG(truthSeed, 2))
	obs := &fit.Observations{Level: "service", WindowMS: 0, Total: len(wins)}
	var at int64 = 1_700_000_000e9
	for i, sw := range wins {
		var arr []replay.Arrival
		for ms := rng.ExpFloat64() / sw.rate * 1000; ms < sw.seconds*1000; ms += rng.ExpFloat64() / sw.rate * 1000 {
			arr = append(arr, replay.Arrival{AtMS: ms})
		}
		cfg := replay.DefaultConfig()
		cfg.Observed = arr
		cfg.Duration = time.Duration(sw.seconds*float64(time.Second)) + fit.DefaultDrain
		cfg.Window = cfg.Duration
		cfg.Seed = truthSeed + uint64(i)
		r, err := replay.Replay(truth, cfg)
		require.NoError(t, err)
		w := fit.Window{Index: i, StartNS: at, LengthMS: sw.seconds * 1000, Arrivals: arr, Roots: len(arr)}
		at += int64(sw.seconds * 1e9)
		stretch := float64(cfg.Duration) / 1e9 / sw.seconds
		for _, n := range r.Nodes {
			var fails int64
			if n.Calls > 0 && n.Failures > 0 {
				seen := distuv.Binomial{N: float64(n.Calls), P: 0.5, Src: rng}.Rand()
				f := distuv.Binomial{N: seen, P: float64(n.Failures) / float64(n.Calls), Src: rng}.Rand()
				fails = min(n.Calls, int64(math.Round(f*float64(n.Calls)/math.Max(seen, 1))))
			}
			jitter := func(x float64) float64 { return x * math.Exp(0.03*rng.NormFloat64()) }
			w.Nodes = append(w.Nodes, fit.NodeObs{
				Name: n.Name, Requests: n.Calls, Failures: fails,
				P50MS: jitter(n.LatencyP50MS), P95MS: jitter(n.LatencyP95MS), P99MS: jitter(n.LatencyP99MS),
				QueueDepth: jitter(n.QueueMean * stretch), HasQueue: true,
			})
		}
		obs.Windows = append(obs.Windows, w)
	}
	return obs
}

// truthValues are the known values of a synthetic model.
type truthValues struct {
	tier        string
	p, r, k, th float64
}

// set writes v into m: tier on every node with tiers, p on every edge,
// r on every retry policy, k and θ on every node with a finite capacity.
func (v truthValues) set(m *cascade.Model) {
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Tiers != nil {
			n.Service = fit.TierDist(v.tier, n.Tiers)
		}
		if n.Concurrency > 0 {
			n.Overload.Slope, n.Overload.Threshold = v.k, v.th
		}
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		e.Propagation = v.p
		if e.Retry != nil {
			e.Retry.Reactivation = v.r
		}
	}
	for i := range m.Entries {
		if r := m.Entries[i].Retry; r != nil {
			r.Reactivation = v.r
		}
	}
}

// tiers makes observed tiers with quantile points of a log-normal of
// median p50 whose P99 is p99.
func tiers(p50, p99 float64) *cascade.Tiers {
	sigma := math.Log(p99/p50) / 2.326
	ln := distuv.LogNormal{Mu: math.Log(p50), Sigma: sigma}
	t := &cascade.Tiers{P50: p50, P95: ln.Quantile(0.95), P99: p99, Mean: ln.Mean()}
	for i := 0; i <= 100; i++ {
		q := math.Min(math.Max(float64(i)/100, 0.001), 0.999)
		t.Points = append(t.Points, math.Round(ln.Quantile(q)*1000)/1000)
	}
	return t
}

// chainModel is a gateway calling an API (2 × 4 slots) that calls a
// database (4 slots) three times in sequence, re-sending failed queries.
func chainModel() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "gateway", RatePerSec: 100, Share: 1}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 4, Concurrency: 4, Tiers: tiers(4, 20), Overload: cascade.Overload{Base: 0.002}},
			{Name: "db", Replicas: 1, Concurrency: 8, Tiers: tiers(1.5, 6), Overload: cascade.Overload{Base: 0.02}},
			{Name: "gateway", Replicas: 1, Service: cascade.Const(1)},
		},
		Edges: []cascade.Edge{
			{From: "api", To: "db", FanOut: cascade.Const(3), Parallelism: 1,
				Retry: &cascade.Retry{MaxAttempts: 3, Backoff: cascade.Backoff{Kind: cascade.BackoffNone}}},
			{From: "gateway", To: "api", FanOut: cascade.Const(1)},
		},
	}
}

// stormModel is seed 000's retry storm with a database behind the
// server: a client that times out after 200 ms and re-sends up to 3
// times with full-jitter backoff, a server of 4 slots whose failures
// grow with its load, and a database it calls once per request.
func stormModel() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "server", RatePerSec: 50, Share: 1, TimeoutMS: 200,
			Retry: &cascade.Retry{MaxAttempts: 4, Backoff: cascade.Backoff{Kind: cascade.BackoffFullJitter, BaseMS: 50}}}},
		Nodes: []cascade.Node{
			{Name: "db", Replicas: 1, Concurrency: 8, Tiers: tiers(5, 25), Overload: cascade.Overload{Base: 0.15}},
			{Name: "server", Replicas: 1, Concurrency: 16, QueueCap: 16, Tiers: tiers(25, 100), Overload: cascade.Overload{Base: 0.005}},
		},
		Edges: []cascade.Edge{
			{From: "server", To: "db", FanOut: cascade.Const(1)},
		},
	}
}

func TestRecoversSyntheticTruth(t *testing.T) {
	tests := []struct {
		name    string
		model   func() *cascade.Model
		truth   truthValues
		windows []synthWindow
		grid    string
	}{
		{
			name:    "chain with retried database queries",
			model:   chainModel,
			truth:   truthValues{tier: "p95", p: 0.3, r: 0.6, k: 1, th: 0.8},
			windows: []synthWindow{{200, 3}, {350, 3}, {500, 3}, {600, 3}},
			grid:    "tier=p50|p95|p99,p=0.1:0.5:0.1,r=0.2:1:0.2,k=0:2:0.5,theta=0.6:1.2:0.2",
		},
		{
			name:    "retry storm",
			model:   stormModel,
			truth:   truthValues{tier: "empirical", p: 0.5, r: 0.8, k: 0.5, th: 0.8},
			windows: []synthWindow{{120, 5}, {220, 5}, {280, 5}, {450, 4}, {700, 4}},
			grid:    "tier=p50|p95|empirical,p=0.1:0.9:0.2,r=0.2:1:0.2,k=0:2:0.5,theta=0.6:1.2:0.2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			truth := tc.model()
			tc.truth.set(truth)
			require.NoError(t, truth.Validate())
			obs := synthObservations(t, truth, tc.windows)
			// The fit starts from the model with the truth scrambled.
			start := tc.model()
			truthValues{tier: "tiers", p: 1, r: 0.1, k: 0, th: 1}.set(start)
			cfg := fit.DefaultConfig()
			cfg.Grid = tc.grid
			cfg.Search = fit.SearchRefine
			cfg.Holdout = 0
			res, err := fit.Run(context.Background(), cfg, start, obs)
			require.NoError(t, err)
			rep := res.Report
			t.Logf("seed %d: best %v loss %g (%d of %d points)", rep.Seed, rep.Best.Values, rep.Best.Loss, rep.Evaluated, rep.Points)
			for _, s := range rep.Surface {
				t.Logf("surface %s=%s: %s", s.Axis, s.Value, s.Verdict)
			}
			require.Equal(t, tc.truth.tier, rep.Best.Value("tier"), "tier (seed %d)", rep.Seed)
			for axis, want := range map[string]float64{"p": tc.truth.p, "r": tc.truth.r, "k": tc.truth.k, "theta": tc.truth.th} {
				got, err := strconv.ParseFloat(rep.Best.Value(axis), 64)
				require.NoError(t, err, axis)
				step := stepOf(t, rep.Grid, axis)
				require.LessOrEqual(t, math.Abs(got-want), step+1e-9, "%s: fitted %g, truth %g, step %g (seed %d)", axis, got, want, step, rep.Seed)
			}
		})
	}
}

// stepOf returns the step of an axis of a grid specification.
func stepOf(t testing.TB, spec, axis string) float64 {
	g, err := fit.ParseGrid(spec, nil)
	require.NoError(t, err)
	for _, a := range g.Axes {
		if a.Name() == axis {
			return a.Step
		}
	}
	t.Fatalf("no axis %s in %s", axis, spec)
	return 0
}

// TestRecoversTruthFromSpans runs the whole path on spans that no replay
// made: a generator writes traces of a web server calling a database
// that fails 20% of its queries, of which the server passes on half (p =
// 0.5); graph builds the model from the spans, Observe reads the
// windows, and the fit finds p again. It also holds the own-failure
// scaling: the server's errors are all the database's, so its overload
// base (its whole 10% error rate in graph's model) must drop to 0, or
// the fit would lower p to make room for them.
func TestRecoversTruthFromSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(truthSeed, 3))
	const ms = int64(time.Millisecond)
	t0 := int64(1_700_000_000) * 1e9
	var spans []cascade.Span
	for i := 0; i < 2000; i++ {
		at := t0 + int64(i)*20*ms + rng.Int64N(5*ms)
		id := strconv.Itoa(i)
		dbFail := rng.Float64() < 0.2
		webFail := dbFail && rng.Float64() < 0.5
		st := func(f bool) cascade.Status {
			if f {
				return cascade.StatusError
			}
			return cascade.StatusUnset
		}
		spans = append(spans,
			cascade.Span{TraceID: id, SpanID: "1", Service: "web", Operation: "GET /", Kind: cascade.KindServer, Start: at, Duration: 10 * ms, Status: st(webFail)},
			cascade.Span{TraceID: id, SpanID: "2", ParentSpanID: "1", Service: "web", Operation: "query", Kind: cascade.KindClient, Start: at + ms, Duration: 5 * ms, Status: st(dbFail)},
			cascade.Span{TraceID: id, SpanID: "3", ParentSpanID: "2", Service: "db", Operation: "SELECT", Kind: cascade.KindServer, Start: at + 2*ms, Duration: 3 * ms, Status: st(dbFail)},
		)
	}
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(spans), nil)
	require.NoError(t, err)
	m := res.Model
	require.Zero(t, m.Node("web").Overload.Base, "graph's base is web's own failures: none")

	cfg := fit.DefaultConfig()
	cfg.Window = 10 * time.Second
	cfg.Grid = "p=0:1:0.1,tier=p50|empirical"
	obs, err := fit.Observe(context.Background(), cfg, m, memSpans(spans), nil)
	require.NoError(t, err)
	require.Len(t, obs.Windows, 4)
	fr, err := fit.Run(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	rep := fr.Report
	t.Logf("seed %d: best %s loss %g; base %+v", rep.Seed, rep.Best.Values, rep.Best.Loss, rep.Base)
	p, err := strconv.ParseFloat(rep.Best.Value("p"), 64)
	require.NoError(t, err)
	require.InDelta(t, 0.5, p, 0.1+1e-9, "p within one step (seed %d)", rep.Seed)
	require.Empty(t, rep.Base, "nothing left to scale")
	require.Zero(t, fr.Model.Node("web").Overload.Base)

	// A model whose base is still the whole error rate (an older graph,
	// a hand-made model) is scaled to the own failures by the fit.
	old := *m
	old.Nodes = slices.Clone(m.Nodes)
	web := old.Node("web")
	web.Overload.Base = web.Observed.ErrorRate
	fr, err = fit.Run(context.Background(), cfg, &old, obs)
	require.NoError(t, err)
	require.Equal(t, []fit.BaseChange{{Node: "web", From: web.Observed.ErrorRate, To: 0, Share: 0}}, fr.Report.Base)
}
