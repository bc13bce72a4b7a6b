package graph

import (
	"math"
	"slices"

	"cascade"
)

// maxLoadRoots bounds the root spans kept to read the load's shape
// (16 bytes each).
const maxLoadRoots = 1 << 20

// minLoadRoots is the fewest root requests whose load shape is judged.
const minLoadRoots = 30

// closedDispersion is the index of dispersion below which the load is
// closed: clients wait more than they think (see cascade.Load).
const closedDispersion = 0.5

func (b *Builder) rootCount() int64 {
	var n int64
	for _, c := range b.entries {
		n += c
	}
	return n
}

// loadOf reads the load's shape from the root spans' intervals: the
// time-weighted mean and variance of the number in flight, from the
// first start to the last end. It returns nil below minLoadRoots roots.
// When the roots were more than were kept, the kept ones are the first in
// trace order; the count keeps its shape only if they are all, so the
// shape is then not judged (open).
func loadOf(roots [][2]int64, total int64) *cascade.Load {
	if len(roots) < minLoadRoots {
		return nil
	}
	type event struct {
		at int64
		d  int
	}
	ev := make([]event, 0, 2*len(roots))
	var latency float64
	for _, r := range roots {
		ev = append(ev, event{r[0], 1}, event{max(r[1], r[0]), -1})
		latency += float64(max(r[1]-r[0], 0))
	}
	// Ends before starts at the same instant: a client's next request
	// that starts as its last one ends does not overlap it.
	slices.SortFunc(ev, func(x, y event) int {
		if x.at != y.at {
			if x.at < y.at {
				return -1
			}
			return 1
		}
		return x.d - y.d
	})
	var sum, sum2 float64
	n, peak := 0, 0
	for i, e := range ev {
		if i > 0 {
			dt := float64(e.at - ev[i-1].at)
			sum += float64(n) * dt
			sum2 += float64(n) * float64(n) * dt
		}
		n += e.d
		peak = max(peak, n)
	}
	span := float64(ev[len(ev)-1].at - ev[0].at)
	if span <= 0 {
		return nil
	}
	mean := sum / span
	variance := max(sum2/span-mean*mean, 0)
	l := &cascade.Load{
		Shape:        cascade.LoadOpen,
		Roots:        int64(len(roots)),
		InFlightMean: round6(mean),
		PeakInFlight: peak,
		LatencyMS:    round6(latency / float64(len(roots)) / 1e6),
	}
	if mean > 0 {
		l.Dispersion = round6(variance / mean)
	}
	if mean <= 0 || l.Dispersion >= closedDispersion || total > int64(len(roots)) {
		return l
	}
	l.Shape = cascade.LoadClosed
	l.Clients = max(peak, int(math.Round(mean/(1-variance/mean))))
	l.ThinkMS = round6(thinkMS(roots, l.Clients))
	return l
}

// thinkMS is a closed loop's mean think time in milliseconds: the time
// from an answer to the same client's next request. Every request but a
// client's first follows one of its answers, and every answer but its
// last is followed by a request; with c clients, the first c starts
// open the capture and the last c answers close it. The think periods
// are then the other starts less the other answers, however they pair:
//
//	Z = (Σ starts after the first c − Σ answers before the last c) / (n − c)
//
// Little's law over the capture's length, c/X − R (X the roots over the
// time from the first start to the last answer), counts a capture's
// edges as thinking: in a load test of 5 clients that waited 1.5 s each
// time and thought about 2 ms, the clients that had sent their last
// request idle until the last answer, and it read 42 ms; this reads
// 1.6 ms (the kept HotROD captures of testdata/hotrod-fix, whose four
// settings read 1.1–1.7 ms this way and 10–43 ms that way, the more the
// slower the app). In a capture cut from steady traffic the pairs at
// the edges are not exactly the ones left out, an error of about a
// cycle in n − c periods.
func thinkMS(roots [][2]int64, c int) float64 {
	n := len(roots)
	if c <= 0 || n <= c {
		return 0
	}
	starts := make([]int64, n)
	ends := make([]int64, n)
	for i, r := range roots {
		starts[i], ends[i] = r[0], max(r[1], r[0])
	}
	slices.Sort(starts)
	slices.Sort(ends)
	// Sums of offsets from the first start, in float64: timestamps in
	// nanoseconds would overflow an int64 sum.
	t0 := starts[0]
	var z float64
	for i := c; i < n; i++ {
		z += float64(starts[i]-t0) - float64(ends[i-c]-t0)
	}
	return max(z/float64(n-c)/1e6, 0)
}
