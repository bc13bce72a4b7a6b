package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/graph"
	"cascade/ingest"
	"cascade/internal/testutil"
	"cascade/rank"
	"cascade/replay"
)

// An analysis fixture is built from the stages' real outputs on a bundled
// capture — ingest, graph, fit, the incident, rank and the timeline, the
// way `cascade analyze` chains them, with small settings — and kept as
// testdata/analysis-NAME.json, so the rendering tests neither replay nor
// drift when a stage changes. `go test ./report -update` rebuilds it
// from the stages, then the goldens from it.
type fixtureCase struct {
	name   string
	traces []string // relative to the repository root
	grid   string   // the fit's grid
	// incident is the incident's window; 0 skips the incident.
	incident time.Duration
	seeds    int
	duration time.Duration
}

var fixtureCases = []fixtureCase{
	// HotROD: six services, mysql serialised behind a lock, redis
	// retries; two numeric axes, so the fit draws a loss plane.
	{name: "hotrod", traces: []string{"testdata/hotrod-baseline/traces-otlp.json.gz"},
		grid: "p=0:1:0.25,k=0:2:0.5,theta=0.8|1.2", seeds: 3, duration: 20 * time.Second},
	// OnlineBoutique with currencyservice's CPU contention (Nezha): ten
	// services, an incident with its origin and path; one numeric axis,
	// so the fit has no plane and the profiles are drawn instead.
	{name: "boutique", traces: []string{"testdata/nezha-onlineboutique/trace/05_19_trace.csv.gz",
		"testdata/nezha-onlineboutique/trace/05_20_trace.csv.gz"},
		grid: "k=0:2:0.25,tier=p50|p95|p99", incident: 5 * time.Second, seeds: 3, duration: 10 * time.Second},
}

// fixture returns the analysis of the named case: read from testdata,
// or rebuilt from the stages and written there with -update.
func fixture(tb testing.TB, name string) *Analysis {
	tb.Helper()
	path := filepath.Join("testdata", "analysis-"+name+".json")
	if testutil.Updating() {
		fixtures.mu.Lock()
		defer fixtures.mu.Unlock()
		if !fixtures.done[name] {
			i := slices.IndexFunc(fixtureCases, func(c fixtureCase) bool { return c.name == name })
			require.GreaterOrEqual(tb, i, 0, "no fixture case %q", name)
			a := buildFixture(tb, fixtureCases[i])
			var b strings.Builder
			require.NoError(tb, JSON(&b, a))
			require.NoError(tb, os.WriteFile(path, []byte(b.String()), 0o644))
			if fixtures.done == nil {
				fixtures.done = map[string]bool{}
			}
			fixtures.done[name] = true
		}
	}
	data, err := os.ReadFile(path)
	require.NoError(tb, err, "fixture missing: run go test ./report -update")
	var a Analysis
	require.NoError(tb, json.Unmarshal(data, &a))
	return &a
}

var fixtures struct {
	mu   sync.Mutex
	done map[string]bool
}

// buildFixture runs the stages on the case's capture.
func buildFixture(tb testing.TB, c fixtureCase) *Analysis {
	tb.Helper()
	ctx := context.Background()
	icfg := ingest.DefaultConfig()
	for _, t := range c.traces {
		icfg.Traces = append(icfg.Traces, filepath.Join("..", t))
	}
	icfg.Out = filepath.Join(tb.TempDir(), "dataset")
	sum, err := ingest.Run(ctx, icfg)
	require.NoError(tb, err)
	sum.Dataset = "dataset"
	spans := func(fn func(*cascade.Span) error) error { return ingest.ReadSpans(icfg.Out, fn) }

	gcfg := graph.DefaultConfig()
	gcfg.Dataset = strings.Join(c.traces, " ")
	g, err := graph.Build(ctx, gcfg, spans, nil)
	require.NoError(tb, err)

	const seed = 1
	fcfg := fit.DefaultConfig()
	fcfg.Grid, fcfg.Seed, fcfg.Holdout = c.grid, seed, 2
	obs, err := fit.Observe(ctx, fcfg, g.Model, spans, nil)
	require.NoError(tb, err)
	fr, err := fit.Run(ctx, fcfg, g.Model, obs)
	require.NoError(tb, err)
	model := fr.Model

	a := &Analysis{Version: AnalysisVersion, Inputs: c.traces, Seed: seed, Dataset: sum, Model: model, Fit: fr.Report,
		Files: []string{"dataset/spans.parquet", "model.json", "calibrated.json", "report.json", "report.md", "report.html"}}
	a.Notes = append(a.Notes, "a test fixture: every replay is short and few seeds are used")

	if c.incident > 0 {
		icfg := rank.DefaultIncidentConfig()
		icfg.Window, icfg.Seed, icfg.Seeds, icfg.Duration = c.incident, seed, 2, 5*time.Second
		a.Incident, err = rank.RootCause(ctx, spans, nil, model, icfg)
		require.NoError(tb, err)
		a.Notes = append(a.Notes, "the incident is read in windows of "+c.incident.String())
	}

	rcfg := rank.DefaultConfig()
	rcfg.Seed, rcfg.Seeds, rcfg.Duration, rcfg.CapacityPoints = seed, c.seeds, c.duration, 6
	a.Rank, err = rank.Run(ctx, model, rcfg)
	require.NoError(tb, err)
	a.Timeline = buildTimeline(tb, model, rcfg, a.Rank)
	return a
}

