package graph

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// chunkBits sets the bins per chunk of a timeline (256).
const (
	chunkBits = 8
	chunkLen  = 1 << chunkBits
)

// binChunk holds chunkLen consecutive time bins of one node.
type binChunk struct {
	// busy is the in-flight time inside each bin, in ns: the sum over
	// requests of their overlap with the bin. busy/width is the
	// time-averaged number of requests in flight during the bin.
	busy [chunkLen]float64
	// full is a difference array of requests covering whole bins; it is
	// folded into busy by materialize, so a long request costs O(1) to add.
	full [chunkLen]int32
	// starts, errs and ends count requests starting, starting and failing,
	// and ending in each bin.
	starts, errs, ends [chunkLen]int32
	// firstEnd and lastEnd are the earliest and latest end in each bin
	// (Unix ns), valid where ends > 0.
	firstEnd, lastEnd [chunkLen]int64
}

// timeline accumulates one node's requests in fixed-width time bins, in
// whatever order they arrive: the dataset is sorted by trace, not by time,
// so nothing can be swept in time order while reading. Bins live in sparse
// chunks; when a node's chunks exceed the bound, adjacent bins merge and the
// width doubles, so memory is bounded by the bound, not by the data.
type timeline struct {
	width     int64
	maxChunks int
	chunks    map[int64]*binChunk
	lastKey   int64
	last      *binChunk
}

