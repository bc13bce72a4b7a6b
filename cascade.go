// Package cascade holds the documented types that pass between the stages of
// the cascade pipeline: spans, metric samples and log records (written by
// ingest, read by graph and fit), and later the model, scenario and outcome
// documents.
//
// The package does no I/O. Each type's field tags give the column names of
// the dataset's Parquet files (spans.parquet, metrics.parquet,
// logs.parquet), which are
// the schema documented in the README.
package cascade

import "strings"

// SpanKind is the role of a span in a call, as OpenTelemetry defines it.
// The empty kind means the source format did not say (Nezha CSV spans, for
// instance); graph then infers calls from parent/child service changes.
type SpanKind string

// Span kinds, spelled as they are stored in spans.parquet.
const (
	KindUnspecified SpanKind = ""
	KindServer      SpanKind = "server"
	KindClient      SpanKind = "client"
	KindProducer    SpanKind = "producer"
	KindConsumer    SpanKind = "consumer"
	KindInternal    SpanKind = "internal"
)

// Status is the outcome of a span. StatusUnset means the producer recorded
// neither success nor failure, which OpenTelemetry treats as success.
type Status string

// Span statuses, spelled as they are stored in spans.parquet.
const (
	StatusUnset Status = "unset"
	StatusOK    Status = "ok"
	StatusError Status = "error"
)

// Span is one row of spans.parquet: one operation of one service within a
// trace, normalized from whatever format recorded it.
//
// Identifiers are lower-case hexadecimal (32 digits for a trace, 16 for a
// span) when the source used binary or hexadecimal ids; other sources keep
// their own text. Times are Unix nanoseconds; durations are nanoseconds.
type Span struct {
	// TraceID identifies the trace; never empty.
	TraceID string `parquet:"trace_id" json:"trace_id"`
	// SpanID identifies the span within its trace; never empty.
	SpanID string `parquet:"span_id" json:"span_id"`
	// ParentSpanID is the caller's span, or empty for a root span.
	ParentSpanID string `parquet:"parent_span_id" json:"parent_span_id,omitempty"`
	// Service is the resource's service.name (for Nezha CSV, the pod name
	// without its Kubernetes suffixes); never empty.
	Service string `parquet:"service,dict" json:"service"`
	// Instance is service.instance.id, else host.name or the pod name;
	// empty when the source names none.
	Instance string `parquet:"instance,dict" json:"instance,omitempty"`
	// Operation is the span name.
	Operation string `parquet:"operation,dict" json:"operation"`
	// Kind is the span kind; empty when the source does not record it.
	Kind SpanKind `parquet:"kind,dict" json:"kind,omitempty"`
	// Start is the start time in Unix nanoseconds.
	Start int64 `parquet:"start,timestamp(nanosecond)" json:"start"`
	// Duration is end minus start in nanoseconds; never negative in a
	// stored row.
	Duration int64 `parquet:"duration_ns" json:"duration_ns"`
	// Status is unset, ok or error.
	Status Status `parquet:"status,dict" json:"status"`
	// ErrorType is exception.type, error.type or the status message when
	// the span failed; empty otherwise.
	ErrorType string `parquet:"error_type,dict" json:"error_type,omitempty"`
	// StatusCode is the HTTP response status code or the gRPC status code
	// (rpc.grpc.status_code); 0 when the span records neither.
	StatusCode int32 `parquet:"status_code" json:"status_code,omitempty"`
	// Peer names the callee as a client or producer span sees it:
	// peer.service, server.address (or net.peer.name), db.system with
	// db.name, or messaging.destination.name; empty when none is recorded.
	Peer string `parquet:"peer,dict" json:"peer,omitempty"`
	// ResendCount is http.request.resend_count (or the equivalent retry
	// attribute) of a client span: 0 for a first attempt.
	ResendCount int32 `parquet:"resend_count" json:"resend_count,omitempty"`

	// Links are the span's links to spans of other traces (OTLP links,
	// Jaeger FOLLOWS_FROM references to another trace, Jaeger links): a
	// consumer's process span links to the producer's publish span.
	// Empty for most spans.
	Links []SpanLink `parquet:"links,list" json:"links,omitempty"`
	// MessagingSystem is messaging.system (rabbitmq, kafka, nats, ...);
	// empty on spans that are not messaging operations.
	MessagingSystem string `parquet:"messaging_system,dict" json:"messaging_system,omitempty"`
	// MessagingOperation is messaging.operation.type (publish, create,
	// send, receive, process, settle; see the Messaging constants), or
	// the older messaging.operation, or inferred from the span kind and
	// the instrumentation's own keys; empty when none applies.
	MessagingOperation string `parquet:"messaging_operation,dict" json:"messaging_operation,omitempty"`
	// Destination is the queue, topic or exchange the message goes to or
	// comes from: messaging.destination.name, else the system's own key
	// (RabbitMQ's queue or routing key, Kafka's topic).
	Destination string `parquet:"messaging_destination,dict" json:"messaging_destination,omitempty"`
	// ConsumerGroup is messaging.consumer.group.name (Kafka's group,
	// RabbitMQ's queue as a consumer sees it); empty when none.
	ConsumerGroup string `parquet:"messaging_consumer_group,dict" json:"messaging_consumer_group,omitempty"`
	// MessageID is messaging.message.id; empty when none is recorded.
	MessageID string `parquet:"messaging_message_id" json:"messaging_message_id,omitempty"`
	// BatchCount is messaging.batch.message_count: messages the span
	// handled at once; 0 when not a batch (one message).
	BatchCount int32 `parquet:"messaging_batch_count" json:"messaging_batch_count,omitempty"`
	// MessageBytes is messaging.message.body.size (or the envelope size
	// when only that is recorded); 0 when not recorded.
	MessageBytes int64 `parquet:"messaging_message_bytes" json:"messaging_message_bytes,omitempty"`
	// Redelivery counts the deliveries of this message before this one:
	// 0 for a first delivery, the x-death count where the headers carry
	// it, 1 when only RabbitMQ's redelivered flag (or a Kafka retry
	// header) says it was delivered before.
	Redelivery int32 `parquet:"messaging_redelivery" json:"messaging_redelivery,omitempty"`
}

