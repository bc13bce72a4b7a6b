package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"cascade"
)

// msgCols is the part of a span the messaging conventions fill.
type msgCols struct {
	Kind                  cascade.SpanKind
	Status                cascade.Status
	Peer                  string
	Links                 []cascade.SpanLink
	System, Op, Dest      string
	Group, ID             string
	Batch                 int32
	Bytes                 int64
	Redelivery            int32
	TraceID, ParentSpanID string
}

func msgColsOf(s *cascade.Span) msgCols {
	return msgCols{
		Kind: s.Kind, Status: s.Status, Peer: s.Peer, Links: s.Links,
		System: s.MessagingSystem, Op: s.MessagingOperation, Dest: s.Destination,
		Group: s.ConsumerGroup, ID: s.MessageID, Batch: s.BatchCount, Bytes: s.MessageBytes,
		Redelivery: s.Redelivery, TraceID: s.TraceID, ParentSpanID: s.ParentSpanID,
	}
}

// TestMessagingDecoders decodes a capture of each producer of a message
// queue's traces, written as it writes them, and checks the messaging
// columns and links of every span.
func TestMessagingDecoders(t *testing.T) {
	const (
		otelProducerTrace = "5b8efff798038103d269b633813fc60c"
		otelConsumerTrace = "7f3a2e1c9d4b5a6f8e0d1c2b3a495867"
		jaegerTrace       = "9c2b6a1d4e8f7a3b2c1d0e9f8a7b6c5d"
		braveTrace        = "00000000000000004f2a9b8c7d6e5f40"
	)
	for _, tc := range []struct {
		name string
		dec  decodeFunc
		file string
		want map[string]msgCols // by span id
	}{
		{
			// The OpenTelemetry Go SDK through the Collector's file
			// exporter: the consumer's process span is the root of its
			// own trace and links to the producer's publish span.
			name: "OTLP JSON, OpenTelemetry Go SDK", dec: decodeOTLPJSON, file: "otel-rabbitmq.jsonl",
			want: map[string]msgCols{
				"eee19b7ec3c1b174": {Kind: cascade.KindServer, Status: cascade.StatusUnset, TraceID: otelProducerTrace},
				"aaa19b7ec3c1b175": {Kind: cascade.KindProducer, Status: cascade.StatusUnset, Peer: "localhost",
					System: "rabbitmq", Op: cascade.MessagingPublish, Dest: "notify", ID: "msg-0001", Bytes: 512,
					TraceID: otelProducerTrace, ParentSpanID: "eee19b7ec3c1b174"},
				"bbb19b7ec3c1b176": {Kind: cascade.KindConsumer, Status: cascade.StatusError, Peer: "notify",
					Links:  []cascade.SpanLink{{TraceID: otelProducerTrace, SpanID: "aaa19b7ec3c1b175"}},
					System: "rabbitmq", Op: cascade.MessagingProcess, Dest: "notify", Group: "rights", ID: "msg-0001",
					Bytes: 512, Redelivery: 2, TraceID: otelConsumerTrace},
				"ccc19b7ec3c1b177": {Kind: cascade.KindInternal, Status: cascade.StatusUnset, TraceID: otelConsumerTrace, ParentSpanID: "bbb19b7ec3c1b176"},
			},
		},
		{
			// Jaeger's query API: the OpenTelemetry-to-Jaeger
			// translation writes a link as a FOLLOWS_FROM reference; the
			// older messaging keys (messaging.operation "deliver",
			// messaging.destination) are read too.
			name: "Jaeger JSON, FOLLOWS_FROM", dec: decodeJaegerJSON, file: "jaeger-follows-from.json",
			want: map[string]msgCols{
				"1a2b3c4d5e6f7081": {Kind: cascade.KindConsumer, Status: cascade.StatusUnset, Peer: "points",
					Links:  []cascade.SpanLink{{TraceID: otelProducerTrace, SpanID: "aaa19b7ec3c1b175"}},
					System: "rabbitmq", Op: cascade.MessagingProcess, Dest: "points", ID: "msg-0001", Batch: 3, Bytes: 640,
					TraceID: jaegerTrace},
				// CHILD_OF is the parent; the FOLLOWS_FROM beside it, in
				// the same trace, is a link.
				"2b3c4d5e6f708192": {Kind: cascade.KindClient, Status: cascade.StatusUnset, Peer: "rights",
					Links:   []cascade.SpanLink{{TraceID: jaegerTrace, SpanID: "3c4d5e6f708192a3"}},
					TraceID: jaegerTrace, ParentSpanID: "1a2b3c4d5e6f7081"},
				"3c4d5e6f708192a3": {Kind: cascade.KindInternal, Status: cascade.StatusUnset, TraceID: jaegerTrace, ParentSpanID: "1a2b3c4d5e6f7081"},
			},
		},
		{
			// Brave (Zipkin v2): spring-rabbit's publish, next-message
			// and on-message spans, kafka-clients' send and poll, in one
			// trace; no links (Brave joins producer and consumer by
			// trace).
			name: "Zipkin v2, Brave spring-rabbit and kafka-clients", dec: decodeZipkinJSON, file: "brave-rabbit-kafka.json",
			want: map[string]msgCols{
				"4f2a9b8c7d6e5f40": {Kind: cascade.KindServer, Status: cascade.StatusUnset, Peer: "10.0.0.9:50312", TraceID: braveTrace},
				"6e5f40a1b2c3d4e5": {Kind: cascade.KindProducer, Status: cascade.StatusUnset, Peer: "rabbitmq",
					System: "rabbitmq", Op: cascade.MessagingPublish, Dest: "notify", TraceID: braveTrace, ParentSpanID: "4f2a9b8c7d6e5f40"},
				"7a8b9c0d1e2f3a4b": {Kind: cascade.KindConsumer, Status: cascade.StatusUnset, Peer: "rabbitmq",
					System: "rabbitmq", Op: cascade.MessagingReceive, Dest: "rights", Group: "rights", TraceID: braveTrace, ParentSpanID: "6e5f40a1b2c3d4e5"},
				"8b9c0d1e2f3a4b5c": {Status: cascade.StatusError, Op: cascade.MessagingProcess, TraceID: braveTrace, ParentSpanID: "7a8b9c0d1e2f3a4b"},
				"5d6e7f8091a2b3c4": {Kind: cascade.KindProducer, Status: cascade.StatusUnset, Peer: "kafka",
					System: "kafka", Op: cascade.MessagingPublish, Dest: "audit-log", TraceID: braveTrace, ParentSpanID: "4f2a9b8c7d6e5f40"},
				"9c0d1e2f3a4b5c6d": {Kind: cascade.KindConsumer, Status: cascade.StatusUnset, Peer: "kafka",
					System: "kafka", Op: cascade.MessagingReceive, Dest: "audit-log", TraceID: braveTrace, ParentSpanID: "5d6e7f8091a2b3c4"},
				"a0d1e2f3a4b5c6d7": {Status: cascade.StatusUnset, Op: cascade.MessagingProcess, TraceID: braveTrace, ParentSpanID: "9c0d1e2f3a4b5c6d"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestFile(t, tc.dec, filepath.Join("testdata", "mq", tc.file), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Empty(t, s.warns)
			got := map[string]msgCols{}
			for i := range s.spans {
				got[s.spans[i].SpanID] = msgColsOf(&s.spans[i])
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// mapAttrs is an attrGetter over a map.
type mapAttrs map[string]string

func (m mapAttrs) get(k string) (string, bool) { v, ok := m[k]; return v, ok }

// TestApplyMessaging checks the attribute keys of each convention and the
// inference of the operation, one case a rule.
func TestApplyMessaging(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  cascade.SpanKind
		op    string
		attrs mapAttrs
		want  msgCols
	}{
		{"not messaging", cascade.KindServer, "GET /", mapAttrs{"http.route": "/"}, msgCols{Kind: cascade.KindServer}},
		{"an HTTP span named like an operation", cascade.KindServer, "create order", nil, msgCols{Kind: cascade.KindServer}},
		{"producer without attributes", cascade.KindProducer, "enqueue", nil,
			msgCols{Kind: cascade.KindProducer, Op: cascade.MessagingPublish}},
		{"consumer without attributes", cascade.KindConsumer, "handle", nil,
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive}},
		{"consumer named for its operation", cascade.KindConsumer, "process orders", nil,
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingProcess}},
		{"older deliver", cascade.KindConsumer, "x", mapAttrs{"messaging.operation": "deliver", "messaging.system": "Kafka"},
			msgCols{Kind: cascade.KindConsumer, System: "kafka", Op: cascade.MessagingProcess}},
		{"settle", cascade.KindClient, "ack", mapAttrs{"messaging.system": "rabbitmq", "messaging.operation.type": "settle"},
			msgCols{Kind: cascade.KindClient, System: "rabbitmq", Op: cascade.MessagingSettle}},
		{"default exchange: routing key is the destination", cascade.KindProducer, "publish",
			mapAttrs{"messaging.system": "rabbitmq", "messaging.destination.name": "", "messaging.rabbitmq.destination.routing_key": "sms"},
			msgCols{Kind: cascade.KindProducer, Peer: "sms", System: "rabbitmq", Op: cascade.MessagingPublish, Dest: "sms"}},
		{"Kafka consumer group, current", cascade.KindConsumer, "poll", mapAttrs{"messaging.consumer.group.name": "g1", "messaging.destination.name": "t"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Dest: "t", Group: "g1"}},
		{"Kafka consumer group, older", cascade.KindConsumer, "t receive", mapAttrs{"messaging.kafka.consumer.group": "g2"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Group: "g2"}},
		{"Kafka consumer group, oldest", cascade.KindConsumer, "t receive", mapAttrs{"messaging.kafka.consumer_group": "g3"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Group: "g3"}},
		{"batch and envelope size", cascade.KindProducer, "send", mapAttrs{"messaging.batch.message_count": "10", "messaging.message.envelope.size": "4096"},
			msgCols{Kind: cascade.KindProducer, Op: cascade.MessagingPublish, Batch: 10, Bytes: 4096}},
		{"body size wins over envelope", cascade.KindProducer, "send", mapAttrs{"messaging.message.body.size": "100", "messaging.message.envelope.size": "4096"},
			msgCols{Kind: cascade.KindProducer, Op: cascade.MessagingPublish, Bytes: 100}},
		{"bad numbers are ignored", cascade.KindProducer, "send", mapAttrs{"messaging.batch.message_count": "-1", "messaging.message.body.size": "big"},
			msgCols{Kind: cascade.KindProducer, Op: cascade.MessagingPublish}},
		{"redelivered flag", cascade.KindConsumer, "c", mapAttrs{"messaging.rabbitmq.message.redelivered": "true"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Redelivery: 1}},
		{"redelivered false", cascade.KindConsumer, "c", mapAttrs{"redelivered": "false"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive}},
		{"x-death count wins over the flag", cascade.KindConsumer, "c", mapAttrs{"redelivered": "true", "messaging.header.x_death_count": "3"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Redelivery: 3}},
		{"quorum queue x-delivery-count", cascade.KindConsumer, "c", mapAttrs{"messaging.rabbitmq.message.delivery_count": "2"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Redelivery: 2}},
		{"Kafka delivery attempt", cascade.KindConsumer, "c", mapAttrs{"messaging.header.kafka_deliveryAttempt": "4"},
			msgCols{Kind: cascade.KindConsumer, Op: cascade.MessagingReceive, Redelivery: 3}},
		{"message id, older key", cascade.KindProducer, "p", mapAttrs{"messaging.message_id": "m9"},
			msgCols{Kind: cascade.KindProducer, Op: cascade.MessagingPublish, ID: "m9"}},
		{"Brave producer to the default exchange", cascade.KindProducer, "publish", mapAttrs{"rabbit.routing_key": "push"},
			msgCols{Kind: cascade.KindProducer, Peer: "push", System: "rabbitmq", Op: cascade.MessagingPublish, Dest: "push"}},
		{"rabbitmq.* tags", cascade.KindConsumer, "next-message", mapAttrs{"rabbitmq.exchange": "notify", "rabbitmq.queue": "log"},
			msgCols{Kind: cascade.KindConsumer, System: "rabbitmq", Op: cascade.MessagingReceive, Dest: "log", Group: "log"}},
		{"OpenTelemetry keys win over Brave's", cascade.KindConsumer, "next-message",
			mapAttrs{"messaging.system": "rabbitmq", "messaging.destination.name": "d", "rabbit.queue": "q"},
			msgCols{Kind: cascade.KindConsumer, System: "rabbitmq", Op: cascade.MessagingReceive, Dest: "d", Group: "q"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cascade.Span{Kind: tc.kind, Operation: tc.op}
			get := tc.attrs.get
			if tc.attrs == nil {
				get = mapAttrs{}.get
			}
			applyMessaging(&s, get)
			require.Equal(t, tc.want, msgColsOf(&s))
		})
	}
}

// TestRabbitMQExposition decodes a scrape of RabbitMQ's Prometheus plugin
// (3.10 names, its TYPE-before-HELP layout) and checks each family's kind
// and that a queue's series keep its queue label.
func TestRabbitMQExposition(t *testing.T) {
	s, err := decodeTestFile(t, decodePromText, filepath.Join("testdata", "mq", "rabbitmq-3.10.prom"), nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	kinds := map[string]cascade.MetricKind{}
	queues := map[string][]string{}
	for _, x := range s.samples {
		if k, ok := kinds[x.Metric]; ok {
			require.Equal(t, k, x.Kind, x.Metric)
		}
		kinds[x.Metric] = x.Kind
		if _, q, ok := strings.Cut(x.Labels, `queue="`); ok {
			q, _, _ = strings.Cut(q, `"`)
			queues[x.Metric] = append(queues[x.Metric], q)
		}
	}
	require.Equal(t, map[string]cascade.MetricKind{
		"rabbitmq_queue_messages_ready":                         cascade.MetricQueueDepth,
		"rabbitmq_queue_messages_unacked":                       cascade.MetricQueueUnacked,
		"rabbitmq_queue_messages":                               cascade.MetricOther,
		"rabbitmq_queue_consumers":                              cascade.MetricConsumers,
		"rabbitmq_queue_messages_bytes":                         cascade.MetricQueueBytes,
		"rabbitmq_consumer_prefetch":                            cascade.MetricPrefetch,
		"rabbitmq_channel_prefetch":                             cascade.MetricPrefetch,
		"rabbitmq_channel_messages_published_total":             cascade.MetricPublished,
		"rabbitmq_channel_messages_redelivered_total":           cascade.MetricRedelivered,
		"rabbitmq_global_messages_received_total":               cascade.MetricPublished,
		"rabbitmq_global_messages_redelivered_total":            cascade.MetricRedelivered,
		"rabbitmq_global_messages_dead_lettered_maxlen_total":   cascade.MetricDeadLettered,
		"rabbitmq_global_messages_dead_lettered_rejected_total": cascade.MetricDeadLettered,
		"rabbitmq_process_resident_memory_bytes":                cascade.MetricBrokerMemory,
		"rabbitmq_resident_memory_limit_bytes":                  cascade.MetricMemoryLimit,
		"rabbitmq_alarms_memory_used_watermark":                 cascade.MetricMemoryAlarm,
		"rabbitmq_detailed_queue_messages_ready":                cascade.MetricQueueDepth,
		"rabbitmq_connections":                                  cascade.MetricOther,
	}, kinds)
	require.Equal(t, []string{"rights", "points"}, queues["rabbitmq_queue_messages_ready"])
	require.Equal(t, []string{"sms"}, queues["rabbitmq_detailed_queue_messages_ready"])
	require.Equal(t, []string{"rights"}, queues["rabbitmq_channel_messages_redelivered_total"])
}

// TestCSVMessagingColumns reads the links and messaging columns of a span
// CSV through a column map, and reports a cell it cannot read at its
// line and column.
func TestCSVMessagingColumns(t *testing.T) {
	m, err := ParseCSVMap("trace_id=trace,span_id=span,service=svc,start=start:ms,duration=dur:ms,kind=kind," +
		"links=links,messaging_system=system,messaging_operation=op,destination=queue,consumer_group=group," +
		"message_id=msgid,batch_count=batch,message_bytes=bytes,redelivery=redelivered")
	require.NoError(t, err)
	in := "trace,span,svc,start,dur,kind,links,system,op,queue,group,msgid,batch,bytes,redelivered\n" +
		"AA,A1,gateway,1000,2,producer,,RabbitMQ,,notify,,m-1,,512,\n" +
		"BB,C1,rights,1005,90,consumer,AA:A1; cc:d9,rabbitmq,deliver,rights,rights,m-1,2,512,3\n" +
		"BB,C2,rights,1006,1,internal,,,,,,,,,\n"
	s, err := decodeTestBytes(decodeSpanCSV, "mq.csv", strings.NewReader(in), &Options{CSVMap: m})
	require.NoError(t, err)
	require.Empty(t, s.errs)
	got := map[string]msgCols{}
	for i := range s.spans {
		got[s.spans[i].SpanID] = msgColsOf(&s.spans[i])
	}
	require.Equal(t, map[string]msgCols{
		"a1": {Kind: cascade.KindProducer, Status: cascade.StatusUnset, System: "rabbitmq", Op: cascade.MessagingPublish,
			Dest: "notify", ID: "m-1", Bytes: 512, TraceID: "aa"},
		"c1": {Kind: cascade.KindConsumer, Status: cascade.StatusUnset,
			Links:  []cascade.SpanLink{{TraceID: "aa", SpanID: "a1"}, {TraceID: "cc", SpanID: "d9"}},
			System: "rabbitmq", Op: cascade.MessagingProcess, Dest: "rights", Group: "rights", ID: "m-1",
			Batch: 2, Bytes: 512, Redelivery: 3, TraceID: "bb"},
		"c2": {Kind: cascade.KindInternal, Status: cascade.StatusUnset, TraceID: "bb"},
	}, got)
	require.Contains(t, m.String(), "links=links,messaging_system=system,messaging_operation=op,messaging_destination=queue,")

	for _, tc := range []struct{ row, want string }{
		{"BB,C1,rights,1005,90,consumer,AA-A1,,,,,,,,", `column "links": link "AA-A1" is not traceid:spanid: bad trace or span id`},
		{"BB,C1,rights,1005,90,consumer,,,,,,,-2,,", `column "batch": "-2" is not a count from 0 to 2147483647: bad value`},
		{"BB,C1,rights,1005,90,consumer,,,,,,,,,x", `column "redelivered": "x" is not a count from 0 to 2147483647: bad value`},
	} {
		s, err := decodeTestBytes(decodeSpanCSV, "mq.csv", strings.NewReader(strings.SplitN(in, "\n", 2)[0]+"\n"+tc.row+"\n"), &Options{CSVMap: m})
		require.NoError(t, err)
		require.Len(t, s.errs, 1)
		require.True(t, strings.HasPrefix(s.errs[0].Error(), "mq.csv:2 (byte 88): "), s.errs[0].Error())
		require.True(t, strings.HasSuffix(s.errs[0].Error(), tc.want), s.errs[0].Error())
	}
}

// TestOTLPProtoLinks checks that the protobuf path reads links and the
// messaging attributes as the JSON path does, from the same capture
// marshalled as protobuf.
func TestOTLPProtoLinks(t *testing.T) {
	path := filepath.Join("testdata", "mq", "otel-rabbitmq.jsonl")
	fromJSON, err := decodeTestFile(t, decodeOTLPJSON, path, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var spans []cascade.Span
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line)
		require.NoError(t, err)
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		s, err := decodeTestBytes(decodeOTLPProto, "mq.pb", bytes.NewReader(pb), nil)
		require.NoError(t, err)
		require.Empty(t, s.errs)
		spans = append(spans, s.spans...)
	}
	require.Equal(t, fromJSON.spans, spans)
	require.NotEmpty(t, spans[2].Links)
}
