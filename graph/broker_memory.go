package graph

import (
	"math"
	"slices"
	"sort"
	"strings"

	"cascade"
)

// A broker's memory can follow its message rate as much as the messages
// it holds: RabbitMQ keeps message bodies until its garbage collector
// reclaims them, and its allocators keep what they took. rateMemory fits
// the model of that (cascade.Broker.RateMemoryS and RateWindowMS) to the
// broker's series: its memory over its base and over the bytes its
// queues held, against the bytes its queues were published per second,
// averaged exponentially over a window, or the lesser of that and a
// faster average (a memory that rises slowly and falls fast). Every
// sample counts, those under the alarm too: the publishers held, the
// rate falls, and how fast the memory follows is what the fall window
// says.

// rateWindowsMS are the averaging windows tried, each at most half the
// series' span; each with one average alone (a fall of 0) and with each
// shorter fall window of rateFallsMS.
var (
	rateWindowsMS = []float64{1000, 2000, 3000, 5000, 8000, 13000, 21000, 34000, 55000}
	rateFallsMS   = []float64{0, 500, 1000, 2000}
)

// Acceptance of a fit: enough samples, and the rate explains the memory
// over base (its residuals' root mean square at most half their level).
const (
	rateMemoryMinSamples = 8
	rateMemoryMaxRelRMS  = 0.5
)

// rateMemoryFit is a fit of a broker's memory to its publish rate.
type rateMemoryFit struct {
	seconds  float64 // RateMemoryS
	windowMS float64 // RateWindowMS
	fallMS   float64 // RateFallMS, 0 for one average
	samples  int
	relRMS   float64 // residuals' root mean square over the mean memory over base
}

// rateMemory fits the broker's memory to its publish rate; bytesOf gives
// a queue's bytes per message (0 when unknown: its publishes are left
// out). It reports false when the series do not hold what it needs or
// the rate does not explain the memory.
//
// startNS is when the capture's traffic began (its first span), 0 when
// unknown. A broker scraped from later on had already been published
// to: its counters' first points hold those publishes, and the averages
// start from nothing at startNS, fed that many bytes by the first
// sample, as a replay starts them, rather than at the rate of the first
// interval scraped (a broker long at that rate).
func (m *metricAcc) rateMemory(base float64, bytesOf func(queue string) float64, startNS int64) (rateMemoryFit, bool) {
	bm := &m.broker
	if len(bm.mem) < rateMemoryMinSamples+1 {
		return rateMemoryFit{}, false
	}
	ms, ok := m.memSeries(bytesOf)
	if !ok {
		return rateMemoryFit{}, false
	}
	ys := make([]float64, len(ms.times))
	for i, t := range ms.times {
		ys[i] = bm.mem[t] - base - ms.held[i]
	}
	pre0, dt0 := ms.preRate(startNS)
	span := float64(ms.times[len(ms.times)-1]-ms.times[0]) / 1e9
	var best rateMemoryFit
	bestSSE := math.Inf(1)
	for _, w := range rateWindowsMS {
		if w/1000 > span/2 {
			break
		}
		for _, f := range rateFallsMS {
			if f >= w {
				break
			}
			if fit, sse, ok := ms.fit(ys, w, f, pre0, dt0); ok && sse < bestSSE {
				best, bestSSE = fit, sse
			}
		}
	}
	if best.samples == 0 || !(best.relRMS <= rateMemoryMaxRelRMS) {
		return rateMemoryFit{}, false
	}
	return best, true
}

// memSeries is what rateMemory fits a broker's memory to, at the
// memory's sample times: the bytes published in each interval
// (times[i-1], times[i]], the bytes the queues held at times[i], and the
// bytes published by times[0] (pre).
type memSeries struct {
	times     []int64
	pub, held []float64
	pre       float64
}

// memSeries reads the series; false when no publish of a queue whose
// bytes per message are known falls within the memory's samples.
func (m *metricAcc) memSeries(bytesOf func(queue string) float64) (memSeries, bool) {
	bm := &m.broker
	times := make([]int64, 0, len(bm.mem))
	for t := range bm.mem {
		times = append(times, t)
	}
	slices.Sort(times)
	ms := memSeries{times: times, pub: make([]float64, len(times)), held: make([]float64, len(times))}
	names := make([]string, 0, len(m.queues))
	for name := range m.queues {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := m.queues[name]
		for i, t := range times {
			ms.held[i] += q.bytes[t]
		}
	}
	seen := false
	for _, ps := range m.publishedSeries() {
		per := bytesOf(ps.queue)
		if per <= 0 {
			continue
		}
		pts := ps.pts
		if len(pts) > 0 && pts[0].at <= times[0] && pts[0].v > 0 {
			ms.pre += pts[0].v * per
		}
		for j := 1; j < len(pts); j++ {
			inc := pts[j].v - pts[j-1].v
			if inc < 0 { // a reset
				inc = pts[j].v
			}
			if inc <= 0 {
				continue
			}
			i := sort.Search(len(times), func(i int) bool { return times[i] >= pts[j].at })
			if i == 0 || i == len(times) {
				continue // outside the memory's samples
			}
			ms.pub[i] += inc * per
			seen = true
		}
	}
	return ms, seen
}

