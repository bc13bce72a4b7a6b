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
	rate := float64(len(roots)) / (span / 1e9) // roots per second
	l.ThinkMS = round6(max(float64(l.Clients)/rate*1e3-l.LatencyMS, 0))
	return l
}
