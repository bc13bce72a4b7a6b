package rank

import (
	"context"
	"errors"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// Capacity thresholds.
const (
	// kneeRatio: the knee is where goodput/offered falls below this share
	// of its value at the lowest load.
	kneeRatio = 0.95
	// collapseShare: collapse is where goodput falls below this share of
	// offered load…
	collapseShare = 0.2
	// collapseDrop: …or below this share of the highest goodput seen at
	// a lower load.
	collapseDrop = 0.9
	// littleTolerance is the relative error up to which Little's law
	// holds at a node.
	littleTolerance = 0.1
)

// CapacityCurve is goodput against offered load: a sweep of Poisson
// arrivals from CapacityMin to CapacityMax times the normal rate.
type CapacityCurve struct {
	// BaseRatePerSec is the normal root rate the sweep multiplies.
	BaseRatePerSec float64 `json:"base_rate_per_sec"`
	// Seeds are the seeds of every point.
	Seeds []uint64 `json:"seeds"`
	// Points are the load points, by rising load.
	Points []CapacityPoint `json:"points"`
	// KneePerSec is the offered rate where goodput stops keeping up
	// (interpolated between the points around it); 0 when the sweep
	// never reaches it.
	KneePerSec float64 `json:"knee_per_sec"`
	// SafePerSec is the highest swept load still before the knee: the
	// rate-limit candidate's rate; 0 when even the lowest is past it.
	SafePerSec float64 `json:"safe_per_sec"`
	// CollapsePerSec is the first swept load past the knee at which
	// goodput collapses; 0 when none does.
	CollapsePerSec float64 `json:"collapse_per_sec"`
	// Knee and Collapse say it in words.
	Knee     string `json:"knee"`
	Collapse string `json:"collapse"`
}

// CapacityPoint is one load of the sweep: means over seeds with 95%
// intervals.
type CapacityPoint struct {
	// Factor multiplies the normal rate.
	Factor float64 `json:"factor"`
	// Offered and Goodput are root requests per second.
	Offered Interval `json:"offered_per_sec"`
	Goodput Interval `json:"goodput_per_sec"`
	// Ratio is mean goodput over mean offered.
	Ratio float64 `json:"ratio"`
	// Success, P99MS and Amplification are as in the outcome.
	Success       Interval `json:"success_rate"`
	P99MS         Interval `json:"latency_p99_ms"`
	Amplification Interval `json:"amplification"`
	// Collapsed counts the seeds whose goodput collapsed at this load by
	// the rule of CapacityCurve.Collapse (past the knee, under 20% of the
	// seed's offered load or under 90% of the best mean goodput at a lower
	// load), so that the count and the words agree. A saturated system
	// whose goodput holds at its capacity has not collapsed, however far
	// the offered load runs past it.
	Collapsed int `json:"collapsed"`
	// Little checks L = λW at the node where it is furthest off.
	Little LittleCheck `json:"little"`
}

// LittleCheck compares, at one node, the mean number of calls in the
// node (queued and holding a slot, from the replay's time series) with
// the arrival rate of calls that were not rejected times their mean time
// at the node. They agree whenever the time calls spend in the node is
// all recorded, even while a queue grows; they part where it is not:
// work dropped or cancelled by deadline propagation, calls stuck at the
// end of the replay behind abandoned work.
type LittleCheck struct {
	// Node is the node where the two differ most.
	Node string `json:"node"`
	// L is the mean number in the node; LambdaW is λ·W.
	L       float64 `json:"l"`
	LambdaW float64 `json:"lambda_w"`
	// Error is |L − λW| / max(L, λW).
	Error float64 `json:"error"`
	// Holds reports Error ≤ 10% at every node.
	Holds bool `json:"holds"`
}

// Capacity sweeps offered load over the model (Poisson arrivals at
// CapacityMin … CapacityMax times the normal rate, CapacityPoints
// points, CapacitySeeds seeds each) and finds the knee, the collapse
// point and where Little's law stops holding.
func Capacity(ctx context.Context, m *cascade.Model, cfg Config) (*CapacityCurve, error) {
	if cfg.Objective == "" {
		cfg.Objective = ObjectiveGoodput
	}
	cfg.Capacity = true
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _, err := replay.Apply(m)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	c, _, err := capacity(ctx, replay.NewBatch(cfg.Batch()), base, cfg)
	return c, err
}

// capacity sweeps the load; it also returns the replays of the lowest
// load.
func capacity(ctx context.Context, rn *replay.Batch, m *cascade.Model, cfg Config) (*CapacityCurve, []*replay.Result, error) {
	rate := totalRate(m, cfg)
	if rate <= 0 {
		return nil, nil, ErrNoEntries
	}
	n := cfg.CapacityPoints
	jobs := make([]replay.BatchJob, n)
	factors := make([]float64, n)
	for i := range jobs {
		f := cfg.CapacityMin + (cfg.CapacityMax-cfg.CapacityMin)*float64(i)/float64(n-1)
		factors[i] = round3(f)
		jobs[i] = replay.BatchJob{Model: m, Seeds: cfg.CapacitySeeds, Series: true,
			Traffic: &cascade.Traffic{Kind: cascade.TrafficPoisson, RatePerSec: rate * factors[i]}}
	}
	res, errs, err := rn.Run(ctx, jobs)
	if err != nil {
		return nil, nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("capacity sweep: %w", err)
	}
	c := &CapacityCurve{BaseRatePerSec: rate, Seeds: rn.Seeds(&jobs[0])}
	for i, rs := range res {
		c.Points = append(c.Points, capacityPoint(factors[i], rs))
	}
	c.findKnee(res)
	return c, res[0], nil
}

func capacityPoint(f float64, rs []*replay.Result) CapacityPoint {
	p := CapacityPoint{Factor: f}
	get := func(fn func(*replay.Result) float64) Interval {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = fn(r)
		}
		return tInterval(xs)
	}
	p.Offered = get(func(r *replay.Result) float64 { return r.OfferedRate })
	p.Goodput = get(func(r *replay.Result) float64 { return r.Goodput })
	p.Success = get(func(r *replay.Result) float64 { return r.SuccessRate })
	p.P99MS = get(func(r *replay.Result) float64 { return r.LatencyP99MS })
	p.Amplification = get(func(r *replay.Result) float64 { return r.Amplification })
	if p.Offered.Mean > 0 {
		p.Ratio = p.Goodput.Mean / p.Offered.Mean
	}
	p.Little = little(rs)
	return p
}