// preRate is the rate published at before the first sample, from
// startNS, and that interval's seconds: kept when no faster than the
// fastest interval scraped (a counter older than the capture's traffic
// counts publishes from before it); 0 otherwise.
func (ms memSeries) preRate(startNS int64) (rate, dt float64) {
	times := ms.times
	if startNS <= 0 || startNS >= times[0] || ms.pre <= 0 {
		return 0, 0
	}
	dt = float64(times[0]-startNS) / 1e9
	fastest := 0.0
	for i := 1; i < len(times); i++ {
		if d := float64(times[i]-times[i-1]) / 1e9; d > 0 {
			fastest = max(fastest, ms.pub[i]/d)
		}
	}
	if ms.pre/dt <= fastest {
		return ms.pre / dt, dt
	}
	return 0, dt
}

// fit fits ys, the memory over base and held bytes at each sample, to
// the publish rate averaged over window w ms, or the lesser of that and
// a fall window f (0: one average), through the origin by least squares.
// It returns the fit and its sum of squared residuals; false when the
// samples are too few or the rate explains nothing.
func (ms memSeries) fit(ys []float64, w, f, pre0, dt0 float64) (rateMemoryFit, float64, bool) {
	var sxy, sxx, sy float64
	var xs, yv []float64
	rw, rf := math.NaN(), math.NaN()
	first := 1
	if pre0 > 0 {
		rw, rf, first = ewma(0, pre0, dt0, w), 0, 0
		if f > 0 {
			rf = ewma(0, pre0, dt0, f)
		}
	}
	times := ms.times
	for i := first; i < len(times); i++ {
		if i > 0 {
			dt := float64(times[i]-times[i-1]) / 1e9
			if dt <= 0 {
				continue
			}
			rate := ms.pub[i] / dt
			rw = ewma(rw, rate, dt, w)
			if f > 0 {
				rf = ewma(rf, rate, dt, f)
			}
		}
		x := rw
		if f > 0 {
			x = min(rw, rf)
		}
		y := ys[i]
		xs, yv = append(xs, x), append(yv, y)
		sxy += x * y
		sxx += x * x
		sy += y
	}
	if len(xs) < rateMemoryMinSamples || sxx <= 0 || sxy <= 0 {
		return rateMemoryFit{}, 0, false
	}
	k := sxy / sxx
	var sse float64
	for i := range xs {
		d := yv[i] - k*xs[i]
		sse += d * d
	}
	mean := sy / float64(len(xs))
	rel := math.Inf(1)
	if mean > 0 {
		rel = math.Sqrt(sse/float64(len(xs))) / mean
	}
	return rateMemoryFit{seconds: k, windowMS: w, fallMS: f, samples: len(xs), relRMS: rel}, sse, true
}

// ewma moves an exponential average of time constant ms by an interval
// of dt seconds at rate; NaN starts it at rate.
func ewma(avg, rate, dt, ms float64) float64 {
	if math.IsNaN(avg) {
		return rate
	}
	a := math.Exp(-dt / (ms / 1000))
	return avg*a + (1-a)*rate
}

// fitRateMemory sets the brokers' rate memory from the broker's series,
// when the model has one broker (the series name none) and the fit holds.
func (b *Builder) fitRateMemory(m *cascade.Model) {
	if len(m.Brokers) != 1 {
		return
	}
	br := &m.Brokers[0]
	br.Provenance["rate_memory_s"] = cascade.Default
	per := map[string]float64{}
	var sum float64
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Queue == nil || n.Queue.Broker != br.Name || n.Queue.MessageBytes <= 0 {
			continue
		}
		per[strings.TrimPrefix(n.Name, QueuePrefix)] = n.Queue.MessageBytes
		sum += n.Queue.MessageBytes
	}
	if len(per) == 0 {
		return
	}
	mean := sum / float64(len(per))
	// A queue the traces do not show (a delay queue the broker feeds)
	// holds the messages of the queues they do: their mean size.
	f, ok := b.metrics.rateMemory(br.BaseBytes, func(q string) float64 {
		if v, ok := per[q]; ok {
			return v
		}
		return mean
	}, m.Source.StartNS)
	if !ok {
		return
	}
	br.RateMemoryS = round6(f.seconds)
	br.RateWindowMS = f.windowMS
	br.RateFallMS = f.fallMS
	br.Provenance["rate_memory_s"] = cascade.Inferred
	br.Provenance["rate_window_ms"] = cascade.Inferred
	if f.fallMS > 0 {
		br.Provenance["rate_fall_ms"] = cascade.Inferred
	}
}
