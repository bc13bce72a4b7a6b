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

func observe(t testing.TB, cfg fit.Config, m *cascade.Model, spans cascade.SpanSource, samples cascade.SampleSource) *fit.Observations {
	t.Helper()
	obs, err := fit.Observe(context.Background(), cfg, m, spans, samples)
	require.NoError(t, err)
	return obs
}

// TestObserveMatchesGraph holds the windows' per-node counts and
// quantiles to what graph measured over the same spans: one window
// covers the whole capture, so they must agree.
func TestObserveMatchesGraph(t *testing.T) {
	tests := []struct {
		name  string
		dir   func(testing.TB) string
		level graph.Level
	}{
		{"hotrod service", hotrodDataset, graph.LevelService},
		{"hotrod operation", hotrodDataset, graph.LevelOperation},
		{"trainticket service", trainTicketDataset, graph.LevelService},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			res := buildModel(t, dir, tc.level)
			obs := observe(t, fit.DefaultConfig(), res.Model, spansOf(dir), nil)
			require.Len(t, obs.Windows, 1, "the capture is shorter than two minutes")
			w := obs.Windows[0]
			require.EqualValues(t, res.Stats.Roots, w.Roots)
			require.Len(t, w.Nodes, len(res.Model.Nodes))
			for _, n := range w.Nodes {
				mn := res.Model.Node(n.Name)
				require.NotNil(t, mn, n.Name)
				o := mn.Observed
				require.Equal(t, o.Requests, n.Requests, n.Name)
				require.InDelta(t, o.ErrorRate, float64(n.Failures)/float64(n.Requests), 1e-6, n.Name)
				require.InDelta(t, o.LatencyP50MS, n.P50MS, 1e-3, n.Name)
				require.InDelta(t, o.LatencyP95MS, n.P95MS, 1e-3, n.Name)
				require.InDelta(t, o.LatencyP99MS, n.P99MS, 1e-3, n.Name)
			}
			require.False(t, obs.StatusFromTraces == (tc.name != "trainticket service"))
		})
	}
}

func TestObserveWindows(t *testing.T) {
	dir := hotrodDataset(t)
	m := buildModel(t, dir, graph.LevelService).Model
	cfg := fit.DefaultConfig()
	cfg.Window = 30 * time.Second
	all := observe(t, cfg, m, spansOf(dir), nil)
	require.Equal(t, 3, all.Total, "88.6 s of trace starts in 30 s windows")
	roots := 0
	for _, w := range all.Windows {
		roots += w.Roots
		require.Len(t, w.Arrivals, w.Roots)
		for i, a := range w.Arrivals {
			require.GreaterOrEqual(t, a.AtMS, 0.0)
			require.Less(t, a.AtMS, w.LengthMS)
			require.Equal(t, "frontend", a.Entry)
			if i > 0 {
				require.GreaterOrEqual(t, a.AtMS, w.Arrivals[i-1].AtMS)
			}
		}
	}
	require.Equal(t, 300, roots)

	for _, tc := range []struct {
		windows string
		want    []int
		errHas  string
	}{
		{"0,2", []int{0, 2}, ""},
		{"2,0,2", []int{0, 2}, ""},
		{"auto", []int{0, 1, 2}, ""},
		{"9", nil, "window 9 does not exist"},
		{"x", nil, "window numbers"},
	} {
		cfg.Windows = tc.windows
		obs, err := fit.Observe(context.Background(), cfg, m, spansOf(dir), nil)
		if tc.errHas != "" {
			require.ErrorContains(t, err, tc.errHas, tc.windows)
			continue
		}
		require.NoError(t, err)
		var got []int
		for _, w := range obs.Windows {
			got = append(got, w.Index)
		}
		require.Equal(t, tc.want, got, tc.windows)
	}
	cfg.Windows, cfg.Busiest = "auto", 1
	obs := observe(t, cfg, m, spansOf(dir), nil)
	require.Len(t, obs.Windows, 1)
	require.Equal(t, 105, obs.Windows[0].Roots, "the busiest 30 s")
}

// small trace helpers: a span of service svc, id id, parent parent,
// from ms a for d ms.
func span(trace, id, parent, svc, op string, kind cascade.SpanKind, a, d int64) cascade.Span {
	const t0 = int64(1_700_000_000) * 1e9
	return cascade.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: svc, Operation: op,
		Kind: kind, Start: t0 + a*1e6, Duration: d * 1e6}
}

func failed(s cascade.Span) cascade.Span { s.Status = cascade.StatusError; return s }

