// Package quantile computes sample quantiles the one way every stage of
// cascade computes them, so that graph's model, the fit's observations
// and the reports agree to the digit.
package quantile

import "math"

// Type7 returns the q-quantile of sorted values by linear interpolation
// between order statistics (Hyndman and Fan's type 7, as R and NumPy do
// by default); 0 for no values.
func Type7(sorted []float64, q float64) float64 {
	switch len(sorted) {
	case 0:
		return 0
	case 1:
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	i := int(math.Floor(h))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}
