package replay

import (
	"math"

	"cascade"
)

// sampler draws from a compiled cascade.Dist. The zero sampler draws 0.
type sampler struct {
	// The fields of the common draws and of count come first, in one
	// cache line.
	kind uint8
	// cntOn: count draws from the 53 random bits of Float64 by
	// comparing them with cnt (countSteps), n being the count at 0.
	cntOn     bool
	n         int     // sFixed: the count (a rounded)
	a, b      float64 // kind parameters (see compile)
	cnt       [countSteps]uint64
	points    []float64
	knots     [5][2]float64
	spikeProb float64
	spikeMS   float64
	floor     float64
	cap       float64
	// scale and shift transform the draw (after the spike, before the
	// clamp) when xform is set: the what-if knobs over a fitted shape.
	xform        bool
	scale, shift float64
}

// countSteps is the most steps a uniform fan-out count may take for
// count to find it by comparisons (setCountSteps).
const countSteps = 3

const (
	sConst uint8 = iota
	sExp
	sLognormal
	sNormal
	sUniform
	sEmpirical
	sTiers
	sFixed   // sConst without a spike: always a (clamped)
	sExpMean // sExp whose clamp changes nothing: exp draw × a
	sUnif    // sUniform whose clamp changes nothing: a + b × uniform draw
	sNormF   // sNormal whose clamp is max(floor, x), floor ≥ 0
	sLogF    // sLognormal whose clamp is max(floor, x), floor ≥ 0
)

// compileDist turns a validated distribution into a sampler.
func compileDist(d *cascade.Dist) sampler {
	s := sampler{spikeProb: d.SpikeProb, spikeMS: d.SpikeMS, floor: d.Floor, cap: d.Cap,
		scale: d.ScaleValue(), shift: d.ShiftMS}
	s.xform = s.scale != 1 || s.shift != 0
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
	switch {
	case s.kind == sConst && s.spikeProb == 0:
		s.kind, s.a = sFixed, s.clamp(s.transform(s.a))
		s.n = int(math.Round(s.a))
	case s.xform:
		// The general path transforms every draw.
	case s.kind == sExp && s.spikeProb == 0 && s.floor <= 0 && s.cap == 0 && s.a >= 0 && !math.IsInf(s.a, 1):
		// The draw is finite and non-negative: clamp keeps it.
		s.kind = sExpMean
	case s.kind == sUniform && s.spikeProb == 0 && s.floor <= s.a && s.cap == 0 && s.a >= 0 && s.b >= 0 &&
		!math.IsInf(s.a+s.b, 0):
		// The draw is finite and at least a ≥ floor: clamp keeps it.
		s.kind = sUnif
		s.setCountSteps()
	case (s.kind == sNormal || s.kind == sLognormal) && s.spikeProb == 0 && s.floor >= 0 && s.cap == 0 &&
		!math.IsInf(s.a, 0) && !math.IsInf(s.b, 0) && !math.IsNaN(s.a) && !math.IsNaN(s.b):
		// The draw is not NaN, and raising it to floor ≥ 0 also
		// raises it to 0.
		if s.kind == sNormal {
			s.kind = sNormF
		} else {
			s.kind = sLogF
		}
	}
	return s
}

// deterministic reports whether the sampler never consumes randomness.
func (s *sampler) deterministic() bool { return s.kind == sFixed }

// draw returns one value (non-negative, after spike, floor and cap).
func (s *sampler) draw(r *rng) float64 {
	switch s.kind {
	case sFixed:
		return s.a
	case sExpMean:
		return r.ExpFloat64() * s.a
	case sUnif:
		return s.a + s.b*r.Float64()
	case sNormF:
		return s.atLeastFloor(s.a + s.b*r.NormFloat64())
	case sLogF:
		return s.atLeastFloor(math.Exp(s.a + s.b*r.NormFloat64()))
	}
	return s.drawAny(r)
}

// atLeastFloor is clamp for a draw that is not NaN under a floor ≥ 0 and
// no cap (unlike max, it keeps a draw of −0 as clamp does).
func (s *sampler) atLeastFloor(x float64) float64 {
	if x < s.floor {
		return s.floor
	}
	return x
}

func (s *sampler) drawAny(r *rng) float64 {
	var x float64
	switch s.kind {
	case sConst:
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
	return s.clamp(s.transform(x))
}

// transform applies the scale and shift knobs.
func (s *sampler) transform(x float64) float64 {
	if !s.xform {
		return x
	}
	return x*s.scale + s.shift
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
func (s *sampler) count(r *rng) int {
	switch s.kind {
	case sFixed:
		return s.n
	case sUnif:
		if s.cntOn {
			// unifCount(m) without its floating point, its rounding and
			// their chain of dependent operations, and with no branch
			// on the draw.
			return s.stepCount(r.src.Uint64() << 11 >> 11)
		}
		return s.unifCount(r.src.Uint64() << 11 >> 11)
	}
	return int(math.Round(s.draw(r)))
}

// stepCount is unifCount(m) for a sampler with cntOn: the count rises by
// one at each threshold m reaches (1 - the borrow of m - cnt[i], both
// below 2⁵³).
func (s *sampler) stepCount(m uint64) int {
	return s.n + 3 - int((m-s.cnt[0])>>63+(m-s.cnt[1])>>63+(m-s.cnt[2])>>63)
}

// unifCount is the count of an sUnif sampler whose Float64 draw is
// m·2⁻⁵³ (rng.Float64 of the same bits).
func (s *sampler) unifCount(m uint64) int {
	return int(math.Round(s.a + s.b*(float64(m)*0x1p-53)))
}

// setCountSteps prepares count's comparisons for an sUnif sampler whose
// counts span at most countSteps + 1 values. unifCount is monotonic in m
// (every step of it is a correctly rounded operation or math.Round, each
// non-decreasing in its input, and b ≥ 0), so a count is n plus the
// number of thresholds at or below m, and the threshold of each step is
// the least m that reaches it, found by bisection. Thresholds beyond the
// last step are 2⁵³, which no m reaches.
func (s *sampler) setCountSteps() {
	const top = 1<<53 - 1
	lo, hi := s.unifCount(0), s.unifCount(top)
	if hi-lo > countSteps || lo < 0 || hi > 1<<20 {
		return
	}
	s.cntOn, s.n = true, lo
	for i := range s.cnt {
		k := lo + 1 + i
		if k > hi {
			s.cnt[i] = top + 1
			continue
		}
		// The least m in (0, top] with unifCount(m) ≥ k.
		a, b := uint64(0), uint64(top) // unifCount(a) < k ≤ unifCount(b)
		for b-a > 1 {
			mid := a + (b-a)/2
			if s.unifCount(mid) >= k {
				b = mid
			} else {
				a = mid
			}
		}
		s.cnt[i] = b
	}
}
