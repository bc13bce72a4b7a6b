package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"cascade"
)

// ErrNoAggregates is returned when the input holds no service-graph or
// span-metrics series, so no model can be built from aggregates.
var ErrNoAggregates = errors.New("no service-graph or span-metrics series")

// The series of the OpenTelemetry Collector's servicegraph connector, as a
// Prometheus-compatible store keeps them (the connector's names, with the
// unit suffix its Prometheus export adds). Labels: client, server,
// connection_type (absent for a direct call; virtual_node, database,
// messaging_system), failed ("true"/"false", newer versions) and any
// configured dimensions, prefixed client_ or server_.
const (
	sgPrefix       = "traces_service_graph_"
	sgRequests     = sgPrefix + "request_total"
	sgFailed       = sgPrefix + "request_failed_total"
	sgServer       = sgPrefix + "request_server"
	sgClient       = sgPrefix + "request_client"
	sgLegacyServer = sgPrefix + "request_duration" // before v0.80: server side only
)

// Prefixes of the spanmetrics connector's series: its default namespace
// (traces.span.metrics, v0.85 on) and the older and Tempo spelling. Labels:
// service_name (Tempo: service), span_name, span_kind (SPAN_KIND_SERVER,
// ...), status_code (STATUS_CODE_ERROR, ...).
var smPrefixes = []string{"traces_span_metrics_", "traces_spanmetrics_"}

// AggregateQueries are the PromQL selectors that read every series the
// builder uses from a Prometheus-compatible store, raw (counters and
// histogram buckets as stored, not rates): cascade graph --from
// prometheus=URL reads them with query_range.
var AggregateQueries = []string{
	`{__name__=~"traces_service_graph_request_(total|failed_total|(server|client|duration)(_seconds|_milliseconds)?_(bucket|sum|count))"}`,
	`{__name__=~"traces_span_?metrics_(calls_total|(duration|latency)(_seconds|_milliseconds)?_(bucket|sum|count))"}`,
}

// seriesKind says what one aggregated series counts.
type seriesKind uint8

const (
	kindNone seriesKind = iota
	kindEdgeRequests
	kindEdgeFailed
	kindEdgeServerHist
	kindEdgeClientHist
	kindSpanCalls
	kindSpanHist
)

// histPart is the part of a histogram a series holds.
type histPart uint8

const (
	partValue histPart = iota // a counter, not a histogram
	partBucket
	partSum
	partCount
)

// unitScale is what a histogram's values are multiplied by to give
// milliseconds; 0 means not known from the name (read from the buckets).
type unitScale float64

// classify tells what a metric name is: a servicegraph or spanmetrics
// series, which part of a histogram, and the histogram's unit.
func classify(metric string) (seriesKind, histPart, unitScale) {
	switch metric {
	case sgRequests:
		return kindEdgeRequests, 0, 0
	case sgFailed:
		return kindEdgeFailed, 0, 0
	}
	if strings.HasPrefix(metric, sgPrefix) {
		base, part, ok := histogramBase(metric)
		if !ok {
			return kindNone, 0, 0
		}
		base, unit := trimUnit(base)
		switch base {
		case sgServer, sgLegacyServer:
			return kindEdgeServerHist, part, unitOr(unit, 1000)
		case sgClient:
			return kindEdgeClientHist, part, unitOr(unit, 1000)
		}
		return kindNone, 0, 0
	}
	for _, p := range smPrefixes {
		rest, ok := strings.CutPrefix(metric, p)
		if !ok {
			continue
		}
		if rest == "calls_total" {
			return kindSpanCalls, 0, 0
		}
		base, part, ok := histogramBase(rest)
		if !ok {
			return kindNone, 0, 0
		}
		base, unit := trimUnit(base)
		if base == "duration" || base == "latency" {
			return kindSpanHist, part, unit
		}
	}
	return kindNone, 0, 0
}

func unitOr(u, def unitScale) unitScale {
	if u == 0 {
		return def
	}
	return u
}

// histogramBase splits a histogram series name into its family and part.
func histogramBase(name string) (string, histPart, bool) {
	for _, s := range []struct {
		suffix string
		part   histPart
	}{{"_bucket", partBucket}, {"_sum", partSum}, {"_count", partCount}} {
		if base, ok := strings.CutSuffix(name, s.suffix); ok {
			return base, s.part, true
		}
	}
	return "", 0, false
}

// trimUnit removes a unit suffix (_seconds, _milliseconds) and returns
// the scale to milliseconds, or 0 when the name has none.
func trimUnit(base string) (string, unitScale) {
	if b, ok := strings.CutSuffix(base, "_seconds"); ok {
		return b, 1000
	}
	if b, ok := strings.CutSuffix(base, "_milliseconds"); ok {
		return b, 1
	}
	return base, 0
}

// point is one sample of a series.
type point struct {
	t int64
	v float64
}