// SpanLink is a link from one span to a span of (usually) another trace.
type SpanLink struct {
	TraceID string `parquet:"trace_id" json:"trace_id"`
	SpanID  string `parquet:"span_id" json:"span_id"`
}

// Messaging operation types, as OpenTelemetry's messaging.operation.type
// spells them.
const (
	MessagingPublish = "publish" // a message (or batch) is sent, or created and sent
	MessagingCreate  = "create"  // a message is created, to be sent later
	MessagingSend    = "send"    // a created message is sent
	MessagingReceive = "receive" // a consumer pulled or was pushed a message
	MessagingProcess = "process" // a consumer handled a message
	MessagingSettle  = "settle"  // ack, nack or reject
)

// End returns the span's end time in Unix nanoseconds.
func (s *Span) End() int64 { return s.Start + s.Duration }

// Clone returns a copy of the span that shares no memory with it: its
// strings and links are copied. Readers that reuse their buffers (the
// dataset's ReadSpans) hand out spans valid only during the callback; a
// span kept past it must be cloned.
func (s *Span) Clone() Span {
	c := *s
	for _, p := range []*string{&c.TraceID, &c.SpanID, &c.ParentSpanID, &c.Service, &c.Instance,
		&c.Operation, &c.ErrorType, &c.Peer, &c.MessagingSystem, &c.MessagingOperation,
		&c.Destination, &c.ConsumerGroup, &c.MessageID} {
		*p = strings.Clone(*p)
	}
	c.Kind, c.Status = SpanKind(strings.Clone(string(c.Kind))), Status(strings.Clone(string(c.Status)))
	if s.Links != nil {
		c.Links = make([]SpanLink, len(s.Links))
		for i, l := range s.Links {
			c.Links[i] = SpanLink{TraceID: strings.Clone(l.TraceID), SpanID: strings.Clone(l.SpanID)}
		}
	}
	return c
}

