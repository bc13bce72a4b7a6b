package replay

import (
	"math"

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
