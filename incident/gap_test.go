package incident

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// thinSynth writes traces of web → api → {db, thin} at 20 a second for
// 120 s; api calls thin on one request in every (10 when 0: 2 calls a
// second). delay(t) is added to the network of every call into thin at
// time t (seconds), starve(t) to api's client spans around each of its
// calls (a CPU-starved caller), and thin's own work is multiplied by
// 1+slow(t) (a CPU-starved thin; nil: none), db's by 1+dbSlow
// throughout (a capture whose db differs from a reference's from the
// start). With kinds false every
// span is unspecified, as in Nezha's CSV: the caller's span around a
// call is the parent of the callee's.
type thinSynth struct {
	delay, starve, slow func(t float64) float64
	kinds               bool
	every               int
	dbSlow              float64
}

func (s thinSynth) spans() []cascade.Span {
	rng := rand.New(rand.NewPCG(11, 11))
	const t0 = int64(1_700_000_000) * 1e9
	var out []cascade.Span
	ms := func(x float64) int64 { return int64(x * 1e6) }
	kind := func(k cascade.SpanKind) cascade.SpanKind {
		if s.kinds {
			return k
		}
		return cascade.KindUnspecified
	}
	for i := 0; i < 2400; i++ {
		t := float64(i) / 20
		start := t0 + int64(t*1e9)
		trace := fmt.Sprintf("%032x", i+1)
		id := 0
		next := func() string { id++; return fmt.Sprintf("%016x", id) }
		jit := func(x float64) float64 { return x * (0.9 + 0.2*rng.Float64()) }
		var tr []cascade.Span
		add := func(parent, svc, op string, k cascade.SpanKind, from int64, dur float64) string {
			sid := next()
			tr = append(tr, cascade.Span{TraceID: trace, SpanID: sid, ParentSpanID: parent, Service: svc,
				Operation: op, Kind: kind(k), Start: from, Duration: ms(dur), Status: cascade.StatusOK})
			return sid
		}
		db := jit(10) * (1 + s.dbSlow)
		thin := 0.0
		gap := 1 + jit(1) + s.starve(t)
		thinGap := gap + s.delay(t)
		every := s.every
		if every == 0 {
			every = 10
		}
		calls := i%every == 0
		if calls {
			thin = jit(5)
			if s.slow != nil {
				thin *= 1 + s.slow(t)
			}
		}
		api := jit(3) + db + 2*gap
		if calls {
			api += thin + 2*thinGap
		}
		web := jit(2) + api + 2
		root := add("", "web", "GET /", cascade.KindServer, start, web)
		wc := add(root, "web", "call api", cascade.KindClient, start+ms(1), api+2)
		as := add(wc, "api", "api", cascade.KindServer, start+ms(2), api)
		a0 := start + ms(3)
		dc := add(as, "api", "query", cascade.KindClient, a0, db+2*gap)
		add(dc, "db", "query", cascade.KindServer, a0+ms(gap), db)
		if calls {
			a1 := a0 + ms(db+2*gap)
			tc := add(as, "api", "lookup", cascade.KindClient, a1, thin+2*thinGap)
			add(tc, "thin", "lookup", cascade.KindServer, a1+ms(thinGap), thin)
		}
		out = append(out, tr...)
	}
	return out
}

func TestGapOrigin(t *testing.T) {
	none := func(float64) float64 { return 0 }
	after := func(at, x float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= at {
				return x
			}
			return 0
		}
	}
	tests := []struct {
		name   string
		s      thinSynth
		origin string // "" for no change
		metric string // the origin's gap evidence
	}{
		{"thin callee's network", thinSynth{delay: after(60, 500), starve: none, kinds: true}, "thin", "gap_in"},
		{"thin callee's network, no span kinds", thinSynth{delay: after(60, 500), starve: none}, "thin", "gap_in"},
		{"starved caller", thinSynth{delay: none, starve: after(60, 40), kinds: true}, "api", "gap_out"},
		{"starved caller, no span kinds", thinSynth{delay: none, starve: after(60, 40)}, "api", "gap_out"},
		{"healthy", thinSynth{delay: none, starve: none, kinds: true}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inc, err := RootCause(context.Background(), graph.Spans(tc.s.spans()), nil, nil, DefaultConfig())
			require.NoError(t, err)
			if tc.origin == "" {
				require.Empty(t, inc.Origins, "%+v", inc.Nodes)
				return
			}
			requireCountedOrigin(t, inc, tc.origin, tc.metric)
		})
	}
}

