package graph

import (
	"math"
	"strings"

	"cascade"
)

// serviceMetrics are the queue metrics of one service.
type serviceMetrics struct {
	// poolSize is the largest pool_size value of any instance.
	poolSize float64
	// queueMax is the largest queue_depth value.
	queueMax float64
	// rejected is the increase of the rejected counters over the data,
	// summed over series (a drop is a counter reset).
	rejected float64
}

// metricAcc joins metric points to services, and a broker's series to
// its queues.
type metricAcc struct {
	services map[string]*serviceMetrics
	last     map[string]float64 // rejected series → last value
	queues   map[string]*queueMetrics
	// prefetch is the largest prefetch value of a series that names no
	// queue (a channel's or a consumer's).
	prefetch float64
	broker   brokerMetrics
	// published holds the publish counters that name a queue, by series
	// (sampling.go); pubFirst is each broker instance's first point of
	// them.
	published map[string]*pubSeries
	pubFirst  map[string]int64
	pubSorted bool // publishedSeries sorted every series' points
}

// queueMetrics are a broker's series of one queue (its label queue=,
// or topic= for Kafka).
type queueMetrics struct {
	depthMax  float64
	depthN    int64
	consumers float64
	prefetch  float64
	// depth and bytes by time, to read bytes per message where both
	// were sampled at once (at most maxQueuePoints each).
	depth, bytes map[int64]float64
}

// maxQueuePoints bounds the points a queue keeps to pair queue_bytes
// with depth.
const maxQueuePoints = 1 << 16

// bytesPerMessage is the mean of queue bytes over ready messages at the
// times both were sampled with messages ready; 0 without such a time.
func (q *queueMetrics) bytesPerMessage() float64 {
	var sum float64
	n := 0
	for t, by := range q.bytes {
		if d := q.depth[t]; d > 0 && by > 0 {
			sum += by / d
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// brokerMetrics are the broker-wide series: its memory and watermark,
// and its memory alarm over time.
type brokerMetrics struct {
	limit, memMin float64
	limitN, memN  int64
	alarm         float64
	// mem is the memory by time (at most maxQueuePoints), for the
	// memory that follows the message rate (rateMemory).
	mem map[int64]float64
	// alarmAt is the memory alarm series by time (the largest value of
	// any series at a time), at most maxAlarmPoints; alarmFull says
	// points were left out past the cap (see blocked.go).
	alarmAt   map[int64]float64
	alarmFull bool
}

// maxAlarmPoints bounds the memory alarm points kept: 36 hours at one a
// second.
const maxAlarmPoints = 1 << 17

func newMetricAcc() metricAcc {
	return metricAcc{services: map[string]*serviceMetrics{}, last: map[string]float64{}, queues: map[string]*queueMetrics{},
		broker: brokerMetrics{mem: map[int64]float64{}}}
}

// labelValue returns the value of label key in labels (name="value"
// pairs joined by commas), or "".
func labelValue(labels, key string) string {
	for labels != "" {
		i := strings.IndexByte(labels, '=')
		if i < 0 || i+1 >= len(labels) || labels[i+1] != '"' {
			return ""
		}
		name := labels[:i]
		rest := labels[i+2:]
		j := 0
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(rest) {
			return ""
		}
		if name == key {
			return rest[:j]
		}
		labels = strings.TrimPrefix(rest[min(j+1, len(rest)):], ",")
	}
	return ""
}

// queue returns the series of the queue named name, or nil.
func (m *metricAcc) queue(name string) *queueMetrics { return m.queues[name] }

// prefetchOf returns a queue's prefetch: its own series', else the
// largest of the series that name no queue.
func (m *metricAcc) prefetchOf(q *queueMetrics) float64 {
	if q != nil && q.prefetch > 0 {
		return q.prefetch
	}
	return m.prefetch
}

// addBroker adds a point of a broker series.
func (m *metricAcc) addBroker(s *cascade.Sample) {
	if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return
	}
	switch s.Kind {
	case cascade.MetricMemoryLimit:
		m.broker.limit = max(m.broker.limit, s.Value)
		m.broker.limitN++
		return
	case cascade.MetricBrokerMemory:
		if m.broker.memN == 0 || s.Value < m.broker.memMin {
			m.broker.memMin = s.Value
		}
		m.broker.memN++
		if len(m.broker.mem) < maxQueuePoints {
			m.broker.mem[s.Time] = max(m.broker.mem[s.Time], s.Value)
		}
		return
	case cascade.MetricMemoryAlarm:
		m.broker.alarm = max(m.broker.alarm, s.Value)
		m.broker.addAlarm(s.Time, s.Value)
		return
	}
	name := labelValue(s.Labels, "queue")
	if name == "" {
		name = labelValue(s.Labels, "topic")
	}
	if name == "" {
		if s.Kind == cascade.MetricPrefetch {
			m.prefetch = max(m.prefetch, s.Value)
		}
		return
	}
	q := m.queues[name]
	if q == nil {
		q = &queueMetrics{depth: map[int64]float64{}, bytes: map[int64]float64{}}
		m.queues[strings.Clone(name)] = q
	}
	switch s.Kind {
	case cascade.MetricQueueDepth:
		q.depthMax = max(q.depthMax, s.Value)
		q.depthN++
		if len(q.depth) < maxQueuePoints {
			q.depth[s.Time] += s.Value
		}
	case cascade.MetricQueueBytes:
		if len(q.bytes) < maxQueuePoints {
			q.bytes[s.Time] += s.Value
		}
	case cascade.MetricConsumers:
		q.consumers = max(q.consumers, s.Value)
	case cascade.MetricPrefetch:
		q.prefetch = max(q.prefetch, s.Value)
	}
}

func (m *metricAcc) add(s *cascade.Sample) {
	if s.Kind == cascade.MetricPublished {
		m.addPublished(s)
		return
	}
	switch s.Kind {
	case cascade.MetricQueueDepth, cascade.MetricQueueBytes, cascade.MetricConsumers, cascade.MetricPrefetch,
		cascade.MetricMemoryLimit, cascade.MetricBrokerMemory, cascade.MetricMemoryAlarm:
		m.addBroker(s)
	}
	switch s.Kind {
	case cascade.MetricPoolSize, cascade.MetricQueueDepth, cascade.MetricRejected:
	default:
		return
	}
	if s.Service == "" || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return
	}
	sm := m.services[s.Service]
	if sm == nil {
		sm = &serviceMetrics{}
		m.services[strings.Clone(s.Service)] = sm
	}
	switch s.Kind {
	case cascade.MetricPoolSize:
		sm.poolSize = max(sm.poolSize, s.Value)
	case cascade.MetricQueueDepth:
		sm.queueMax = max(sm.queueMax, s.Value)
	case cascade.MetricRejected:
		key := s.Service + "\x00" + s.Instance + "\x00" + s.Metric + "\x00" + s.Labels
		prev, seen := m.last[key]
		switch {
		case !seen:
		case s.Value >= prev:
			sm.rejected += s.Value - prev
		default:
			sm.rejected += s.Value
		}
		m.last[key] = s.Value
	}
}

// forService returns the metrics of a service, or nil.
func (m *metricAcc) forService(name string) *serviceMetrics { return m.services[name] }
