package testutil

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ConnectorConfig configures ConnectorSeries: the connectors' settings and
// how the series are written.
type ConnectorConfig struct {
	// Interval is the time between flushes and scrapes: every Interval
	// from the first span's start (rounded down to Interval) until every
	// edge has been recorded, the cumulative series are written as one
	// scrape. Default 1s.
	Interval time.Duration
	// StoreTTL is the servicegraph connector's store.ttl: how long an
	// unpaired span waits for its other half before it expires (and makes
	// a virtual-node edge, or is dropped). Default 2s, the connector's.
	StoreTTL time.Duration
	// SpanUnit is the spanmetrics histogram unit, "ms" (the connector's
	// default: traces_span_metrics_duration_milliseconds) or "s".
	SpanUnit string
	// OpenMetrics writes OpenMetrics text (families once, each series'
	// points in time order, timestamps in seconds, # EOF), as promtool
	// tsdb create-blocks-from openmetrics reads it. Otherwise the output
	// is Prometheus text, one scrape after another with millisecond
	// timestamps, as cascade ingest reads it.
	OpenMetrics bool
}

// Bucket bounds of the connectors' default explicit histograms: seconds
// for servicegraph, milliseconds for spanmetrics.
var (
	serviceGraphBuckets = []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15}
	spanMetricsBucketMS = []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000}
)

// The labels the scrape adds: Prometheus' target labels for the
// collector's Prometheus exporter, and the exporter's scope label.
const (
	collectorJob      = "otel-collector"
	collectorInstance = "127.0.0.1:8889"
)

// otlpSpan is the part of an OTLP span the connectors read.
type otlpSpan struct {
	service              string
	resource, attrs      map[string]string
	traceID, spanID, pid string
	name                 string
	kind                 int
	start, end           int64
	failed               bool
}

// ConnectorSeries reads OTLP JSON traces (TracesData, or Jaeger api_v3's
// {"result": ...}; gzip-compressed or not) and writes what the
// OpenTelemetry Collector's servicegraph and spanmetrics connectors, with
// their default settings, would have exported for them, as Prometheus
// stores it after scraping the collector's Prometheus exporter: the
// series traces_service_graph_request_total, ..._request_failed_total,
// ..._request_server_seconds and ..._request_client_seconds histograms
// (labels client, server, connection_type, failed), and
// traces_span_metrics_calls_total and traces_span_metrics_duration_*
// (labels service_name, span_name, span_kind, status_code), with the
// scrape's job and instance (the span metrics' service job as
// exported_job) and the exporter's otel_scope_name. Each scrape also has
// up{job, instance} 1, as Prometheus records every scrape.
//
// The connectors are simulated span by span in order of end time (a span
// reaches the collector when it ends): servicegraph pairs a client or
// producer span with the server or consumer span whose parent it is, a
// client span with db.name completes at once as a database call, an
// unpaired span expires after StoreTTL and then makes a virtual-node edge
// (a root server span is called by "user"; a client span's callee is its
// peer.service, db.name or db.system, else "unknown") or is dropped; an
// edge failed when either span has status error. spanmetrics counts every
// span at its end.
func ConnectorSeries(w io.Writer, r io.Reader, cfg ConnectorConfig) error {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.StoreTTL <= 0 {
		cfg.StoreTTL = 2 * time.Second
	}
	if cfg.SpanUnit == "" {
		cfg.SpanUnit = "ms"
	}
	spans, err := readOTLPSpans(r)
	if err != nil {
		return err
	}
	if len(spans) == 0 {
		return fmt.Errorf("no spans")
	}
	sim := newConnectorSim(cfg)
	for _, ev := range sim.events(spans) {
		sim.record(ev)
	}
	return sim.write(w)
}

