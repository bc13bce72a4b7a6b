package graph

import (
	"math"
	"slices"
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
	// prefetch is the largest prefetch value of a channel's series
	// (rabbitmq_consumer_prefetch per object: one consumer's limit) whose
	// channel is seen consuming from no queue.
	prefetch float64
	// chanPrefetch holds each channel's largest prefetch, and chanQueues
	// the queues a channel consumes from (a per-object series naming
	// both, such as rabbitmq_channel_messages_delivered_ack_total), by
	// instance and channel: a queue's prefetch is its consumers'
	// channels'.
	chanPrefetch map[string]float64
	chanQueues   map[string][]string
	// aggPrefetch holds, per series and scrape, a prefetch series that
	// names neither queue nor channel: rabbitmq_prometheus's aggregated
	// /metrics sums its channels' prefetch, one per consumer; aggConsumers
	// the consumers a series of that instance and scrape counted (the
	// aggregated rabbitmq_queue_consumers, rabbitmq_channel_consumers,
	// rabbitmq_consumers). The sum over the consumers is one consumer's.
	aggPrefetch  map[aggKey]float64
	aggConsumers map[aggKey]float64
	broker       brokerMetrics
	// published holds the publish counters that name a queue, by series
	// (sampling.go); pubFirst is each broker instance's first point of
	// them.
	published map[string]*pubSeries
	pubFirst  map[string]int64
	pubSorted bool // publishedSeries sorted every series' points
}

// aggKey names a scrape of an aggregated series: its instance, its
// metric (empty for the consumers, which any of their series counts) and
// its time.
type aggKey struct {
	instance, metric string
	time             int64
}

// maxAggPoints bounds the aggregated prefetch and consumer points kept.
const maxAggPoints = 1 << 16

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

// prefetchOf returns the prefetch of one consumer of the queue named
// name (q its series, or nil), and whether it was read from an aggregate
// rather than a consumer's own series: the queue's own prefetch series,
// else the largest prefetch of the channels seen consuming from it, else
// the largest of the channels seen consuming from no queue, else the
// aggregated sum over channels divided by the consumers counted in the
// same scrape (the largest such quotient). 0 when no series says.
func (m *metricAcc) prefetchOf(name string, q *queueMetrics) (pf float64, aggregated bool) {
	if q != nil && q.prefetch > 0 {
		return q.prefetch, false
	}
	for ch, qs := range m.chanQueues {
		if slices.Contains(qs, name) {
			pf = max(pf, m.chanPrefetch[ch])
		}
	}
	if pf > 0 {
		return pf, false
	}
	if m.prefetch > 0 {
		return m.prefetch, false
	}
	for k, sum := range m.aggPrefetch {
		if n := m.aggConsumers[aggKey{k.instance, "", k.time}]; n > 0 {
			pf = max(pf, sum/n)
		}
	}
	return pf, pf > 0
}

// addChannel notes a per-object series of a channel: its prefetch, or
// the queue it names (the channel consumes from it).
func (m *metricAcc) addChannel(s *cascade.Sample, channel string) {
	key := s.Instance + "\x00" + channel
	if s.Kind == cascade.MetricPrefetch {
		if m.chanPrefetch == nil {
			m.chanPrefetch = map[string]float64{}
		}
		if v, ok := m.chanPrefetch[key]; !ok || s.Value > v {
			m.chanPrefetch[strings.Clone(key)] = s.Value
		}
		return
	}
	q := labelValue(s.Labels, "queue")
	if q == "" || slices.Contains(m.chanQueues[key], q) {
		return
	}
	if m.chanQueues == nil {
		m.chanQueues = map[string][]string{}
	}
	m.chanQueues[strings.Clone(key)] = append(m.chanQueues[key], strings.Clone(q))
}

// finishPrefetch sets prefetch, the largest prefetch of a channel seen
// consuming from no queue.
func (m *metricAcc) finishPrefetch() {
	for ch, v := range m.chanPrefetch {
		if len(m.chanQueues[ch]) == 0 {
			m.prefetch = max(m.prefetch, v)
		}
	}
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
		switch s.Kind {
		case cascade.MetricPrefetch:
			if labelValue(s.Labels, "channel") != "" {
				return // addChannel has it
			}
			// An aggregate: the sum over the channels.
			k := aggKey{s.Instance, s.Metric, s.Time}
			if _, ok := m.aggPrefetch[k]; ok || len(m.aggPrefetch) < maxAggPoints {
				if m.aggPrefetch == nil {
					m.aggPrefetch = map[aggKey]float64{}
				}
				m.aggPrefetch[aggKey{strings.Clone(k.instance), strings.Clone(k.metric), k.time}] = s.Value
			}
		case cascade.MetricConsumers:
			if labelValue(s.Labels, "channel") != "" {
				return // one channel's consumers
			}
			k := aggKey{s.Instance, "", s.Time}
			if _, ok := m.aggConsumers[k]; ok || len(m.aggConsumers) < maxAggPoints {
				if m.aggConsumers == nil {
					m.aggConsumers = map[aggKey]float64{}
				}
				k.instance = strings.Clone(k.instance)
				m.aggConsumers[k] = max(m.aggConsumers[k], s.Value)
			}
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
	// A channel's series (RabbitMQ's per-object metrics): its prefetch,
	// and the queues it consumes from.
	if strings.Contains(s.Labels, `channel="`) && !math.IsNaN(s.Value) {
		if ch := labelValue(s.Labels, "channel"); ch != "" {
			m.addChannel(s, ch)
		}
	}
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