// buildTimeline replays the baseline and the best change (the compatible
// set when it won with more than one member, else the first-ranked win)
// once each with the first seed under the ranking's last traffic (the
// surge), keeping the series of the nodes whose queues grew most.
func buildTimeline(tb testing.TB, m *cascade.Model, cfg rank.Config, r *rank.Report) *Timeline {
	tb.Helper()
	reg := r.Regimes[len(r.Regimes)-1]
	rc := replay.DefaultConfig()
	rc.Seed, rc.Duration, rc.Tick, rc.Window = cfg.Seed, cfg.Duration, cfg.Tick, cfg.Window
	rc.Traffic, rc.Series = reg.Traffic, true
	tl := &Timeline{Regime: reg.Name, Seed: cfg.Seed, WindowMS: float64(cfg.Window) / 1e6}
	if t := reg.Traffic; t != nil && len(t.Surges) > 0 {
		s := t.Surges[len(t.Surges)-1]
		tl.SurgeFromMS, tl.SurgeToMS = s.AtMS, s.AtMS+s.ForMS
	}
	base, err := replay.Replay(m, rc)
	require.NoError(tb, err)
	var best *rank.Row
	if r.Set != nil && r.Set.Row.Verdict == rank.Win && len(r.Set.Members) > 1 {
		best = &r.Set.Row
	}
	for i := range r.Rows {
		if best == nil && r.Rows[i].Rank == 1 {
			best = &r.Rows[i]
		}
	}
	var changed *replay.Result
	if best != nil {
		cm, _, err := replay.Apply(m, best.Candidate.Scenario)
		require.NoError(tb, err)
		changed, err = replay.Replay(cm, rc)
		require.NoError(tb, err)
		tl.Change, tl.Description = best.Candidate.Name, best.Candidate.Description
	}
	// The nodes whose queues grew deepest in either run, at most four.
	peak := map[string]float64{}
	for _, res := range []*replay.Result{base, changed} {
		if res == nil {
			continue
		}
		for _, n := range res.Nodes {
			if n.Series != nil {
				for _, q := range n.Series.QueueDepth {
					peak[n.Name] = max(peak[n.Name], q)
				}
			}
		}
	}
	var nodes []string
	for n, q := range peak {
		if q > 0 {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b string) int {
		if peak[a] != peak[b] {
			if peak[a] > peak[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	nodes = nodes[:min(len(nodes), 4)]
	series := func(res *replay.Result) TimelineRun {
		perSec := func(xs []int64) []float64 {
			out := make([]float64, len(xs))
			for i, x := range xs {
				out[i] = float64(x) * 1000 / tl.WindowMS
			}
			return out
		}
		run := TimelineRun{OfferedPerSec: perSec(res.Series.Offered), GoodputPerSec: perSec(res.Series.Succeeded), Queues: []NodeQueue{}}
		for _, name := range nodes {
			q := NodeQueue{Node: name, Depth: []float64{}}
			for _, n := range res.Nodes {
				if n.Name == name && n.Series != nil {
					q.Depth = n.Series.QueueDepth
				}
			}
			run.Queues = append(run.Queues, q)
		}
		return run
	}
	tl.Baseline = series(base)
	if changed != nil {
		c := series(changed)
		tl.Changed = &c
	}
	return tl
}
