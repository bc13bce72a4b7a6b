package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary aggregates replays of one model and scenario over several
// seeds: for each headline metric, the mean and a 95% confidence interval
// (Student's t over the seeds).
type Summary struct {
	// Scenario names the scenario.
	Scenario string `json:"scenario"`
	// Seeds are the seeds replayed, in order.
	Seeds []uint64 `json:"seeds"`
	// DurationMS is the simulated time of each replay.
	DurationMS float64 `json:"duration_ms"`
	// Metrics are the estimates, in a fixed order.
	Metrics []Estimate `json:"metrics"`
	// Collapsed counts the replays whose goodput collapsed (see
	// cascade.Outcome.CollapseAtMS).
	Collapsed int `json:"collapsed"`
	// Overloaded counts the replays that did not keep up with what they
	// were offered (see cascade.Outcome.Overloaded).
	Overloaded int `json:"overloaded"`
}

// Estimate is a metric's mean over seeds with its 95% interval. With one
// seed the interval is the value itself.
type Estimate struct {
	// Name is the metric's name, as in the outcome's JSON.
	Name string `json:"name"`
	// Mean is the mean over seeds; Low and High bound its 95%
	// confidence interval.
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// StdDev is the standard deviation over seeds.
	StdDev float64 `json:"stddev"`
	// Undefined counts the seeds in which the metric had no value (a
	// latency quantile of a replay in which nothing succeeded), left out
	// of the mean; when it is all of them, the mean is 0 and stands for
	// nothing. Only Compare's summaries count them; Summarize takes
	// every seed's value as it is.
	Undefined int `json:"undefined,omitempty"`
}

// summaryMetrics lists the headline metrics and how to read them.
var summaryMetrics = []struct {
	name string
	get  func(*Result) float64
}{
	{"success_rate", func(r *Result) float64 { return r.SuccessRate }},
	{"goodput_per_sec", func(r *Result) float64 { return r.Goodput }},
	{"offered_per_sec", func(r *Result) float64 { return r.OfferedRate }},
	{"unfinished", func(r *Result) float64 { return float64(r.Unfinished) }},
	{"backlog_per_sec", func(r *Result) float64 { return r.BacklogPerSec }},
	{"latency_p50_ms", func(r *Result) float64 { return r.LatencyP50MS }},
	{"latency_p95_ms", func(r *Result) float64 { return r.LatencyP95MS }},
	{"latency_p99_ms", func(r *Result) float64 { return r.LatencyP99MS }},
	{"amplification", func(r *Result) float64 { return r.Amplification }},
	{"retry_share", func(r *Result) float64 { return r.RetryShare }},
	{"zombie_share", func(r *Result) float64 { return r.ZombieShare }},
	{"rejected_share", func(r *Result) float64 { return r.RejectedShare }},
}

// Summarize aggregates results (of one model and scenario, in seed
// order).
func Summarize(results []*Result) *Summary {
	s := &Summary{}
	if len(results) == 0 {
		return s
	}
	s.Scenario = results[0].Scenario
	s.DurationMS = results[0].DurationMS
	for _, r := range results {
		s.Seeds = append(s.Seeds, r.Seed)
		if r.CollapseAtMS >= 0 {
			s.Collapsed++
		}
		if r.Overloaded {
			s.Overloaded++
		}
	}
	xs := make([]float64, len(results))
	for _, m := range summaryMetrics {
		for i, r := range results {
			xs[i] = m.get(r)
		}
		s.Metrics = append(s.Metrics, estimate(m.name, xs))
	}
	if results[0].Flows > 0 {
		for _, m := range flowMetrics {
			for i, r := range results {
				xs[i] = m.get(r)
			}
			s.Metrics = append(s.Metrics, estimate(m.name, xs))
		}
	}
	return s
}

// flowMetrics are the headline metrics of models with flows (async edges
// or queues), summarised after the others when the replays count flows.
var flowMetrics = []struct {
	name string
	get  func(*Result) float64
}{
	{"flow_success_rate", func(r *Result) float64 { return r.FlowSuccessRate }},
	{"flow_p50_ms", func(r *Result) float64 { return r.FlowP50MS }},
	{"flow_p99_ms", func(r *Result) float64 { return r.FlowP99MS }},
}

// Metric returns the estimate named name, or a zero Estimate.
func (s *Summary) Metric(name string) Estimate {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m
		}
	}
	return Estimate{}
}

func estimate(name string, xs []float64) Estimate {
	mean, sd := stat.MeanStdDev(xs, nil)
	if len(xs) < 2 {
		return Estimate{Name: name, Mean: round6(xs[0]), Low: round6(xs[0]), High: round6(xs[0])}
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975)
	h := t * sd / math.Sqrt(float64(len(xs)))
	return Estimate{Name: name, Mean: round6(mean), Low: round6(mean - h), High: round6(mean + h), StdDev: round6(sd)}
}

// Comparison is a what-if replayed beside its baseline on the same seeds
// (common random numbers): each one's metrics over the seeds and their
// paired differences, what-if less baseline, with 95% intervals.
type Comparison struct {
	// Seeds are the seeds both were replayed with, in order.
	Seeds []uint64 `json:"seeds"`
	// Baseline summarises the replays without the what-if; nil when
	// there is no baseline (a replay of the model as it is).
	Baseline *Summary `json:"baseline,omitempty"`
	// WhatIf summarises the replays of the what-if (or of the model as
	// it is, when there is no baseline).
	WhatIf *Summary `json:"what_if"`
	// Deltas are the paired differences, in WhatIf.Metrics' order; none
	// without a baseline.
	Deltas []Difference `json:"deltas,omitempty"`
}

