package incident

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"cascade"
)

// metricLookback is how far before the first span window the metric
// samples of a node's normal range may reach: per-pod metrics come a
// point a minute (Nezha, most Prometheus scrapes of cAdvisor), so the
// few windows of spans before an incident hold at most one point; ten
// minutes before them hold ten.
const metricLookback = 10 * 60 * int64(1e9)

// saturation reports whether a rise of a metric of kind k is a fault of
// the service that reports it: its CPU or memory, its queue, its busy
// workers, its rejections, its open breaker, its consumer lag. Latency,
// rates and success ratios are what the spans already measure, and
// propagate from callee to caller; they are left to the spans.
func saturation(k cascade.MetricKind) bool {
	switch k {
	case cascade.MetricCPU, cascade.MetricMemory, cascade.MetricQueueDepth, cascade.MetricActiveWorkers,
		cascade.MetricRejected, cascade.MetricBreakerOpen, cascade.MetricConsumerLag:
		return true
	}
	return false
}

// metricPoint is one metric sample kept for the incident pass.
type metricPoint struct {
	t int64
	v float64
}

// metricJudgements reads the saturation metrics of the services in
// nodes from samples and judges each against its normal range: the
// points before the first judged window (back to metricLookback before
// the data), a robust z of each later point (σ = 1.4826·MAD of the
// normal points, at least 5% of their median), out when it reaches
// threshold and the metric rose by minChange. A point at time t stands
// for the step before it (the interval its exporter aggregates), so it
// marks the windows that start in [t − step, t). Counters (names ending
// in _total) are judged by their rate. The result holds, per node, one
// judgement per window: the loudest of its metrics.
func metricJudgements(samples, refSamples metricSource, nodes map[string]bool, lo, width int64, nw, scan int, cfg Config) (map[string][]judgement, metricTally, error) {
	var tally metricTally
	if samples == nil {
		return nil, tally, nil
	}
	refPoints, err := referencePoints(refSamples, nodes)
	if err != nil {
		return nil, tally, err
	}
	series, err := readMetricSeries(samples, nodes, lo, width, nw, &tally)
	if err != nil {
		return nil, tally, err
	}
	out := map[string][]judgement{}
	judgedFrom := (lo + int64(scan)) * width
	for _, k := range sortedMetricKeys(series) {
		ps := seriesPoints(series[k], k.metric)
		tally.series++
		if len(ps) < 2 {
			continue
		}
		step := pointStep(ps)
		if step <= 0 {
			continue
		}
		base := metricBaseline(ps, judgedFrom, refPoints, k)
		if len(base) < 3 {
			continue
		}
		tally.judged++
		judgeMetricPoints(out, k, ps, base, step, judgedFrom, lo, width, nw, scan, cfg)
	}
	return out, tally, nil
}

