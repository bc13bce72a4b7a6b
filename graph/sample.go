package graph

import (
	"math"
	"math/rand/v2"
	"slices"

	quantile7 "cascade/internal/quantile"
)

// reservoir keeps a uniform sample of at most k values of a stream
// (Vitter's algorithm R) plus the exact count, sum and maximum. The random
// choices come from the builder's seeded PCG, so a given input order gives
// the same sample every time.
type reservoir struct {
	n    int64
	sum  float64
	max  float64
	vals []float64
}

func (r *reservoir) add(rng *rand.Rand, k int, v float64) {
	r.n++
	r.sum += v
	if r.n == 1 || v > r.max {
		r.max = v
	}
	if len(r.vals) < k {
		r.vals = append(r.vals, v)
		return
	}
	if j := rng.Int64N(r.n); j < int64(k) {
		r.vals[j] = v
	}
}

// replace changes one value of the stream from old to v: the sample's
// copy of it, when the sample kept it (a value equal to old stands for
// it: the same law), and the sum; the maximum is the sample's when old
// was it.
func (r *reservoir) replace(old, v float64) {
	if r.n == 0 {
		return
	}
	r.sum += v - old
	if i := slices.Index(r.vals, old); i >= 0 {
		r.vals[i] = v
	}
	if old == r.max && v < old {
		r.max = v
		for _, x := range r.vals {
			r.max = max(r.max, x)
		}
	}
}

func (r *reservoir) mean() float64 {
	if r.n == 0 {
		return 0
	}
	return r.sum / float64(r.n)
}

// sorted returns the sample in ascending order (a copy).
func (r *reservoir) sorted() []float64 {
	s := slices.Clone(r.vals)
	slices.Sort(s)
	return s
}

// quantile is the quantile every stage uses (type 7).
func quantile(sorted []float64, q float64) float64 { return quantile7.Type7(sorted, q) }

// points returns the 0%, 1%, …, 100% quantiles of sorted values.
func points(sorted []float64) []float64 {
	if len(sorted) == 0 {
		return nil
	}
	p := make([]float64, 101)
	for i := range p {
		p[i] = roundMS(quantile(sorted, float64(i)/100))
	}
	return p
}

// drawPoints returns the 101 equiprobable points that stand for a sorted
// sample as an empirical distribution: the quantiles at the middle of
// each 1/101 band, (i + ½)/101, so that no point stands for a band it
// does not hold (the sample's maximum, drawn 1% of the time, would
// overstate a tail seen once).
func drawPoints(sorted []float64) []float64 {
	if len(sorted) == 0 {
		return nil
	}
	p := make([]float64, 101)
	for i := range p {
		p[i] = roundMS(quantile(sorted, (float64(i)+0.5)/101))
	}
	return p
}

// roundMS rounds a millisecond value to the microsecond, which keeps model
// documents readable and their bytes stable.
func roundMS(v float64) float64 { return math.Round(v*1e3) / 1e3 }

// round6 rounds a rate, share or probability to six decimals.
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// nsToMS converts nanoseconds to milliseconds.
func nsToMS(ns float64) float64 { return ns / 1e6 }
