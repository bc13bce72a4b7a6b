package incident

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
	"cascade/testdata/shapes"

	"cascade/internal/shapetest"
)

// TestShapesFaults injects each kind of fault — a slowdown of the
// service's own work (×3), an error burst (30% of its requests fail
// fast), saturation (one request at a time with more work than it can
// serve) and silence (it answers nothing; not at the entry, which would
// leave no trace) — at the entry (gateway), mid-chain (stock) and the leaf
// (ledger), in a shape without retries (pairs), one whose callers retry
// the faulty calls (mixed: orders calls stock three times at once and
// retries each failure; client-only: stock retries ledger), one with
// SERVER spans only whose orders retries stock (server-only), and the
// other shapes: a fallback that absorbs 60% of stock's failures, a
// deadline that cuts stock off while it stays OK (timeout-ok), retries
// without resend counts after a timeout (staggered-retries), a lock at
// orders around its stock call (lock-pool) and a parallel fan-out
// (fan-out), from the middle of a two-minute capture. The incident pass
// must rank the injected service first.
//
// The default run keeps each shape with each kind once (36 of the 99
// cases); CASCADE_LONG=1 runs every place.
func TestShapesFaults(t *testing.T) {
	faultMatrix(t, "", faultShapes, faultKinds)
}

// faultShapes are the shapes TestShapesFaults runs.
var faultShapes = []string{"pairs", "mixed", "client-only", "server-only", "fallback", "timeout-ok", "staggered-retries", "lock-pool", "fan-out"}

// nezhaFaultShapes are the shapes TestShapesFaultsNezhaCSV runs.
var nezhaFaultShapes = []string{"pairs", "mixed", "fallback"}

// faultKinds are the faults the matrices inject, each at a service.
var faultKinds = []faultKind{
	{"slow", func(c *shapes.Config, svc string) { c.Slow, c.SlowFactor = svc, 3 }},
	{"errors", func(c *shapes.Config, svc string) { c.Fail = svc }},
	{"saturation", func(c *shapes.Config, svc string) { c.Saturate = svc }},
	{"silent", func(c *shapes.Config, svc string) { c.Silent = svc }},
}

type faultKind struct {
	name string
	set  func(*shapes.Config, string)
}