// TestGapOriginInsideNormal: without a reference the normal range is
// the first 3 windows; a delay into thin from 15 s, inside them, leaves
// no step after them. The second pass, with the first window as the
// normal, finds it: thin is the origin, its change at the first judged
// window (30 s).
func TestGapOriginInsideNormal(t *testing.T) {
	none := func(float64) float64 { return 0 }
	for _, kinds := range []bool{true, false} {
		s := thinSynth{delay: func(t float64) float64 {
			if t >= 15 {
				return 500
			}
			return 0
		}, starve: none, kinds: kinds}
		inc, err := RootCause(context.Background(), graph.Spans(s.spans()), nil, nil, DefaultConfig())
		require.NoError(t, err)
		require.NotEmpty(t, inc.Origins, "%+v", inc.Nodes)
		require.Equal(t, "thin", inc.Origins[0], "%+v", inc.Nodes)
		require.Equal(t, inc.StartNS+3*int64(inc.WindowMS*1e6), inc.Nodes[0].AtNS)
		var gap *ChangeEvidence
		for i := range inc.Nodes[0].Evidence {
			if e := &inc.Nodes[0].Evidence[i]; e.Metric == "gap_in" {
				gap = e
			}
		}
		require.NotNil(t, gap, "%+v", inc.Nodes[0])
		require.Greater(t, gap.Value, 400.0)
	}
}

// requireCountedOrigin checks that origin is ranked first with evidence
// of metric counted in calls (a count, a 95% interval around the
// median) and its change at the fault (60 s: window 6), not before.
func requireCountedOrigin(t *testing.T, inc *Incident, origin, metric string) *ChangeEvidence {
	t.Helper()
	require.NotEmpty(t, inc.Origins, "%+v", inc.Nodes)
	require.Equal(t, origin, inc.Origins[0], "%+v", inc.Nodes)
	var ev *ChangeEvidence
	for i := range inc.Nodes[0].Evidence {
		if e := &inc.Nodes[0].Evidence[i]; e.Metric == metric {
			ev = e
		}
	}
	require.NotNil(t, ev, "%+v", inc.Nodes[0])
	require.Positive(t, ev.Calls)
	require.LessOrEqual(t, ev.ValueLow, ev.Value)
	require.GreaterOrEqual(t, ev.ValueHigh, ev.Value)
	require.Equal(t, inc.StartNS+6*int64(inc.WindowMS*1e6), inc.Nodes[0].AtNS)
	return ev
}

func TestGapRunK(t *testing.T) {
	tests := []struct {
		m     int
		alpha float64
		k     int
	}{
		{8, 1e-3, 4},  // P(≥4) = 3.7e-4, P(≥3) = 5.8e-3
		{10, 1e-3, 5}, // P(≥5) = 6.4e-5, P(≥4) = 1.03e-3
		{6, 1e-3, 4},
		{8, 0.5, 1}, // P(≥1) = 0.34
	}
	for _, tc := range tests {
		require.Equal(t, tc.k, gapRunK(tc.m, 0.05, tc.alpha), "m=%d alpha=%g", tc.m, tc.alpha)
	}
}

func TestGapPool(t *testing.T) {
	// One edge, normal gaps 2–4 ms; 40 judged calls a second apart whose
	// gaps are 3 ms except where gaps says.
	edge := func(gaps map[int]float64) *gapEdge {
		e := &gapEdge{key: [2]string{"a", "b"}, normal: []float64{2, 2.5, 3, 3, 3.5, 4}}
		e.med, e.high = 3, 8 // max(p95, median + 5 ms)
		for i := 0; i < 40; i++ {
			g := 3.0
			if x, ok := gaps[i]; ok {
				g = x
			}
			e.calls = append(e.calls, gapRec{at: int64(i) * 1e9, gap: g})
		}
		return e
	}
	from := func(i, n int, g float64) map[int]float64 {
		m := map[int]float64{}
		for k := i; k < i+n; k++ {
			m[k] = g
		}
		return m
	}
	tests := []struct {
		name  string
		gaps  map[int]float64
		onset int64 // -1: no change
		n     int
	}{
		{"normal", nil, -1, 0},
		{"a chance run of 4 high, then normal", from(10, 4, 500), -1, 0},
		{"3 high in a row: below k", map[int]float64{30: 500, 31: 500, 32: 500}, -1, 0},
		{"a step at call 25", from(25, 15, 500), 25e9, 15},
		// From the chance run on, most calls are normal: the run was
		// chance, and the walk goes on to the step. (Had the step held
		// most of the calls from the run on, the onset would be the
		// run's: the first run whose calls from then on confirm it.)
		{"a chance run, then a step", func() map[int]float64 {
			m := from(30, 10, 500)
			m[5], m[7], m[8], m[9] = 500, 500, 500, 500
			return m
		}(), 30e9, 10},
		{"a step too small (×2)", from(25, 15, 6), -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := gapPool("b", "gap_in", []*gapEdge{edge(tc.gaps)}, false)
			if tc.onset < 0 {
				require.Nil(t, ch)
				return
			}
			require.NotNil(t, ch)
			require.Equal(t, tc.onset, ch.onset)
			require.Equal(t, tc.n, ch.n)
			require.InDelta(t, 500.0, ch.postMed, 1e-9)
			require.InDelta(t, math.Log(500.0/3), ch.size, 1e-9)
		})
	}
}
