package fit

import (
	"fmt"
	"math"
	"slices"
)

// maxPlaneValues bounds each side of the loss plane: an axis of more
// values is thinned to every k-th, aligned on the best point's value, so
// that the plane costs at most 25 × 25 replays.
const maxPlaneValues = 25

// relIncrease is the relative loss increase of loss l over the best
// point's loss lb, as the surface and the plane report it: finite, and 0
// at the best even when the best ran away.
func relIncrease(l, lb float64) float64 {
	if l == lb {
		return 0
	}
	return finite((l - lb) / math.Max(lb, 1e-12))
}

// planeAxes returns the axes of the loss plane, in grid order, or -1, -1
// when fewer than two numeric axes have two or more values. surf is the
// surface at the best point (one entry per axis, in grid order).
//
// The two axes are those whose profile rises most from the best: the
// largest relative loss increase anywhere along the axis, the others held
// at the best point. That measure is unit-free, unlike the curvature
// d²L/dx², whose size depends on the axis's units and step (p moves in
// hundredths, k in halves), and it sees a rise that a one-step neighbour
// misses on a flat shoulder. Ties go to the axis first in grid order.
func planeAxes(g *Grid, surf []SurfaceAxis) (int, int) {
	var cand []int
	rise := make([]float64, len(g.Axes))
	for a := range g.Axes {
		if !g.Axes[a].Numeric() || g.Axes[a].Len() < 2 || a >= len(surf) {
			continue
		}
		cand = append(cand, a)
		if len(surf[a].Profile) > 0 {
			rise[a] = slices.Max(surf[a].Profile)
		}
	}
	if len(cand) < 2 {
		return -1, -1
	}
	slices.SortStableFunc(cand, func(x, y int) int {
		switch {
		case rise[x] > rise[y]:
			return -1
		case rise[x] < rise[y]:
			return 1
		}
		return 0
	})
	x, y := cand[0], cand[1]
	return min(x, y), max(x, y)
}

// planeValues returns the value indices of axis ax the plane shows: all
// of them, or for an axis of more than maxPlaneValues values every k-th,
// aligned so that the best point's value c is among them. It also
// returns c's position in the result.
func planeValues(ax *Axis, c int) ([]int, int) {
	n := ax.Len()
	k := (n + maxPlaneValues - 1) / maxPlaneValues
	var out []int
	for v := c % k; v < n; v += k {
		out = append(out, v)
	}
	return out, c / k
}

// planePoints returns the grid points of the loss plane through best
// over axes x and y, row by row: y's values, then x's.
func planePoints(g *Grid, best, x, y int) []int {
	c := g.Coords(best)
	xs, _ := planeValues(&g.Axes[x], c[x])
	ys, _ := planeValues(&g.Axes[y], c[y])
	out := make([]int, 0, len(xs)*len(ys))
	for _, vy := range ys {
		for _, vx := range xs {
			cc := slices.Clone(c)
			cc[x], cc[y] = vx, vy
			out = append(out, g.Index(cc))
		}
	}
	return out
}

// plane builds the loss plane through best from the cache, which must
// hold every point planePoints names; nil when planeAxes finds no two
// axes.
func (s *searcher) plane(best int, surf []SurfaceAxis) *LossPlane {
	g := s.ev.grid
	x, y := planeAxes(g, surf)
	if x < 0 {
		return nil
	}
	c := g.Coords(best)
	ax, ay := &g.Axes[x], &g.Axes[y]
	xs, bx := planeValues(ax, c[x])
	ys, by := planeValues(ay, c[y])
	p := &LossPlane{X: ax.Name(), Y: ay.Name(), BestX: bx, BestY: by}
	for _, v := range xs {
		p.XValues = append(p.XValues, ax.Values[v])
	}
	for _, v := range ys {
		p.YValues = append(p.YValues, ay.Values[v])
	}
	lb := objective(s.cache[best], -1)
	pts := planePoints(g, best, x, y)
	for i := range ys {
		row := make([]float64, len(xs))
		for j := range xs {
			l, ok := s.cache[pts[i*len(xs)+j]]
			if !ok {
				panic(fmt.Sprintf("fit: plane point %d was not replayed", pts[i*len(xs)+j]))
			}
			row[j] = relIncrease(objective(l, -1), lb)
		}
		p.Loss = append(p.Loss, row)
	}
	return p
}
