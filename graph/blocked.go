package graph

// This file tells a publisher whose failures are its broker's memory
// alarm: a publisher that honours RabbitMQ's connection.blocked fails its
// request at once while the alarm is on, without a publish span. Counted
// as its own failures, they would fail it at that rate in every replay,
// the alarm gone or not.

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"cascade"
)

// Rule of a publisher whose failures are its broker's alarm (see
// findBlocked).
const (
	// blockedLevel is the one-sided test's level: the chance that a
	// publisher failing at one rate throughout shows that many of its
	// failures inside the alarm.
	blockedLevel = 0.001
	// minBlocked is the fewest own failures inside the alarm.
	minBlocked = 5
	// maxAlarmLag is how far the exported alarm may trail the broker's:
	// an exporter reads the alarm when it refreshes its statistics
	// (RabbitMQ's collect_statistics_interval, 5 s by default) and the
	// scraper when it scrapes. Lags from 0 to it, a scrape step apart
	// (at least one step), are tried, and blockedLevel is shared among
	// them.
	maxAlarmLag = 5 * int64(time.Second)
)

// addAlarm keeps a point of the memory alarm series.
func (m *brokerMetrics) addAlarm(t int64, v float64) {
	if m.alarmAt == nil {
		m.alarmAt = map[int64]float64{}
	}
	if old, ok := m.alarmAt[t]; ok {
		m.alarmAt[t] = max(old, v)
		return
	}
	if len(m.alarmAt) >= maxAlarmPoints {
		m.alarmFull = true
		return
	}
	m.alarmAt[t] = v
}

// alarmIntervals returns the times the broker's memory alarm may have
// been on, sorted, disjoint, each [start, end) in Unix ns. A sampled
// gauge brackets its changes only: a point of 1 (0.5 or more) at t_i says
// the alarm was on at some moment between the previous point and it, and
// the next point of 0 that it was off by then, so each point of 1 marks
// [t_{i−1}, t_{i+1}) (the first and the last point reach one step, the
// gap to their neighbour, beyond themselves). Nil without a point of 1,
// with a single point (no step to read), or when points were left out
// past maxAlarmPoints.
func (m *brokerMetrics) alarmIntervals() [][2]int64 {
	if len(m.alarmAt) < 2 || m.alarmFull || m.alarm < 0.5 {
		return nil
	}
	ts := m.alarmTimes()
	var out [][2]int64
	for i, t := range ts {
		if m.alarmAt[t] < 0.5 {
			continue
		}
		var lo, hi int64
		if i > 0 {
			lo = ts[i-1]
		} else {
			lo = t - (ts[1] - t)
		}
		if i+1 < len(ts) {
			hi = ts[i+1]
		} else {
			hi = t + (t - ts[i-1])
		}
		if k := len(out) - 1; k >= 0 && lo <= out[k][1] {
			out[k][1] = max(out[k][1], hi)
			continue
		}
		out = append(out, [2]int64{lo, hi})
	}
	return out
}

// alarmTimes returns the times of the alarm series' points, sorted.
func (m *brokerMetrics) alarmTimes() []int64 {
	return slices.Sorted(maps.Keys(m.alarmAt))
}

