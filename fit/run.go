package fit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"cascade"
	"cascade/replay"
)

// Result is a fit: its report and the calibrated model.
type Result struct {
	// Report is what the fit found.
	Report *Report
	// Model is the input model with the best point's values, provenance
	// "fit" on the fields the fit set, and Model.Fit holding the
	// report's summary.
	Model *cascade.Model
}

// ErrNoWindows is returned when the observations hold no window.
var ErrNoWindows = errors.New("no observation window")

// Run fits model m to the observations: it replays the windows' observed
// arrivals through m at the points of the grid (Config.Grid, else
// DefaultGrid) with the same seeds for every point, scores each point
// against what the windows showed, and returns the best point, the
// surface around it, the per-tier bests, the back-tests of Config.Holdout
// windows, the logistic regression of obs.Calls, and the calibrated
// model. Same inputs and config give the same result at any
// Config.Parallel.
func Run(ctx context.Context, cfg Config, m *cascade.Model, obs *Observations) (*Result, error) {
	if cfg.Shard.Sharded() {
		return nil, fmt.Errorf("shard %s: RunShard runs a shard's part, Merge joins them", cfg.Shard)
	}
	return runFit(ctx, cfg, m, obs, nil)
}

// runFit is Run, with the first batch of grid points sharded when sh is
// not nil (see sharding). It runs in phases, each a method of fitting
// that leaves its part of the report for the next.
func runFit(ctx context.Context, cfg Config, m *cascade.Model, obs *Observations, sh *sharding) (*Result, error) {
	f, err := newFitting(cfg, m, obs)
	if err != nil {
		return nil, err
	}
	if err := f.checkTick(ctx); err != nil {
		return nil, err
	}
	if err := f.readGrid(); err != nil {
		return nil, err
	}
	if err := f.searchGrid(ctx, sh); err != nil {
		return nil, err
	}
	f.describeBest()
	if err := f.calibratedPoint(ctx); err != nil {
		return nil, err
	}
	if err := f.backtest(ctx); err != nil {
		return nil, err
	}
	if err := f.keepOrCalibrate(); err != nil {
		return nil, err
	}
	if err := f.replayWritten(); err != nil {
		return nil, err
	}
	return f.result()
}

// fitting is what runFit's phases read and leave for the next: the
// inputs, the report being written, and the searches with their best
// points.
type fitting struct {
	cfg Config
	m   *cascade.Model
	obs *Observations
	rep *Report
	// base is m with its nodes' overload bases scaled to their own
	// failures (ownBase).
	base       *cascade.Model
	g          *Grid
	exhaustive bool
	ev         *evaluator
	// s is the search of the grid, pts the points it looked at and best
	// the best of them.
	s    *searcher
	pts  []int
	best int
	// cs is the search that chose the calibrated point cbest: s, or the
	// search again with the flat axes held (refit).
	cs    *searcher
	cbest int
	// unc is the model as it came, scored alike, per window.
	unc []float64
}

// newFitting checks the configuration, the model and the observations,
// and starts the report with the model's own-failure bases.
func newFitting(cfg Config, m *cascade.Model, obs *Observations) (*fitting, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if obs == nil || len(obs.Windows) == 0 {
		return nil, ErrNoWindows
	}
	f := &fitting{cfg: cfg, m: m, obs: obs}
	f.rep = &Report{Seed: cfg.Seed, Seeds: cfg.Seeds, Weights: cfg.Weights, Notes: slices.Clone(obs.Notes)}
	base, changes := ownBase(m, obs.Own)
	f.base, f.rep.Base = base, changes
	return f, nil
}

// checkTick refines the replay's tick (Config.TickCheck) on the
// observed traffic, over the windows' span within a second and a
// minute, and notes the change.
func (f *fitting) checkTick(ctx context.Context) error {
	if !f.cfg.TickCheck {
		return nil
	}
	cfg := f.cfg
	rc := replay.DefaultConfig()
	rc.Seed, rc.Seeds, rc.Tick, rc.Parallel = cfg.Seed, 4, cfg.Tick, cfg.Parallel
	rc.Traffic = f.base.ObservedTraffic()
	var span time.Duration
	for _, w := range f.obs.Windows {
		span += time.Duration(w.LengthMS * 1e6)
	}
	rc.Duration = min(max(span, time.Second), time.Minute)
	tick, note, err := replay.RefineTick(ctx, f.base, rc)
	if err != nil {
		return fmt.Errorf("tick check: %w", err)
	}
	if note != "" {
		f.cfg.Tick = tick
		f.rep.Notes = append(f.rep.Notes, note)
	}
	return nil
}

