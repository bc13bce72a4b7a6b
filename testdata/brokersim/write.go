package brokersim

// The writers: the spans as the Collector's file exporter writes them and
// the broker's scrapes as the rabbitmq_prometheus plugin exposes them.

import (
	"cmp"
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
