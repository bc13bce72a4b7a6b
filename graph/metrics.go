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

// metricAcc joins metric points to services.
type metricAcc struct {
	services map[string]*serviceMetrics
	last     map[string]float64 // rejected series → last value
}

func newMetricAcc() metricAcc {
	return metricAcc{services: map[string]*serviceMetrics{}, last: map[string]float64{}}
}

func (m *metricAcc) add(s *cascade.Sample) {
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