// referencePoints reads the reference's points, per service and metric
// over its pods: the normal of a series with too few points of its own
// before the judged windows.
func referencePoints(refSamples metricSource, nodes map[string]bool) (map[[2]string][]float64, error) {
	refPoints := map[[2]string][]float64{}
	if refSamples != nil {
		err := refSamples(func(s *cascade.Sample) error {
			if !saturation(s.Kind) || !nodes[s.Service] || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				return nil
			}
			k := [2]string{strings.Clone(s.Service), strings.Clone(s.Metric)}
			refPoints[k] = append(refPoints[k], s.Value)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
	}
	return refPoints, nil
}

// metricKey names one metric series: a service's metric on one of its
// pods.
type metricKey struct{ service, instance, metric string }

// readMetricSeries reads the saturation series of the services in nodes
// from metricLookback before the first window to metricLookback after
// the last, and counts the saturation samples given in tally, which the
// warnings read.
func readMetricSeries(samples metricSource, nodes map[string]bool, lo, width int64, nw int, tally *metricTally) (map[metricKey][]metricPoint, error) {
	from := lo*width - metricLookback
	to := (lo + int64(nw) + 1) * width
	series := map[metricKey][]metricPoint{}
	err := samples(func(s *cascade.Sample) error {
		if saturation(s.Kind) {
			tally.saturation++
		}
		if !saturation(s.Kind) || !nodes[s.Service] || s.Time < from || s.Time >= to+metricLookback ||
			math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			return nil
		}
		k := metricKey{strings.Clone(s.Service), strings.Clone(s.Instance), strings.Clone(s.Metric)}
		series[k] = append(series[k], metricPoint{s.Time, s.Value})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return series, nil
}

// sortedMetricKeys returns the series' keys by service, pod and metric,
// so that the judgements merge in the same order on every run.
func sortedMetricKeys(series map[metricKey][]metricPoint) []metricKey {
	keys := make([]metricKey, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.service != b.service {
			return a.service < b.service
		}
		if a.instance != b.instance {
			return a.instance < b.instance
		}
		return a.metric < b.metric
	})
	return keys
}

// seriesPoints puts a series' points in time order and turns a
// counter's (a metric ending in _total) into its rates: a counter only
// grows, so its rate is what can change.
func seriesPoints(ps []metricPoint, metric string) []metricPoint {
	sort.Slice(ps, func(i, j int) bool { return ps[i].t < ps[j].t })
	if strings.HasSuffix(metric, "_total") {
		ps = rates(ps)
	}
	return ps
}

// pointStep returns the median time between a series' points: the
// interval its exporter aggregates, which each point stands for.
func pointStep(ps []metricPoint) int64 {
	gaps := make([]float64, 0, len(ps)-1)
	for i := 1; i < len(ps); i++ {
		gaps = append(gaps, float64(ps[i].t-ps[i-1].t))
	}
	return int64(quantile(gaps, 0.5))
}

// metricBaseline returns a series' normal points: those up to the first
// judged window or, when there are fewer than 3 of them and the metric
// is not a counter, the reference's points of the service's metric.
func metricBaseline(ps []metricPoint, judgedFrom int64, refPoints map[[2]string][]float64, k metricKey) []float64 {
	var base []float64
	for _, p := range ps {
		if p.t <= judgedFrom {
			base = append(base, p.v)
		}
	}
	if len(base) < 3 && !strings.HasSuffix(k.metric, "_total") {
		base = refPoints[[2]string{k.service, k.metric}]
	}
	return base
}

// judgeMetricPoints judges each of series k's points after judgedFrom
// against its normal base and merges the judgement into its service's
// judgements in out at every window the point stands for, so that a
// node keeps its loudest metric.
func judgeMetricPoints(out map[string][]judgement, k metricKey, ps []metricPoint, base []float64, step, judgedFrom, lo, width int64, nw, scan int, cfg Config) {
	med, sigma := medianSigma(base)
	js := out[k.service]
	if js == nil {
		js = make([]judgement, nw)
		out[k.service] = js
	}
	for _, p := range ps {
		if p.t <= judgedFrom {
			continue
		}
		z := math.Max(0, (p.v-med)/sigma)
		material := p.v-med >= cfg.MinChange*math.Abs(med)
		j := judgement{judged: true, out: z >= cfg.Threshold && material, z: z,
			metric: "metric:" + k.metric, base: med, value: p.v, n: len(base)}
		for w := floorDiv(p.t-step, width); w*width < p.t; w++ {
			i := int(w - lo)
			if i < scan || i >= nw {
				continue
			}
			js[i] = merge(js[i], j)
		}
	}
}

// metricTally counts the saturation samples given, the saturation
// series that joined a node, and those with a normal range to judge
// them against.
type metricTally struct{ saturation, series, judged int }

// warnings says what of the metrics given was not judged, and why.
func (t metricTally) warnings(given, refGiven bool) []string {
	switch {
	case !given && refGiven:
		return []string{"metrics: the reference's metrics were given without the capture's: they were not judged"}
	case !given || t.saturation == 0:
		// No metric of the kinds the pass judges was given: the others
		// (latency, rates) are the spans' to judge, and other stages
		// read them.
		return nil
	case t.series == 0:
		return []string{"metrics: no CPU, memory, queue or other saturation series names a service of the spans at the capture's time: the metrics were not judged"}
	case t.judged == 0 && refGiven:
		return []string{"metrics: no saturation series has 3 points before the judged windows or in the reference's metrics: the metrics were not judged"}
	case t.judged == 0:
		return []string{"metrics: no saturation series has 3 points before the judged windows: the metrics were not judged (give the reference with its metrics: analyze --baseline-metrics, or a --baseline dataset that holds them)"}
	case t.judged < t.series:
		return []string{fmt.Sprintf("metrics: %d of %d saturation series have too few points before the judged windows to be judged", t.series-t.judged, t.series)}
	}
	return nil
}

// rates turns a counter's points into per-second rates between
// consecutive points (a reset counts from zero).
func rates(ps []metricPoint) []metricPoint {
	out := make([]metricPoint, 0, len(ps))
	for i := 1; i < len(ps); i++ {
		dt := float64(ps[i].t-ps[i-1].t) / 1e9
		if dt <= 0 {
			continue
		}
		d := ps[i].v - ps[i-1].v
		if d < 0 {
			d = ps[i].v
		}
		out = append(out, metricPoint{ps[i].t, d / dt})
	}
	return out
}

// metricSource is the incident pass's view of metric samples.
type metricSource = cascade.SampleSource