// Equal reports whether two spans are the same row, links included.
func (s *Span) Equal(o *Span) bool {
	if len(s.Links) != len(o.Links) {
		return false
	}
	for i := range s.Links {
		if s.Links[i] != o.Links[i] {
			return false
		}
	}
	return s.TraceID == o.TraceID && s.SpanID == o.SpanID &&
		s.ParentSpanID == o.ParentSpanID && s.Service == o.Service &&
		s.Instance == o.Instance && s.Operation == o.Operation &&
		s.Kind == o.Kind && s.Start == o.Start && s.Duration == o.Duration &&
		s.Status == o.Status && s.ErrorType == o.ErrorType &&
		s.StatusCode == o.StatusCode && s.Peer == o.Peer &&
		s.ResendCount == o.ResendCount &&
		s.MessagingSystem == o.MessagingSystem &&
		s.MessagingOperation == o.MessagingOperation &&
		s.Destination == o.Destination && s.ConsumerGroup == o.ConsumerGroup &&
		s.MessageID == o.MessageID && s.BatchCount == o.BatchCount &&
		s.MessageBytes == o.MessageBytes && s.Redelivery == o.Redelivery
}

// Delivered reports whether the span is a consumer's receive or process
// of a message: work a queue delivered, not a request a caller sent, so a
// root span that is delivered is no arrival of a root request. Its
// messaging operation says so, or, without one, its kind (consumer).
func (s *Span) Delivered() bool {
	switch s.MessagingOperation {
	case MessagingReceive, MessagingProcess, "deliver":
		return true
	case "":
		return s.Kind == KindConsumer
	}
	return false
}

// IsRoot reports whether the span has no parent.
func (s *Span) IsRoot() bool { return s.ParentSpanID == "" }

// MetricKind says what a metric measures, in the terms of the propagation
// model. Metrics that map to none of the named kinds keep KindOther and are
// stored all the same.
type MetricKind string

// Metric kinds, spelled as they are stored in metrics.parquet.
const (
	MetricQueueDepth    MetricKind = "queue_depth"
	MetricActiveWorkers MetricKind = "active_workers"
	MetricPoolSize      MetricKind = "pool_size"
	MetricRejected      MetricKind = "rejected"
	MetricBreakerOpen   MetricKind = "breaker_open"
	MetricCPU           MetricKind = "cpu"
	MetricMemory        MetricKind = "memory"
	MetricLatency       MetricKind = "latency"
	MetricRequestRate   MetricKind = "request_rate"
	MetricRequests      MetricKind = "requests"
	MetricErrorRate     MetricKind = "error_rate"
	MetricSuccessRate   MetricKind = "success_rate"
	MetricConsumerLag   MetricKind = "consumer_lag"
	// Broker series. A queue's series carry its name in the labels
	// (queue="..." as RabbitMQ writes it, topic= and group= for Kafka).
	// MetricQueueDepth is a queue's ready messages.
	MetricQueueUnacked MetricKind = "queue_unacked" // delivered, not yet acked
	MetricConsumers    MetricKind = "consumers"     // consumers attached to a queue
	MetricPrefetch     MetricKind = "prefetch"      // unacked limit per consumer or channel
	MetricPublished    MetricKind = "published"     // messages published (a counter)
	MetricRedelivered  MetricKind = "redelivered"   // redeliveries (a counter)
	MetricDeadLettered MetricKind = "dead_lettered" // messages dead-lettered or dropped by overflow (a counter)
	MetricQueueBytes   MetricKind = "queue_bytes"   // bytes held by a queue's messages
	MetricBrokerMemory MetricKind = "broker_memory" // the broker's memory in use, bytes
	MetricMemoryLimit  MetricKind = "memory_limit"  // the broker's memory high watermark, bytes
	MetricMemoryAlarm  MetricKind = "memory_alarm"  // 1 while the memory alarm blocks publishers
	MetricOther        MetricKind = "other"
)

