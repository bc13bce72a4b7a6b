package brokersim

// The writers: the spans as the Collector's file exporter writes them and
// the broker's scrapes as the rabbitmq_prometheus plugin exposes them.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// marshalOTLP writes the spans as one ExportTraceServiceRequest, a
// resource per service (sorted by name), spans by start time.
func (s *sim) marshalOTLP() ([]byte, error) {
	var svcs []string
	for _, sp := range s.spans {
		if !slices.Contains(svcs, sp.svc) {
			svcs = append(svcs, sp.svc)
		}
	}
	slices.Sort(svcs)
	td := ptrace.NewTraces()
	scopes := map[string]ptrace.SpanSlice{}
	for _, svc := range svcs {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		rs.Resource().Attributes().PutStr("service.instance.id", svc+"-0")
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
		ss := rs.ScopeSpans().AppendEmpty()
		// The package's old path: kept so that captures stay the same
		// bytes.
		ss.Scope().SetName("cascade/testdata/brokersim")
		scopes[svc] = ss.Spans()
	}
	sorted := slices.Clone(s.spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for _, x := range sorted {
		sp := scopes[x.svc].AppendEmpty()
		sp.SetTraceID(pcommon.TraceID(x.trace))
		sp.SetSpanID(pcommon.SpanID(x.id))
		if x.parent != ([8]byte{}) {
			sp.SetParentSpanID(pcommon.SpanID(x.parent))
		}
		sp.SetName(x.name)
		sp.SetKind(x.kind)
		sp.SetStartTimestamp(pcommon.Timestamp(x.start))
		sp.SetEndTimestamp(pcommon.Timestamp(x.end))
		for _, a := range x.attrs {
			if a.isInt {
				sp.Attributes().PutInt(a.k, a.i)
			} else {
				sp.Attributes().PutStr(a.k, a.s)
			}
		}
		if x.errType != "" {
			sp.Attributes().PutStr("error.type", x.errType)
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		if x.link != nil {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(pcommon.TraceID(x.link[:16]))
			l.SetSpanID(pcommon.SpanID(x.link[16:]))
		}
	}
	var m ptrace.JSONMarshaler
	return m.MarshalTraces(td)
}

// Broker metric names, as the rabbitmq_prometheus plugin spells them.
const (
	MetricReady       = "rabbitmq_queue_messages_ready"
	MetricUnacked     = "rabbitmq_queue_messages_unacked"
	MetricConsumers   = "rabbitmq_queue_consumers"
	MetricMemory      = "rabbitmq_process_resident_memory_bytes"
	MetricMemoryLimit = "rabbitmq_resident_memory_limit_bytes"
	MetricAlarm       = "rabbitmq_alarms_memory_used_watermark"
)

// marshalProm writes every scrape as the plugin's text exposition with
// per-object metrics on, each point stamped with the scrape's time (ms),
// the scrapes one after the other.
func (s *sim) marshalProm() []byte {
	var b strings.Builder
	s.samples = 0
	family := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	point := func(name, labels string, v int64, t int64) {
		b.WriteString(name)
		if labels != "" {
			b.WriteString("{" + labels + "}")
		}
		b.WriteString(" " + strconv.FormatInt(v, 10) + " " + strconv.FormatInt(t/1e6, 10) + "\n")
		s.samples++
	}
	for _, sc := range s.scrapes {
		queues := func(name, help string, val func(queueSample) int) {
			family(name, help)
			for _, q := range sc.queues {
				point(name, `vhost="/",queue="`+q.name+`"`, int64(val(q)), sc.t)
			}
		}
		queues(MetricReady, "Messages ready to be delivered to consumers", func(q queueSample) int { return q.ready })
		queues(MetricUnacked, "Messages delivered to consumers but not yet acknowledged", func(q queueSample) int { return q.unacked })
		queues(MetricConsumers, "Consumers on a queue", func(q queueSample) int { return q.workers })
		family(MetricMemory, "Memory used in bytes")
		point(MetricMemory, "", sc.mem, sc.t)
		family(MetricMemoryLimit, "Memory high watermark in bytes")
		limit := s.sc.broker.WatermarkBytes
		point(MetricMemoryLimit, "", limit, sc.t)
		family(MetricAlarm, "is 1 if VM memory watermark alarm is in effect")
		alarm := int64(0)
		if sc.alarm {
			alarm = 1
		}
		point(MetricAlarm, "", alarm, sc.t)
	}
	return []byte(b.String())
}

// marshalZipkin writes the spans as Brave (with spring-rabbit's tracing)
// reports them to Zipkin v2: B3 headers carry the trace through the
// broker, so a delivery stays in its producer's trace. The publish is a
// PRODUCER span "publish" with the broker as remote endpoint; each
// delivery a CONSUMER span "next-message", child of the publish span and
// one µs long (the receipt), with a local child "on-message" that covers
// the processing and carries the error. A synchronous call is a CLIENT
// span with a SERVER span sharing its id. Times in µs; no status, an
// "error" tag on a failed span; no redelivery count (Brave records none).
func (s *sim) marshalZipkin() ([]byte, error) {
	type endpoint struct {
		ServiceName string `json:"serviceName,omitempty"`
	}
	type zspan struct {
		TraceID        string            `json:"traceId"`
		ParentID       string            `json:"parentId,omitempty"`
		ID             string            `json:"id"`
		Kind           string            `json:"kind,omitempty"`
		Name           string            `json:"name"`
		Timestamp      int64             `json:"timestamp"`
		Duration       int64             `json:"duration"`
		LocalEndpoint  endpoint          `json:"localEndpoint"`
		RemoteEndpoint *endpoint         `json:"remoteEndpoint,omitempty"`
		Tags           map[string]string `json:"tags,omitempty"`
		Shared         bool              `json:"shared,omitempty"`
	}
	// A delivery's own trace becomes its publish's trace; its process
	// span's children hang under on-message.
	moved := map[[16]byte][16]byte{}
	onMessage := func(id [8]byte) [8]byte { id[0] ^= 0xff; return id }
	consumers := map[[8]byte]bool{}
	clients := map[[8]byte]span{}
	for _, x := range s.spans {
		switch x.kind {
		case ptrace.SpanKindConsumer:
			moved[x.trace] = [16]byte(x.link[:16])
			consumers[x.id] = true
		case ptrace.SpanKindClient:
			clients[x.id] = x
		}
	}
	hex := func(b []byte) string { return fmt.Sprintf("%x", b) }
	rabbit := &endpoint{ServiceName: "rabbitmq"}
	sorted := slices.Clone(s.spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	out := make([]zspan, 0, len(sorted)*5/4)
	for _, x := range sorted {
		trace := x.trace
		if t, ok := moved[trace]; ok {
			trace = t
		}
		z := zspan{TraceID: hex(trace[:]), ID: hex(x.id[:]), LocalEndpoint: endpoint{ServiceName: x.svc},
			Timestamp: x.start / 1e3, Duration: max(1, (x.end-x.start)/1e3), Tags: map[string]string{}}
		parent := x.parent
		if consumers[parent] {
			parent = onMessage(parent)
		}
		if parent != ([8]byte{}) {
			z.ParentID = hex(parent[:])
		}
		if x.errType != "" {
			z.Tags["error"] = x.errType
		}
		switch x.kind {
		case ptrace.SpanKindServer:
			z.Kind, z.Name = "SERVER", strings.ToLower(x.name)
			method, path, _ := strings.Cut(x.name, " ")
			z.Tags["http.method"], z.Tags["http.path"] = method, path
			if c, ok := clients[x.parent]; ok {
				// B3: the server shares its client's id and parent.
				z.ID, z.Shared = hex(c.id[:]), true
				p := onMessage(c.parent)
				z.ParentID = hex(p[:])
			}
		case ptrace.SpanKindClient:
			z.Kind, z.Name = "CLIENT", "get"
			method, path, _ := strings.Cut(x.name, " ")
			z.Tags["http.method"], z.Tags["http.path"] = method, path
		case ptrace.SpanKindProducer:
			z.Kind, z.Name, z.RemoteEndpoint = "PRODUCER", "publish", rabbit
			z.Tags["rabbitmq.exchange"], z.Tags["rabbitmq.routing_key"] = "", strings.TrimPrefix(x.name, "publish ")
		case ptrace.SpanKindConsumer:
			queue := strings.TrimPrefix(x.name, "process ")
			om := onMessage(x.id)
			if len(z.Tags) == 0 {
				z.Tags = nil
			}
			out = append(out, zspan{TraceID: z.TraceID, ParentID: z.ID, ID: hex(om[:]), Name: "on-message",
				LocalEndpoint: z.LocalEndpoint, Timestamp: z.Timestamp + 1, Duration: max(1, z.Duration-1), Tags: z.Tags})
			z.Kind, z.Name, z.RemoteEndpoint, z.Duration = "CONSUMER", "next-message", rabbit, 1
			z.ParentID = hex(x.link[16:])
			z.Tags = map[string]string{"rabbitmq.exchange": "", "rabbitmq.routing_key": queue, "rabbitmq.queue": queue}
		}
		if len(z.Tags) == 0 {
			z.Tags = nil
		}
		out = append(out, z)
	}
	return json.Marshal(out)
}