// aggSeries is one aggregated series: its identity and its points.
type aggSeries struct {
	kind  seriesKind
	part  histPart
	unit  unitScale
	le    float64    // bucket bound, for a bucket series
	edge  edgeKey    // servicegraph series
	conn  string     // connection_type
	fail  string     // failed label, "" when absent
	span  spanSeries // spanmetrics series
	pts   []point
	inc   float64 // the increase over the range (finish)
	from0 bool    // created in the range: its first point counts from zero
}

type edgeKey struct{ client, server string }

type spanSeries struct {
	service, name, kind string
	failed              bool
}

// AggregateBuilder builds a service-level model from the series of the
// OpenTelemetry Collector's servicegraph and spanmetrics connectors
// (traces_service_graph_*, traces_span_metrics_* or traces_spanmetrics_*),
// added one point at a time in any order. Other points only widen the
// range the series were read over. Memory is bounded by the connector
// series' points.
type AggregateBuilder struct {
	cfg    Config
	series map[string]*aggSeries
	minT   int64
	maxT   int64
	points int64
	read   int64
	// skipped counts connector points left out: labels that do not parse
	// or lack what the series needs (client and server, a service, le)
	skipped int64
	labels  []labelPair // scratch
	// the last series added to, as points of one series usually come
	// one after another (a dataset's are sorted by series)
	last                                      *aggSeries
	lastMetric, lastSvc, lastInst, lastLabels string
}

// NewAggregateBuilder returns a builder for cfg. Only LevelService is
// supported: the series name services, not operations.
func NewAggregateBuilder(cfg Config) (*AggregateBuilder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Level != LevelService {
		return nil, fmt.Errorf("level %s: service-graph and span-metrics series name services, not operations", cfg.Level)
	}
	return &AggregateBuilder{cfg: cfg, series: map[string]*aggSeries{}, minT: math.MaxInt64, maxT: math.MinInt64}, nil
}

// AddSample adds one metric point and reports whether it belongs to a
// connector series. Points with a value that is not finite, or with labels
// that do not parse, are left out.
func (a *AggregateBuilder) AddSample(s *cascade.Sample) bool {
	a.read++
	a.minT, a.maxT = min(a.minT, s.Time), max(a.maxT, s.Time)
	kind, part, unit := classify(s.Metric)
	if kind == kindNone || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
		return false
	}
	if a.last != nil && s.Metric == a.lastMetric && s.Labels == a.lastLabels && s.Service == a.lastSvc && s.Instance == a.lastInst {
		a.last.pts = append(a.last.pts, point{s.Time, s.Value})
		a.points++
		return true
	}
	key := s.Metric + "\x00" + s.Service + "\x00" + s.Instance + "\x00" + s.Labels
	ser := a.series[key]
	if ser == nil {
		var err error
		a.labels, err = parseLabels(a.labels[:0], s.Labels)
		if err != nil {
			a.skipped++
			return false
		}
		ser = &aggSeries{kind: kind, part: part, unit: unit}
		if !ser.identify(a.labels, s.Service) {
			a.skipped++
			return false
		}
		a.series[key] = ser
	}
	a.last = ser
	a.lastMetric, a.lastSvc, a.lastInst, a.lastLabels = strings.Clone(s.Metric), strings.Clone(s.Service), strings.Clone(s.Instance), strings.Clone(s.Labels)
	ser.pts = append(ser.pts, point{s.Time, s.Value})
	a.points++
	return true
}

// identify fills the series' identity from its labels; false when a label
// it needs is missing or bad.
func (ser *aggSeries) identify(labels []labelPair, service string) bool {
	get := func(name string) (string, bool) {
		for _, l := range labels {
			if l.name == name {
				return l.value, true
			}
		}
		return "", false
	}
	if ser.part == partBucket && (ser.kind == kindEdgeServerHist || ser.kind == kindEdgeClientHist || ser.kind == kindSpanHist) {
		le, ok := get("le")
		if !ok {
			return false
		}
		v, err := strconv.ParseFloat(le, 64)
		if err != nil || math.IsNaN(v) {
			return false
		}
		ser.le = v
	}
	switch ser.kind {
	case kindEdgeRequests, kindEdgeFailed, kindEdgeServerHist, kindEdgeClientHist:
		client, ok1 := get("client")
		server, ok2 := get("server")
		if !ok1 || !ok2 || client == "" || server == "" {
			return false
		}
		ser.edge = edgeKey{strings.Clone(client), strings.Clone(server)}
		c, _ := get("connection_type")
		ser.conn = strings.Clone(c)
		f, _ := get("failed")
		ser.fail = strings.Clone(f)
	default:
		// ingest moves the service, service_name or job label into
		// Sample.Service; service_name, when still a label (a series
		// that also has a service label), names the span's service.
		if v, ok := get("service_name"); ok && v != "" {
			service = v
		}
		if service == "" {
			return false
		}
		name, _ := get("span_name")
		kind, _ := get("span_kind")
		status, _ := get("status_code")
		ser.span = spanSeries{
			service: strings.Clone(service),
			name:    strings.Clone(name),
			kind:    spanKindOf(kind),
			failed:  strings.HasSuffix(strings.ToUpper(status), "ERROR"),
		}
	}
	return true
}

