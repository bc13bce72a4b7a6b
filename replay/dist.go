package replay

import (
	"math"
	"math/rand/v2"

	"cascade"
)

// sampler draws from a compiled cascade.Dist. The zero sampler draws 0.
type sampler struct {
	kind      uint8
	a, b      float64 // kind parameters (see compile)
	points    []float64
	knots     [5][2]float64
	spikeProb float64
	spikeMS   float64
	floor     float64
	cap       float64
}

const (
	sConst uint8 = iota
	sExp
	sLognormal
	sNormal
	sUniform
	sEmpirical
	sTiers
)

// compileDist turns a validated distribution into a sampler.
func compileDist(d *cascade.Dist) sampler {
	s := sampler{spikeProb: d.SpikeProb, spikeMS: d.SpikeMS, floor: d.Floor, cap: d.Cap}
	switch d.Kind {
	case cascade.DistConst:
		s.kind, s.a = sConst, d.Value
	case cascade.DistExp:
		s.kind, s.a = sExp, d.Mean
	case cascade.DistLognormal:
		s.kind, s.a, s.b = sLognormal, d.Mu, d.Sigma
	case cascade.DistNormal:
		s.kind, s.a, s.b = sNormal, d.Mean, d.Sigma
	case cascade.DistUniform:
		s.kind, s.a, s.b = sUniform, d.Min, d.Max-d.Min
	case cascade.DistEmpirical:
		s.kind, s.points = sEmpirical, append([]float64(nil), d.Points...)
	case cascade.DistTiers:
		s.kind, s.knots = sTiers, d.TierKnots()
	}
	if s.kind == sConst && s.spikeProb == 0 {
		s.a = s.clamp(s.a)
	}
	return s
}

// deterministic reports whether the sampler never consumes randomness.
func (s *sampler) deterministic() bool { return s.kind == sConst && s.spikeProb == 0 }

// draw returns one value (non-negative, after spike, floor and cap).
func (s *sampler) draw(r *rand.Rand) float64 {
	var x float64
	switch s.kind {
	case sConst:
		if s.spikeProb == 0 {
			return s.a // clamped at compile time
		}
		x = s.a
	case sExp:
		x = r.ExpFloat64() * s.a
	case sLognormal:
		x = math.Exp(s.a + s.b*r.NormFloat64())
	case sNormal:
		x = s.a + s.b*r.NormFloat64()
	case sUniform:
		x = s.a + s.b*r.Float64()
	case sEmpirical:
		x = s.points[r.IntN(len(s.points))]
	case sTiers:
		x = tierQuantile(&s.knots, r.Float64())
	}
	if s.spikeProb > 0 && r.Float64() < s.spikeProb {
		x += s.spikeMS
	}
	return s.clamp(x)
}

func (s *sampler) clamp(x float64) float64 {
	if x < s.floor {
		x = s.floor
	}
	if s.cap > 0 && x > s.cap {
		x = s.cap
	}
	if x < 0 || math.IsNaN(x) {
		x = 0
	}
	return x
}

// tierQuantile is the piecewise-linear quantile function through knots.
func tierQuantile(k *[5][2]float64, u float64) float64 {
	for i := 1; i < len(k); i++ {
		if u <= k[i][0] || i == len(k)-1 {
			lo, hi := k[i-1], k[i]
			if hi[0] == lo[0] {
				return hi[1]
			}
			return lo[1] + (u-lo[0])/(hi[0]-lo[0])*(hi[1]-lo[1])
		}
	}
	return k[len(k)-1][1]
}

// count draws a fan-out count: the draw rounded to the nearest integer, at
// least 0.
func (s *sampler) count(r *rand.Rand) int {
	return int(math.Round(s.draw(r)))
}
