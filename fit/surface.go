package fit

// This file describes what surrounds the best point: the loss surface,
// the values moved from the model's, and the warnings on both.

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// surface measures the loss one value down and up each numeric axis from
// the best point, and the gap between the best tiers.
func (s *searcher) surface(best int, tiers []PointResult, tol float64) []SurfaceAxis {
	g := s.ev.grid
	c := g.Coords(best)
	var out []SurfaceAxis
	for a := range g.Axes {
		ax := &g.Axes[a]
		sa := SurfaceAxis{Axis: ax.Name(), Value: ax.Format(c[a])}
		switch {
		case !ax.Numeric():
			s.tierSurface(&sa, best, tiers, tol)
		case ax.Len() == 1:
			sa.Verdict = "fixed (one value)"
		default:
			s.axisSurface(&sa, best, c, a, tol)
		}
		out = append(out, sa)
	}
	return out
}

// relTo returns loss l's increase over the best point's loss lb, as the
// surface reports it.
func relTo(l, lb float64) *float64 {
	x := relIncrease(l, lb)
	return &x
}

// tierSurface reads the tier axis: the gap from the best tier to the
// next best of those that compete with it, identifiable when at least
// tol.
func (s *searcher) tierSurface(sa *SurfaceAxis, best int, tiers []PointResult, tol float64) {
	if len(tiers) < 2 {
		sa.Verdict = "one tier searched"
		return
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
		return
	}
	slices.Sort(ls)
	sa.Gap = relTo(ls[0], objective(s.cache[best], -1))
	sa.Identifiable = *sa.Gap >= tol
	sa.Verdict = "tiers differ"
	if !sa.Identifiable {
		sa.Verdict = "flat: another tier fits as well"
	}
}

// axisSurface reads numeric axis a around the best point (at
// coordinates c): the loss one value down and up, the curvature there,
// the profile and the run of values within tol, and its verdict.
func (s *searcher) axisSurface(sa *SurfaceAxis, best int, c []int, a int, tol float64) {
	g := s.ev.grid
	ax := &g.Axes[a]
	lb := objective(s.cache[best], -1)
	var lm, lp float64
	hm, hp := math.NaN(), math.NaN()
	if c[a] > 0 {
		cc := slices.Clone(c)
		cc[a]--
		lm = objective(s.cache[g.Index(cc)], -1)
		sa.Minus = relTo(lm, lb)
		hm = ax.Values[c[a]] - ax.Values[c[a]-1]
	}
	if c[a] < ax.Len()-1 {
		cc := slices.Clone(c)
		cc[a]++
		lp = objective(s.cache[g.Index(cc)], -1)
		sa.Plus = relTo(lp, lb)
		hp = ax.Values[c[a]+1] - ax.Values[c[a]]
	}
	alike, lo, hi := s.profile(sa, best, c, a, tol)
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
}

// profile reads the profile of axis a through the best point (at
// coordinates c): the loss along the axis (sa.Profile), which values fit
// alike (within tol), and the run of those around the best, lo to hi.
// A value whose point breaks more of the in-sample latency than the
// best is no alternative to it, whatever its loss.
func (s *searcher) profile(sa *SurfaceAxis, best int, c []int, a int, tol float64) ([]bool, int, int) {
	g := s.ev.grid
	ax := &g.Axes[a]
	lb := objective(s.cache[best], -1)
	nb := s.nBreaks(best, -1)
	alike := make([]bool, ax.Len())
	lo, hi := c[a], c[a]
	for v := 0; v < ax.Len(); v++ {
		cc := slices.Clone(c)
		cc[a] = v
		i := g.Index(cc)
		r := relTo(objective(s.cache[i], -1), lb)
		sa.Profile = append(sa.Profile, *r)
		alike[v] = *r < tol && s.nBreaks(i, -1) <= nb
	}
	for lo > 0 && alike[lo-1] {
		lo--
	}
	for hi < ax.Len()-1 && alike[hi+1] {
		hi++
	}
	return alike, lo, hi
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
