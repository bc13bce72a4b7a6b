package rank

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"cascade/replay"
)

// Metric names, as in the outcome's JSON where the outcome has them.
const (
	MetricSuccess       = "success_rate"
	MetricGoodput       = "goodput_per_sec"
	MetricP50           = "latency_p50_ms"
	MetricP99           = "latency_p99_ms"
	MetricAmplification = "amplification"
	MetricSpread        = "spread"
	MetricRejected      = "rejected_share"
	MetricZombie        = "zombie_share"
	// The flow metrics, for a model with message queues or async edges
	// whose replays count flows (a root request and all the work its
	// messages set off): the share of flows that succeeded, successful
	// flows per second, and the flows' completion quantiles.
	MetricFlowSuccess = "flow_success_rate"
	MetricFlowGoodput = "flow_goodput_per_sec"
	MetricFlowP50     = "flow_p50_ms"
	MetricFlowP99     = "flow_p99_ms"
)

// reported lists the metrics of each row's effects, in order.
var reported = []string{MetricSuccess, MetricGoodput, MetricP50, MetricP99, MetricAmplification,
	MetricSpread, MetricRejected, MetricZombie}

// reportedFlows is reported, with the flow metrics, where flows exist.
var reportedFlows = append(append([]string(nil), reported...), MetricFlowSuccess, MetricFlowGoodput, MetricFlowP50, MetricFlowP99)

// composite lists the metrics the composite objective averages.
var composite = []string{MetricSuccess, MetricGoodput, MetricP99, MetricAmplification, MetricSpread}

// compositeFlows is the composite where flows exist: a flow's success,
// goodput and completion stand for the root request's, which an async
// publish leaves blind to what its messages do.
var compositeFlows = []string{MetricFlowSuccess, MetricFlowGoodput, MetricFlowP99, MetricAmplification, MetricSpread}

// flowsIn reports whether the baseline's replays count flows: the model
// has message queues or async edges, and its replays say what became of
// the messages. Only then do the flow metrics score a candidate; a model
// without them is scored as before, byte for byte.
func flowsIn(base [][]*replay.Result) bool {
	for _, rs := range base {
		for _, r := range rs {
			if r.Flows > 0 {
				return true
			}
		}
	}
	return false
}

// reportedOf and compositeOf are the reported and composite metrics.
func reportedOf(flows bool) []string {
	if flows {
		return reportedFlows
	}
	return reported
}

func compositeOf(flows bool) []string {
	if flows {
		return compositeFlows
	}
	return composite
}

// ScoredMetric returns the metric a single-metric objective reads for a
// model whose replays count flows (flows true) or not: a flow's success,
// goodput and p99 in place of the root request's; "" for the composite.
func (o Objective) ScoredMetric(flows bool) string { return objectiveMetricOf(o, flows) }

func objectiveMetricOf(o Objective, flows bool) string {
	m := objectiveMetric(o)
	if !flows {
		return m
	}
	switch m {
	case MetricSuccess:
		return MetricFlowSuccess
	case MetricGoodput:
		return MetricFlowGoodput
	case MetricP99:
		return MetricFlowP99
	}
	return m
}

// compositeFloor keeps the composite's relative changes finite when a
// baseline metric is near zero.
var compositeFloor = map[string]float64{
	MetricSuccess: 0.01, MetricGoodput: 0.01, MetricP99: 1, MetricAmplification: 0.01, MetricSpread: 0.1,
	MetricFlowSuccess: 0.01, MetricFlowGoodput: 0.01, MetricFlowP99: 1,
}

