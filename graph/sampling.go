package graph

// This file finds traces that are a sample of the traffic (head
// sampling: one trace in N kept) by the broker's publish counters, which
// count every message, and scales the model's arrival rates back up.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"cascade"
)

// Sampling detection (docs/model.md, "Entries"): the traces are a sample
// when, over the queues with at least minSampledPublishes traced
// publishes in the counters' window, the median of the broker's
// publishes over the traced ones exceeds minSampleScale.
const (
	// minSampledPublishes is the fewest traced publishes into a queue
	// whose ratio is read: below it the ratio's Poisson noise is over
	// 22% (1/√20).
	minSampledPublishes = 20
	// minSampleScale is the median ratio above which the traces are a
	// sample. A full capture reads about 1 (spans lost at the window's
	// edges, or a few dropped by the exporter); the lightest head
	// sampling anyone runs, 1 in 2, reads 2.
	minSampleScale = 1.5
)

// pubPoint is one point of a publish counter.
type pubPoint struct {
	at int64
	v  float64
}

// pubSeries is one publish counter of a queue: the broker's
// rabbitmq_queue_messages_published_total for one queue (and channel,
// exchange), or a topic's.
type pubSeries struct {
	queue, instance string
	pts             []pubPoint
}

// addPublished keeps a point of a publish counter that names a queue (or
// a topic); counters that name none (a channel's, the broker's global
// count) are left out.
func (m *metricAcc) addPublished(s *cascade.Sample) {
	if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return
	}
	name := labelValue(s.Labels, "queue")
	if name == "" {
		name = labelValue(s.Labels, "topic")
	}
	if name == "" {
		return
	}
	if m.published == nil {
		m.published, m.pubFirst = map[string]*pubSeries{}, map[string]int64{}
	}
	key := s.Instance + "\x00" + s.Metric + "\x00" + s.Labels
	ps := m.published[key]
	if ps == nil {
		ps = &pubSeries{queue: strings.Clone(name), instance: strings.Clone(s.Instance)}
		m.published[strings.Clone(key)] = ps
	}
	if len(ps.pts) < maxQueuePoints {
		ps.pts = append(ps.pts, pubPoint{s.Time, s.Value})
		m.pubSorted = false
	}
	if first, ok := m.pubFirst[ps.instance]; !ok || s.Time < first {
		m.pubFirst[ps.instance] = s.Time
	}
}

// publishWindow returns the times of the first and the last points of
// the publish counters inside [from, to]; ok is false when none is.
func (m *metricAcc) publishWindow(from, to int64) (lo, hi int64, ok bool) {
	for _, ps := range m.published {
		for _, p := range ps.pts {
			if p.at < from || p.at > to {
				continue
			}
			if !ok || p.at < lo {
				lo = p.at
			}
			if !ok || p.at > hi {
				hi = p.at
			}
			ok = true
		}
	}
	return lo, hi, ok
}

// publishedSeries returns the publish counters in one order (by series
// key: sums over them come out the same bytes every run), each one's
// points sorted by time (in place, once).
func (m *metricAcc) publishedSeries() []*pubSeries {
	keys := make([]string, 0, len(m.published))
	for k := range m.published {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*pubSeries, len(keys))
	for i, k := range keys {
		ps := m.published[k]
		if !m.pubSorted {
			slices.SortStableFunc(ps.pts, func(x, y pubPoint) int { return cmp.Compare(x.at, y.at) })
		}
		out[i] = ps
	}
	m.pubSorted = true
	return out
}

