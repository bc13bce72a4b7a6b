// Package brokersim writes deterministic captures of a producer → broker
// queue → consumer chain, as a RabbitMQ deployment instrumented with the
// OpenTelemetry Go SDK and scraped by Prometheus would leave them, together
// with the truth the simulator knows: the parameters a graph should recover
// per queue and the outcome a replay should reproduce per run.
//
// A gateway receives root requests (open loop, Poisson arrivals) and, for
// each, publishes one message to each of its queues in turn, waiting for
// the broker's confirm (a refused publish fails the request). Each queue
// has consumers that take at most Prefetch unacked messages each and work
// them one at a time; a consumer may call another service synchronously.
// A failed delivery is nacked: requeued at the head of the queue, sent
// through a delay queue (a TTL queue that dead-letters back), or
// dead-lettered, and past MaxDeliveries it goes to the dead-letter queue.
// A bounded queue drops its oldest message, refuses the publish, or makes
// the publisher wait; the broker's memory (a base plus every message it
// holds) past the watermark blocks every publisher until it falls.
//
// The simulator is its own small discrete-event loop, independent of
// cascade's replay engine, so that replay can be checked against it.
//
// The traces are what the OpenTelemetry Collector's file exporter writes
// (pdata's JSON marshaler, one ExportTraceServiceRequest): a SERVER span
// for each gateway request with a PRODUCER publish span per message, and
// each delivery its own trace whose CONSUMER process span links to the
// publish span. The metrics are the rabbitmq_prometheus plugin's
// exposition (per-object metrics on), scraped every second with
// timestamps, the scrapes concatenated. Equal Configs give equal bytes.
// Tests import it as cascade/internal/brokersim, and go test ./... runs
// its own; `go run ./internal/brokersim/gen -out DIR` writes every
// scenario.
package brokersim

import (
	"fmt"
	"math"
	"slices"

	"cascade"
)

// RedeliveryAttr is the span attribute on a consumer's process span that
// counts the deliveries of its message before this one: 0 on a first
// delivery. Its value is what a quorum queue's x-delivery-count header
// carries, which instrumentations copy onto the span; ingest maps it to
// cascade.Span.Redelivery.
const RedeliveryAttr = "messaging.rabbitmq.message.delivery_count"

// Config selects a capture.
type Config struct {
	// Scenario is one of Names().
	Scenario string
	// Requests is the number of root requests; 0 means the scenario's
	// default.
	Requests int
	// Seed drives every draw; 0 means 1.
	Seed uint64
	// Format is how the traces are written: OTLP (the default) or
	// ZipkinBrave.
	Format string
}

// Trace formats.
const (
	// OTLP is one ExportTraceServiceRequest in pdata's JSON, as the
	// OpenTelemetry Go SDK's spans reach the Collector's file exporter.
	OTLP = "otlp"
	// ZipkinBrave is a Zipkin v2 JSON array of spans as Brave reports a
	// Spring AMQP application (see marshalZipkin).
	ZipkinBrave = "zipkin-brave"
)

// scenario is one capture's recipe.
type scenario struct {
	doc      string
	requests int
	rate     float64 // root requests per second
	queues   []QueueSpec
	broker   BrokerSpec
}

// QueueSpec is one queue and its consumer, as configured.
type QueueSpec struct {
	// Name is the queue; Consumer the service that consumes it.
	Name     string `json:"name"`
	Consumer string `json:"consumer"`
	// Consumers, Prefetch, MaxLength, Overflow, Redelivery, DelayMS and
	// MaxDeliveries mean what cascade.Queue's fields mean.
	Consumers     int     `json:"consumers"`
	Prefetch      int     `json:"prefetch"`
	MaxLength     int     `json:"max_length,omitempty"`
	Overflow      string  `json:"overflow,omitempty"`
	Redelivery    string  `json:"redelivery"`
	DelayMS       float64 `json:"delay_ms,omitempty"`
	MaxDeliveries int     `json:"max_deliveries,omitempty"`
	// DeadLetter is the dead-letter queue (no consumers), empty when
	// dead-lettered messages are dropped.
	DeadLetter string `json:"dead_letter,omitempty"`
	// MessageBytes is every message's body size.
	MessageBytes int64 `json:"message_bytes"`
	// ServiceP50MS is the median of the consumer's own work per
	// delivery (lognormal, σ = 0.5, so the mean is 1.133× it); FailP the
	// probability that a delivery fails by itself.
	ServiceP50MS float64 `json:"service_p50_ms"`
	FailP        float64 `json:"fail_p"`
	// Callee, when set, is a service the consumer calls synchronously in
	// the middle of its work, with CalleeP50MS of work and CalleeFailP
	// failures; a failed call fails the delivery.
	Callee      string  `json:"callee,omitempty"`
	CalleeP50MS float64 `json:"callee_p50_ms,omitempty"`
	CalleeFailP float64 `json:"callee_fail_p,omitempty"`
}