func memSpans(spans []cascade.Span) cascade.SpanSource {
	return func(fn func(*cascade.Span) error) error {
		for i := range spans {
			if err := fn(&spans[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

func twoNodeModel() *cascade.Model {
	return &cascade.Model{Version: 1, Entries: []cascade.Entry{{Node: "a", Share: 1}},
		Nodes: []cascade.Node{
			{Name: "a", Replicas: 1, Concurrency: 2, Service: cascade.Const(1), Overload: cascade.Overload{Base: 0.5}},
			{Name: "b", Replicas: 1, Concurrency: 1, Service: cascade.Const(1), Overload: cascade.Overload{Base: 0.5}},
		},
		Edges: []cascade.Edge{{From: "a", To: "b", FanOut: cascade.Const(1), Propagation: 1}}}
}

// TestObserveFailures: own failures, retries counted as attempts, and,
// where no span has a status, truncated traces as the evidence.
func TestObserveFailures(t *testing.T) {
	server, client := cascade.KindServer, cascade.KindClient
	spans := []cascade.Span{
		// t1: a calls b, b fails, is retried and fails again; a fails.
		failed(span("t1", "1", "", "a", "/", server, 0, 50)),
		failed(span("t1", "2", "1", "a", "get", client, 1, 10)),
		failed(span("t1", "3", "2", "b", "/get", server, 2, 8)),
		failed(span("t1", "4", "1", "a", "get", client, 20, 10)),
		failed(span("t1", "5", "4", "b", "/get", server, 21, 8)),
		// t2: a fails on its own; b is fine.
		failed(span("t2", "1", "", "a", "/", server, 100, 50)),
		span("t2", "2", "1", "a", "get", client, 101, 10),
		span("t2", "3", "2", "b", "/get", server, 102, 8),
	}
	m := twoNodeModel()
	obs := observe(t, fit.DefaultConfig(), m, memSpans(spans), nil)
	require.False(t, obs.StatusFromTraces)
	require.Equal(t, []fit.OwnFailures{{Node: "a", Failed: 2, Own: 1}, {Node: "b", Failed: 2, Own: 2}}, obs.Own)
	w := obs.Windows[0]
	require.Equal(t, []int64{2, 3}, []int64{w.Nodes[0].Requests, w.Nodes[1].Requests})
	require.Len(t, obs.Calls, 3)
	var attempts []float64
	for _, c := range obs.Calls {
		attempts = append(attempts, c.Attempt)
	}
	require.ElementsMatch(t, []float64{1, 2, 1}, attempts, "the second failed call repeats the first")

	// The same without statuses, t2 cut short (its root's child is lost).
	var bare []cascade.Span
	for _, s := range spans {
		s.Status = cascade.StatusUnset
		if s.TraceID == "t2" && s.SpanID == "2" {
			continue
		}
		bare = append(bare, s)
	}
	obs = observe(t, fit.DefaultConfig(), m, memSpans(bare), nil)
	require.True(t, obs.StatusFromTraces)
	w = obs.Windows[0]
	require.Equal(t, "a", w.Nodes[0].Name)
	require.EqualValues(t, 1, w.Nodes[0].Failures, "t2's root failed: its trace is cut short")
	require.EqualValues(t, 1, w.Nodes[1].Failures, "t2's orphan b span heads a fragment")
	require.NotEmpty(t, obs.Notes)
}

func TestObserveQueueDepth(t *testing.T) {
	spans := []cascade.Span{
		span("t1", "1", "", "a", "/", cascade.KindServer, 0, 50),
		span("t1", "2", "1", "b", "/get", cascade.KindServer, 2, 8),
		span("t2", "1", "", "a", "/", cascade.KindServer, 100, 50),
	}
	const t0 = int64(1_700_000_000) * 1e9
	samples := []cascade.Sample{
		{Time: t0, Service: "b", Instance: "b-1", Metric: "q", Kind: cascade.MetricQueueDepth, Value: 3},
		{Time: t0, Service: "b", Instance: "b-2", Metric: "q", Kind: cascade.MetricQueueDepth, Value: 1},
		{Time: t0 + 1e6, Service: "b", Instance: "b-1", Metric: "q", Kind: cascade.MetricQueueDepth, Value: 2},
		{Time: t0, Service: "c", Metric: "q", Kind: cascade.MetricQueueDepth, Value: math.NaN()},
		{Time: t0, Service: "b", Metric: "cpu", Kind: cascade.MetricCPU, Value: 9},
	}
	src := func(fn func(*cascade.Sample) error) error {
		for i := range samples {
			if err := fn(&samples[i]); err != nil {
				return err
			}
		}
		return nil
	}
	obs := observe(t, fit.DefaultConfig(), twoNodeModel(), memSpans(spans), src)
	b := obs.Windows[0].Nodes[1]
	require.Equal(t, "b", b.Name)
	require.True(t, b.HasQueue)
	require.Equal(t, 3.0, b.QueueDepth, "(3+1 at t0, 2 at t0+1ms) / 2 timestamps")
	require.False(t, obs.Windows[0].Nodes[0].HasQueue)
}

func TestObserveErrors(t *testing.T) {
	_, err := fit.Observe(context.Background(), fit.DefaultConfig(), twoNodeModel(), memSpans(nil), nil)
	require.ErrorIs(t, err, fit.ErrNoTraces)
	cfg := fit.DefaultConfig()
	cfg.Window = -time.Second
	_, err = fit.Observe(context.Background(), cfg, twoNodeModel(), memSpans(nil), nil)
	require.ErrorContains(t, err, "window: -1s is negative")
}