// readOTLPSpans decodes OTLP JSON into spans.
func readOTLPSpans(r io.Reader) ([]otlpSpan, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	type kv struct {
		Key   string `json:"key"`
		Value map[string]json.RawMessage
	}
	type doc struct {
		Result        *doc `json:"result"`
		ResourceSpans []struct {
			Resource struct {
				Attributes []kv `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string          `json:"traceId"`
					SpanID       string          `json:"spanId"`
					ParentSpanID string          `json:"parentSpanId"`
					Name         string          `json:"name"`
					Kind         json.RawMessage `json:"kind"`
					Start        json.Number     `json:"startTimeUnixNano"`
					End          json.Number     `json:"endTimeUnixNano"`
					Attributes   []kv            `json:"attributes"`
					Status       struct {
						Code json.RawMessage `json:"code"`
					} `json:"status"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	str := func(attrs []kv) map[string]string {
		m := map[string]string{}
		for _, a := range attrs {
			for _, v := range a.Value {
				var s string
				if json.Unmarshal(v, &s) == nil {
					m[a.Key] = s
				} else {
					m[a.Key] = string(v)
				}
			}
		}
		return m
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []otlpSpan
	for {
		var d doc
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("OTLP JSON: %w", err)
		}
		if d.Result != nil {
			d = *d.Result
		}
		for _, rs := range d.ResourceSpans {
			res := str(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					start, err1 := strconv.ParseInt(s.Start.String(), 10, 64)
					end, err2 := strconv.ParseInt(s.End.String(), 10, 64)
					if err1 != nil || err2 != nil {
						return nil, fmt.Errorf("span %s: bad times %q, %q", s.SpanID, s.Start, s.End)
					}
					out = append(out, otlpSpan{
						service:  res["service.name"],
						resource: res,
						attrs:    str(s.Attributes),
						traceID:  s.TraceID,
						spanID:   s.SpanID,
						pid:      s.ParentSpanID,
						name:     s.Name,
						kind:     enumOf(s.Kind, "SPAN_KIND_", []string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}),
						start:    start,
						end:      end,
						failed:   enumOf(s.Status.Code, "STATUS_CODE_", []string{"UNSET", "OK", "ERROR"}) == 2,
					})
				}
			}
		}
	}
	return out, nil
}

// enumOf reads an OTLP JSON enum, an integer or its name.
func enumOf(raw json.RawMessage, prefix string, names []string) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		for i, name := range names {
			if s == prefix+name {
				return i
			}
		}
	}
	return 0
}

// Span kinds as OTLP numbers them.
const (
	kindInternal = 1
	kindServer   = 2
	kindClient   = 3
	kindProducer = 4
	kindConsumer = 5
)

// sgEdge is an entry of the servicegraph connector's store.
type sgEdge struct {
	client, server, conn string
	clientSec, serverSec float64
	failed               bool
	peer                 string
	emptyKey             bool
	expires              int64
}

// sgEvent is a span's arrival (at its end) or an edge's expiry.
type sgEvent struct {
	at     int64
	span   *otlpSpan
	expire string // store key
}

// histAcc is a cumulative explicit-bounds histogram.
type histAcc struct {
	counts []uint64 // per bucket, the last is +Inf
	sum    float64
	count  uint64
}

func (h *histAcc) observe(bounds []float64, v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(bounds)+1)
	}
	h.counts[sort.SearchFloat64s(bounds, v)]++
	h.sum += v
	h.count++
}

// connSeries is one labelled series of the simulated connectors.
type connSeries struct {
	labels string // sorted name="value" pairs, without the scrape's
	calls  uint64
	failed uint64
	server histAcc
	client histAcc
	hist   histAcc // spanmetrics duration
}

// snapshot is the state of every series at one scrape.
type snapshot struct {
	at    int64
	graph map[string]connSeries
	spans map[string]connSeries
}

type connectorSim struct {
	cfg   ConnectorConfig
	store map[string]*sgEdge
	graph map[string]*connSeries
	spans map[string]*connSeries
	snaps []snapshot
	next  int64 // next scrape time
	last  int64
}