// BrokerSpec is the broker's memory, as configured.
type BrokerSpec struct {
	Name string `json:"name"`
	// BaseBytes is the memory the broker holds with no messages; each
	// message held (ready, unacked, delayed or dead-lettered) adds its
	// MessageBytes.
	BaseBytes int64 `json:"base_bytes"`
	// WatermarkBytes is the memory high watermark; 0 means none.
	WatermarkBytes int64 `json:"watermark_bytes,omitempty"`
}

// Truth is what the simulator knows about a capture.
type Truth struct {
	Scenario string `json:"scenario"`
	Doc      string `json:"doc"`
	Seed     uint64 `json:"seed"`
	Requests int    `json:"requests"`
	// RatePerS is the configured root request rate; MeasuredRatePerS
	// the capture's (requests − 1 over the span of arrivals).
	RatePerS         float64      `json:"rate_per_s"`
	MeasuredRatePerS float64      `json:"measured_rate_per_s"`
	Queues           []QueueTruth `json:"queues"`
	Broker           BrokerTruth  `json:"broker"`
	Outcome          RunTruth     `json:"outcome"`
}

// QueueTruth is one queue's parameters (as configured and as the capture
// shows them) and its outcome.
type QueueTruth struct {
	QueueSpec
	// ServiceMeanMS is the configured mean of the consumer's own work.
	ServiceMeanMS float64 `json:"service_mean_ms"`
	// PublishRatePerS is the rate of publishes into the queue.
	PublishRatePerS float64 `json:"publish_rate_per_s"`
	// Measured over the capture: the process spans' duration mean and
	// median (work, callee call included); the share of deliveries that
	// failed; the share of deliveries that were redeliveries; the mean
	// time from a failed delivery's end to its message's next delivery.
	MeasuredServiceMeanMS float64 `json:"measured_service_mean_ms"`
	MeasuredServiceP50MS  float64 `json:"measured_service_p50_ms"`
	FailureShare          float64 `json:"failure_share"`
	RedeliveryShare       float64 `json:"redelivery_share"`
	RedeliveryDelayMS     float64 `json:"redelivery_delay_ms,omitempty"`
	// Outcome holds the counts as cascade.QueueOutcome defines them
	// (Published counts every publish, the rejected included).
	Outcome cascade.QueueOutcome `json:"outcome"`
	// Accepted counts publishes the queue took (Published − Rejected);
	// PeakReady is the most ready messages it held.
	Accepted  int64 `json:"accepted"`
	PeakReady int   `json:"peak_ready"`
}

// BrokerTruth is the broker's configuration and outcome.
type BrokerTruth struct {
	BrokerSpec
	Outcome cascade.BrokerOutcome `json:"outcome"`
	// FirstAlarmNS is when the memory alarm first went off (Unix ns), 0
	// when it never did.
	FirstAlarmNS int64 `json:"first_alarm_ns,omitempty"`
}

// RunTruth is the run's outcome. A flow is a root request with every
// message it published; it succeeds when the request succeeded and each
// message was acked. Completion runs from the request's start to the end
// of its last piece of work, over successful flows.
type RunTruth struct {
	Flows           int64   `json:"flows"`
	FlowSuccessRate float64 `json:"flow_success_rate"`
	FlowP50MS       float64 `json:"flow_p50_ms"`
	FlowP95MS       float64 `json:"flow_p95_ms"`
	// Spans and Samples count what the capture holds (Spans in OTLP;
	// Brave writes one more span per delivery).
	Spans   int `json:"spans"`
	Samples int `json:"samples"`
}

const (
	mib        = 1 << 20
	kib        = 1 << 10
	sigma      = 0.5
	defaultMsg = 2 * kib
)

func chainQueue(mod func(*QueueSpec)) []QueueSpec {
	q := QueueSpec{Name: "orders", Consumer: "worker", Consumers: 2, Prefetch: 1,
		Redelivery: cascade.RedeliverRequeue, MessageBytes: defaultMsg, ServiceP50MS: 20}
	mod(&q)
	return []QueueSpec{q}
}

var plainBroker = BrokerSpec{Name: "rabbit@broker-0", BaseBytes: 80 * mib, WatermarkBytes: 800 * mib}