// readGrid reads the grid (Config.Grid, else DefaultGrid), restricted
// to Config.Tier, and chooses the search: point by point when asked or
// when the grid is small enough, else refined.
func (f *fitting) readGrid() error {
	var (
		g   *Grid
		err error
	)
	if f.cfg.Grid == "" {
		g, err = DefaultGrid(f.base)
	} else {
		g, err = ParseGrid(f.cfg.Grid, f.base)
	}
	if err != nil {
		return err
	}
	if f.cfg.Tier != "all" {
		g.restrictTier(f.cfg.Tier)
	}
	f.g = g
	f.rep.Grid, f.rep.Points = g.String(), g.Size()
	f.exhaustive = f.cfg.Search == SearchExhaustive || (f.cfg.Search == SearchAuto && g.Size() <= f.cfg.Exhaustive)
	f.rep.Search = SearchRefine
	if f.exhaustive {
		f.rep.Search = SearchExhaustive
	}
	return nil
}

// searchGrid searches the grid (its first batch sharded when sh is not
// nil) and settles on the best point, and the best point of each tier.
func (f *fitting) searchGrid(ctx context.Context, sh *sharding) error {
	f.ev = newEvaluator(f.cfg, f.g, f.base, f.obs.Windows)
	if err := f.ev.setReference(); err != nil {
		return err
	}
	s := newSearcher(f.ev, f.cfg.Parallel, f.cfg.Progress)
	s.first = sh
	pts, err := s.search(ctx, f.exhaustive, f.cfg.Starts, -1)
	if err != nil {
		return err
	}
	f.s = s
	f.pts, f.best, err = s.settle(ctx, pts, true)
	if err != nil {
		return err
	}
	f.rep.Best = s.pointResult(f.best)
	f.bestTiers()
	return nil
}

// bestTiers adds to the report the best point of each tier the search
// looked at, when the grid has a tier axis.
func (f *fitting) bestTiers() {
	g, s := f.g, f.s
	ta := tierAxis(g)
	if ta < 0 {
		return
	}
	for t := range g.Axes[ta].Labels {
		var of []int
		for _, i := range f.pts {
			if g.Coords(i)[ta] == t {
				of = append(of, i)
			}
		}
		if i, _ := s.bestOf(of, -1); i >= 0 {
			f.rep.Tiers = append(f.rep.Tiers, s.pointResult(i))
		}
	}
}

// describeBest reports what surrounds the best point: the loss surface
// and plane, the values moved from the model's, and the warnings.
func (f *fitting) describeBest() {
	rep, s, g := f.rep, f.s, f.g
	rep.Surface = s.surface(f.best, rep.Tiers, f.cfg.FlatTolerance)
	rep.Plane = s.plane(f.best, rep.Surface)
	rep.Moved = moved(g, f.best)
	rep.Warnings = edgeWarnings(g, f.best, rep.Surface)
	rep.Warnings = append(rep.Warnings, regimeWarnings(f.obs)...)
	rep.Warnings = append(rep.Warnings, tierWarnings(rep)...)
	rep.Evaluated = len(s.cache)
}

// calibratedPoint finds the calibrated point: the best point, or where
// the windows cannot see p or r, the best point of the grid searched
// again with those axes held at the model's values. It then scores the
// model as it came alike: the fit must beat it.
func (f *fitting) calibratedPoint(ctx context.Context) error {
	var err error
	f.cs, f.cbest, err = refit(ctx, f.cfg, f.s, f.best, f.rep)
	if err != nil {
		return err
	}
	f.unc, err = f.ev.modelLoss(f.m)
	if err != nil {
		return fmt.Errorf("uncalibrated model: %w", err)
	}
	return nil
}

// inModel reports whether the fitted model has node name.
func (f *fitting) inModel(name string) bool { return f.base.Node(name) != nil }

// backtest back-tests the search that chose the calibrated point on
// each of Config.Holdout windows: the grid searched without the window,
// its best point replayed on it and scored against the calibrated
// point's and the model's loss there.
func (f *fitting) backtest(ctx context.Context) error {
	cfg, rep, cs, obs := f.cfg, f.rep, f.cs, f.obs
	cg := cs.ev.grid
	var held [][]NodeError
	for _, w := range holdoutWindows(obs.Windows, cfg.Holdout) {
		hp, err := cs.search(ctx, cs.exhaustive(cfg), cfg.Starts, w)
		if err != nil {
			return err
		}
		hb, _ := cs.bestOf(hp, w)
		sim, err := f.ev.simulate(cg.Apply(f.base, hb), w)
		if err != nil {
			return fmt.Errorf("back-test of window %d: %w", obs.Windows[w].Index, err)
		}
		ne := nodeErrors(&obs.Windows[w], sim, f.inModel)
		held = append(held, ne)
		rep.Holdout = append(rep.Holdout, HoldoutResult{
			Window: obs.Windows[w].Index, Index: hb, Values: cg.Values(hb),
			Loss: finite(cs.cache[hb][w]), InSample: finite(cs.cache[f.cbest][w]), Uncalibrated: finite(f.unc[w]), Nodes: ne,
		})
		rep.Calibrated.backtest(cs.cache[hb][w], f.unc[w])
	}
	if len(held) > 0 {
		rep.HoldoutNodes = sumNodeErrors(held)
	}
	return nil
}