// little checks Little's law at every node, averaged over seeds.
func little(rs []*replay.Result) LittleCheck {
	type acc struct{ l, lw float64 }
	var names []string
	by := map[string]*acc{}
	for _, r := range rs {
		secs := r.DurationMS / 1000
		// The series run on through the drain; L is read over the
		// arrivals' windows, as λ is.
		nw := max(1, int(math.Round(r.DurationMS/r.Series.WindowMS)))
		for i := range r.Nodes {
			n := &r.Nodes[i]
			a := by[n.Name]
			if a == nil {
				a = &acc{}
				by[n.Name] = a
				names = append(names, n.Name)
			}
			if s := n.Series; s != nil && len(s.QueueDepth) > 0 {
				var l float64
				n := min(nw, len(s.QueueDepth))
				for w := range n {
					l += s.QueueDepth[w] + s.InFlight[w]
				}
				a.l += l / float64(n) / float64(len(rs))
			}
			if i < len(r.NodeCounts) && r.NodeCounts[i].Name == n.Name {
				nc := &r.NodeCounts[i]
				lambda := float64(n.Calls-n.Rejected-nc.Cancelled) / secs
				a.lw += lambda * nc.LatencyMeanMS / 1000 / float64(len(rs))
			}
		}
	}
	out := LittleCheck{Holds: true}
	for _, name := range names {
		a := by[name]
		big := math.Max(a.l, a.lw)
		if big < 0.01 {
			continue
		}
		e := math.Abs(a.l-a.lw) / big
		if e > littleTolerance {
			out.Holds = false
		}
		if out.Node == "" || e > out.Error {
			out = LittleCheck{Node: name, L: round3(a.l), LambdaW: round3(a.lw), Error: round3(e), Holds: out.Holds}
		}
	}
	return out
}

// findKnee sets the knee (goodput/offered below 95% of its low-load
// value, interpolated), the safe rate (the last point before it) and
// the collapse (past the knee, goodput under 20% of offered or under 90%
// of the best goodput at a lower load), and counts the seeds of each point
// (res, the replays by point) that collapsed by the same rule.
func (c *CapacityCurve) findKnee(res [][]*replay.Result) {
	ps := c.Points
	ref := ps[0].Ratio
	knee := -1
	for i := 1; i < len(ps); i++ {
		if ps[i].Ratio < kneeRatio*ref {
			knee = i
			break
		}
	}
	if knee < 0 {
		c.SafePerSec = round3(ps[len(ps)-1].Offered.Mean)
		c.Knee = fmt.Sprintf("beyond the sweep: goodput keeps up to %s/s", num(c.SafePerSec))
	} else {
		a, b := &ps[knee-1], &ps[knee]
		t := (a.Ratio - kneeRatio*ref) / (a.Ratio - b.Ratio)
		c.KneePerSec = round3(a.Offered.Mean + t*(b.Offered.Mean-a.Offered.Mean))
		c.SafePerSec = round3(a.Offered.Mean)
		c.Knee = fmt.Sprintf("%s/s offered: goodput falls below %.0f%% of offered (relative to low load) between %s/s and %s/s",
			num(c.KneePerSec), 100*kneeRatio, num(round3(a.Offered.Mean)), num(round3(b.Offered.Mean)))
	}
	c.Collapse = "none within the sweep"
	if knee < 0 {
		return
	}
	collapsed := func(goodput, offered, best float64) bool {
		return goodput < collapseShare*offered || goodput < collapseDrop*best
	}
	best := 0.0
	first, seedsFirst := -1, -1
	for i := range ps {
		p := &ps[i]
		if i >= knee && i < len(res) {
			for _, r := range res[i] {
				if collapsed(r.Goodput, r.OfferedRate, best) {
					p.Collapsed++
				}
			}
			if seedsFirst < 0 && p.Collapsed > 0 {
				seedsFirst = i
			}
		}
		if first < 0 && i >= knee && collapsed(p.Goodput.Mean, p.Offered.Mean, best) {
			first = i
			c.CollapsePerSec = round3(p.Offered.Mean)
			why := fmt.Sprintf("goodput %s/s is under %.0f%% of offered", num(round3(p.Goodput.Mean)), 100*collapseShare)
			if p.Goodput.Mean >= collapseShare*p.Offered.Mean {
				why = fmt.Sprintf("goodput falls to %s/s from %s/s at lower load", num(round3(p.Goodput.Mean)), num(round3(best)))
			}
			c.Collapse = fmt.Sprintf("%s/s offered: %s", num(c.CollapsePerSec), why)
		}
		best = math.Max(best, p.Goodput.Mean)
	}
	if seedsFirst >= 0 && (first < 0 || seedsFirst < first) {
		p := &ps[seedsFirst]
		c.Collapse += fmt.Sprintf(" (on average; %d of %d seeds collapsed at %s/s)", p.Collapsed, len(res[seedsFirst]), num(round3(p.Offered.Mean)))
	}
}