// alarmStep is the alarm series' sampling step: the median gap between
// its points (0 with fewer than two).
func (m *brokerMetrics) alarmStep() int64 {
	if len(m.alarmAt) < 2 {
		return 0
	}
	ts := m.alarmTimes()
	gaps := make([]int64, len(ts)-1)
	for i := range gaps {
		gaps[i] = ts[i+1] - ts[i]
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// alarmLags are the lags by which the exported alarm may trail the
// broker's, for a series sampled every step: 0, step, 2·step, … up to
// maxAlarmLag, at least 0 and step.
func alarmLags(step int64) []int64 {
	if step <= 0 {
		return []int64{0}
	}
	lags := []int64{0}
	for d := step; d <= maxAlarmLag || len(lags) < 2; d += step {
		lags = append(lags, d)
	}
	return lags
}

// shifted returns the intervals iv moved lag earlier.
func shifted(iv [][2]int64, lag int64) [][2]int64 {
	out := make([][2]int64, len(iv))
	for i, x := range iv {
		out[i] = [2]int64{x[0] - lag, x[1] - lag}
	}
	return out
}

// inIntervals reports whether t falls in one of the sorted, disjoint
// intervals iv.
func inIntervals(iv [][2]int64, t int64) bool {
	i, _ := slices.BinarySearchFunc(iv, t, func(x [2]int64, t int64) int { return cmp.Compare(x[1], t+1) })
	return i < len(iv) && iv[i][0] <= t && t < iv[i][1]
}

// blockedFacts are a publisher's requests and own failures inside and
// outside its broker's memory alarm, by their start, and the one-sided
// test's p-value.
type blockedFacts struct {
	inReq, inOwn, outReq, outOwn int64
	p                            float64
	// lag is how far the exported alarm trailed the broker's (the lag
	// tried whose p was least), and iv the alarm's intervals moved back
	// by it: where the publisher was blocked.
	lag int64
	iv  [][2]int64
	// fastNS is the longest a failure inside the alarm took (its 95%
	// quantile): an own failure outside the sampled alarm that took no
	// longer is one of them (the alarm came and went between two
	// samples); fastOut counts those, left out of outReq and outOwn.
	fastNS  int64
	fastOut int64
}

// countBlocked counts the requests of seq inside and outside iv.
func countBlocked(seq []seqReq, iv [][2]int64) blockedFacts {
	var f blockedFacts
	for i := range seq {
		r := &seq[i]
		switch in := inIntervals(iv, r.start); {
		case in && r.own:
			f.inReq++
			f.inOwn++
		case in:
			f.inReq++
		case r.own:
			f.outReq++
			f.outOwn++
		default:
			f.outReq++
		}
	}
	return f
}

// outside returns the requests of seq outside iv, less the own failures
// no longer than fastNS (the alarm's, between two samples; 0 keeps all).
func outside(seq []seqReq, iv [][2]int64, fastNS int64) []seqReq {
	out := make([]seqReq, 0, len(seq))
	for _, r := range seq {
		if !inIntervals(iv, r.start) && !(r.own && r.end-r.start <= fastNS) {
			out = append(out, r)
		}
	}
	return out
}

// fastFailures sets f.fastNS from the own failures of seq inside iv and
// moves the own failures outside no longer than it out of f's outside
// counts.
func (f *blockedFacts) fastFailures(seq []seqReq, iv [][2]int64) {
	var in []float64
	for i := range seq {
		if r := &seq[i]; r.own && inIntervals(iv, r.start) {
			in = append(in, float64(r.end-r.start))
		}
	}
	if len(in) == 0 {
		return
	}
	slices.Sort(in)
	f.fastNS = int64(quantile(in, 0.95))
	for i := range seq {
		if r := &seq[i]; r.own && !inIntervals(iv, r.start) && r.end-r.start <= f.fastNS {
			f.fastOut++
			f.outOwn--
			f.outReq--
		}
	}
}

// fisherUpper is the one-sided p-value of Fisher's exact test that k or
// more of K marked items fall in a draw of n out of N: the upper tail of
// the hypergeometric law. Given the publisher's own failures K of N
// requests at one rate throughout, it is the chance that k or more of
// them fall among the n requests inside the alarm.
func fisherUpper(N, K, n, k int64) float64 {
	if k <= 0 {
		return 1
	}
	logC := func(a, b int64) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	total := logC(N, n)
	var p float64
	for x := k; x <= min(K, n); x++ {
		if n-x > N-K {
			continue
		}
		p += math.Exp(logC(K, x) + logC(N-K, n-x) - total)
	}
	return min(1, p)
}

// findBlocked marks each publisher (a node with an edge into a queue
// node) whose own failures are its broker's memory alarm: at least
// minBlocked of them started while the alarm may have been on
// (alarmIntervals), and Fisher's exact test puts the chance of that many
// there, were its failure rate one throughout, below blockedLevel. The
// exported alarm may trail the broker's (maxAlarmLag): the intervals are
// tried moved back by each of alarmLags, the least p is kept, and it
// must be below blockedLevel shared among the lags tried (Bonferroni). The
// samples may have come before or after the spans: the requests' starts
// are kept (nodeAcc.seq) and judged here. A publisher whose sequence
// outgrew maxSequence is not judged.
func (b *Builder) findBlocked() {
	base := b.metrics.broker.alarmIntervals()
	if len(base) == 0 {
		return
	}
	lags := alarmLags(b.metrics.broker.alarmStep())
	var pubs []int32
	for _, e := range b.edges {
		from, to := b.nodes[e.from], b.nodes[e.to]
		if e.from != e.to && to.queue != nil && !to.dropped && from.queue == nil && !from.dropped && !slices.Contains(pubs, e.from) {
			pubs = append(pubs, e.from)
		}
	}
	for _, i := range pubs {
		n := b.nodes[i]
		if n.own < minBlocked {
			continue
		}
		if n.seqFull {
			b.warnf("node %s: more than %d requests; its failures were not set against the broker's memory alarm", n.name, maxSequence)
			continue
		}
		f := blockedFacts{p: math.Inf(1)}
		for _, lag := range lags {
			iv := shifted(base, lag)
			g := countBlocked(n.seq, iv)
			if g.inOwn < minBlocked {
				continue
			}
			if g.p = fisherUpper(g.inReq+g.outReq, g.inOwn+g.outOwn, g.inReq, g.inOwn); g.p < f.p {
				f, f.lag, f.iv = g, lag, iv
			}
		}
		if f.p*float64(len(lags)) >= blockedLevel {
			continue
		}
		f.fastFailures(n.seq, f.iv)
		n.blocked = &f
		b.warnf("node %s: %d of its %d own failures came while the broker's memory alarm was on (%d of %d requests, the alarm series trailing it by %s; one-sided Fisher p = %.2g, of %d lags tried): its broker blocked it, so overload.base is its failure rate outside the alarm, %g (%d failures outside as fast as those inside are the alarm's too), and its publishes fail_blocked",
			n.name, f.inOwn, f.inOwn+f.outOwn+f.fastOut, f.inReq, f.inReq+f.outReq+f.fastOut, time.Duration(f.lag), f.p, len(lags), ownRate(f.outOwn, f.outReq), f.fastOut)
	}
}

// markBlocked makes e, an edge of a blocked publisher into a queue node,
// a publish that fails while its broker's alarm is on: confirmed (the
// publisher's answer waits on it), its failure failing the publisher's
// request.
func markBlocked(e *cascade.Edge) {
	e.FailBlocked, e.Async, e.Propagation = true, false, 1
	e.Provenance["fail_blocked"] = cascade.Inferred
	e.Provenance["async"] = cascade.Inferred
	e.Provenance["propagation"] = cascade.Inferred
}
