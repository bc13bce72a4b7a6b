package cascade

import (
	"fmt"
	"math"
)

// Dist is a distribution of a non-negative quantity (milliseconds for
// times, counts for fan-out). Kind selects the family:
//
//	const        Value
//	exp          Mean
//	lognormal    Mu, Sigma (of the underlying normal, in log-ms)
//	normal       Mean, Sigma
//	uniform      Min, Max
//	empirical    Points: observed values, drawn uniformly with replacement
//	tiers        P50, P95, P99: the quantile function is linear between the
//	             knots of TierKnots (P50/2 at 0, the tiers at 0.5, 0.95 and
//	             0.99, P99 + (P99 − P95) at 1)
//
// After the draw, a spike adds SpikeMS with probability SpikeProb (the
// "exp(10ms) + 60ms with 5%" mixture), Scale multiplies (absent: 1) and
// ShiftMS adds, then Floor and Cap clamp the result (Cap 0 means none) and
// a negative value becomes 0. Scale and ShiftMS are the what-if knobs
// "service time ×F" and "+D ms" over whatever distribution was fitted.
type Dist struct {
	Kind      string    `json:"kind"`
	Value     float64   `json:"value,omitempty"`
	Mean      float64   `json:"mean,omitempty"`
	Mu        float64   `json:"mu,omitempty"`
	Sigma     float64   `json:"sigma,omitempty"`
	Min       float64   `json:"min,omitempty"`
	Max       float64   `json:"max,omitempty"`
	P50       float64   `json:"p50,omitempty"`
	P95       float64   `json:"p95,omitempty"`
	P99       float64   `json:"p99,omitempty"`
	Points    []float64 `json:"points,omitempty"`
	SpikeProb float64   `json:"spike_prob,omitempty"`
	SpikeMS   float64   `json:"spike,omitempty"`
	Scale     *float64  `json:"scale,omitempty"`
	ShiftMS   float64   `json:"shift_ms,omitempty"`
	Floor     float64   `json:"floor,omitempty"`
	Cap       float64   `json:"cap,omitempty"`
}

// ScaleValue returns Scale, or 1 when it is absent.
func (d *Dist) ScaleValue() float64 {
	if d.Scale == nil {
		return 1
	}
	return *d.Scale
}

// Distribution kinds.
const (
	DistConst     = "const"
	DistExp       = "exp"
	DistLognormal = "lognormal"
	DistNormal    = "normal"
	DistUniform   = "uniform"
	DistEmpirical = "empirical"
	DistTiers     = "tiers"
)

// Const returns a constant distribution.
func Const(v float64) Dist { return Dist{Kind: DistConst, Value: v} }

// MeanValue returns the distribution's mean with its spike, Scale and
// ShiftMS, before floor and cap (for empirical, the sample mean; for
// tiers, an approximation).
func (d *Dist) MeanValue() float64 {
	var m float64
	switch d.Kind {
	case DistConst:
		m = d.Value
	case DistExp, DistNormal:
		m = d.Mean
	case DistLognormal:
		m = math.Exp(d.Mu + d.Sigma*d.Sigma/2)
	case DistUniform:
		m = (d.Min + d.Max) / 2
	case DistEmpirical:
		for _, p := range d.Points {
			m += p
		}
		if len(d.Points) > 0 {
			m /= float64(len(d.Points))
		}
	case DistTiers:
		q := d.TierKnots()
		for i := 1; i < len(q); i++ {
			m += (q[i][0] - q[i-1][0]) * (q[i][1] + q[i-1][1]) / 2
		}
	}
	return (m+d.SpikeProb*d.SpikeMS)*d.ScaleValue() + d.ShiftMS
}

// TierKnots returns the (quantile, value) knots of a tiers distribution.
func (d *Dist) TierKnots() [5][2]float64 {
	return [5][2]float64{{0, d.P50 / 2}, {0.5, d.P50}, {0.95, d.P95}, {0.99, d.P99}, {1, d.P99 + (d.P99 - d.P95)}}
}

// Validate reports what is wrong with the distribution, under path.
func (d *Dist) Validate(path string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	switch d.Kind {
	case DistConst:
		if d.Value < 0 {
			return bad("const value %g is negative", d.Value)
		}
	case DistExp:
		if d.Mean <= 0 {
			return bad("exp needs mean > 0")
		}
	case DistLognormal:
		if d.Sigma < 0 {
			return bad("lognormal sigma %g is negative", d.Sigma)
		}
	case DistNormal:
		if d.Sigma < 0 {
			return bad("normal sigma %g is negative", d.Sigma)
		}
	case DistUniform:
		if d.Max < d.Min || d.Min < 0 {
			return bad("uniform needs 0 <= min <= max, got [%g, %g]", d.Min, d.Max)
		}
	case DistEmpirical:
		if len(d.Points) == 0 {
			return bad("empirical needs points")
		}
		for i, p := range d.Points {
			if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
				return bad("points[%d] = %g is not a finite non-negative value", i, p)
			}
		}
	case DistTiers:
		if !(d.P50 >= 0 && d.P95 >= d.P50 && d.P99 >= d.P95) {
			return bad("tiers need 0 <= p50 <= p95 <= p99, got %g, %g, %g", d.P50, d.P95, d.P99)
		}
	default:
		return bad("unknown distribution kind %q", d.Kind)
	}
	if d.SpikeProb < 0 || d.SpikeProb > 1 {
		return bad("spike_prob %g is outside [0, 1]", d.SpikeProb)
	}
	if d.Cap != 0 && d.Cap < d.Floor {
		return bad("cap %g is below floor %g", d.Cap, d.Floor)
	}
	if f := d.ScaleValue(); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return bad("scale %g is not a finite non-negative factor", f)
	}
	if math.IsNaN(d.ShiftMS) || math.IsInf(d.ShiftMS, 0) {
		return bad("shift_ms %g is not finite", d.ShiftMS)
	}
	return nil
}

// Tiers are observed quantiles of a node's exclusive time, in ms.
type Tiers struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	// Points is a compact empirical shape: up to 101 quantiles (0..100%).
	Points []float64 `json:"points,omitempty"`
}

// Overload is the load-dependent failure probability of a node at load ρ
// ((in flight + queued) / capacity): Base + Slope·max(0, ρ − Threshold),
// clamped to [0, 1].
//
// Gaps, when set, replaces the independent draw of the Base part by the
// failure process the node was seen to follow: the number of calls from
// one of its own failures to the next (1: the very next call) is drawn
// from Gaps, rounded, at least 1. A failure every Nth call (a constant
// gap), bursts (many gaps of 1 between long ones) and independent
// failures (geometric gaps) are all such processes; their failure share
// is 1/mean gap, which Base keeps. The load-dependent part above Base is
// still drawn call by call.
type Overload struct {
	Base      float64 `json:"base"`
	Slope     float64 `json:"slope"`
	Threshold float64 `json:"threshold"`
	Gaps      *Dist   `json:"failure_gaps,omitempty"`
}

// At returns the failure probability at load rho.
func (o Overload) At(rho float64) float64 {
	p := o.Base + o.Slope*math.Max(0, rho-o.Threshold)
	return math.Min(1, math.Max(0, p))
}
