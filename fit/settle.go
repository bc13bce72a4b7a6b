package fit

// This file holds the search's last steps: settle on the best of the
// best point's profiles, and refit with the flat axes held at the
// model's values.

import (
	"context"
	"slices"
)

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
