package graph

import (
	"math"
	"slices"
)

// hist accumulates a histogram's increase over the range, in
// milliseconds: cumulative counts per upper bound.
type hist struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

func (h *hist) addBucket(le, n float64) {
	if h.buckets == nil {
		h.buckets = map[float64]float64{}
	}
	h.buckets[le] += n
}

func (h *hist) merge(o *hist) {
	for le, n := range o.buckets {
		h.addBucket(le, n)
	}
	h.sum += o.sum
	h.count += o.count
}

// total is the number of observations: the +Inf bucket, else the count.
func (h *hist) total() float64 {
	if n, ok := h.buckets[math.Inf(1)]; ok {
		return n
	}
	return h.count
}

// mean returns the mean observation (ms), from the sum and count, or 0.
func (h *hist) mean() float64 {
	if h.count <= 0 {
		return 0
	}
	return h.sum / h.count
}

// quantile returns the q-quantile (ms) as Prometheus' histogram_quantile
// does: linear interpolation inside the bucket the rank falls in, from 0
// below the first bound; in the +Inf bucket, the highest finite bound.
func (h *hist) quantile(q float64) float64 {
	if len(h.buckets) == 0 {
		return 0
	}
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	slices.Sort(les)
	cum := make([]float64, len(les))
	for i, le := range les {
		cum[i] = h.buckets[le]
		if i > 0 {
			cum[i] = max(cum[i], cum[i-1]) // series created at other times
		}
	}
	total := cum[len(cum)-1]
	if total <= 0 {
		return 0
	}
	// The 0% quantile is where the first non-empty bucket begins.
	rank := max(q*total, total*1e-12)
	i, _ := slices.BinarySearchFunc(cum, rank, func(c, r float64) int {
		if c >= r {
			return 1
		}
		return -1
	})
	i = min(i, len(les)-1)
	if math.IsInf(les[i], 1) {
		if i == 0 {
			return 0
		}
		return les[i-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = les[i-1], cum[i-1]
	}
	in := cum[i] - below
	if in <= 0 || les[i] <= lo {
		return les[i]
	}
	return lo + (les[i]-lo)*(rank-below)/in
}

// points returns the 0%, 1%, …, 100% quantiles.
func (h *hist) points() []float64 {
	if h.total() <= 0 {
		return nil
	}
	p := make([]float64, 101)
	for i := range p {
		p[i] = roundMS(h.quantile(float64(i) / 100))
	}
	return p
}