// MetricKinds lists every metric kind in a fixed order.
var MetricKinds = []MetricKind{
	MetricQueueDepth, MetricActiveWorkers, MetricPoolSize, MetricRejected,
	MetricBreakerOpen, MetricCPU, MetricMemory, MetricLatency,
	MetricRequestRate, MetricRequests, MetricErrorRate, MetricSuccessRate,
	MetricConsumerLag, MetricQueueUnacked, MetricConsumers, MetricPrefetch,
	MetricPublished, MetricRedelivered, MetricDeadLettered, MetricQueueBytes,
	MetricBrokerMemory, MetricMemoryLimit, MetricMemoryAlarm, MetricOther,
}

// Sample is one row of metrics.parquet: one point of one metric series.
type Sample struct {
	// Time is the point's timestamp in Unix nanoseconds.
	Time int64 `parquet:"time,timestamp(nanosecond)" json:"time"`
	// Service is the service the series belongs to (from labels such as
	// service, service_name, job, application, or the file it came from);
	// empty when nothing names one.
	Service string `parquet:"service,dict" json:"service,omitempty"`
	// Instance is the instance, pod or host label; empty when none.
	Instance string `parquet:"instance,dict" json:"instance,omitempty"`
	// Metric is the metric name as the source spelled it (for histograms
	// and summaries, with the _bucket/_sum/_count suffix).
	Metric string `parquet:"metric,dict" json:"metric"`
	// Kind is what the metric measures in model terms.
	Kind MetricKind `parquet:"kind,dict" json:"kind"`
	// Labels holds the remaining labels, sorted by name, as
	// name="value" pairs joined by commas (Prometheus' own notation
	// without braces); empty when there are none.
	Labels string `parquet:"labels,dict" json:"labels,omitempty"`
	// Value is the point's value; NaN and ±Inf are kept as they came.
	Value float64 `parquet:"value" json:"value"`
}

// LogRecord is one row of logs.parquet: one log line or OTLP log record,
// normalized from whatever format recorded it.
type LogRecord struct {
	// Time is when the line was written, in Unix nanoseconds (for OTLP,
	// time_unix_nano, else observed_time_unix_nano).
	Time int64 `parquet:"time,timestamp(nanosecond)" json:"time"`
	// Service is the service that wrote the line: the resource's
	// service.name, or the pod name without its Kubernetes suffix; empty
	// when nothing names one.
	Service string `parquet:"service,dict" json:"service,omitempty"`
	// Instance is the pod, host or service.instance.id; empty when none.
	Instance string `parquet:"instance,dict" json:"instance,omitempty"`
	// Severity is TRACE, DEBUG, INFO, WARN, ERROR or FATAL, from the
	// record's own severity field, else read from the line (a level word
	// among its first tokens); empty when neither says.
	Severity string `parquet:"severity,dict" json:"severity,omitempty"`
	// TraceID and SpanID join the line to its span, spelled as in
	// spans.parquet; empty when the line carries none.
	TraceID string `parquet:"trace_id" json:"trace_id,omitempty"`
	SpanID  string `parquet:"span_id" json:"span_id,omitempty"`
	// Body is the message, without the timestamp, level and trace ids
	// that a text line carried before it.
	Body string `parquet:"body" json:"body"`
	// TemplateID numbers the Body's template, from 1 in the order the
	// templates were first met in the inputs; the same inputs in the same
	// order give the same ids.
	TemplateID int32 `parquet:"template_id" json:"template_id"`
	// Template is the Body with its variable tokens replaced by "<*>", as
	// the Drain log parser mined it from every line of the dataset.
	Template string `parquet:"template,dict" json:"template"`
}
