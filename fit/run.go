package fit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
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
// not nil (see sharding).
func runFit(ctx context.Context, cfg Config, m *cascade.Model, obs *Observations, sh *sharding) (*Result, error) {
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
	rep := &Report{Seed: cfg.Seed, Seeds: cfg.Seeds, Weights: cfg.Weights, Notes: slices.Clone(obs.Notes)}
	base, changes := ownBase(m, obs.Own)
	rep.Base = changes
	if cfg.TickCheck {
		rc := replay.DefaultConfig()
		rc.Seed, rc.Seeds, rc.Tick, rc.Parallel = cfg.Seed, 4, cfg.Tick, cfg.Parallel
		rc.Traffic = base.ObservedTraffic()
		var span time.Duration
		for _, w := range obs.Windows {
			span += time.Duration(w.LengthMS * 1e6)
		}
		rc.Duration = min(max(span, time.Second), time.Minute)
		tick, note, err := replay.RefineTick(ctx, base, rc)
		if err != nil {
			return nil, fmt.Errorf("tick check: %w", err)
		}
		if note != "" {
			cfg.Tick = tick
			rep.Notes = append(rep.Notes, note)
		}
	}
	var (
		g   *Grid
		err error
	)
	if cfg.Grid == "" {
		g, err = DefaultGrid(base)
	} else {
		g, err = ParseGrid(cfg.Grid, base)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Tier != "all" {
		g.restrictTier(cfg.Tier)
	}
	rep.Grid, rep.Points = g.String(), g.Size()
	exhaustive := cfg.Search == SearchExhaustive || (cfg.Search == SearchAuto && g.Size() <= cfg.Exhaustive)
	rep.Search = SearchRefine
	if exhaustive {
		rep.Search = SearchExhaustive
	}
	ev := newEvaluator(cfg, g, base, obs.Windows)
	if err := ev.setReference(); err != nil {
		return nil, err
	}
	s := newSearcher(ev, cfg.Parallel, cfg.Progress)
	s.first = sh
	pts, err := s.search(ctx, exhaustive, cfg.Starts, -1)
	if err != nil {
		return nil, err
	}
	pts, best, err := s.settle(ctx, pts, true)
	if err != nil {
		return nil, err
	}
	rep.Best = s.pointResult(best)
	if ta := tierAxis(g); ta >= 0 {
		for t := range g.Axes[ta].Labels {
			var of []int
			for _, i := range pts {
				if g.Coords(i)[ta] == t {
					of = append(of, i)
				}
			}
			if i, _ := s.bestOf(of, -1); i >= 0 {
				rep.Tiers = append(rep.Tiers, s.pointResult(i))
			}
		}
	}
	rep.Surface = s.surface(best, rep.Tiers, cfg.FlatTolerance)
	rep.Plane = s.plane(best, rep.Surface)
	rep.Moved = moved(g, best)
	rep.Warnings = edgeWarnings(g, best, rep.Surface)
	rep.Warnings = append(rep.Warnings, regimeWarnings(obs)...)
	rep.Warnings = append(rep.Warnings, tierWarnings(rep)...)
	rep.Evaluated = len(s.cache)

	// The calibrated point: the best point, or where the windows cannot
	// see p or r, the best point of the grid searched again with those
	// axes held at the model's values.
	cs, cbest, err := refit(ctx, cfg, s, best, rep)
	if err != nil {
		return nil, err
	}
	// The model as it came, scored alike: the fit must beat it.
	unc, err := ev.modelLoss(m)
	if err != nil {
		return nil, fmt.Errorf("uncalibrated model: %w", err)
	}
	// Back-tests, of the search that chose the calibrated point.
	inModel := func(name string) bool { return base.Node(name) != nil }
	cg := cs.ev.grid
	var held [][]NodeError
	for _, w := range holdoutWindows(obs.Windows, cfg.Holdout) {
		hp, err := cs.search(ctx, cs.exhaustive(cfg), cfg.Starts, w)
		if err != nil {
			return nil, err
		}
		hb, _ := cs.bestOf(hp, w)
		sim, err := ev.simulate(cg.Apply(base, hb), w)
		if err != nil {
			return nil, fmt.Errorf("back-test of window %d: %w", obs.Windows[w].Index, err)
		}
		ne := nodeErrors(&obs.Windows[w], sim, inModel)
		held = append(held, ne)
		rep.Holdout = append(rep.Holdout, HoldoutResult{
			Window: obs.Windows[w].Index, Index: hb, Values: cg.Values(hb),
			Loss: finite(cs.cache[hb][w]), InSample: finite(cs.cache[cbest][w]), Uncalibrated: finite(unc[w]), Nodes: ne,
		})
		rep.Calibrated.backtest(cs.cache[hb][w], unc[w])
	}
	if len(held) > 0 {
		rep.HoldoutNodes = sumNodeErrors(held)
	}
	if cs != s {
		rep.Calibrated.Evaluated = len(cs.cache)
	}
	rep.Calibrated.keep(objective(cs.cache[cbest], -1), objective(unc, -1))
	if len(obs.Calls) > 0 {
		if rep.Logistic, err = FitLogistic(obs.Calls); err != nil {
			return nil, err
		}
	}
	// The model written, and in sample what it replays: its loss is the
	// one reported, computed from the very model.
	written := m
	if rep.Calibrated.Kept == "" {
		written = cg.Apply(base, cbest)
	}
	var per [][]NodeError
	var loss float64
	for w := range obs.Windows {
		win := &obs.Windows[w]
		sim, err := ev.simulate(written, w)
		if err != nil {
			return nil, fmt.Errorf("calibrated model, window %d: %w", win.Index, err)
		}
		per = append(per, nodeErrors(win, sim, inModel))
		l := ev.windowLoss(w, sim)
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
	rep.TickMS = round6(float64(cfg.Tick) / 1e6)
	var cal *cascade.Model
	if rep.Calibrated.Kept == "" {
		cal, err = calibrate(base, cg, cbest, rep)
	} else {
		cal, err = uncalibrated(m, rep)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Report: rep, Model: cal}, nil
}

// settle makes pts's best point the best of its profiles (every value of
// each numeric axis, the others fixed), and with plane set of its loss
// plane (the two axes whose profiles rise most): where the search did
// not look at a profile or plane point that turns out better, it moves
// there. In an exhaustive search every point is known already; in a
// refine search the plane adds at most 25 × 25 replays per pass. It
// returns the points looked at and the best.
func (s *searcher) settle(ctx context.Context, pts []int, plane bool) ([]int, int, error) {
	g := s.ev.grid
	for {
		best, _ := s.bestOf(pts, -1)
		prof := profilePoints(g, best)
		if err := s.eval(ctx, prof); err != nil {
			return nil, 0, err
		}
		pts = union(pts, prof)
		if nb, _ := s.bestOf(pts, -1); nb != best {
			continue
		}
		if !plane {
			return pts, best, nil
		}
		if x, y := planeAxes(g, s.surface(best, nil, s.ev.cfg.FlatTolerance)); x >= 0 {
			cells := planePoints(g, best, x, y)
			if err := s.eval(ctx, cells); err != nil {
				return nil, 0, err
			}
			pts = union(pts, cells)
		}
		if nb, _ := s.bestOf(pts, -1); nb == best {
			return pts, best, nil
		}
	}
}

// exhaustive reports whether the searcher's grid is searched point by
// point under cfg.
func (s *searcher) exhaustive(cfg Config) bool {
	return cfg.Search == SearchExhaustive || (cfg.Search == SearchAuto && s.ev.grid.Size() <= cfg.Exhaustive)
}

// refit returns the searcher and point of the calibrated model. Where
// the surface found p or r axes flat (rep.Surface), the best point's
// values on them would be guesses, and the other axes' values were
// chosen jointly with those guesses: the grid is searched again with the
// flat axes held at the model's own values (NAME=model), so that the
// calibrated model is a point the fit replayed and scored. Otherwise it
// returns s and best.
func refit(ctx context.Context, cfg Config, s *searcher, best int, rep *Report) (*searcher, int, error) {
	g := s.ev.grid
	flat := flatAxes(rep.Surface)
	hg := &Grid{Axes: slices.Clone(g.Axes)}
	for a := range hg.Axes {
		ax := &hg.Axes[a]
		if (ax.Param == ParamP || ax.Param == ParamR) && !ax.Held && flat[ax.Name()] {
			ax.Held, ax.Values, ax.Step = true, []float64{0}, 0
			rep.Calibrated.Held = append(rep.Calibrated.Held, ax.Name())
		}
	}
	if len(rep.Calibrated.Held) == 0 {
		rep.Calibrated.Values = rep.Best.Values
		return s, best, nil
	}
	ev := *s.ev
	ev.grid = hg
	hs := newSearcher(&ev, s.parallel, s.progress)
	hs.done, hs.planned = s.done, s.planned
	pts, err := hs.search(ctx, hs.exhaustive(cfg), cfg.Starts, -1)
	if err != nil {
		return nil, 0, err
	}
	_, hb, err := hs.settle(ctx, pts, false)
	if err != nil {
		return nil, 0, err
	}
	rep.Calibrated.Grid = hg.String()
	rep.Calibrated.Values = hg.Values(hb)
	return hs, hb, nil
}

// flatAxes returns the axes the surface found not identifiable.
func flatAxes(surf []SurfaceAxis) map[string]bool {
	flat := map[string]bool{}
	for _, s := range surf {
		flat[s.Axis] = !s.Identifiable && (s.Minus != nil || s.Plus != nil || s.Gap != nil)
	}
	return flat
}

// pointResult is point idx, its loss over every window and what it
// breaks of the in-sample latency.
func (s *searcher) pointResult(idx int) PointResult {
	return PointResult{Index: idx, Values: s.ev.grid.Values(idx), Loss: finite(objective(s.cache[idx], -1)), Breaks: s.breaks(idx, -1)}
}

// tierWarnings names the constant tiers whose best point breaks the
// in-sample latency: not admissible, they lost to a tier that keeps it,
// or, when the best point breaks it too, no tier of the grid kept it.
func tierWarnings(rep *Report) []string {
	var out []string
	for _, t := range rep.Tiers {
		if len(t.Breaks) == 0 || t.Index == rep.Best.Index {
			continue
		}
		out = append(out, fmt.Sprintf("tier %s is not admissible: at its best point (loss %s) the replay breaks the in-sample latency the observed distributions keep: %s",
			t.Value(ParamTier), fmtF(t.Loss), breaksText(t.Breaks)))
	}
	if b := rep.Best.Breaks; len(b) > 0 {
		out = append(out, fmt.Sprintf("the best point (tier %s) breaks the in-sample latency the observed distributions keep: %s; no point of the grid kept it (add a distribution tier: model, tiers or empirical)",
			rep.Best.Value(ParamTier), breaksText(b)))
	}
	return out
}

func breaksText(bs []Break) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return strings.Join(s, ", ")
}

func tierAxis(g *Grid) int {
	for a := range g.Axes {
		if g.Axes[a].Param == ParamTier {
			return a
		}
	}
	return -1
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

// surface measures the loss one value down and up each numeric axis from
// the best point, and the gap between the best tiers.
func (s *searcher) surface(best int, tiers []PointResult, tol float64) []SurfaceAxis {
	g := s.ev.grid
	c := g.Coords(best)
	lb := objective(s.cache[best], -1)
	rel := func(l float64) *float64 {
		x := relIncrease(l, lb)
		return &x
	}
	var out []SurfaceAxis
	for a := range g.Axes {
		ax := &g.Axes[a]
		sa := SurfaceAxis{Axis: ax.Name(), Value: ax.Format(c[a])}
		if !ax.Numeric() {
			if len(tiers) < 2 {
				sa.Verdict = "one tier searched"
				out = append(out, sa)
				continue
			}
			// The tiers that compete with the best: those that break no
			// more of the in-sample latency than it does.
			nb := s.nBreaks(best, -1)
			var ls []float64
			for _, t := range tiers {
				if t.Index != best && len(t.Breaks) <= nb {
					ls = append(ls, t.Loss)
				}
			}
			if len(ls) == 0 {
				sa.Identifiable = true
				sa.Verdict = "tiers differ: every other tier breaks the in-sample latency"
				out = append(out, sa)
				continue
			}
			slices.Sort(ls)
			sa.Gap = rel(ls[0])
			sa.Identifiable = *sa.Gap >= tol
			sa.Verdict = "tiers differ"
			if !sa.Identifiable {
				sa.Verdict = "flat: another tier fits as well"
			}
			out = append(out, sa)
			continue
		}
		if ax.Len() == 1 {
			sa.Verdict = "fixed (one value)"
			out = append(out, sa)
			continue
		}
		var lm, lp float64
		hm, hp := math.NaN(), math.NaN()
		if c[a] > 0 {
			cc := slices.Clone(c)
			cc[a]--
			lm = objective(s.cache[g.Index(cc)], -1)
			sa.Minus = rel(lm)
			hm = ax.Values[c[a]] - ax.Values[c[a]-1]
		}
		if c[a] < ax.Len()-1 {
			cc := slices.Clone(c)
			cc[a]++
			lp = objective(s.cache[g.Index(cc)], -1)
			sa.Plus = rel(lp)
			hp = ax.Values[c[a]+1] - ax.Values[c[a]]
		}
		// The profile: the loss along the axis, and the run of values
		// around the best within the tolerance.
		// A value whose point breaks more of the in-sample latency than
		// the best is no alternative to it, whatever its loss.
		nb := s.nBreaks(best, -1)
		alike := make([]bool, ax.Len())
		lo, hi := c[a], c[a]
		for v := 0; v < ax.Len(); v++ {
			cc := slices.Clone(c)
			cc[a] = v
			i := g.Index(cc)
			r := rel(objective(s.cache[i], -1))
			sa.Profile = append(sa.Profile, *r)
			alike[v] = *r < tol && s.nBreaks(i, -1) <= nb
		}
		for lo > 0 && alike[lo-1] {
			lo--
		}
		for hi < ax.Len()-1 && alike[hi+1] {
			hi++
		}
		sa.Low, sa.High = ax.Format(lo), ax.Format(hi)
		if !math.IsNaN(hm) && !math.IsNaN(hp) {
			sa.Curvature = finite(2 * ((lp-lb)/hp - (lb-lm)/hm) / (hp + hm))
		}
		sa.Identifiable = true
		for v, r := range map[int]*float64{c[a] - 1: sa.Minus, c[a] + 1: sa.Plus} {
			if r != nil && alike[v] {
				sa.Identifiable = false
			}
		}
		kOff := ax.Param == ParamTheta && g.Values(best).Value(ParamK) == "0"
		switch {
		case kOff && !sa.Identifiable:
			sa.Verdict = "flat: θ acts only when k > 0"
		case sa.Identifiable && (sa.Minus == nil || sa.Plus == nil):
			sa.Verdict = "rises inward from the grid's edge"
		case sa.Identifiable:
			sa.Verdict = "sharp minimum"
		case lo == 0 && hi == ax.Len()-1:
			sa.Verdict = "flat: not identifiable from these windows"
		default:
			sa.Verdict = fmt.Sprintf("weakly identified: %s to %s fit within %g%%", sa.Low, sa.High, 100*tol)
		}
		out = append(out, sa)
	}
	return out
}

// profilePoints returns the points that differ from best on one numeric
// axis only.
func profilePoints(g *Grid, best int) []int {
	c := g.Coords(best)
	var out []int
	for a := range g.Axes {
		if !g.Axes[a].Numeric() {
			continue
		}
		for v := 0; v < g.Axes[a].Len(); v++ {
			cc := slices.Clone(c)
			cc[a] = v
			out = append(out, g.Index(cc))
		}
	}
	return out
}

// union returns the sorted union of two point sets.
func union(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// moved compares the best point with the model's values.
func moved(g *Grid, best int) []Move {
	c := g.Coords(best)
	var out []Move
	for a := range g.Axes {
		ax := &g.Axes[a]
		if !ax.Numeric() || !ax.HasCentre {
			continue
		}
		v := ax.Values[c[a]]
		mv := Move{Axis: ax.Name(), Centre: round6(ax.Centre), Source: ax.CentreSource, Best: v, Delta: round6(v - ax.Centre)}
		if ax.Step > 0 {
			mv.Steps = round6((v - ax.Centre) / ax.Step)
		}
		out = append(out, mv)
	}
	return out
}

// edgeWarnings flags a best point on a numeric axis's edge where the
// loss still falls toward the edge, and flat axes.
func edgeWarnings(g *Grid, best int, surf []SurfaceAxis) []string {
	c := g.Coords(best)
	kOff := g.Values(best).Value(ParamK) == "0"
	flat := map[string]bool{}
	for _, s := range surf {
		if !s.Identifiable && (s.Minus != nil || s.Plus != nil || s.Gap != nil) {
			flat[s.Axis] = true
		}
	}
	var out []string
	for a := range g.Axes {
		ax := &g.Axes[a]
		if !ax.Numeric() || ax.Len() < 2 || (ax.Param == ParamTheta && kOff) || flat[ax.Name()] {
			// A flat axis gets the warning below instead: its edge says
			// nothing about where a better value lies.
			continue
		}
		switch c[a] {
		case 0:
			out = append(out, fmt.Sprintf("%s = %s is the grid's lower edge: the best value may lie below it", ax.Name(), ax.Format(0)))
		case ax.Len() - 1:
			out = append(out, fmt.Sprintf("%s = %s is the grid's upper edge: the best value may lie above it", ax.Name(), ax.Format(c[a])))
		}
	}
	for _, s := range surf {
		if !s.Identifiable && (s.Minus != nil || s.Plus != nil || s.Gap != nil) {
			out = append(out, fmt.Sprintf("%s is not identifiable from these windows (%s)", s.Axis, s.Verdict))
		}
	}
	return out
}

// calibrate returns base with point best's values, provenance "fit" on
// what the grid set (not on what a held axis keeps), and the report's
// summary in Model.Fit.
func calibrate(base *cascade.Model, g *Grid, best int, rep *Report) (*cascade.Model, error) {
	out := g.Apply(base, best)
	for i := range out.Nodes {
		out.Nodes[i].Provenance = maps.Clone(out.Nodes[i].Provenance)
	}
	for i := range out.Edges {
		out.Edges[i].Provenance = maps.Clone(out.Edges[i].Provenance)
	}
	set := func(p *map[string]cascade.Provenance, key string) {
		if *p == nil {
			*p = map[string]cascade.Provenance{}
		}
		(*p)[key] = cascade.Fitted
	}
	c := g.Coords(best)
	for a := range g.Axes {
		ax := &g.Axes[a]
		switch {
		case ax.Held:
			// The model keeps its own values, and their provenance.
		case ax.Param == ParamTier:
			if ax.Labels[c[a]] == TierModel {
				continue
			}
			for i := range out.Nodes {
				if out.Nodes[i].Tiers != nil {
					set(&out.Nodes[i].Provenance, "service_ms")
				}
			}
		case ax.Param == ParamP || ax.Param == ParamR || ax.Param == ParamFanOut:
			if ax.Param == ParamFanOut && ax.Values[c[a]] == 1 {
				continue
			}
			key := map[string]string{ParamP: "propagation", ParamR: "retry.reactivation", ParamFanOut: "fan_out"}[ax.Param]
			for i := range out.Edges {
				e := &out.Edges[i]
				owner := g.owner(ax.Param, func(t string) bool { return edgeMatches(out, e, t) })
				if b := &base.Edges[i]; ax.Param == ParamP && e.Propagation == b.Propagation && b.Provenance["propagation"] == cascade.Observed {
					continue // the measured value held (measured)
				}
				if owner == a && (ax.Param != ParamR || e.Retry != nil) {
					set(&e.Provenance, key)
				}
			}
		case ax.Param == ParamK || ax.Param == ParamTheta:
			key := "overload.slope"
			if ax.Param == ParamTheta {
				key = "overload.threshold"
			}
			for i := range out.Nodes {
				n := &out.Nodes[i]
				if g.owner(ax.Param, func(t string) bool { return t == "" || t == n.Name }) == a {
					set(&n.Provenance, key)
				}
			}
		}
	}
	b, err := json.Marshal(rep.summary())
	if err != nil {
		return nil, err
	}
	out.Fit = b
	out.Sort()
	return out, nil
}

// uncalibrated returns model m unchanged but for the report's summary in
// Model.Fit: the fit kept it (Calibration.Kept says why).
func uncalibrated(m *cascade.Model, rep *Report) (*cascade.Model, error) {
	out := *m
	out.Nodes, out.Edges, out.Entries = slices.Clone(m.Nodes), slices.Clone(m.Edges), slices.Clone(m.Entries)
	b, err := json.Marshal(rep.summary())
	if err != nil {
		return nil, err
	}
	out.Fit = b
	return &out, nil
}

// owner returns the axis of param whose value Apply leaves on what match
// accepts (the most specific matching target, the last of equals), or
// -1.
func (g *Grid) owner(param string, match func(target string) bool) int {
	own := -1
	for a := range g.Axes {
		ax := &g.Axes[a]
		if ax.Param != param || !match(ax.Target) {
			continue
		}
		if own < 0 || edgeRank(ax.Target) >= edgeRank(g.Axes[own].Target) {
			own = a
		}
	}
	return own
}

// fmtF formats a float for tables.
func fmtF(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
