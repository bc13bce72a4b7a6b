package fit_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/graph"
)

func TestParseGrid(t *testing.T) {
	m := chainModel()
	truthValues{tier: "tiers", p: 1, r: 0.5, k: 0, th: 1}.set(m)
	tests := []struct {
		name   string
		spec   string
		size   int
		canon  string
		errHas string
	}{
		{"issue example", "p=0.01:0.5:0.01,r=0:1:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,tier=p50|p95|p99|empirical,fanout=1",
			50 * 11 * 5 * 4 * 4, "tier=p50|p95|p99|empirical,p=0.01:0.5:0.01,r=0:1:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,fanout=1", ""},
		{"lists sorted and deduplicated", "k=2|0|1|1", 3, "k=0|1|2", ""},
		{"targets", "p.api->db=0.1|0.9,p=0.5,k.db=0:1:0.5,p.sync=0.2", 2 * 3, "p=0.5,p.api->db=0.1|0.9,p.sync=0.2,k.db=0:1:0.5", ""},
		{"range end kept despite float noise", "theta=0.6:1.2:0.2", 4, "theta=0.6:1.2:0.2", ""},
		{"unknown parameter", "q=1", 0, "", `parameter "q"`},
		{"p outside [0,1]", "p=0:2:1", 0, "", "p values must be in [0, 1]"},
		{"bad range", "k=2:1:0.5", 0, "", "START <= STOP"},
		{"bad tier", "tier=p42", 0, "", `tier "p42"`},
		{"axis twice", "k=1,k=2", 0, "", "given twice"},
		{"unknown edge", "p.a->b=0.1", 0, "", "no edge of the model"},
		{"unknown node", "k.nosuch=1", 0, "", `no node "nosuch"`},
		{"r without retries", "r.gateway->api=0.5", 0, "", "retry policy"},
		{"no value", "k=", 0, "", "no values"},
		{"empty", "", 0, "", "no axis"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := fit.ParseGrid(tc.spec, m)
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.size, g.Size())
			require.Equal(t, tc.canon, g.String())
			again, err := fit.ParseGrid(g.String(), m)
			require.NoError(t, err)
			require.Equal(t, g.String(), again.String(), "the canonical form reads back")
			for _, i := range []int{0, g.Size() / 2, g.Size() - 1} {
				require.Equal(t, i, g.Index(g.Coords(i)))
			}
		})
	}
}

// TestDefaultGridSize holds the floor: the default grid has at
// least 1,000 points, for the bundled HotROD model and for a bare model.
func TestDefaultGridSize(t *testing.T) {
	hot := buildModel(t, hotrodDataset(t), graph.LevelService).Model
	g, err := fit.DefaultGrid(hot)
	require.NoError(t, err)
	require.Equal(t, "tier=model|p50|p95|p99|empirical,p=0.01:0.5:0.01,r=0.8:1:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,fanout=1", g.String())
	require.Equal(t, 15000, g.Size())

	bare := &cascade.Model{Version: 1, Entries: []cascade.Entry{{Node: "a", Share: 1}},
		Nodes: []cascade.Node{{Name: "a", Replicas: 1, Service: cascade.Const(1)}, {Name: "b", Replicas: 1, Service: cascade.Const(1)}},
		Edges: []cascade.Edge{{From: "a", To: "b", FanOut: cascade.Const(1)}}}
	g, err = fit.DefaultGrid(bare)
	require.NoError(t, err)
	require.GreaterOrEqual(t, g.Size(), 1000)

	storm := stormModel()
	truthValues{tier: "tiers", p: 1, r: 0.35, k: 0, th: 1}.set(storm)
	g, err = fit.DefaultGrid(storm)
	require.NoError(t, err)
	require.Contains(t, g.String(), "r=0.2:0.6:0.1", "r is centred on the observed 0.35 (rounded to 0.4)")
	require.Equal(t, 25000, g.Size())
}

func TestApply(t *testing.T) {
	m := stormModel()
	truthValues{tier: "tiers", p: 1, r: 0.35, k: 0, th: 1}.set(m)
	m.Edges[0].FanOut = cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 2}}
	g, err := fit.ParseGrid("tier=p99|empirical,p=0.2,p.server->db=0.7,r=0.9,k=1.5,theta.server=0.4,fanout=2", m)
	require.NoError(t, err)
	before, _ := json.Marshal(m)
	out := g.Apply(m, 0)
	after, _ := json.Marshal(m)
	require.JSONEq(t, string(before), string(after), "Apply leaves its input alone")

	db, srv := out.Node("db"), out.Node("server")
	require.Equal(t, cascade.Const(m.Node("db").Tiers.P99), db.Service)
	require.Equal(t, 0.7, out.Edges[0].Propagation, "the edge's own axis beats the global p")
	require.Equal(t, 0.9, out.Entries[0].Retry.Reactivation, "an untargeted r sets the entries' retries")
	require.Equal(t, 1.5, db.Overload.Slope)
	require.Equal(t, 1.0, db.Overload.Threshold, "theta.server leaves db alone")
	require.Equal(t, 0.4, srv.Overload.Threshold)
	require.Equal(t, []float64{2, 4}, out.Edges[0].FanOut.Points)
	require.NoError(t, out.Validate())

	emp := g.Apply(m, 1)
	require.Equal(t, cascade.DistEmpirical, emp.Node("server").Service.Kind)
	require.Len(t, emp.Node("server").Service.Points, 101)
	require.Equal(t, "tier=empirical p=0.2 p.server->db=0.7 r=0.9 k=1.5 theta.server=0.4 fanout=2", g.Values(1).String())
}

func TestTierDist(t *testing.T) {
	tr := &cascade.Tiers{P50: 2, P95: 8, P99: 20, Mean: 3}
	for _, tc := range []struct {
		tier string
		want cascade.Dist
	}{
		{"p50", cascade.Const(2)},
		{"p95", cascade.Const(8)},
		{"p99", cascade.Const(20)},
		{"mean", cascade.Const(3)},
		{"tiers", cascade.Dist{Kind: cascade.DistTiers, P50: 2, P95: 8, P99: 20}},
		{"empirical", cascade.Dist{Kind: cascade.DistTiers, P50: 2, P95: 8, P99: 20}},
	} {
		require.Equal(t, tc.want, fit.TierDist(tc.tier, tr), tc.tier)
	}
}

func TestPointJSON(t *testing.T) {
	p := fit.Point{{Axis: "tier", Value: "p99"}, {Axis: "p", Value: "0.25"}, {Axis: "k.db", Value: "1"}}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.Equal(t, `{"tier":"p99","p":0.25,"k.db":1}`, string(b))
	var back fit.Point
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, p, back)
}