// value reads metric m of one replay. Spread is the time-averaged number
// of infected nodes: the sum of the nodes' infected time over the
// duration.
func value(r *replay.Result, m string) float64 {
	switch m {
	case MetricSuccess:
		return r.SuccessRate
	case MetricGoodput:
		return r.Goodput
	case MetricP50:
		return r.LatencyP50MS
	case MetricP99:
		return r.LatencyP99MS
	case MetricAmplification:
		return r.Amplification
	case MetricSpread:
		var t float64
		for i := range r.Nodes {
			t += r.Nodes[i].InfectedForMS
		}
		if r.DurationMS <= 0 {
			return 0
		}
		return t / r.DurationMS
	case MetricRejected:
		return r.RejectedShare
	case MetricZombie:
		return r.ZombieShare
	case MetricFlowSuccess:
		return r.FlowSuccessRate
	case MetricFlowGoodput:
		if r.DurationMS <= 0 {
			return 0
		}
		return float64(r.Flows) * r.FlowSuccessRate / (r.DurationMS / 1000)
	case MetricFlowP50:
		return r.FlowP50MS
	case MetricFlowP99:
		return r.FlowP99MS
	}
	panic("rank: unknown metric " + m)
}

// higherBetter reports whether a larger value of metric m is better.
func higherBetter(m string) bool {
	return m == MetricSuccess || m == MetricGoodput || m == MetricFlowSuccess || m == MetricFlowGoodput
}

// Metric returns the metric a single-metric objective reads (as named in
// the outcome's JSON, or "spread"); "" for the composite.
func (o Objective) Metric() string { return objectiveMetric(o) }

// HigherIsBetter reports whether a larger objective difference is
// better (true for the composite).
func (o Objective) HigherIsBetter() bool { return objectiveBetterUp(o) }

// objectiveMetric is the metric of a single-metric objective.
func objectiveMetric(o Objective) string {
	switch o {
	case ObjectiveSuccess:
		return MetricSuccess
	case ObjectiveP99:
		return MetricP99
	case ObjectiveAmplification:
		return MetricAmplification
	case ObjectiveSpread:
		return MetricSpread
	case ObjectiveComposite:
		return ""
	}
	return MetricGoodput
}