func newConnectorSim(cfg ConnectorConfig) *connectorSim {
	return &connectorSim{cfg: cfg, store: map[string]*sgEdge{}, graph: map[string]*connSeries{}, spans: map[string]*connSeries{}}
}

// events orders the spans' arrivals by end time; expiries are added as
// the store fills.
func (c *connectorSim) events(spans []otlpSpan) []sgEvent {
	ev := make([]sgEvent, len(spans))
	first := spans[0].start
	for i := range spans {
		ev[i] = sgEvent{at: spans[i].end, span: &spans[i]}
		first = min(first, spans[i].start)
	}
	slices.SortStableFunc(ev, func(a, b sgEvent) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	iv := int64(c.cfg.Interval)
	c.next = first - ((first%iv)+iv)%iv
	return ev
}

// record runs one arrival, first scraping and expiring what is due
// before it.
func (c *connectorSim) record(ev sgEvent) {
	c.advance(ev.at)
	s := ev.span
	ttl := int64(c.cfg.StoreTTL)
	upsert := func(key string, fn func(e *sgEdge)) {
		e := c.store[key]
		if e == nil {
			e = &sgEdge{expires: ev.at + ttl}
			c.store[key] = e
		}
		fn(e)
		if e.client != "" && e.server != "" {
			delete(c.store, key)
			c.complete(e)
		}
	}
	switch s.kind {
	case kindClient, kindProducer:
		conn := ""
		if s.kind == kindProducer {
			conn = "messaging_system"
		}
		upsert(s.traceID+"/"+s.spanID, func(e *sgEdge) {
			e.conn = conn
			e.client = s.service
			e.clientSec = float64(s.end-s.start) / 1e9
			e.failed = e.failed || s.failed
			for _, a := range []string{"peer.service", "db.name", "db.system"} {
				if v, ok := s.attrs[a]; ok {
					e.peer = v
					break
				}
			}
			db, ok := s.resource["db.name"]
			if v, ok2 := s.attrs["db.name"]; ok2 {
				db, ok = v, true
			}
			if ok {
				e.conn, e.server, e.serverSec = "database", db, float64(s.end-s.start)/1e9
			}
		})
	case kindServer, kindConsumer:
		conn := ""
		if s.kind == kindConsumer {
			conn = "messaging_system"
		}
		upsert(s.traceID+"/"+s.pid, func(e *sgEdge) {
			e.conn = conn
			e.server = s.service
			e.serverSec = float64(s.end-s.start) / 1e9
			e.failed = e.failed || s.failed
			e.emptyKey = s.pid == ""
		})
	}
	// spanmetrics: every span, at its end.
	kind := []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}[min(max(s.kind, 0), 5)]
	status := "STATUS_CODE_UNSET"
	if s.failed {
		status = "STATUS_CODE_ERROR"
	}
	labels := promLabels("service_name", s.service, "span_kind", kind, "span_name", s.name, "status_code", status)
	ser := c.spans[labels]
	if ser == nil {
		ser = &connSeries{labels: labels}
		c.spans[labels] = ser
	}
	ser.calls++
	d := float64(s.end-s.start) / 1e6
	if c.cfg.SpanUnit == "s" {
		d /= 1e3
		ser.hist.observe(secondsOf(spanMetricsBucketMS), d)
	} else {
		ser.hist.observe(spanMetricsBucketMS, d)
	}
	c.last = max(c.last, ev.at)
}

func secondsOf(ms []float64) []float64 {
	out := make([]float64, len(ms))
	for i, v := range ms {
		out[i] = v / 1e3
	}
	return out
}

// complete records a finished edge, as aggregateMetricsForEdge does.
func (c *connectorSim) complete(e *sgEdge) {
	labels := promLabels("client", e.client, "connection_type", e.conn, "failed", strconv.FormatBool(e.failed), "server", e.server)
	ser := c.graph[labels]
	if ser == nil {
		ser = &connSeries{labels: labels}
		c.graph[labels] = ser
	}
	ser.calls++
	if e.failed {
		ser.failed++
	}
	ser.server.observe(serviceGraphBuckets, e.serverSec)
	ser.client.observe(serviceGraphBuckets, e.clientSec)
}

