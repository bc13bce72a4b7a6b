package fit

import (
	"cmp"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"cascade/replay"
)

func isRunaway(err error) bool { return errors.Is(err, replay.ErrRunaway) }

// searcher evaluates grid points in parallel and remembers their losses
// per window. Batches are evaluated into a slice pre-sized by position
// and stored in index order, so what it holds does not depend on the
// parallelism.
type searcher struct {
	ev       *evaluator
	parallel int
	cache    map[int][]float64
	// lat holds the simulated latencies of the points the gate judges,
	// and nbreak how many node measures a point breaks, by point and
	// window left out (see admit.go).
	lat      map[int]latSims
	nbreak   map[[2]int]int
	progress func(done, total int64)
	done     int64
	planned  int64
	// first, when set, runs the first batch of points instead (a shard's
	// part, or a merge's given losses: see sharding).
	first *sharding
}

func newSearcher(ev *evaluator, parallel int, progress func(done, total int64)) *searcher {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	return &searcher{ev: ev, parallel: parallel, cache: map[int][]float64{}, lat: map[int]latSims{}, nbreak: map[[2]int]int{}, progress: progress}
}

// eval evaluates the points of idxs not yet known, up to s.parallel at
// once.
func (s *searcher) eval(ctx context.Context, idxs []int) error {
	var todo []int
	for _, i := range idxs {
		if _, ok := s.cache[i]; !ok && !slices.Contains(todo, i) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	slices.Sort(todo)
	if sh := s.first; sh != nil {
		s.first = nil
		return sh.batch(ctx, s, todo)
	}
	s.planned += int64(len(todo))
	// Chunks bound the memory of one batch and let progress move.
	chunk := max(s.parallel*16, 64)
	for lo := 0; lo < len(todo); lo += chunk {
		part := todo[lo:min(len(todo), lo+chunk)]
		res := make([][]float64, len(part))
		lat := make([]latSims, len(part))
		g, gctx := errgroup.WithContext(ctx)
		next := make(chan int)
		g.Go(func() error {
			defer close(next)
			for k := range part {
				select {
				case next <- k:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
		for w := 0; w < min(s.parallel, len(part)); w++ {
			g.Go(func() error {
				for k := range next {
					if err := gctx.Err(); err != nil {
						return err
					}
					l, ls, err := s.ev.point(part[k])
					if err != nil {
						return err
					}
					res[k], lat[k] = l, ls
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for k, i := range part {
			s.cache[i] = res[k]
			if lat[k] != nil {
				s.lat[i] = lat[k]
			}
		}
		s.done += int64(len(part))
		if s.progress != nil {
			s.progress(s.done, s.planned)
		}
	}
	return nil
}

// objective sums a point's losses over the windows, leaving out window
// exclude (-1: none).
func objective(l []float64, exclude int) float64 {
	var sum float64
	for w, x := range l {
		if w != exclude {
			sum += x
		}
	}
	return sum
}

// breaks returns the node measures point i's replay breaks over the
// windows but exclude (nil for a point the gate does not judge).
func (s *searcher) breaks(i, exclude int) []Break {
	ls, ok := s.lat[i]
	if !ok {
		return nil
	}
	return s.ev.gate.breaks(s.ev.windows, ls, exclude)
}

// nBreaks counts breaks(i, exclude), remembered.
func (s *searcher) nBreaks(i, exclude int) int {
	if _, ok := s.lat[i]; !ok {
		return 0
	}
	k := [2]int{i, exclude}
	n, ok := s.nbreak[k]
	if !ok {
		n = len(s.breaks(i, exclude))
		s.nbreak[k] = n
	}
	return n
}

// less reports whether point a beats point b under the objective
// leaving out window exclude: fewer node measures broken (an admissible
// point beats an inadmissible one), then better.
func (s *searcher) less(a, b, exclude int) bool {
	if na, nb := s.nBreaks(a, exclude), s.nBreaks(b, exclude); na != nb {
		return na < nb
	}
	return s.better(objective(s.cache[a], exclude), a, objective(s.cache[b], exclude), b)
}

// improves reports whether moving from point x to point y is progress
// for a local search: fewer measures broken, or as many and a lower loss.
func (s *searcher) improves(y, x, exclude int) bool {
	if ny, nx := s.nBreaks(y, exclude), s.nBreaks(x, exclude); ny != nx {
		return ny < nx
	}
	return objective(s.cache[y], exclude) < objective(s.cache[x], exclude)
}

// better reports whether point a (loss la) beats point b (loss lb) on
// the loss alone: a lower loss, or an equal one and a lower index.
func (s *searcher) better(la float64, a int, lb float64, b int) bool {
	if la != lb {
		return la < lb || math.IsNaN(lb)
	}
	// A tie leaves the model as it was where it can: the point nearer
	// the axes' centres (the model's own values) wins, so an axis the
	// windows cannot see (a flat profile) keeps what graph observed
	// instead of taking the grid's first value.
	if da, db := s.ev.grid.fromCentre(a), s.ev.grid.fromCentre(b); da != db {
		return da < db
	}
	return a < b
}

// bestOf returns the best of idxs under the objective leaving out window
// exclude (fewest measures broken, then loss) and its loss.
func (s *searcher) bestOf(idxs []int, exclude int) (int, float64) {
	best := -1
	for _, i := range idxs {
		if best < 0 || s.less(i, best, exclude) {
			best = i
		}
	}
	if best < 0 {
		return -1, math.Inf(1)
	}
	return best, objective(s.cache[best], exclude)
}

// search runs one search of the grid under the objective leaving out
// window exclude and returns every point it looked at, ascending.
// Exhaustive looks at every point. Refine looks, per value of the
// categorical axes (the tier), at a coarse sub-grid (at most three values
// per numeric axis: both ends and the middle), then runs a compass search
// from each of its Starts best points: it tries one stride up and down
// each numeric axis, moves to the best neighbour while that lowers the
// loss, and halves the strides when none does, until the strides are one
// step and no neighbour is better.
func (s *searcher) search(ctx context.Context, exhaustive bool, starts int, exclude int) ([]int, error) {
	g := s.ev.grid
	if exhaustive {
		return s.searchAll(ctx, g)
	}
	seen := map[int]bool{}
	look := func(idxs []int) error {
		for _, i := range idxs {
			seen[i] = true
		}
		return s.eval(ctx, idxs)
	}
	strides, coarse := coarseAxes(g)
	keys, groups := coarseGroups(g, coarse)
	all := coarsePoints(keys, groups)
	if err := look(all); err != nil {
		return nil, err
	}
	if err := s.refineGroups(ctx, keys, groups, strides, starts, exclude, look); err != nil {
		return nil, err
	}
	return seenPoints(seen), nil
}

// searchAll evaluates every point of the grid, for an exhaustive search.
func (s *searcher) searchAll(ctx context.Context, g *Grid) ([]int, error) {
	all := make([]int, g.Size())
	for i := range all {
		all[i] = i
	}
	return all, s.eval(ctx, all)
}

// coarseAxes returns each axis's starting stride (zero for a categorical
// axis) and the values of the coarse sub-grid along it: every value of a
// categorical axis, both ends and the middle of a numeric one.
func coarseAxes(g *Grid) ([]int, [][]int) {
	strides := make([]int, len(g.Axes))
	coarse := make([][]int, len(g.Axes))
	for a := range g.Axes {
		n := g.Axes[a].Len()
		if !g.Axes[a].Numeric() {
			strides[a] = 0
			for i := 0; i < n; i++ {
				coarse[a] = append(coarse[a], i)
			}
			continue
		}
		st := max(1, n/2)
		if n <= 4 {
			st = 1
		}
		strides[a] = st
		for i := 0; i < n; i += st {
			coarse[a] = append(coarse[a], i)
		}
		if coarse[a][len(coarse[a])-1] != n-1 {
			coarse[a] = append(coarse[a], n-1)
		}
	}
	return strides, coarse
}

// coarseGroups walks the coarse sub-grid and groups its points by their
// categorical coordinates (the tier), keys in the order first met.
func coarseGroups(g *Grid, coarse [][]int) ([]int, map[int][]int) {
	groups := map[int][]int{}
	var keys []int
	c := make([]int, len(g.Axes))
	var walk func(a int)
	walk = func(a int) {
		if a == len(g.Axes) {
			key := 0
			for b := range g.Axes {
				if !g.Axes[b].Numeric() {
					key = key*g.Axes[b].Len() + c[b]
				}
			}
			if _, ok := groups[key]; !ok {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], g.Index(c))
			return
		}
		for _, v := range coarse[a] {
			c[a] = v
			walk(a + 1)
		}
	}
	walk(0)
	return keys, groups
}

// coarsePoints lists the coarse sub-grid's points, group by group, so the
// whole sub-grid is evaluated as one batch.
func coarsePoints(keys []int, groups map[int][]int) []int {
	var all []int
	for _, k := range keys {
		all = append(all, groups[k]...)
	}
	return all
}

// refineGroups runs, per group of the coarse sub-grid, a compass search
// from its best starts points, then polishes the group's best point.
func (s *searcher) refineGroups(ctx context.Context, keys []int, groups map[int][]int, strides []int, starts int, exclude int, look func([]int) error) error {
	for _, k := range keys {
		pts := slices.Clone(groups[k])
		slices.SortFunc(pts, func(a, b int) int {
			if s.less(a, b, exclude) {
				return -1
			}
			if s.less(b, a, exclude) {
				return 1
			}
			return 0
		})
		var group []int
		lookGroup := func(idxs []int) error {
			group = append(group, idxs...)
			return look(idxs)
		}
		for _, st := range pts[:min(starts, len(pts))] {
			if _, err := s.compass(ctx, st, slices.Clone(strides), exclude, lookGroup); err != nil {
				return err
			}
		}
		x, _ := s.bestOf(append(group, pts...), exclude)
		if err := s.polish(ctx, x, exclude, lookGroup); err != nil {
			return err
		}
	}
	return nil
}

// seenPoints returns the points the search looked at, ascending, so the
// result does not depend on map order.
func seenPoints(seen map[int]bool) []int {
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// compass runs a compass search from point x with the given strides and
// returns where it stopped.
func (s *searcher) compass(ctx context.Context, x int, strides []int, exclude int, look func([]int) error) (int, error) {
	g := s.ev.grid
	for {
		c := g.Coords(x)
		var nbrs []int
		fine := true
		for a := range g.Axes {
			fine = fine && strides[a] <= 1
		}
		move := func(a int, d int, cc []int) bool {
			v := min(g.Axes[a].Len()-1, max(0, c[a]+d))
			cc[a] = v
			return v != c[a]
		}
		for a := range g.Axes {
			if strides[a] == 0 {
				continue
			}
			for _, d := range []int{-strides[a], strides[a]} {
				cc := slices.Clone(c)
				if move(a, d, cc) {
					nbrs = append(nbrs, g.Index(cc))
				}
			}
			if !fine {
				continue
			}
			// At the finest strides, diagonal moves in every pair of
			// axes too: two parameters that trade off (k and θ, p and r)
			// make a ridge that moves along single axes cannot follow.
			for b := a + 1; b < len(g.Axes); b++ {
				if strides[b] == 0 {
					continue
				}
				for _, da := range []int{-1, 1} {
					for _, db := range []int{-1, 1} {
						cc := slices.Clone(c)
						if move(a, da, cc) && move(b, db, cc) {
							nbrs = append(nbrs, g.Index(cc))
						}
					}
				}
			}
		}
		if err := look(nbrs); err != nil {
			return x, err
		}
		if y, _ := s.bestOf(nbrs, exclude); y >= 0 && s.improves(y, x, exclude) {
			x = y
			continue
		}
		done := true
		for a := range strides {
			if strides[a] > 1 {
				strides[a] = (strides[a] + 1) / 2
				done = false
			}
		}
		if done {
			return x, nil
		}
	}
}

// polish improves point x until no point within two steps on any pair of
// numeric axes is better: where two parameters trade off (k and θ, p and
// r), the valley runs diagonally through the grid, and single-axis and
// unit diagonal moves can stall beside it.
func (s *searcher) polish(ctx context.Context, x int, exclude int, look func([]int) error) error {
	g := s.ev.grid
	var axes []int
	for a := range g.Axes {
		if g.Axes[a].Numeric() && g.Axes[a].Len() > 1 {
			axes = append(axes, a)
		}
	}
	for {
		c := g.Coords(x)
		var nbrs []int
		for i, a := range axes {
			for _, b := range axes[i+1:] {
				for da := -2; da <= 2; da++ {
					for db := -2; db <= 2; db++ {
						va, vb := c[a]+da, c[b]+db
						if (da == 0 && db == 0) || va < 0 || vb < 0 || va >= g.Axes[a].Len() || vb >= g.Axes[b].Len() {
							continue
						}
						cc := slices.Clone(c)
						cc[a], cc[b] = va, vb
						nbrs = append(nbrs, g.Index(cc))
					}
				}
			}
		}
		if len(axes) == 1 {
			a := axes[0]
			for d := -2; d <= 2; d++ {
				if v := c[a] + d; d != 0 && v >= 0 && v < g.Axes[a].Len() {
					cc := slices.Clone(c)
					cc[a] = v
					nbrs = append(nbrs, g.Index(cc))
				}
			}
		}
		if err := look(nbrs); err != nil {
			return err
		}
		y, _ := s.bestOf(nbrs, exclude)
		if y < 0 || !s.improves(y, x, exclude) {
			return nil
		}
		ones := make([]int, len(g.Axes))
		for _, a := range axes {
			ones[a] = 1
		}
		z, err := s.compass(ctx, y, ones, exclude, look)
		if err != nil {
			return err
		}
		x = z
	}
}

// sortedByLoss orders points by objective, then index.
func (s *searcher) sortedByLoss(idxs []int, exclude int) []int {
	out := slices.Clone(idxs)
	slices.SortFunc(out, func(a, b int) int {
		la, lb := objective(s.cache[a], exclude), objective(s.cache[b], exclude)
		if la != lb {
			return cmp.Compare(la, lb)
		}
		return cmp.Compare(a, b)
	})
	return out
}