// publishedIn returns, per queue, the messages the broker counted
// published in (lo, hi]: each counter's increases over its points there,
// a drop being a reset (the counter restarted from 0). A counter starts
// from its last point at or before lo; one whose first point is later
// than its broker's first was created during the capture and starts from
// 0; one without a point at or before lo that its broker had from its
// first scrape starts from its first point.
func (m *metricAcc) publishedIn(lo, hi int64) map[string]float64 {
	out := map[string]float64{}
	for _, ps := range m.publishedSeries() {
		pts := ps.pts
		i := 0
		var prev float64
		switch {
		case pts[0].at <= lo:
			for i+1 < len(pts) && pts[i+1].at <= lo {
				i++
			}
			prev = pts[i].v
			i++
		case pts[0].at > m.pubFirst[ps.instance]:
			prev = 0
		default:
			prev = pts[0].v
			i++
		}
		var sum float64
		for ; i < len(pts) && pts[i].at <= hi; i++ {
			if v := pts[i].v; v >= prev {
				sum += v - prev
			} else {
				sum += v
			}
			prev = pts[i].v
		}
		out[ps.queue] += sum
	}
	return out
}

// tracedPublishes returns, per destination name (the queue, topic or
// exchange the publish spans named), the publishes that started in
// (lo, hi]. An exchange whose messages were delivered from queues counts
// for each of them.
func (b *Builder) tracedPublishes(lo, hi int64) map[string]int64 {
	out := map[string]int64{}
	for i := range b.mq.pubs {
		p := &b.mq.pubs[i]
		if p.start <= lo || p.start > hi {
			continue
		}
		q := b.nodes[p.queue].queue
		out[b.syms.names[q.dest]]++
		for _, to := range q.routed {
			out[b.syms.names[b.nodes[to].queue.dest]]++
		}
	}
	return out
}

// sampling is what the broker's publish counters say of the traces.
type sampling struct {
	// scale is the broker's publishes per traced publish: the median
	// over the queues read; 0 when no queue could be read.
	scale    float64
	queues   int     // queues whose ratio was read
	min, max float64 // their lowest and highest ratio
}

// readSampling compares, per queue, the messages the broker counted
// published over the counters' window (inside the spans' window) with
// the publish spans the traces hold in the same window.
func (b *Builder) readSampling() sampling {
	if len(b.metrics.published) == 0 || len(b.mq.pubs) == 0 {
		return sampling{}
	}
	lo, hi, ok := b.metrics.publishWindow(b.startNS, b.endNS)
	if !ok || hi <= lo {
		return sampling{}
	}
	broker := b.metrics.publishedIn(lo, hi)
	traced := b.tracedPublishes(lo, hi)
	names := make([]string, 0, len(broker))
	for name := range broker {
		names = append(names, name)
	}
	slices.Sort(names)
	var ratios []float64
	for _, name := range names {
		if n := traced[name]; n >= minSampledPublishes {
			ratios = append(ratios, broker[name]/float64(n))
		}
	}
	if len(ratios) == 0 {
		return sampling{}
	}
	slices.Sort(ratios)
	return sampling{scale: quantile(ratios, 0.5), queues: len(ratios), min: ratios[0], max: ratios[len(ratios)-1]}
}

// scaleSampled scales the model's entry rates when the broker's publish
// counters show the traces are a sample (readSampling), and says so in
// the model's source notes. The load's shape cannot be read from a
// sample of its requests (thinning makes any load look open), so a
// closed load becomes open.
func (b *Builder) scaleSampled(m *cascade.Model) {
	s := b.readSampling()
	if s.scale <= minSampleScale {
		return
	}
	k := round6(s.scale)
	for i := range m.Entries {
		m.Entries[i].RatePerSec = round6(m.Entries[i].RatePerSec * k)
	}
	m.Source.Notes = append(m.Source.Notes, fmt.Sprintf(
		"traces hold 1 in %.3g of the broker's publishes (queue counters: the median of %d queues, %.3g to %.3g): entry rates scaled ×%.3g",
		k, s.queues, s.min, s.max, k))
	if l := m.Load; l != nil && l.Shape == cascade.LoadClosed {
		l.Shape, l.Clients, l.ThinkMS = cascade.LoadOpen, 0, 0
		m.Source.Notes = append(m.Source.Notes, "the load's shape is not read from a sample of its requests: open")
	}
}