// spanKindOf normalizes a span_kind label (SPAN_KIND_SERVER, SERVER,
// server) to the lower-case kind name.
func spanKindOf(s string) string {
	s = strings.ToLower(s)
	s = strings.TrimPrefix(s, "span_kind_")
	return s
}

// Series returns the number of connector series added so far.
func (a *AggregateBuilder) Series() int { return len(a.series) }

// BuildAggregates reads every sample and returns the model the
// connectors' series describe (see AggregateBuilder and docs/model.md),
// or ErrNoAggregates when there are none.
func BuildAggregates(ctx context.Context, cfg Config, samples cascade.SampleSource) (*Result, error) {
	a, err := NewAggregateBuilder(cfg)
	if err != nil {
		return nil, err
	}
	if samples == nil {
		return nil, ErrNoAggregates
	}
	n := 0
	err = samples(func(s *cascade.Sample) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a.AddSample(s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.Finish()
}

// increase computes the series' increase over the read range: the sum of
// its rises, a drop counting as a reset to zero (so the value after it is
// all increase), and its first value too when the series was created in
// the range (its first point is after the range's start: the connectors
// create a series at its first call). It returns the times between which
// the first and the last rise happened: the point before the first rise
// (for a series created in the range, its first point less the interval
// between its first two points) and the point of the last rise; ok is
// false when the series never rose.
func (ser *aggSeries) increase(rangeStart int64) (from, to int64, ok bool) {
	p := ser.pts
	slices.SortStableFunc(p, func(x, y point) int { return cmp.Compare(x.t, y.t) })
	// Points repeated at one time (the same scrape read twice) count once.
	p = slices.CompactFunc(p, func(x, y point) bool { return x.t == y.t })
	ser.pts = p
	if len(p) == 0 {
		return 0, 0, false
	}
	rise := func(prev, at int64, d float64) {
		if d <= 0 {
			return
		}
		ser.inc += d
		if !ok || prev < from {
			from = prev
		}
		to = max(to, at)
		ok = true
	}
	if p[0].t > rangeStart {
		ser.from0 = true
		prev := p[0].t
		if len(p) > 1 {
			prev -= p[1].t - p[0].t
		}
		rise(max(prev, rangeStart), p[0].t, p[0].v)
	}
	for i := 1; i < len(p); i++ {
		d := p[i].v - p[i-1].v
		if d < 0 {
			d = p[i].v // a reset: the counter started again from zero
		}
		rise(p[i-1].t, p[i].t, d)
	}
	return from, to, ok
}

// labelPair is one label of Sample.Labels.
type labelPair struct{ name, value string }

// parseLabels parses Sample.Labels (name="value" pairs joined by commas,
// as ingest writes them; names that are not Prometheus legacy names are
// quoted) into dst.
func parseLabels(dst []labelPair, s string) ([]labelPair, error) {
	i := 0
	for i < len(s) {
		var name string
		var err error
		if s[i] == '"' {
			name, i, err = unquoteAt(s, i)
			if err != nil {
				return dst, err
			}
		} else {
			j := strings.IndexByte(s[i:], '=')
			if j < 0 {
				return dst, fmt.Errorf("labels %q: no '=' after byte %d", s, i)
			}
			name, i = s[i:i+j], i+j
		}
		if i >= len(s) || s[i] != '=' {
			return dst, fmt.Errorf("labels %q: want '=' at byte %d", s, i)
		}
		i++
		if i >= len(s) || s[i] != '"' {
			return dst, fmt.Errorf("labels %q: want '\"' at byte %d", s, i)
		}
		var value string
		value, i, err = unquoteAt(s, i)
		if err != nil {
			return dst, err
		}
		dst = append(dst, labelPair{name, value})
		if i < len(s) {
			if s[i] != ',' {
				return dst, fmt.Errorf("labels %q: want ',' at byte %d", s, i)
			}
			i++
		}
	}
	return dst, nil
}

// unquoteAt reads the double-quoted string starting at s[i] with the
// escapes of the exposition format (\\, \", \n) and returns it and the
// index after its closing quote.
func unquoteAt(s string, i int) (string, int, error) {
	var b strings.Builder
	plain := true
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; c {
		case '"':
			if plain {
				return s[i+1 : j], j + 1, nil
			}
			return b.String(), j + 1, nil
		case '\\':
			if plain {
				b.WriteString(s[i+1 : j])
				plain = false
			}
			if j+1 >= len(s) {
				return "", 0, fmt.Errorf("labels %q: escape at the end", s)
			}
			j++
			switch s[j] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[j])
			}
		default:
			if !plain {
				b.WriteByte(c)
			}
		}
	}
	return "", 0, fmt.Errorf("labels %q: unterminated quote at byte %d", s, i)
}
