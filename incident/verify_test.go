package incident

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// chainWindow is one window of the hand-made chain gateway → orders →
// stock: each node's self time (ms) and error share.
type chainWindow struct {
	self map[string]float64
	errs map[string]float64
}

// chainAcc builds the windows of a capture of the chain: normal for
// three windows, then the incident's three. Latency as callers see it
// is the self time plus the callees' latency, errors spread upwards.
func chainAcc(incident chainWindow) *spanAcc {
	const width = int64(10 * time.Second)
	acc := newSpanAcc(width, 1024, 1)
	normal := chainWindow{self: map[string]float64{"gateway": 1, "orders": 2, "stock": 5}}
	for w := int64(0); w < 6; w++ {
		cw := normal
		if w >= 3 {
			cw = incident
		}
		var lat, errShare float64
		for _, name := range []string{"stock", "orders", "gateway"} {
			lat += cw.self[name]
			errShare = max(errShare, cw.errs[name])
			x := &winAcc{n: 100, errs: int64(100 * errShare)}
			for k := range 100 {
				jitter := 1 + 0.01*float64(k%5-2)
				x.lat.vals = append(x.lat.vals, lat*jitter)
				x.self.vals = append(x.self.vals, cw.self[name]*jitter)
			}
			if acc.nodes[name] == nil {
				acc.nodes[name] = map[int64]*winAcc{}
			}
			acc.nodes[name][w] = x
		}
		acc.rootWin[w] = 100
	}
	return acc
}

func chainModel() *cascade.Model {
	node := func(name string, svc float64) cascade.Node {
		return cascade.Node{Name: name, Replicas: 1, Service: cascade.Const(svc)}
	}
	edge := func(from, to string) cascade.Edge {
		return cascade.Edge{From: from, To: to, FanOut: cascade.Const(1), Propagation: 1}
	}
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "gateway", RatePerSec: 20, Share: 1}},
		Nodes:   []cascade.Node{node("gateway", 1), node("orders", 2), node("stock", 5)},
		Edges:   []cascade.Edge{edge("gateway", "orders"), edge("orders", "stock")},
	}
}

// TestVerifyOrder checks the replay check on the chain gateway → orders
// → stock where the fault is stock's and analyse ranked orders first in
// the same onset group: orders' own time or errors rose too, a little,
// and its change was not put down to stock. Injecting stock's fault
// reproduces what orders and the gateway did; injecting orders' leaves
// stock's change unexplained. Without the check orders stays first.
func TestVerifyOrder(t *testing.T) {
	tests := []struct {
		name     string
		incident chainWindow
		want     string // first after the check
	}{
		{"stock slowed ×3, orders a little", chainWindow{self: map[string]float64{"gateway": 1, "orders": 3, "stock": 15}}, "stock"},
		{"stock fails 30%, orders slowed a little", chainWindow{
			self: map[string]float64{"gateway": 1, "orders": 3, "stock": 5},
			errs: map[string]float64{"stock": 0.3}}, "stock"},
		{"orders slowed ×4, stock a little", chainWindow{self: map[string]float64{"gateway": 1, "orders": 8, "stock": 6}}, "orders"},
	}
	defer func(v int) { verifyBy = v }(verifyBy)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc := chainAcc(tc.incident)
			cfg := DefaultConfig()
			cfg.Seed = 1
			at := 3 * acc.width
			changes := []NodeChange{
				{Node: "gateway", Changed: true, AtNS: at, ExplainedBy: []string{"orders"}},
				{Node: "orders", Changed: true, AtNS: at},
				{Node: "stock", Changed: true, AtNS: at},
			}
			order, groups := []int{1, 2, 0}, []int{3, 3, 3} // orders, stock; then gateway
			for _, by := range []int{verifyOff, verifyGroup} {
				verifyBy = by
				cs := append([]NodeChange(nil), changes...)
				got, err := verifyOrder(context.Background(), acc, nil, chainModel(), cfg, cs, order, groups)
				require.NoError(t, err, "seed %d", cfg.Seed)
				first := cs[got[0]].Node
				t.Logf("check %d: %s %s fit %.3f, %s %s fit %.3f", by, cs[1].Node, cs[1].ReplayFault, cs[1].ReplayFit,
					cs[2].Node, cs[2].ReplayFault, cs[2].ReplayFit)
				require.Equal(t, "gateway", cs[got[2]].Node, "an explained node stays after the unexplained")
				if by == verifyOff {
					require.Equal(t, "orders", first, "analyse's order, without the check")
					continue
				}
				require.Equal(t, tc.want, first, "seed %d; fits orders %.3f stock %.3f", cfg.Seed, cs[1].ReplayFit, cs[2].ReplayFit)
				require.Greater(t, cs[got[0]].ReplayFit, cs[got[1]].ReplayFit)
			}
		})
	}
}

// TestVerifyDeterministic checks that the replay check gives the same
// incident, byte for byte, at any parallelism: its replays write into
// slots by index.
func TestVerifyDeterministic(t *testing.T) {
	cfg := shapes.Config{Shape: "mixed", Traces: int(shapes.Rate("mixed") * 120), Slow: "stock", SlowFactor: 3}
	dir, _ := shapetest.Dataset(t, cfg)
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, nil)
	require.NoError(t, err)
	var want []byte
	for _, par := range []int{1, 3, 8} {
		icfg := DefaultConfig()
		icfg.Slowdown, icfg.Parallel = 0, par
		inc, err := RootCause(context.Background(), src, nil, res.Model, icfg)
		require.NoError(t, err)
		fitted := 0
		for _, n := range inc.Nodes {
			if n.ReplayFault != "" {
				fitted++
			}
		}
		require.GreaterOrEqual(t, fitted, 2, "the check replayed the candidates: %+v", brief(inc))
		got, err := json.Marshal(inc)
		require.NoError(t, err)
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, string(want), string(got), "parallel %d, seed %d", par, icfg.Seed)
	}
}