var table = map[string]scenario{
	"drop-head": {
		doc: "gateway publishes to orders at 100/s; 2 consumers drain ~88/s; orders holds at most 100 ready " +
			"messages and drops the oldest when full",
		requests: 800, rate: 100, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) { q.MaxLength, q.Overflow, q.ServiceP50MS = 100, cascade.OverflowDropHead, 25 }),
	},
	"reject-publish": {
		doc: "as drop-head, but a full orders refuses the publish (the gateway's confirm is a nack and its " +
			"request fails)",
		requests: 800, rate: 100, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) { q.MaxLength, q.Overflow, q.ServiceP50MS = 100, cascade.OverflowRejectPublish, 25 }),
	},
	"block": {
		doc: "as drop-head, but a full orders makes the publisher wait for room: nothing is lost, the " +
			"gateway's requests grow long",
		requests: 800, rate: 100, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) { q.MaxLength, q.Overflow, q.ServiceP50MS = 100, cascade.OverflowBlock, 25 }),
	},
	"requeue-storm": {
		doc: "worker fails 60% of deliveries and nacks them with requeue, without limit: 2.5 deliveries per " +
			"message; 4 consumers",
		requests: 600, rate: 50, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) { q.Consumers, q.FailP, q.ServiceP50MS = 4, 0.6, 10 }),
	},
	"delay-queue": {
		doc: "worker fails 30% of deliveries; a failed message waits 2 s in orders.retry (TTL) and comes " +
			"back to orders, without limit",
		requests: 900, rate: 50, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) {
			q.FailP, q.Redelivery, q.DelayMS = 0.3, cascade.RedeliverDelay, 2000
		}),
	},
	"dead-letter": {
		doc: "worker fails 40% of deliveries and requeues them; the third failure of a message dead-letters " +
			"it to orders.dlq (no consumers): 6.4% of messages",
		requests: 900, rate: 50, broker: plainBroker,
		queues: chainQueue(func(q *QueueSpec) {
			q.Consumers, q.FailP, q.MaxDeliveries, q.DeadLetter, q.ServiceP50MS = 3, 0.4, 3, "orders.dlq", 15
		}),
	},
	"memory-alarm": {
		doc: "64 KiB messages published at 100/s into orders, drained at ~71/s; the broker's memory passes its " +
			"watermark (base 80 MiB + 100 messages) and, from the memory monitor's next check (once a second) on, every publisher blocks until a check finds it below",
		requests: 800, rate: 100,
		broker: BrokerSpec{Name: "rabbit@broker-0", BaseBytes: 80 * mib, WatermarkBytes: 80*mib + 100*64*kib},
		queues: chainQueue(func(q *QueueSpec) { q.MessageBytes, q.ServiceP50MS = 64*kib, 25 }),
	},
	"fan-out": {
		doc: "§5.3: the gateway publishes each event to rights, points and sms; points-task calls rights-api " +
			"synchronously, which fails 25% of calls (its failure fails the delivery); points requeues up to 3 deliveries, then points.dlq",
		requests: 600, rate: 40, broker: plainBroker,
		queues: []QueueSpec{
			{Name: "rights", Consumer: "rights-task", Consumers: 2, Prefetch: 5, Redelivery: cascade.RedeliverRequeue,
				MessageBytes: defaultMsg, ServiceP50MS: 15, FailP: 0.02, MaxDeliveries: 3, DeadLetter: "rights.dlq"},
			{Name: "points", Consumer: "points-task", Consumers: 3, Prefetch: 5, Redelivery: cascade.RedeliverRequeue,
				MessageBytes: defaultMsg, ServiceP50MS: 10, MaxDeliveries: 3, DeadLetter: "points.dlq",
				Callee: "rights-api", CalleeP50MS: 20, CalleeFailP: 0.25},
			{Name: "sms", Consumer: "sms-task", Consumers: 1, Prefetch: 10, Redelivery: cascade.RedeliverNone,
				MessageBytes: kib, ServiceP50MS: 8, FailP: 0.01},
		},
	},
}

// Names returns the scenarios in a fixed order.
func Names() []string {
	return []string{"drop-head", "reject-publish", "block", "requeue-storm", "delay-queue", "dead-letter", "memory-alarm", "fan-out"}
}

// Doc returns a scenario's description.
func Doc(name string) string { return table[name].doc }

// Capture is one generated capture.
type Capture struct {
	// Traces is the OTLP JSON (one ExportTraceServiceRequest), or the
	// Zipkin JSON array the Format asked for.
	Traces []byte
	// Metrics is the Prometheus text exposition, one scrape a second,
	// concatenated, each point with its timestamp.
	Metrics []byte
	Truth   *Truth
}

// Generate simulates a scenario and returns its capture.
func Generate(cfg Config) (*Capture, error) {
	sc, ok := table[cfg.Scenario]
	if !ok {
		return nil, fmt.Errorf("brokersim: unknown scenario %q", cfg.Scenario)
	}
	if cfg.Requests <= 0 {
		cfg.Requests = sc.requests
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	s := newSim(sc, cfg)
	s.run()
	tr := s.truth()
	tr.Scenario, tr.Doc = cfg.Scenario, sc.doc
	var traces []byte
	var err error
	switch cfg.Format {
	case "", OTLP:
		traces, err = s.marshalOTLP()
	case ZipkinBrave:
		traces, err = s.marshalZipkin()
	default:
		return nil, fmt.Errorf("brokersim: unknown format %q", cfg.Format)
	}
	if err != nil {
		return nil, err
	}
	metrics := s.marshalProm()
	tr.Outcome.Spans = len(s.spans)
	tr.Outcome.Samples = s.samples
	return &Capture{Traces: traces, Metrics: metrics, Truth: tr}, nil
}

// quantile returns the q-quantile of xs (nearest rank), sorting xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