// faultMatrix injects each kind at the entry (gateway), mid-chain (stock)
// and the leaf (ledger) of each shape, written in format, from the middle
// of a two-minute capture, and holds the incident pass to ranking the
// injected service first. A silent entry is left out: it leaves no trace.
// The default run keeps the cases faultCases marks (each shape meets
// each kind once); CASCADE_LONG=1 runs them all.
func faultMatrix(t *testing.T, format string, names []string, kinds []faultKind) {
	t.Helper()
	for _, c := range faultCases(names, kinds) {
		name := fmt.Sprintf("%s/%s/%s", c.shape, c.kind.name, c.svc)
		if format != "" {
			name = format + "/" + name
		}
		t.Run(name, func(t *testing.T) {
			if !c.keep {
				testutil.Long(t)
			}
			cfg := shapes.Config{Shape: c.shape, Traces: int(shapes.Rate(c.shape) * 120), Format: format}
			c.kind.set(&cfg, c.svc)
			dir, _ := shapetest.Dataset(t, cfg)
			inc := shapeIncident(t, dir)
			require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
			require.Equal(t, c.svc, inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
		})
	}
}

// faultPlaces are where faultMatrix injects: the entry, mid-chain and
// the leaf.
var faultPlaces = []string{"gateway", "stock", "ledger"}

type faultCase struct {
	shape string
	kind  faultKind
	svc   string
	keep  bool // in the default run
}

// faultCases lists faultMatrix's cases, shape by shape, kind by kind,
// place by place, and marks those the default run keeps: each shape
// meets each kind once, at a place that moves on by one with each shape
// and each kind, so every kind is also injected at every place once
// three shapes run (a silent entry, which is left out, becomes a silent
// leaf).
func faultCases(names []string, kinds []faultKind) []faultCase {
	var out []faultCase
	for si, shape := range names {
		for ki, kind := range kinds {
			keep := (si + ki) % len(faultPlaces)
			if kind.name == "silent" && keep == 0 {
				keep = len(faultPlaces) - 1
			}
			for pi, svc := range faultPlaces {
				if kind.name == "silent" && svc == "gateway" {
					continue // an entry that answers nothing leaves no trace to read
				}
				out = append(out, faultCase{shape: shape, kind: kind, svc: svc, keep: pi == keep})
			}
		}
	}
	return out
}

// TestFaultCasesDefault holds the default run's subset of the fault
// matrices to what it stands for: every shape meets every kind, every
// kind meets every place, and the subset is a third of the cases.
func TestFaultCasesDefault(t *testing.T) {
	for _, m := range []struct {
		names []string
		kinds []faultKind
	}{
		{faultShapes, faultKinds},
		{nezhaFaultShapes, faultKinds[:3]},
		{[]string{"mixed"}, faultKinds},
		{[]string{"pairs"}, faultKinds},
	} {
		cases := faultCases(m.names, m.kinds)
		kept := map[string]bool{}
		n := 0
		for _, c := range cases {
			if c.keep {
				n++
				kept[c.shape+"/"+c.kind.name] = true
				kept[c.kind.name+"@"+c.svc] = true
			}
		}
		require.Equal(t, len(m.names)*len(m.kinds), n, "one case of each shape and kind: %v", kept)
		for _, shape := range m.names {
			for _, kind := range m.kinds {
				require.True(t, kept[shape+"/"+kind.name], "%s/%s is not in the default run", shape, kind.name)
			}
		}
		if len(m.names) >= len(faultPlaces) {
			for _, kind := range m.kinds {
				for _, svc := range faultPlaces {
					if kind.name == "silent" && svc == "gateway" {
						continue
					}
					require.True(t, kept[kind.name+"@"+svc], "%s at %s is not in the default run", kind.name, svc)
				}
			}
		}
	}
}

// TestShapesMixShift shifts the mix of a service's work — a bulk
// operation with five times the own work goes from a tenth of its
// requests to 60% mid-capture, nothing slower — alone and beside a real
// slowdown elsewhere. Judged by medians, the shift looks like a slowdown
// of the service and of every caller above it; judged operation by
// operation, with callers' waits adjusted the same way, it is no change:
// alone it reports no origin, and beside a slowdown the slowdown is
// first.
func TestShapesMixShift(t *testing.T) {
	tests := []struct {
		shape, mix, slow string
	}{
		{"pairs", "stock", ""},
		{"pairs", "ledger", ""},
		{"server-only", "stock", ""},
		{"client-only", "orders", ""},
		{"pairs", "stock", "ledger"},
		{"server-only", "orders", "stock"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/mix=%s/slow=%s", tc.shape, tc.mix, tc.slow), func(t *testing.T) {
			cfg := shapes.Config{Shape: tc.shape, Traces: int(shapes.Rate(tc.shape) * 120), Mix: tc.mix, Slow: tc.slow, SlowFactor: 3}
			dir, _ := shapetest.Dataset(t, cfg)
			inc := shapeIncident(t, dir)
			if tc.slow == "" {
				require.Empty(t, inc.Origins, "the mix shift flagged as a change: %+v", brief(inc))
			} else {
				require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
				require.Equal(t, tc.slow, inc.Origins[0], "origins %v; nodes %+v", inc.Origins, brief(inc))
			}
		})
	}
}

// TestShapesFaultsNezhaCSV runs the slowdowns, error bursts and
// saturations of TestShapesFaults on captures written as Nezha's CSV
// (TrainTicket's: no kinds, no status, a failed request marked only by
// its forward to Spring's BasicErrorController) for the shapes that
// format can hold without retries, with retries and with a fallback. The
// injected service must rank first. A silent service is left out: its
// callers' unanswered calls name no peer and record no status, so
// nothing in such a capture says whom they called (its callers' own
// failures rank first). The default run keeps 9 of the 27 cases (each
// shape with each kind, each kind at each place); CASCADE_LONG=1 runs
// them all.
func TestShapesFaultsNezhaCSV(t *testing.T) {
	faultMatrix(t, shapes.NezhaCSV, nezhaFaultShapes, faultKinds[:3])
}

// TestShapesFaultsFormats runs TestShapesFaults' faults on captures
// written as Zipkin (Brave, shared span ids) and as Jaeger's query
// answer. The injected service must rank first. The default run takes
// mixed (retries and fan-out) in Zipkin and pairs in Jaeger, each kind
// once (8 cases); CASCADE_LONG=1 runs every shape in both, every kind at
// every place (198 cases, about two minutes).
func TestShapesFaultsFormats(t *testing.T) {
	sets := map[string][]string{shapes.ZipkinBrave: {"mixed"}, shapes.Jaeger: {"pairs"}}
	if testutil.LongRun() {
		sets = map[string][]string{shapes.ZipkinBrave: shapes.Names(), shapes.Jaeger: shapes.Names()}
	}
	for _, format := range []string{shapes.ZipkinBrave, shapes.Jaeger} {
		faultMatrix(t, format, sets[format], faultKinds)
	}
}
