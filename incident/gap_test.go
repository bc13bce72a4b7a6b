package incident

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// thinSynth writes traces of web → api → {db, thin} at 20 a second for
// 120 s; api calls thin on one request in ten (2 calls a second). delay(t)
// is added to the network of every call into thin at time t (seconds),
// starve(t) to api's client spans around each of its calls (a
// CPU-starved caller). With kinds false every span is unspecified, as in
// Nezha's CSV: the caller's span around a call is the parent of the
// callee's.
type thinSynth struct {
	delay, starve func(t float64) float64
	kinds         bool
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
		db := jit(10)
		thin := 0.0
		gap := 1 + jit(1) + s.starve(t)
		thinGap := gap + s.delay(t)
		calls := i%10 == 0
		if calls {
			thin = jit(5)
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
			require.NotEmpty(t, inc.Origins, "%+v", inc.Nodes)
			require.Equal(t, tc.origin, inc.Origins[0], "%+v", inc.Nodes)
			var ev *ChangeEvidence
			for i := range inc.Nodes[0].Evidence {
				if e := &inc.Nodes[0].Evidence[i]; e.Metric == tc.metric {
					ev = e
				}
			}
			require.NotNil(t, ev, "%+v", inc.Nodes[0])
			require.Positive(t, ev.Calls)
			require.LessOrEqual(t, ev.ValueLow, ev.Value)
			require.GreaterOrEqual(t, ev.ValueHigh, ev.Value)
			// The onset is at the fault (60 s: window 6), not before.
			require.Equal(t, inc.StartNS+6*int64(inc.WindowMS*1e6), inc.Nodes[0].AtNS)
		})
	}
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