// Difference is a metric's paired difference over common seeds: the
// what-if's value less the baseline's, seed by seed, averaged, with the
// 95% interval of that mean (Student's t over the pairs).
type Difference struct {
	// Name is the metric's name, as in the outcome's JSON.
	Name string `json:"name"`
	// Mean is the mean of the differences.
	Mean float64 `json:"mean"`
	// Low and High bound the 95% interval; absent with fewer than two
	// pairs, from which no interval can be had.
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
	// StdDev is the standard deviation of the differences.
	StdDev float64 `json:"stddev"`
	// Pairs counts the seeds the differences are over: every seed, less
	// those in which either run had no value (a latency quantile with
	// nothing succeeded).
	Pairs int `json:"pairs"`
}

// Interval reports the difference's 95% interval; ok is false when it
// has none (fewer than two pairs).
func (d Difference) Interval() (lo, hi float64, ok bool) {
	if d.Low == nil || d.High == nil {
		return 0, 0, false
	}
	return *d.Low, *d.High, true
}

// Delta returns the difference named name, or a zero Difference.
func (c *Comparison) Delta(name string) Difference {
	for _, d := range c.Deltas {
		if d.Name == name {
			return d
		}
	}
	return Difference{}
}

// definedWhen says, for the metrics that can have no value, when they
// have one: a latency quantile needs a success, a success rate an
// offered request.
var definedWhen = map[string]func(*Result) bool{
	"success_rate":      func(r *Result) bool { return r.Roots > 0 },
	"latency_p50_ms":    func(r *Result) bool { return r.Succeeded > 0 },
	"latency_p95_ms":    func(r *Result) bool { return r.Succeeded > 0 },
	"latency_p99_ms":    func(r *Result) bool { return r.Succeeded > 0 },
	"flow_success_rate": func(r *Result) bool { return r.Flows+r.FlowsUnfinished > 0 },
	"flow_p50_ms":       func(r *Result) bool { return r.FlowSuccessRate > 0 },
	"flow_p99_ms":       func(r *Result) bool { return r.FlowSuccessRate > 0 },
}

// defined reports whether the metric named name has a value in r.
func defined(name string, r *Result) bool {
	f := definedWhen[name]
	return f == nil || f(r)
}

// Compare summarises the what-if's replays and, when baseline is not
// nil, the baseline's on the same seeds (in the same order) and their
// paired differences. Unlike Summarize, a seed in which a metric has no
// value (a latency quantile when nothing succeeded) is left out of that
// metric's mean, and out of its differences, instead of counting as 0.
// The flow metrics are there when either side finished a flow.
func Compare(baseline, whatIf []*Result) (*Comparison, error) {
	if len(whatIf) == 0 {
		return nil, errors.New("compare: no replays")
	}
	if baseline != nil {
		if len(baseline) != len(whatIf) {
			return nil, fmt.Errorf("compare: %d baseline replays, %d of the what-if", len(baseline), len(whatIf))
		}
		for i := range whatIf {
			if baseline[i].Seed != whatIf[i].Seed {
				return nil, fmt.Errorf("compare: replay %d has seed %d in the baseline, %d in the what-if", i, baseline[i].Seed, whatIf[i].Seed)
			}
		}
	}
	flows := false
	for _, rs := range [][]*Result{baseline, whatIf} {
		for _, r := range rs {
			flows = flows || r.Flows > 0
		}
	}
	metrics := summaryMetrics
	if flows {
		metrics = append(slices.Clip(metrics), flowMetrics...)
	}
	c := &Comparison{WhatIf: summarizeDefined(whatIf, metrics)}
	c.Seeds = c.WhatIf.Seeds
	if baseline == nil {
		return c, nil
	}
	c.Baseline = summarizeDefined(baseline, metrics)
	for _, m := range metrics {
		var xs []float64
		for i := range whatIf {
			if defined(m.name, baseline[i]) && defined(m.name, whatIf[i]) {
				xs = append(xs, m.get(whatIf[i])-m.get(baseline[i]))
			}
		}
		c.Deltas = append(c.Deltas, difference(m.name, xs))
	}
	return c, nil
}

// summarizeDefined is Summarize over metrics, each metric's estimate
// over the seeds in which it has a value.
func summarizeDefined(results []*Result, metrics []struct {
	name string
	get  func(*Result) float64
}) *Summary {
	s := Summarize(results)
	s.Metrics = s.Metrics[:0:0]
	for _, m := range metrics {
		var xs []float64
		for _, r := range results {
			if defined(m.name, r) {
				xs = append(xs, m.get(r))
			}
		}
		if len(xs) == 0 {
			s.Metrics = append(s.Metrics, Estimate{Name: m.name, Undefined: len(results)})
			continue
		}
		e := estimate(m.name, xs)
		e.Undefined = len(results) - len(xs)
		s.Metrics = append(s.Metrics, e)
	}
	return s
}

// difference is the paired differences' mean and 95% interval.
func difference(name string, xs []float64) Difference {
	d := Difference{Name: name, Pairs: len(xs)}
	if len(xs) == 0 {
		return d
	}
	e := estimate(name, xs)
	d.Mean, d.StdDev = e.Mean, e.StdDev
	if len(xs) >= 2 {
		d.Low, d.High = &e.Low, &e.High
	}
	return d
}