// advance scrapes at every scrape time up to t, expiring store entries
// due before each.
func (c *connectorSim) advance(t int64) {
	for c.next < t {
		c.expire(c.next)
		c.scrape(c.next)
		c.next += int64(c.cfg.Interval)
	}
}

// expire runs the store's expiry up to t: onExpire makes virtual-node
// edges of what it can.
func (c *connectorSim) expire(t int64) {
	keys := make([]string, 0)
	for k, e := range c.store {
		if e.expires <= t {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		e := c.store[k]
		delete(c.store, k)
		e.conn = "virtual_node"
		if e.client == "" && e.emptyKey {
			e.client = "user"
			c.complete(e)
		}
		if e.server == "" {
			e.server = "unknown"
			if e.peer != "" {
				e.server = e.peer
			}
			c.complete(e)
		}
	}
}

func (c *connectorSim) scrape(t int64) {
	snap := snapshot{at: t, graph: map[string]connSeries{}, spans: map[string]connSeries{}}
	copyHist := func(h histAcc) histAcc {
		h.counts = slices.Clone(h.counts)
		return h
	}
	for k, s := range c.graph {
		v := *s
		v.server, v.client = copyHist(s.server), copyHist(s.client)
		snap.graph[k] = v
	}
	for k, s := range c.spans {
		v := *s
		v.hist = copyHist(s.hist)
		snap.spans[k] = v
	}
	c.snaps = append(c.snaps, snap)
}

// write drains the store (the last scrape comes after every expiry) and
// writes the scrapes.
func (c *connectorSim) write(w io.Writer) error {
	end := c.last + int64(c.cfg.StoreTTL) + int64(c.cfg.Interval)
	c.advance(end + 1)
	bw := bufio.NewWriter(w)
	target := promLabels("instance", collectorInstance, "job", collectorJob)
	graphScope := `otel_scope_name="traces_service_graph"`
	spanScope := `otel_scope_name="spanmetricsconnector"`
	spanHist := "traces_span_metrics_duration_milliseconds"
	spanBounds := spanMetricsBucketMS
	if c.cfg.SpanUnit == "s" {
		spanHist, spanBounds = "traces_span_metrics_duration_seconds", secondsOf(spanMetricsBucketMS)
	}
	type family struct {
		name, typ string
		spans     bool
		value     func(s *connSeries) (float64, bool)
		hist      func(s *connSeries) *histAcc
		bounds    []float64
	}
	fams := []family{
		{name: "traces_service_graph_request_total", typ: "counter", value: func(s *connSeries) (float64, bool) { return float64(s.calls), true }},
		{name: "traces_service_graph_request_failed_total", typ: "counter", value: func(s *connSeries) (float64, bool) { return float64(s.failed), s.failed > 0 }},
		{name: "traces_service_graph_request_server_seconds", typ: "histogram", hist: func(s *connSeries) *histAcc { return &s.server }, bounds: serviceGraphBuckets},
		{name: "traces_service_graph_request_client_seconds", typ: "histogram", hist: func(s *connSeries) *histAcc { return &s.client }, bounds: serviceGraphBuckets},
		{name: "traces_span_metrics_calls_total", typ: "counter", spans: true, value: func(s *connSeries) (float64, bool) { return float64(s.calls), true }},
		{name: spanHist, typ: "histogram", spans: true, hist: func(s *connSeries) *histAcc { return &s.hist }, bounds: spanBounds},
	}
	extra := func(f *family, labels string) string {
		if f.spans {
			svc := labelValue(labels, "service_name")
			return joinLabels(labels, promLabels("exported_job", svc)+","+spanScope+","+target)
		}
		return joinLabels(labels, graphScope+","+target)
	}
	ts := func(t int64) string {
		if c.cfg.OpenMetrics {
			return strconv.FormatFloat(float64(t)/1e9, 'f', 3, 64)
		}
		return strconv.FormatInt(t/1e6, 10)
	}
	// One line per sample; the series of a family in label order.
	lines := func(f *family, snap *snapshot, s *connSeries, emit func(name, labels string, v float64)) {
		labels := extra(f, s.labels)
		if f.value != nil {
			if v, ok := f.value(s); ok {
				emit(f.name, labels, v)
			}
			return
		}
		h := f.hist(s)
		if h.count == 0 {
			return
		}
		var cum uint64
		for i, n := range h.counts {
			cum += n
			le := "+Inf"
			if i < len(f.bounds) {
				le = strconv.FormatFloat(f.bounds[i], 'g', -1, 64)
			}
			emit(f.name+"_bucket", joinLabels(labels, promLabels("le", le)), float64(cum))
		}
		emit(f.name+"_sum", labels, h.sum)
		emit(f.name+"_count", labels, float64(h.count))
	}
	series := func(f *family, snap *snapshot) []connSeries {
		m := snap.graph
		if f.spans {
			m = snap.spans
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]connSeries, len(keys))
		for i, k := range keys {
			out[i] = m[k]
		}
		return out
	}
	value := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if c.cfg.OpenMetrics {
		fmt.Fprintf(bw, "# TYPE up gauge\n")
		for _, snap := range c.snaps {
			fmt.Fprintf(bw, "up{%s} 1 %s\n", target, ts(snap.at))
		}
		final := &c.snaps[len(c.snaps)-1]
		for i := range fams {
			f := &fams[i]
			name := f.name
			if f.typ == "counter" {
				name = strings.TrimSuffix(name, "_total")
			}
			fmt.Fprintf(bw, "# TYPE %s %s\n", name, f.typ)
			for _, last := range series(f, final) {
				for si := range c.snaps {
					snap := &c.snaps[si]
					m := snap.graph
					if f.spans {
						m = snap.spans
					}
					s, ok := m[last.labels]
					if !ok {
						continue
					}
					lines(f, snap, &s, func(name, labels string, v float64) {
						fmt.Fprintf(bw, "%s{%s} %s %s\n", name, labels, value(v), ts(snap.at))
					})
				}
			}
		}
		fmt.Fprintf(bw, "# EOF\n")
		return bw.Flush()
	}
	for si := range c.snaps {
		snap := &c.snaps[si]
		fmt.Fprintf(bw, "# TYPE up gauge\nup{%s} 1 %s\n", target, ts(snap.at))
		for i := range fams {
			f := &fams[i]
			ss := series(f, snap)
			if len(ss) == 0 {
				continue
			}
			fmt.Fprintf(bw, "# TYPE %s %s\n", f.name, f.typ)
			for j := range ss {
				lines(f, snap, &ss[j], func(name, labels string, v float64) {
					fmt.Fprintf(bw, "%s{%s} %s %s\n", name, labels, value(v), ts(snap.at))
				})
			}
		}
	}
	return bw.Flush()
}

// promLabels formats name, value pairs (already in name order) as
// name="value" joined by commas; empty values are left out, as Prometheus
// drops empty labels.
func promLabels(kv ...string) string {
	var b bytes.Buffer
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(strconv.Quote(kv[i+1]))
	}
	return b.String()
}

// joinLabels merges two label lists and sorts them by name.
func joinLabels(a, b string) string {
	var all []string
	for _, s := range []string{a, b} {
		if s != "" {
			all = append(all, splitLabels(s)...)
		}
	}
	slices.Sort(all)
	return strings.Join(all, ",")
}

// splitLabels splits name="value" pairs at the commas between them.
func splitLabels(s string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// labelValue returns the value of a label in a promLabels list.
func labelValue(labels, name string) string {
	for _, l := range splitLabels(labels) {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			u, err := strconv.Unquote(v)
			if err == nil {
				return u
			}
		}
	}
	return ""
}