// keepOrCalibrate decides whether the calibrated point beats the model
// as it came (else the model is kept), and fits the logistic regression
// of the observed calls.
func (f *fitting) keepOrCalibrate() error {
	rep, cs := f.rep, f.cs
	if cs != f.s {
		rep.Calibrated.Evaluated = len(cs.cache)
	}
	rep.Calibrated.keep(objective(cs.cache[f.cbest], -1), objective(f.unc, -1))
	if len(f.obs.Calls) > 0 {
		var err error
		if rep.Logistic, err = FitLogistic(f.obs.Calls); err != nil {
			return err
		}
	}
	return nil
}

// written returns the model the fit writes: the calibrated point
// applied to base, or the model as it came when the fit kept it.
func (f *fitting) written() *cascade.Model {
	if f.rep.Calibrated.Kept == "" {
		return f.cs.ev.grid.Apply(f.base, f.cbest)
	}
	return f.m
}

// replayWritten replays the model written on every window, in sample:
// its loss is the one reported, computed from the very model, with each
// window's summary and the errors per node.
func (f *fitting) replayWritten() error {
	rep, obs := f.rep, f.obs
	written := f.written()
	var per [][]NodeError
	var loss float64
	for w := range obs.Windows {
		win := &obs.Windows[w]
		sim, err := f.ev.simulate(written, w)
		if err != nil {
			return fmt.Errorf("calibrated model, window %d: %w", win.Index, err)
		}
		per = append(per, nodeErrors(win, sim, f.inModel))
		l := f.ev.windowLoss(w, sim)
		loss += l
		var req int64
		for _, n := range win.Nodes {
			req += n.Requests
		}
		rep.Windows = append(rep.Windows, WindowSummary{
			Index: win.Index, Start: time.Unix(0, win.StartNS).UTC().Format(time.RFC3339Nano),
			LengthMS: round6(win.LengthMS), Roots: win.Roots, Requests: req, Loss: finite(l),
		})
	}
	rep.Nodes = sumNodeErrors(per)
	rep.Calibrated.Loss = finite(loss)
	rep.TickMS = round6(float64(f.cfg.Tick) / 1e6)
	return nil
}

// result returns the report and the model written: the calibrated one,
// or the model as it came with the report's summary.
func (f *fitting) result() (*Result, error) {
	var cal *cascade.Model
	var err error
	if f.rep.Calibrated.Kept == "" {
		cal, err = calibrate(f.base, f.cs.ev.grid, f.cbest, f.rep)
	} else {
		cal, err = uncalibrated(f.m, f.rep)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Report: f.rep, Model: cal}, nil
}

// ownBase returns a copy of m whose nodes' overload bases are scaled to
// their own failures, and what changed. A node whose failed requests
// mostly called failed requests fails mostly by propagation; its base,
// which graph sets to its whole error rate, would count those failures
// twice in replay. graph now writes the own-failure rate itself; a base
// that differs from the node's observed error rate is taken as already
// own (or set by the user) and left alone.
func ownBase(m *cascade.Model, own []OwnFailures) (*cascade.Model, []BaseChange) {
	out := *m
	out.Nodes = slices.Clone(m.Nodes)
	var changes []BaseChange
	for _, o := range own {
		if o.Failed == 0 || o.Own == o.Failed {
			continue
		}
		for i := range out.Nodes {
			n := &out.Nodes[i]
			if n.Name != o.Node || n.Overload.Base == 0 || n.Observed != nil && n.Overload.Base != n.Observed.ErrorRate {
				continue
			}
			share := float64(o.Own) / float64(o.Failed)
			to := round6(n.Overload.Base * share)
			changes = append(changes, BaseChange{Node: n.Name, From: n.Overload.Base, To: to, Share: round6(share)})
			n.Overload.Base = to
			n.Provenance = maps.Clone(n.Provenance)
			if n.Provenance == nil {
				n.Provenance = map[string]cascade.Provenance{}
			}
			n.Provenance["overload.base"] = cascade.Fitted
		}
	}
	return &out, changes
}

// holdoutWindows returns the positions of the windows to back-test: the
// n with the most roots (all for n < 0), in time order; none with fewer
// than two windows.
func holdoutWindows(ws []Window, n int) []int {
	if len(ws) < 2 || n == 0 {
		return nil
	}
	idx := make([]int, len(ws))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ws[idx[a]].Roots > ws[idx[b]].Roots })
	if n > 0 && n < len(idx) {
		idx = idx[:n]
	}
	slices.Sort(idx)
	return idx
}
