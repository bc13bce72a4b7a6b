package cascade

import (
	"fmt"
	"math"
	"sort"
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

// Times returns d with every value it draws multiplied by f (f > 0): the
// same shape, f times longer (or, for counts, f times more). It scales
// the parameters of d's kind, the spike, the floor and the cap; Scale
// and ShiftMS, the what-if knobs, stay as they are.
func (d Dist) Times(f float64) Dist {
	if f == 1 {
		return d
	}
	switch d.Kind {
	case DistConst:
		d.Value *= f
	case DistExp:
		d.Mean *= f
	case DistLognormal:
		d.Mu += math.Log(f)
	case DistNormal:
		d.Mean *= f
		d.Sigma *= f
	case DistUniform:
		d.Min *= f
		d.Max *= f
	case DistEmpirical:
		p := make([]float64, len(d.Points))
		for i, x := range d.Points {
			p[i] = x * f
		}
		d.Points = p
	case DistTiers:
		d.P50 *= f
		d.P95 *= f
		d.P99 *= f
	}
	d.SpikeMS *= f
	d.Floor *= f
	d.Cap *= f
	return d
}

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

// LoadCurve is how a node's calls slow and fail with the rate of calls
// arriving at it, read from the capture where the node has no capacity
// limit of its own to explain it (a dependency nobody traces that slows
// with its waiters and rejects past a wait cap: a connection pool, a
// lock, a disk). A call that arrives at a replica while calls arrive
// there at r per second (averaged over the last WindowMS, exponentially)
// takes Slowdown(r) times its drawn service time and fails on its own
// with probability Fail(r): both are read by linear interpolation
// between the points and held flat beyond the first and the last, so a
// replay never goes past what the capture showed (a storm it did not
// show is not invented).
//
// The load is the arrival rate, not the calls in flight: a node that is
// slower for any reason holds more calls in flight (Little's law), so a
// curve over in-flight calls would read every slowdown as load.
//
// RatePerSec holds the points in increasing order; Slowdown and Fail,
// when set, have one value per point. Slowdown is relative to the node's
// Service (the service time at the least load seen); Fail replaces
// Overload (its base, slope and failure process) for the node.
type LoadCurve struct {
	WindowMS   float64   `json:"window_ms"`
	RatePerSec []float64 `json:"rate_per_sec"`
	Slowdown   []float64 `json:"slowdown,omitempty"`
	Fail       []float64 `json:"fail,omitempty"`
	// Requests is how many observed requests each point was read from.
	Requests []int64 `json:"requests,omitempty"`
}

// SlowdownAt returns the service-time factor at arrival rate k (per
// second, per replica): 1 without a slowdown curve.
func (c *LoadCurve) SlowdownAt(k float64) float64 {
	if c == nil || len(c.Slowdown) == 0 {
		return 1
	}
	return interpolate(c.RatePerSec, c.Slowdown, k)
}

// FailAt returns the own failure probability at arrival rate k, and
// whether the curve has one.
func (c *LoadCurve) FailAt(k float64) (float64, bool) {
	if c == nil || len(c.Fail) == 0 {
		return 0, false
	}
	return math.Min(1, math.Max(0, interpolate(c.RatePerSec, c.Fail, k))), true
}

// interpolate is the piecewise-linear function through (xs, ys) at x,
// flat beyond the ends. xs is increasing and as long as ys.
func interpolate(xs, ys []float64, x float64) float64 {
	n := len(xs)
	if x <= xs[0] {
		return ys[0]
	}
	if x >= xs[n-1] {
		return ys[n-1]
	}
	i := sort.SearchFloat64s(xs, x) // xs[i-1] < x <= xs[i]
	f := (x - xs[i-1]) / (xs[i] - xs[i-1])
	return ys[i-1] + f*(ys[i]-ys[i-1])
}

// Validate checks the curve's shape: points in increasing order, one
// value each, factors positive and probabilities in [0, 1].
func (c *LoadCurve) Validate(path string) error {
	if !(c.WindowMS > 0) || math.IsInf(c.WindowMS, 0) {
		return fmt.Errorf("%s.window_ms: %g, want a finite time > 0", path, c.WindowMS)
	}
	if len(c.RatePerSec) == 0 {
		return fmt.Errorf("%s.rate_per_sec: no points", path)
	}
	for i, x := range c.RatePerSec {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%s.rate_per_sec[%d]: %g, want a finite rate >= 0", path, i, x)
		}
		if i > 0 && !(x > c.RatePerSec[i-1]) {
			return fmt.Errorf("%s.rate_per_sec[%d]: %g after %g, want increasing", path, i, x, c.RatePerSec[i-1])
		}
	}
	if len(c.Slowdown) == 0 && len(c.Fail) == 0 {
		return fmt.Errorf("%s: neither slowdown nor fail", path)
	}
	if len(c.Slowdown) > 0 && len(c.Slowdown) != len(c.RatePerSec) {
		return fmt.Errorf("%s.slowdown: %d values for %d points", path, len(c.Slowdown), len(c.RatePerSec))
	}
	for i, v := range c.Slowdown {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s.slowdown[%d]: %g, want a finite factor > 0", path, i, v)
		}
	}
	if len(c.Fail) > 0 && len(c.Fail) != len(c.RatePerSec) {
		return fmt.Errorf("%s.fail: %d values for %d points", path, len(c.Fail), len(c.RatePerSec))
	}
	for i, v := range c.Fail {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("%s.fail[%d]: %g is outside [0, 1]", path, i, v)
		}
	}
	if len(c.Requests) > 0 && len(c.Requests) != len(c.RatePerSec) {
		return fmt.Errorf("%s.requests: %d values for %d points", path, len(c.Requests), len(c.RatePerSec))
	}
	return nil
}
