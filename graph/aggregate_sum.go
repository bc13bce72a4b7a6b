package graph

// This file sums the aggregated series per edge and per service
// (Finish), for model to assemble the model from.

import (
	"math"
	"slices"
	"strings"
)

// aggEdge is what the servicegraph series say about one client→server
// pair.
type aggEdge struct {
	key                   edgeKey
	requests              float64
	failedTotal           float64 // request_failed_total
	failedLabel           float64 // request_total{failed="true"}
	hasFailedTotal        bool
	direct, async         bool // some series is a direct (or messaging) call
	server, client        hist
	hasServer, hasClients bool
}

// failed returns the edge's failed requests: request_failed_total when
// the edge has it, else the requests labelled failed="true".
func (e *aggEdge) failed() float64 {
	if e.hasFailedTotal {
		return e.failedTotal
	}
	return e.failedLabel
}

// clientSide returns the client-side latency histogram, or the server
// side when the edge has no client histogram (the legacy server-only
// series).
func (e *aggEdge) clientSide() *hist {
	if e.hasClients {
		return &e.client
	}
	return &e.server
}

// serverSide returns the server-side latency histogram, or the client
// side when the edge has none.
func (e *aggEdge) serverSide() *hist {
	if e.hasServer {
		return &e.server
	}
	return &e.client
}

// aggService is what the spanmetrics series say about one service.
type aggService struct {
	serverCalls, serverErrors float64 // server and consumer spans
	clientCalls, clientErrors float64 // client and producer spans
	otherCalls                float64 // internal and unspecified spans
	server, client            hist
	ops                       map[string]float64 // server span name → calls
}

// service returns service name's sums in m, adding them when new.
func (a *AggregateBuilder) service(m map[string]*aggService, name string) *aggService {
	s := m[name]
	if s == nil {
		s = &aggService{ops: map[string]float64{}}
		m[name] = s
	}
	return s
}

// Finish returns the model the series describe. The builder must not be
// used afterwards. It reads each series' increase and the window the
// counters rose in, sums the series per edge and per service, and
// assembles the model from the sums (model).
func (a *AggregateBuilder) Finish() (*Result, error) {
	if len(a.series) == 0 {
		return nil, ErrNoAggregates
	}
	keys := make([]string, 0, len(a.series))
	for k := range a.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	win, maxLE := a.increases(keys)
	seconds := float64(win[1]-win[0]) / 1e9
	sums := aggSums{edges: map[edgeKey]*aggEdge{}, services: map[string]*aggService{}}
	for _, k := range keys {
		a.sum(&sums, k, maxLE)
	}
	return a.model(sums.edges, sums.services, win, seconds)
}

// increases reads each series' increase (the series by keys) and
// returns the window in which the counters rose: the span counters'
// (each span counts at its end) when there are any, else every
// series'. It also returns, per histogram metric, its largest finite
// bound (for seriesScale).
func (a *AggregateBuilder) increases(keys []string) ([2]int64, map[string]float64) {
	rangeStart := a.minT
	if !a.cfg.SeriesStart.IsZero() {
		rangeStart = a.cfg.SeriesStart.UnixNano()
	}
	var win, spanWin [2]int64
	var rose, spanRose bool
	widen := func(w *[2]int64, ok *bool, from, to int64) {
		if !*ok {
			*w, *ok = [2]int64{from, to}, true
			return
		}
		w[0], w[1] = min(w[0], from), max(w[1], to)
	}
	maxLE := map[string]float64{}
	for _, k := range keys {
		ser := a.series[k]
		from, to, ok := ser.increase(rangeStart)
		if ok && ser.part != partBucket {
			widen(&win, &rose, from, to)
			if ser.kind == kindSpanCalls {
				widen(&spanWin, &spanRose, from, to)
			}
		}
		if ser.part == partBucket && !math.IsInf(ser.le, 1) {
			metric := k[:strings.IndexByte(k, 0)]
			maxLE[metric] = max(maxLE[metric], ser.le)
		}
	}
	switch {
	case spanRose:
		win = spanWin
	case !rose:
		win = [2]int64{a.minT, a.maxT}
	}
	return win, maxLE
}

// seriesScale returns the factor that turns series k's values into
// milliseconds: its unit's, else, for a histogram without a unit in its
// name, seconds when its largest finite bound (maxLE) is at most 300
// (the connectors' seconds layout ends at 15, their milliseconds one at
// 15,000).
func seriesScale(k string, ser *aggSeries, maxLE map[string]float64) float64 {
	scale := float64(ser.unit)
	if scale == 0 {
		scale = 1
		if le := maxLE[k[:strings.IndexByte(k, 0)]]; le > 0 && le <= 300 {
			scale = 1000
		}
	}
	return scale
}

// aggSums are the series summed per client→server edge and per
// service.
type aggSums struct {
	edges    map[edgeKey]*aggEdge
	services map[string]*aggService
}

// edge returns edge k's sums, adding it when new.
func (s *aggSums) edge(k edgeKey) *aggEdge {
	e := s.edges[k]
	if e == nil {
		e = &aggEdge{key: k}
		s.edges[k] = e
	}
	return e
}

// sum adds series k's increase to its edge's or its service's sums: a
// counter to their counts, a histogram's part to the histogram it
// belongs to.
func (a *AggregateBuilder) sum(sums *aggSums, k string, maxLE map[string]float64) {
	ser := a.series[k]
	scale := seriesScale(k, ser, maxLE)
	var h *hist
	switch ser.kind {
	case kindEdgeRequests:
		e := sums.edge(ser.edge)
		e.requests += ser.inc
		if ser.fail == "true" {
			e.failedLabel += ser.inc
		}
		switch ser.conn {
		case connVirtual, connDatabase:
		case connMessaging:
			e.direct, e.async = true, true
		default:
			e.direct = true
		}
	case kindEdgeFailed:
		e := sums.edge(ser.edge)
		e.failedTotal += ser.inc
		e.hasFailedTotal = true
	case kindEdgeServerHist:
		e := sums.edge(ser.edge)
		h, e.hasServer = &e.server, true
	case kindEdgeClientHist:
		e := sums.edge(ser.edge)
		h, e.hasClients = &e.client, true
	case kindSpanCalls, kindSpanHist:
		s := a.service(sums.services, ser.span.service)
		if ser.kind == kindSpanCalls {
			sumSpanCalls(s, ser)
			return
		}
		switch ser.span.kind {
		case "server", "consumer":
			h = &s.server
		case "client", "producer":
			h = &s.client
		}
	}
	if h == nil {
		return
	}
	switch ser.part {
	case partBucket:
		h.addBucket(ser.le*scale, ser.inc)
	case partSum:
		h.sum += ser.inc * scale
	case partCount:
		h.count += ser.inc
	}
}

// sumSpanCalls adds a span-calls series' increase to its service's
// calls and errors by span kind: server and consumer spans, client and
// producer spans, or the others.
func sumSpanCalls(s *aggService, ser *aggSeries) {
	switch ser.span.kind {
	case "server", "consumer":
		s.serverCalls += ser.inc
		s.ops[ser.span.name] += ser.inc
		if ser.span.failed {
			s.serverErrors += ser.inc
		}
	case "client", "producer":
		s.clientCalls += ser.inc
		if ser.span.failed {
			s.clientErrors += ser.inc
		}
	default:
		s.otherCalls += ser.inc
	}
}