func newTimeline(width int64, maxBins int) *timeline {
	return &timeline{width: width, maxChunks: max(2, maxBins/chunkLen), chunks: map[int64]*binChunk{}}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// chunk returns the chunk holding bin index i (allocating it) and i's
// offset in it.
func (t *timeline) chunk(i int64) (*binChunk, int) {
	key := i >> chunkBits
	if t.last != nil && key == t.lastKey {
		return t.last, int(i & (chunkLen - 1))
	}
	c := t.chunks[key]
	if c == nil {
		c = new(binChunk)
		t.chunks[key] = c
	}
	t.last, t.lastKey = c, key
	return c, int(i & (chunkLen - 1))
}

// add records one request from start to end (Unix ns).
func (t *timeline) add(start, end int64, failed bool) {
	if end < start {
		end = start
	}
	for {
		k0, k1 := floorDiv(start, t.width)>>chunkBits, floorDiv(end, t.width)>>chunkBits
		if k0 == k1 && t.last != nil && k0 == t.lastKey {
			break // the common case: one chunk, the last one used
		}
		missing := 0
		for k := k0; k <= k1 && len(t.chunks)+missing <= t.maxChunks; k++ {
			if t.chunks[k] == nil {
				missing++
			}
		}
		if len(t.chunks)+missing <= t.maxChunks {
			for k := k0; k <= k1; k++ {
				t.chunk(k << chunkBits)
			}
			break
		}
		t.coarsen()
	}
	w := t.width
	b0, b1 := floorDiv(start, w), floorDiv(end, w)
	c, j := t.chunk(b0)
	c.starts[j]++
	if failed {
		c.errs[j]++
	}
	if b0 == b1 {
		c.busy[j] += float64(end - start)
	} else {
		c.busy[j] += float64((b0+1)*w - start)
		if b1 > b0+1 {
			c2, j2 := t.chunk(b0 + 1)
			c2.full[j2]++
		}
	}
	c, j = t.chunk(b1)
	if b0 != b1 {
		c.busy[j] += float64(end - b1*w)
		if b1 > b0+1 {
			c.full[j]--
		}
	}
	if c.ends[j] == 0 || end < c.firstEnd[j] {
		c.firstEnd[j] = end
	}
	if c.ends[j] == 0 || end > c.lastEnd[j] {
		c.lastEnd[j] = end
	}
	c.ends[j]++
}

func (t *timeline) keys() []int64 {
	return slices.Sorted(maps.Keys(t.chunks))
}

// materialize folds the full-bin difference arrays into busy. Every bin a
// request covers has its chunk allocated (add sees to it), so the running
// sum is zero across gaps between chunks.
func (t *timeline) materialize() {
	var run int64
	for _, k := range t.keys() {
		c := t.chunks[k]
		for j := range c.full {
			run += int64(c.full[j])
			c.full[j] = 0
			if run != 0 {
				c.busy[j] += float64(run * t.width)
			}
		}
	}
}

// coarsen merges bins in pairs, doubling the width.
func (t *timeline) coarsen() {
	t.materialize()
	old := t.chunks
	t.chunks = make(map[int64]*binChunk, len(old)/2+1)
	t.last = nil
	for _, k := range sortedKeys(old) {
		c := old[k]
		for j := range chunkLen {
			i := k<<chunkBits | int64(j)
			d, dj := t.chunk(floorDiv(i, 2))
			d.busy[dj] += c.busy[j]
			d.starts[dj] += c.starts[j]
			d.errs[dj] += c.errs[j]
			if c.ends[j] > 0 {
				if d.ends[dj] == 0 || c.firstEnd[j] < d.firstEnd[dj] {
					d.firstEnd[dj] = c.firstEnd[j]
				}
				if d.ends[dj] == 0 || c.lastEnd[j] > d.lastEnd[dj] {
					d.lastEnd[dj] = c.lastEnd[j]
				}
				d.ends[dj] += c.ends[j]
			}
		}
	}
	t.width *= 2
}

func sortedKeys[V any](m map[int64]V) []int64 {
	ks := make([]int64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// timelineStats is what a finished timeline says about its node.
type timelineStats struct {
	width int64
	// peak is the largest time-averaged in-flight of any bin.
	peak float64
	// busy is the total in-flight time, ns (the sum of durations).
	busy float64
	// windows are the per-window series, covering [from, to).
	windows []Window
	window  int64
	// gaps samples the departure gaps (ns) between consecutive request
	// ends while at least two requests were in flight throughout; see
	// serialised.
	gaps reservoir
}

// finish materializes the bins and computes the node's in-flight peak, its
// series over windows of width window (rounded up to a whole number of
// bins) from from to to, and a sample of size departure gaps.
func (t *timeline) finish(window, from, to int64, rng *rand.Rand, size int) timelineStats {
	t.materialize()
	w := t.width
	per := max(1, (window+w-1)/w)
	st := timelineStats{width: w, window: per * w}
	keys := t.keys()
	if len(keys) == 0 {
		return st
	}
	win0 := floorDiv(floorDiv(from, w), per)
	win1 := floorDiv(floorDiv(max(to-1, from), w), per)
	if n := win1 - win0 + 1; n > 0 && n <= 1<<22 {
		st.windows = make([]Window, n)
		for i := range st.windows {
			st.windows[i].StartNS = (win0 + int64(i)) * per * w
		}
	}
	var prevEnd int64 = math.MinInt64
	prevBin := int64(math.MinInt64)
	minBusy := math.Inf(1) // least in-flight since prevEnd
	for _, k := range keys {
		c := t.chunks[k]
		for j := range chunkLen {
			i := k<<chunkBits | int64(j)
			inflight := c.busy[j] / float64(w)
			st.busy += c.busy[j]
			if prevBin != math.MinInt64 && i != prevBin+1 {
				minBusy = 0 // bins without a chunk between: idle
			}
			prevBin = i
			st.peak = max(st.peak, inflight)
			if wi := floorDiv(i, per) - win0; wi >= 0 && wi < int64(len(st.windows)) {
				ws := &st.windows[wi]
				ws.Requests += int64(c.starts[j])
				ws.Errors += int64(c.errs[j])
				ws.MeanInFlight += inflight / float64(per)
				ws.PeakInFlight = max(ws.PeakInFlight, inflight)
			}
			minBusy = math.Min(minBusy, inflight)
			if c.ends[j] == 0 {
				continue
			}
			if prevEnd != math.MinInt64 && minBusy >= 1.5 {
				st.gaps.add(rng, size, float64(c.firstEnd[j]-prevEnd))
			}
			if n := c.ends[j]; n > 1 && inflight >= 1.5 {
				g := float64(c.lastEnd[j]-c.firstEnd[j]) / float64(n-1)
				for range n - 1 {
					st.gaps.add(rng, size, g)
				}
			}
			prevEnd = c.lastEnd[j]
			minBusy = inflight
		}
	}
	return st
}