// Interval is a mean over seeds with its 95% confidence interval
// (Student's t over the seeds).
type Interval struct {
	// Mean is the mean over seeds; Low and High bound its 95% interval.
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Contains reports whether x lies in the interval, ends included.
func (iv Interval) Contains(x float64) bool { return iv.Low <= x && x <= iv.High }

// tInterval is the mean of xs and its 95% t-interval; with one value the
// interval is the value itself.
func tInterval(xs []float64) Interval {
	if len(xs) == 0 {
		return Interval{}
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	if len(xs) < 2 {
		return Interval{xs[0], xs[0], xs[0]}
	}
	if sd == 0 || math.IsNaN(sd) {
		return Interval{mean, mean, mean}
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975)
	h := t * sd / math.Sqrt(float64(len(xs)))
	return Interval{mean, mean - h, mean + h}
}

// Effect is a candidate's effect on one metric under one regime: the
// baseline's and the candidate's means over seeds and the paired
// difference, candidate − baseline, seed by seed.
type Effect struct {
	// Metric names the metric; Regime the traffic.
	Metric string `json:"metric"`
	Regime string `json:"regime"`
	// Baseline and Candidate are the means over seeds.
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Delta is the paired difference, candidate − baseline.
	Delta Interval `json:"delta"`
}

// Verdict is how a candidate's objective interval sits against zero.
type Verdict string

// Verdicts.
const (
	// Win: the interval of the paired differences lies wholly on the
	// better side of zero.
	Win Verdict = "win"
	// NoEffect: the interval contains zero (ends included).
	NoEffect Verdict = "no measurable effect"
	// Worse: the interval lies wholly on the worse side.
	Worse Verdict = "worse"
	// Failed: the candidate could not be replayed (the row's Error says
	// why).
	Failed Verdict = "failed"
	// NotEnoughData: the interval would make the change a win or worse,
	// but the model rests on too few requests to say so (Basis.Thin):
	// the ranking abstains.
	NotEnoughData Verdict = "not enough data"
)

// effects compares runs[regime][seed] of a candidate with the
// baseline's, metric by metric.
func effects(regimes []Regime, base, cand [][]*replay.Result) []Effect {
	var out []Effect
	metrics := reportedOf(flowsIn(base))
	for r := range regimes {
		for _, m := range metrics {
			d := make([]float64, len(base[r]))
			var b, c float64
			for i := range base[r] {
				vb, vc := value(base[r][i], m), value(cand[r][i], m)
				b += vb
				c += vc
				d[i] = vc - vb
			}
			n := float64(len(base[r]))
			out = append(out, Effect{Metric: m, Regime: regimes[r].Name, Baseline: b / n, Candidate: c / n, Delta: tInterval(d)})
		}
	}
	return out
}

// objectiveDiffs returns, per seed, the candidate's difference from the
// baseline on the objective, averaged over the regimes. For a single
// metric it is in the metric's units (candidate − baseline); for the
// composite it is the mean relative change over its five metrics, each
// signed so that positive is better. Where the baseline counts flows, a
// flow's success, goodput and p99 stand for the root request's.
func objectiveDiffs(o Objective, base, cand [][]*replay.Result) []float64 {
	k := len(base[0])
	d := make([]float64, k)
	flows := flowsIn(base)
	if m := objectiveMetricOf(o, flows); m != "" {
		for r := range base {
			for i := 0; i < k; i++ {
				d[i] += (value(cand[r][i], m) - value(base[r][i], m)) / float64(len(base))
			}
		}
		return d
	}
	comp := compositeOf(flows)
	n := float64(len(base) * len(comp))
	for r := range base {
		for _, m := range comp {
			sign, scale := compositeTerm(base[r], m)
			for i := 0; i < k; i++ {
				d[i] += sign * (value(cand[r][i], m) - value(base[r][i], m)) / scale / n
			}
		}
	}
	return d
}

// compositeTerm is how metric m enters the composite objective under one
// regime: its sign (positive when higher is better) and its scale, the
// baseline's mean over seeds (at least compositeFloor).
func compositeTerm(base []*replay.Result, m string) (sign, scale float64) {
	var mean float64
	for _, r := range base {
		mean += value(r, m)
	}
	scale = math.Max(math.Abs(mean/float64(len(base))), compositeFloor[m])
	sign = -1.0
	if higherBetter(m) {
		sign = 1
	}
	return sign, scale
}

// objectiveBetterUp reports whether a larger objective difference is
// better.
func objectiveBetterUp(o Objective) bool {
	m := objectiveMetric(o)
	return m == "" || higherBetter(m)
}

// judge turns an objective interval into a verdict and the gain (the
// mean difference signed so that positive is better). A win (or a worse)
// needs its interval wholly on one side of zero and a gain larger than
// floor, the baseline's own seed-to-seed spread: common random numbers
// make the paired interval narrow enough to exclude zero for an effect
// of no consequence (a queue bound that never fills moves goodput by
// 0.004/s), and such a change is not a remediation.
func judge(o Objective, iv Interval, floor float64) (Verdict, float64) {
	up := objectiveBetterUp(o)
	gain := iv.Mean
	if !up {
		gain = -gain
	}
	switch {
	case (up && iv.Low > 0 || !up && iv.High < 0) && gain > floor:
		return Win, gain
	case (up && iv.High < 0 || !up && iv.Low > 0) && -gain > floor:
		return Worse, gain
	}
	return NoEffect, gain
}

// baselineSpread is the standard deviation over seeds of the baseline's
// objective, in the units of objectiveDiffs: how much the objective moves
// from one seed to the next with nothing changed.
func baselineSpread(o Objective, base [][]*replay.Result) float64 {
	k := len(base[0])
	if k < 2 {
		return 0
	}
	level := make([]float64, k)
	flows := flowsIn(base)
	if m := objectiveMetricOf(o, flows); m != "" {
		for r := range base {
			for i := 0; i < k; i++ {
				level[i] += value(base[r][i], m) / float64(len(base))
			}
		}
	} else {
		comp := compositeOf(flows)
		n := float64(len(base) * len(comp))
		for r := range base {
			for _, m := range comp {
				sign, scale := compositeTerm(base[r], m)
				for i := 0; i < k; i++ {
					level[i] += sign * value(base[r][i], m) / scale / n
				}
			}
		}
	}
	return stat.StdDev(level, nil)
}
