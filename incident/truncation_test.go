package incident

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
	"cascade/testdata/shapes"

	"cascade/internal/shapetest"
)

// TestShapesEarlyReturn makes a service answer 70% of its requests
// without calling its callee from the middle of a two-minute capture
// (its own work unchanged, no error): the callee, and those below it,
// fall silent with their remaining calls as fast as before. The early
// returner must rank first, and its callee, where it changed, must be
// explained by it. In OTLP for the shapes of every recording style and
// with fan-out and retries, and in Nezha's CSV. The default run keeps
// one early returner for each shape, moving down the chain from shape
// to shape (9 of the 27 cases); CASCADE_LONG=1 runs them all.
func TestShapesEarlyReturn(t *testing.T) {
	sets := []struct {
		format string
		shapes []string
	}{
		{"", []string{"pairs", "client-only", "server-only", "mixed", "fan-out", "fallback"}},
		{shapes.NezhaCSV, []string{"pairs", "mixed", "fallback"}},
	}
	k := 0
	for _, set := range sets {
		for _, shape := range set.shapes {
			keep := k % 3
			k++
			for i, svc := range []string{"gateway", "orders", "stock"} {
				name := fmt.Sprintf("%s/%s", shape, svc)
				if set.format != "" {
					name = set.format + "/" + name
				}
				t.Run(name, func(t *testing.T) {
					if i != keep {
						testutil.Long(t)
					}
					cfg := shapes.Config{Shape: shape, Traces: int(shapes.Rate(shape) * 120), Format: set.format, EarlyReturn: svc}
					dir, _ := shapetest.Dataset(t, cfg)
					inc := shapeIncident(t, dir)
					require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
					require.Equal(t, svc, inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
					callee := shapes.Services[slices.Index(shapes.Services, svc)+1]
					for _, n := range inc.Nodes {
						if n.Node == callee && n.Changed {
							require.Contains(t, n.ExplainedBy, svc, "%+v", brief(inc))
						}
					}
				})
			}
		}
	}
}

// TestShapesEarlyReturnOwn injects an early return that skips the
// service's own work too (EarlyOwn 0.1: 70% of its requests do a tenth
// of it, from the middle of a two-minute capture), into a leaf, which
// has no calls to drop and only gets faster, and into a service with a
// callee. Against a fault-free capture of another seed it must rank
// first, its callee's silence explained by it. In OTLP and in Nezha's
// CSV. The default run keeps one of the two places for each shape, in
// turn (5 of the 10 cases); CASCADE_LONG=1 runs them all.
func TestShapesEarlyReturnOwn(t *testing.T) {
	k := 0
	for _, format := range []string{"", shapes.NezhaCSV} {
		for _, shape := range []string{"pairs", "server-only", "mixed"} {
			if format != "" && shape == "server-only" {
				continue
			}
			keep := k % 2
			k++
			for i, svc := range []string{"stock", "ledger"} {
				t.Run(strings.TrimPrefix(format+"/"+shape+"/"+svc, "/"), func(t *testing.T) {
					if i != keep {
						testutil.Long(t)
					}
					cfg := shapes.Config{Shape: shape, Traces: int(shapes.Rate(shape) * 120), Format: format, EarlyReturn: svc, EarlyOwn: 0.1}
					dir, _ := shapetest.Dataset(t, cfg)
					cfg.EarlyReturn, cfg.Seed = "", 7
					refDir, _ := shapetest.Dataset(t, cfg)
					inc := shapeIncidentRef(t, dir, refDir)
					require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
					require.Equal(t, svc, inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
					require.Empty(t, inc.Nodes[0].ExplainedBy)
					for _, n := range inc.Nodes[1:] {
						if n.Changed {
							require.Contains(t, n.ExplainedBy, svc, "%+v", brief(inc))
						}
					}
				})
			}
		}
	}
}

// TestShapesThinSlow slows a thin service's own work (×3, from the
// middle of a four-minute capture at 1.5 root requests a second, each
// of which calls every service once): CPU contention on a service of at
// most 2 calls a second must rank first.
func TestShapesThinSlow(t *testing.T) {
	for _, shape := range []string{"pairs", "server-only"} {
		for _, svc := range []string{"orders", "stock", "ledger"} {
			t.Run(shape+"/"+svc, func(t *testing.T) {
				cfg := shapes.Config{Shape: shape, Rate: 1.5, Traces: 360, Slow: svc, SlowFactor: 3}
				dir, _ := shapetest.Dataset(t, cfg)
				inc := shapeIncident(t, dir)
				require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
				require.Equal(t, svc, inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
			})
		}
	}
}

// TestFanPool pins the count test on calls per request: a steady
// fan-out is no change, a chance run of low requests is none, and a
// drop or a rise is found at its first flagged request with its size.
func TestFanPool(t *testing.T) {
	steady := func(n int, x float64, flagEvery int) []fanItem {
		items := make([]fanItem, n)
		for i := range items {
			items[i] = fanItem{at: int64(i), x: x, exp: 1, normShare: 0.02}
			if flagEvery > 0 && i%flagEvery == 0 {
				items[i].flag = true
				items[i].x = 0
			}
		}
		return items
	}
	step := func(n, at int, after float64, flag bool) []fanItem {
		items := steady(n, 1, 0)
		for i := at; i < n; i++ {
			items[i].x, items[i].flag = after, flag
		}
		return items
	}
	tests := []struct {
		name   string
		items  []fanItem
		drop   bool
		onset  int64 // −1: no change
		exp    float64
		obs    float64
		sizeGT float64
	}{
		{name: "steady", items: steady(200, 1, 0), drop: true, onset: -1},
		{name: "chance lows", items: steady(200, 1, 25), drop: true, onset: -1},
		{name: "drop to none", items: step(200, 100, 0, true), drop: true, onset: 100, exp: 100, obs: 0, sizeGT: 4},
		{name: "small drop", items: step(200, 100, 0.9, false), drop: true, onset: -1},
		{name: "rise", items: step(200, 120, 3, true), drop: false, onset: 120, exp: 80, obs: 240, sizeGT: 1},
		{name: "rise is no drop", items: step(200, 120, 3, true), drop: true, onset: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := fanPool(tc.items, tc.drop, 4)
			if tc.onset < 0 {
				require.Nil(t, ch)
				return
			}
			require.NotNil(t, ch)
			require.Equal(t, tc.onset, ch.onset)
			require.InDelta(t, tc.exp, ch.exp, 1e-9)
			require.InDelta(t, tc.obs, ch.obs, 1e-9)
			require.Greater(t, ch.size, tc.sizeGT)
			require.LessOrEqual(t, ch.low, ch.obs/ch.exp)
			require.GreaterOrEqual(t, ch.high, ch.obs/ch.exp)
		})
	}
}

// TestEndedBy: a drop's requests that mostly ended right after one
// callee's answer, more often than the caller's normal requests did,
// are ended by it; never by the dropped callee itself.
func TestEndedBy(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	items := func(lasts ...string) []fanItem {
		var out []fanItem
		for _, l := range lasts {
			out = append(out, fanItem{flag: true, last: int32(slices.Index(names, l))})
		}
		return out
	}
	callee := func(e int32) string {
		if e < 0 {
			return ""
		}
		return names[e]
	}
	tests := []struct {
		name     string
		items    []fanItem
		normLast map[string]float64
		n        float64
		want     string
	}{
		{"ended after b", items("b", "b", "b", "a"), map[string]float64{"c": 10}, 10, "b"},
		{"b was last as often before", items("b", "b", "b", "a"), map[string]float64{"b": 9}, 10, ""},
		{"no majority", items("b", "a", "d", "e"), nil, 10, ""},
		{"the dropped callee", items("c", "c", "c"), nil, 10, ""},
		{"no calls", items("", "", ""), nil, 10, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, endedBy(tc.items, "c", tc.normLast, tc.n, callee))
		})
	}
}

// TestEndedOwner: a drop is given to the callee whose answer ended the
// requests only when that callee cut its own code path too, and never
// past a caller whose own answer ends its callers' requests.
func TestEndedOwner(t *testing.T) {
	drop := func(endedBy string) *fanChange { return &fanChange{endedBy: endedBy} }
	tests := []struct {
		name  string
		drops map[[2]string]*fanChange
		trunc map[string]*fanChange
		want  string
	}{
		{"callee cut its own calls", map[[2]string]*fanChange{{"u", "v"}: drop("x"), {"x", "y"}: drop("")}, nil, "x"},
		{"callee truncated", map[[2]string]*fanChange{{"u", "v"}: drop("x")}, map[string]*fanChange{"x": {}}, "x"},
		{"callee answered as ever", map[[2]string]*fanChange{{"u", "v"}: drop("x")}, nil, ""},
		{"caller ends its callers' requests", map[[2]string]*fanChange{{"u", "v"}: drop("x"), {"x", "y"}: drop(""), {"w", "z"}: drop("u")},
			nil, ""},
		{"not ended by a callee", map[[2]string]*fanChange{{"u", "v"}: drop("")}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, endedOwner([2]string{"u", "v"}, tc.drops, tc.trunc))
		})
	}
}
