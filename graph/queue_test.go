package graph_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
	"cascade/internal/testutil"
)

// Messaging span options.
func publish(system, dest string) func(*cascade.Span) {
	return func(s *cascade.Span) {
		s.MessagingSystem, s.MessagingOperation, s.Destination = system, cascade.MessagingPublish, dest
	}
}

func process(system, dest string) func(*cascade.Span) {
	return func(s *cascade.Span) {
		s.MessagingSystem, s.MessagingOperation, s.Destination = system, cascade.MessagingProcess, dest
	}
}

// brave is a Zipkin span of Brave's Kafka instrumentation: the topic and
// the system, no operation type.
func brave(dest string) func(*cascade.Span) {
	return func(s *cascade.Span) { s.MessagingSystem, s.Destination = "kafka", dest }
}

func group(g string) func(*cascade.Span) { return func(s *cascade.Span) { s.ConsumerGroup = g } }

func link(tr, id string) func(*cascade.Span) {
	return func(s *cascade.Span) { s.Links = append(s.Links, cascade.SpanLink{TraceID: tr, SpanID: id}) }
}

func messageID(id string) func(*cascade.Span) {
	return func(s *cascade.Span) { s.MessageID = id }
}

func msgBytes(n int64) func(*cascade.Span) { return func(s *cascade.Span) { s.MessageBytes = n } }

func redelivery(n int32) func(*cascade.Span) { return func(s *cascade.Span) { s.Redelivery = n } }

func opts(o ...func(*cascade.Span)) []func(*cascade.Span) { return o }

// otelFlows returns n OpenTelemetry-shaped flows: a gateway request
// publishes to queue "orders"; a worker, in a trace of its own, processes
// the message for procMS (its process span links to the publish span),
// calling a database for 10 ms. deliveries(i) lists, per delivery of
// message i, whether it fails; gapMS is the time between a failed
// delivery's end and the next delivery.
func otelFlows(n int, procMS, gapMS float64, deliveries func(i int) []bool) []cascade.Span {
	var out []cascade.Span
	for i := range n {
		at := float64(i) * 200
		ptr, ctr := fmt.Sprintf("p%04d", i), fmt.Sprintf("c%04d", i)
		out = append(out,
			span(ptr, "1", "", "gw", "/event", server, at, 20),
			span(ptr, "2", "1", "gw", "orders publish", producer, at+5, 1,
				publish("rabbitmq", "orders"), messageID(fmt.Sprintf("m%d", i)), msgBytes(512)))
		start := at + 30
		for k, fail := range deliveries(i) {
			tr := fmt.Sprintf("%s-%d", ctr, k)
			o := opts(process("rabbitmq", "orders"), link(ptr, "2"), messageID(fmt.Sprintf("m%d", i)),
				instance(fmt.Sprintf("w%d", i%2)), redelivery(int32(k)))
			if fail {
				o = append(o, failed("HandlerError"))
			}
			out = append(out,
				span(tr, "1", "", "worker", "orders process", consumer, start, procMS, o...),
				span(tr, "2", "1", "worker", "SELECT", client, start+1, 10, peer("postgres")))
			start += procMS + gapMS
		}
	}
	return out
}

func once(int) []bool { return []bool{false} }

// braveFlows returns n Brave-shaped flows in one trace each: the
// gateway's producer span, under it the worker's CONSUMER "poll" span of
// 50 µs, under that the "on-message" processing of procMS; every
// failEvery-th processing fails (0: none).
func braveFlows(n int, procMS float64, failEvery int) []cascade.Span {
	var out []cascade.Span
	for i := range n {
		at := float64(i) * 200
		tr := fmt.Sprintf("b%04d", i)
		var o []func(*cascade.Span)
		if failEvery > 0 && i%failEvery == 0 {
			o = append(o, failed("RuntimeException"))
		}
		out = append(out,
			span(tr, "1", "", "gw", "/event", server, at, 20),
			span(tr, "2", "1", "gw", "send", producer, at+5, 1, brave("orders")),
			span(tr, "3", "2", "worker", "poll", consumer, at+30, 0.05, brave("orders")),
			span(tr, "4", "3", "worker", "on-message", none, at+30.1, procMS, o...))
	}
	return out
}

func TestQueues(t *testing.T) {
	tests := []struct {
		name    string
		spans   []cascade.Span
		samples []cascade.Sample
		check   func(t *testing.T, res *graph.Result)
	}{{
		name:  "a consumer handling its deliveries at once is as many workers as it had in progress",
		spans: braveFlows(20, 700, 0), // an event every 200 ms, each worked 700 ms by one consumer
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.NotNil(t, q)
			require.Equal(t, 4, q.Queue.Consumers, "four messages in progress at once")
			require.Equal(t, 1, q.Queue.Prefetch)
			require.Equal(t, cascade.ObservedPeak, q.Provenance["consumers"])
		},
	}, {
		name:  "with its prefetch in the broker's series, such a consumer is consumers × prefetch workers",
		spans: braveFlows(20, 700, 0),
		samples: []cascade.Sample{
			{Time: 1, Kind: cascade.MetricConsumers, Metric: "rabbitmq_queue_consumers", Labels: `queue="orders"`, Value: 1},
			{Time: 1, Kind: cascade.MetricPrefetch, Metric: "rabbitmq_channel_prefetch", Labels: `channel="<0.1.0>"`, Value: 6},
		},
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.NotNil(t, q)
			require.Equal(t, 6, q.Queue.Consumers, "1 consumer × prefetch 6, of which the load used 4")
			require.Equal(t, 1, q.Queue.Prefetch)
			require.Equal(t, cascade.Inferred, q.Provenance["consumers"])
		},
	}, {
		name:  "otel: a consumer trace linked to its producer is one flow through a queue node",
		spans: otelFlows(40, 100, 0, once),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Equal(t, []cascade.Entry{{Node: "gw", Operation: "/event", RatePerSec: m.Entries[0].RatePerSec, Share: 1}}, m.Entries)
			require.Equal(t, int64(40), res.Stats.Roots, "the consumer traces' roots are deliveries")
			q := m.Node("queue:orders")
			require.NotNil(t, q)
			require.NotNil(t, q.Queue)
			require.False(t, q.Virtual)
			require.Equal(t, "rabbitmq", q.Queue.System)
			require.Equal(t, 2, q.Queue.Consumers, "instances w0 and w1")
			require.Equal(t, 512.0, q.Queue.MessageBytes)
			require.Equal(t, cascade.Observed, q.Provenance["message_bytes"])
			require.Equal(t, int64(40), q.Observed.Requests)
			require.Equal(t, 25.0, q.Observed.LatencyP50MS, "publish at 5 ms, delivery at 30 ms")
			require.Equal(t, 1.0, q.Observed.QueueDepthMax, "one message waits at a time")
			require.Equal(t, cascade.Inferred, q.Provenance["observed.queue_depth_max"])
			require.Equal(t, cascade.Const(0), q.Service)
			require.Zero(t, q.Concurrency)
			pub := edge(t, m, "gw", "queue:orders")
			require.True(t, pub.Async)
			require.Equal(t, int64(40), pub.Observed.Calls)
			del := edge(t, m, "queue:orders", "worker")
			require.Equal(t, int64(40), del.Observed.Calls)
			require.Equal(t, 1.0, del.FanOut.Value)
			require.Nil(t, edgeOrNil(m, "gw", "worker"))
			w := m.Node("worker")
			require.Equal(t, 90.0, w.Tiers.P50, "100 ms processing less the 10 ms query")
			require.Equal(t, []cascade.Broker{{Name: "rabbitmq", System: "rabbitmq", Alarm: cascade.AlarmBlock,
				Provenance: map[string]cascade.Provenance{"alarm": "default", "base_bytes": "default", "memory_watermark_bytes": "default", "rate_memory_s": "default"}}}, m.Brokers)
			require.Equal(t, []string{"gw", "queue:orders", "worker", "postgres"}, res.Order)
		},
	}, {
		name:  "brave: the poll span's on-message child times and fails the consumer",
		spans: braveFlows(40, 100, 4),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, "gw", m.Entries[0].Node)
			w := m.Node("worker")
			require.Equal(t, 100.0, w.Tiers.P50, "processing, not the 50 µs poll")
			require.Equal(t, int64(40), w.Observed.Requests)
			require.Equal(t, 0.25, w.Observed.ErrorRate)
			require.Equal(t, 0.25, w.Overload.Base)
			q := m.Node("queue:orders")
			require.Equal(t, "kafka", q.Queue.System)
			require.Equal(t, 25.0, q.Observed.LatencyP50MS)
			require.Equal(t, 0.25, edge(t, m, "queue:orders", "worker").Observed.ErrorRate)
			require.Equal(t, cascade.RedeliverNone, q.Queue.Redelivery, "failures, none delivered again")
			require.Nil(t, edgeOrNil(m, "gw", "worker"))
			require.True(t, edge(t, m, "gw", "queue:orders").Async)
		},
	}, {
		name: "kafka: a topic read by two consumer groups is a queue per group",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 20 {
				at := float64(i) * 200
				tr := fmt.Sprintf("k%04d", i)
				out = append(out,
					span(tr, "1", "", "gw", "/event", server, at, 20),
					span(tr, "2", "1", "gw", "send", producer, at+5, 1, brave("orders")),
					span(tr, "3", "2", "billing", "poll", consumer, at+30, 0.05, brave("orders"), group("billing")),
					span(tr, "4", "3", "billing", "on-message", none, at+30.1, 50),
					span(tr, "5", "2", "auditor", "poll", consumer, at+60, 0.05, brave("orders"), group("audit")),
					span(tr, "6", "5", "auditor", "on-message", none, at+60.1, 5))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Nil(t, m.Node("queue:orders"))
			for _, c := range []struct {
				queue, consumer string
				waitMS, procMS  float64
			}{{"queue:orders/audit", "auditor", 55, 5}, {"queue:orders/billing", "billing", 25, 50}} {
				q := m.Node(c.queue)
				require.NotNil(t, q, c.queue)
				require.Equal(t, int64(20), q.Observed.Requests, c.queue)
				require.Equal(t, c.waitMS, q.Observed.LatencyP50MS, c.queue)
				require.Equal(t, int64(20), edge(t, m, "gw", c.queue).Observed.Calls)
				require.Equal(t, int64(20), edge(t, m, c.queue, c.consumer).Observed.Calls)
				require.Equal(t, c.procMS, m.Node(c.consumer).Tiers.P50)
			}
		},
	}, {
		name: "otel, one trace: the process span is the publish span's child (context in the headers)",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 20 {
				at := float64(i) * 200
				tr := fmt.Sprintf("o%04d", i)
				var o []func(*cascade.Span)
				if i%5 == 0 {
					o = append(o, failed("HandlerError"))
				}
				out = append(out,
					span(tr, "1", "", "gw", "/event", server, at, 20),
					span(tr, "2", "1", "gw", "orders publish", producer, at+5, 1, publish("rabbitmq", "orders")),
					span(tr, "3", "2", "worker", "orders process", consumer, at+30, 80, append(o, process("rabbitmq", "orders"))...))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, int64(20), edge(t, m, "gw", "queue:orders").Observed.Calls)
			require.Equal(t, int64(20), edge(t, m, "queue:orders", "worker").Observed.Calls)
			require.Nil(t, edgeOrNil(m, "gw", "worker"))
			require.Equal(t, 80.0, m.Node("worker").Tiers.P50)
			require.Equal(t, 0.2, m.Node("worker").Observed.ErrorRate)
			require.Equal(t, 25.0, m.Node("queue:orders").Observed.LatencyP50MS)
		},
	}, {
		name: "otel pull consumer: a receive span linked to the publish, its process child does the work",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 20 {
				at := float64(i) * 200
				ptr, ctr := fmt.Sprintf("p%04d", i), fmt.Sprintf("q%04d", i)
				out = append(out,
					span(ptr, "1", "", "gw", "/event", server, at, 20),
					span(ptr, "2", "1", "gw", "orders publish", producer, at+5, 1, publish("rabbitmq", "orders")),
					span(ctr, "1", "", "worker", "orders receive", consumer, at+40, 0.05, func(s *cascade.Span) {
						s.MessagingSystem, s.MessagingOperation, s.Destination = "rabbitmq", cascade.MessagingReceive, "orders"
					}, link(ptr, "2")),
					span(ctr, "2", "1", "worker", "orders process", internal, at+40.1, 60, process("rabbitmq", "orders")))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, int64(20), res.Stats.Roots)
			require.Equal(t, 60.0, m.Node("worker").Tiers.P50)
			require.Equal(t, int64(20), m.Node("worker").Observed.Requests)
			require.Equal(t, 35.0, m.Node("queue:orders").Observed.LatencyP50MS)
		},
	}, {
		name: "an exchange: one publish, delivered from each bound queue, is a publish into each",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 20 {
				at := float64(i) * 200
				ptr := fmt.Sprintf("p%04d", i)
				out = append(out,
					span(ptr, "1", "", "gw", "/event", server, at, 20),
					span(ptr, "2", "1", "gw", "events publish", producer, at+5, 1, publish("rabbitmq", "events")))
				for k, q := range []string{"rights", "points", "sms"} {
					tr := fmt.Sprintf("e%04d-%d", i, k)
					out = append(out, span(tr, "1", "", q+"-svc", q+" process", consumer, at+10+float64(10*k), 30,
						process("rabbitmq", q), link(ptr, "2")))
				}
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Nil(t, m.Node("queue:events"), "the exchange holds no messages")
			require.Len(t, m.Entries, 1)
			for k, q := range []string{"rights", "points", "sms"} {
				qn := m.Node("queue:" + q)
				require.NotNil(t, qn, q)
				require.Empty(t, qn.Queue.DeadLetter, q)
				require.Equal(t, int64(20), edge(t, m, "gw", "queue:"+q).Observed.Calls, q)
				require.Equal(t, int64(20), edge(t, m, "queue:"+q, q+"-svc").Observed.Calls, q)
				require.Equal(t, float64(5+10*k), qn.Observed.LatencyP50MS, q)
				require.Equal(t, int64(20), queueInfo(t, res, "queue:"+q).Published, q)
			}
			require.Len(t, res.Queues, 3)
		},
	}, {
		name: "a root producer span still publishes",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 10 {
				at := float64(i) * 100
				ptr, ctr := fmt.Sprintf("r%02d", i), fmt.Sprintf("s%02d", i)
				out = append(out,
					span(ptr, "1", "", "cron", "jobs publish", producer, at, 2, publish("rabbitmq", "jobs")),
					span(ctr, "1", "", "runner", "jobs process", consumer, at+10, 40, process("rabbitmq", "jobs"), link(ptr, "1")))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, "cron", m.Entries[0].Node)
			require.Equal(t, int64(10), edge(t, m, "cron", "queue:jobs").Observed.Calls)
			require.Equal(t, int64(10), edge(t, m, "queue:jobs", "runner").Observed.Calls)
			require.Equal(t, 40.0, m.Node("runner").Tiers.P50)
		},
	}, {
		name: "requeue: failed messages come back at once, up to 3 deliveries",
		spans: otelFlows(40, 20, 0.5, func(i int) []bool {
			switch i % 4 {
			case 0:
				return []bool{true, false}
			case 1:
				return []bool{true, true, true}
			}
			return []bool{false}
		}),
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.Equal(t, cascade.RedeliverRequeue, q.Queue.Redelivery)
			require.Zero(t, q.Queue.DelayMS)
			require.Equal(t, 3, q.Queue.MaxDeliveries)
			require.Equal(t, cascade.Observed, q.Provenance["max_deliveries"])
			del := edge(t, res.Model, "queue:orders", "worker")
			// 10 messages × 2 + 10 × 3 + 20 × 1 deliveries, 10 + 20 of them again.
			require.Equal(t, int64(70), del.Observed.Calls)
			require.Equal(t, int64(30), del.Observed.Retries)
			require.Equal(t, round(30.0/70), del.Observed.RetryShare)
			require.Equal(t, round(40.0/70), del.Observed.ErrorRate)
			require.Equal(t, int64(40), res.Model.Node("queue:orders").Observed.Requests-30, "40 messages and 30 requeues")
			info := queueInfo(t, res, "queue:orders")
			require.Equal(t, graph.QueueInfo{
				Name: "queue:orders", Published: 40, Messages: 40, Deliveries: 70, Redelivered: 30, Failed: 40, Exhausted: 10,
				RedeliveryShare: round(30.0 / 70), RedeliveryDelayMS: []float64{0.5, 0.5, 0.5},
				DepthSource: graph.DepthSpans, Depth: info.Depth,
			}, info)
			require.NotEmpty(t, info.Depth)
		},
	}, {
		name: "delay queue: failed messages come back after a second; never exhausted",
		spans: otelFlows(40, 20, 1000, func(i int) []bool {
			if i%2 == 0 {
				return []bool{true, false}
			}
			return []bool{false}
		}),
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.Equal(t, cascade.RedeliverDelay, q.Queue.Redelivery)
			require.Equal(t, 1000.0, q.Queue.DelayMS)
			require.Equal(t, 2, q.Queue.MaxDeliveries)
			require.Equal(t, cascade.ObservedPeak, q.Provenance["max_deliveries"])
			require.Equal(t, cascade.Inferred, q.Provenance["delay_ms"])
		},
	}, {
		name: "broker series: consumers, prefetch, depth, bytes per message, memory",
		spans: concat(otelFlows(10, 20, 0, once), func() []cascade.Span {
			// a queue whose spans carry no size
			var out []cascade.Span
			for i := range 5 {
				tr := fmt.Sprintf("x%d", i)
				out = append(out, span(tr, "1", "", "gw", "audit publish", producer, float64(i), 1, publish("rabbitmq", "audit")))
			}
			return out
		}()),
		samples: []cascade.Sample{
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricConsumers, Labels: `queue="orders",vhost="/"`, Value: 6},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricPrefetch, Labels: `channel="c1"`, Value: 10},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricQueueDepth, Labels: `queue="orders",vhost="/"`, Value: 120},
			{Time: t0 + 1e9, Service: "rabbitmq", Kind: cascade.MetricQueueDepth, Labels: `queue="orders",vhost="/"`, Value: 30},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricQueueDepth, Labels: `queue="audit",vhost="/"`, Value: 10},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricQueueBytes, Labels: `queue="audit",vhost="/"`, Value: 2000},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricMemoryLimit, Value: 4e8},
			{Time: t0, Service: "rabbitmq", Kind: cascade.MetricBrokerMemory, Value: 9e7},
			{Time: t0 + 1e9, Service: "rabbitmq", Kind: cascade.MetricBrokerMemory, Value: 1.5e8},
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			q := m.Node("queue:orders")
			require.Equal(t, 6, q.Queue.Consumers)
			require.Equal(t, 10, q.Queue.Prefetch)
			require.Equal(t, cascade.Observed, q.Provenance["prefetch"])
			require.Equal(t, 120.0, q.Observed.QueueDepthMax)
			require.Equal(t, cascade.Observed, q.Provenance["observed.queue_depth_max"])
			info := queueInfo(t, res, "queue:orders")
			require.Equal(t, graph.DepthMetric, info.DepthSource)
			require.Equal(t, []graph.DepthPoint{{TimeNS: t0, Ready: 120}, {TimeNS: t0 + 1e9, Ready: 30}}, info.Depth)
			a := m.Node("queue:audit")
			require.Equal(t, 200.0, a.Queue.MessageBytes)
			require.Equal(t, cascade.Inferred, a.Provenance["message_bytes"])
			require.Len(t, m.Brokers, 1)
			require.Equal(t, 4e8, m.Brokers[0].MemoryWatermarkBytes)
			require.Equal(t, 9e7, m.Brokers[0].BaseBytes)
		},
	}, {
		name: "dead letters: messages published to orders delivered from orders.dlq",
		spans: concat(otelFlows(10, 20, 0, func(int) []bool { return []bool{true} }), func() []cascade.Span {
			var out []cascade.Span
			for i := range 10 {
				tr := fmt.Sprintf("d%02d", i)
				out = append(out, span(tr, "1", "", "janitor", "orders.dlq process", consumer, float64(i)*200+100, 5,
					process("rabbitmq", "orders.dlq"), link(fmt.Sprintf("p%04d", i), "2"), redelivery(1)))
			}
			return out
		}()),
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.Equal(t, "queue:orders.dlq", q.Queue.DeadLetter)
			require.Equal(t, cascade.Observed, q.Provenance["dead_letter"])
			require.NotNil(t, res.Model.Node("queue:orders.dlq").Queue)
			require.Len(t, res.Model.Entries, 1, "the dead-letter queue is fed by orders, not from outside")
			require.Zero(t, queueInfo(t, res, "queue:orders.dlq").Redelivered, "x-death counts deliveries from orders")
			require.Equal(t, int64(10), queueInfo(t, res, "queue:orders.dlq").Messages)
		},
	}, {
		name: "dead letters: the consumer publishes failures to a queue named so",
		spans: func() []cascade.Span {
			out := otelFlows(10, 20, 0, once)
			for i := range 10 {
				tr := fmt.Sprintf("c%04d-0", i)
				out = append(out, span(tr, "9", "1", "worker", "orders-dead-letter publish", producer, float64(i)*200+40, 1, publish("rabbitmq", "orders-dead-letter")))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.Equal(t, "queue:orders-dead-letter", q.Queue.DeadLetter)
			require.Equal(t, cascade.Inferred, q.Provenance["dead_letter"])
		},
	}, {
		name: "dead letters: a queue fed only by failed processing",
		spans: func() []cascade.Span {
			out := otelFlows(10, 20, 0, func(i int) []bool { return []bool{i%2 == 0} })
			for i := 0; i < 10; i += 2 {
				tr := fmt.Sprintf("c%04d-0", i)
				out = append(out, span(tr, "9", "1", "worker", "parked publish", producer, float64(i)*200+40, 1, publish("rabbitmq", "parked-orders")),
					span(tr, "8", "1", "worker", "audit publish", producer, float64(i)*200+41, 1, publish("rabbitmq", "audit")))
			}
			for i := 1; i < 10; i += 2 {
				tr := fmt.Sprintf("c%04d-0", i)
				out = append(out, span(tr, "8", "1", "worker", "audit publish", producer, float64(i)*200+41, 1, publish("rabbitmq", "audit")))
			}
			for i := range out {
				if out[i].Destination == "parked-orders" {
					out[i].Destination = "orders-later"
				}
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			q := res.Model.Node("queue:orders")
			require.Equal(t, "queue:orders-later", q.Queue.DeadLetter, "not queue:audit, fed by successes too")
			require.Equal(t, cascade.Inferred, q.Provenance["dead_letter"])
		},
	}, {
		name: "messages from an untraced producer enter at the queue",
		spans: func() []cascade.Span {
			var out []cascade.Span
			for i := range 10 {
				tr := fmt.Sprintf("u%02d", i)
				out = append(out, span(tr, "1", "", "worker", "orders process", consumer, float64(i)*100, 30, process("rabbitmq", "orders")))
			}
			return out
		}(),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, "queue:orders", m.Entries[0].Node)
			require.Equal(t, 1.0, m.Entries[0].Share)
			require.Equal(t, 30.0, m.Node("worker").Tiers.P50)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sortByTrace(tc.spans)
			res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(tc.spans), graph.Samples(tc.samples))
			require.NoError(t, err)
			data, err := cascade.EncodeModel(res.Model)
			require.NoError(t, err)
			_, err = cascade.DecodeModel(data)
			require.NoError(t, err, "the model must validate")
			tc.check(t, res)
		})
	}
}

// sortByTrace orders spans by trace id, as a dataset comes: a consumer's
// trace may come before its producer's.
func sortByTrace(spans []cascade.Span) {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].TraceID < spans[j].TraceID })
}

func round(v float64) float64 { return float64(int64(v*1e6+0.5)) / 1e6 }

func edgeOrNil(m *cascade.Model, from, to string) *cascade.Edge {
	for i := range m.Edges {
		if m.Edges[i].From == from && m.Edges[i].To == to {
			return &m.Edges[i]
		}
	}
	return nil
}

func queueInfo(t *testing.T, res *graph.Result, name string) graph.QueueInfo {
	t.Helper()
	for _, q := range res.Queues {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("no queue %s", name)
	return graph.QueueInfo{}
}

// TestQueueGolden renders a model with queues (OTel flows with requeues
// and a dead-letter queue, broker series) as JSON, table and DOT, to pin
// every queue field and its provenance.
func TestQueueGolden(t *testing.T) {
	spans := concat(
		otelFlows(30, 20, 0.5, func(i int) []bool {
			switch i % 3 {
			case 0:
				return []bool{true, false}
			case 1:
				return []bool{true, true, true}
			}
			return []bool{false}
		}),
		braveFlows(20, 40, 5),
	)
	for i := range 30 {
		if i%3 == 1 {
			tr := fmt.Sprintf("c%04d-2", i)
			spans = append(spans, span(tr, "9", "1", "worker", "orders.dlq publish", producer, float64(i)*200+60, 1, publish("rabbitmq", "orders.dlq")))
		}
	}
	for i := range spans {
		if spans[i].Destination == "orders" && spans[i].MessagingSystem == "kafka" {
			spans[i].Destination = "events"
		}
	}
	sortByTrace(spans)
	samples := []cascade.Sample{
		{Time: t0, Service: "rabbitmq", Kind: cascade.MetricConsumers, Labels: `queue="orders",vhost="/"`, Value: 2},
		{Time: t0, Service: "rabbitmq", Kind: cascade.MetricQueueDepth, Labels: `queue="orders",vhost="/"`, Value: 3},
		{Time: t0 + 2e9, Service: "rabbitmq", Kind: cascade.MetricQueueDepth, Labels: `queue="orders",vhost="/"`, Value: 7},
		{Time: t0, Service: "rabbitmq", Kind: cascade.MetricMemoryLimit, Value: 4e8},
		{Time: t0, Service: "rabbitmq", Kind: cascade.MetricBrokerMemory, Value: 9e7},
	}
	res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(spans), graph.Samples(samples))
	require.NoError(t, err)
	data, err := cascade.EncodeModel(res.Model)
	require.NoError(t, err)
	_, err = cascade.DecodeModel(data)
	require.NoError(t, err)
	testutil.Golden(t, "queues.json", data)
	var table, dot strings.Builder
	require.NoError(t, graph.WriteTable(&table, res))
	require.NoError(t, graph.WriteDOT(&dot, res.Model))
	testutil.Golden(t, "queues.table", []byte(table.String()))
	testutil.Golden(t, "queues.dot", []byte(dot.String()))
}

// TestQueuesRandom builds models from random messaging spans (roles,
// links, message ids, redelivery counts, parents in and out of the
// trace, consumer groups): Build must neither fail nor panic, and the
// model must validate.
func TestQueuesRandom(t *testing.T) {
	ops := []string{"", cascade.MessagingPublish, cascade.MessagingReceive, cascade.MessagingProcess, cascade.MessagingSettle, cascade.MessagingCreate}
	kinds := []cascade.SpanKind{server, client, producer, consumer, internal, none}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var spans []cascade.Span
		for tr := range 30 {
			trace := fmt.Sprintf("t%02d", tr)
			n := 1 + rng.IntN(6)
			for i := range n {
				parent := ""
				if i > 0 && rng.IntN(5) > 0 {
					parent = fmt.Sprintf("%x", 1+rng.IntN(n+1)) // sometimes missing, sometimes itself
				}
				s := span(trace, fmt.Sprintf("%x", 1+i), parent, []string{"a", "b", "c"}[rng.IntN(3)], "op",
					kinds[rng.IntN(len(kinds))], float64(rng.IntN(1000)), float64(rng.IntN(50)))
				if rng.IntN(3) > 0 {
					s.MessagingSystem = []string{"rabbitmq", "kafka", ""}[rng.IntN(3)]
					s.MessagingOperation = ops[rng.IntN(len(ops))]
					s.Destination = []string{"q1", "q2", "q1.dlq", ""}[rng.IntN(4)]
					s.ConsumerGroup = []string{"", "g1", "g2"}[rng.IntN(3)]
					if rng.IntN(2) == 0 {
						s.MessageID = fmt.Sprintf("m%d", rng.IntN(20))
					}
					if rng.IntN(2) == 0 {
						s.Links = []cascade.SpanLink{{TraceID: fmt.Sprintf("t%02d", rng.IntN(30)), SpanID: fmt.Sprintf("%x", 1+rng.IntN(6))}}
					}
					s.Redelivery = int32(rng.IntN(3))
					s.MessageBytes = int64(rng.IntN(1000))
				}
				if rng.IntN(4) == 0 {
					s.Status = cascade.StatusError
				}
				spans = append(spans, s)
			}
		}
		samples := []cascade.Sample{
			{Time: t0, Kind: cascade.MetricQueueDepth, Labels: `queue="q1"`, Value: float64(rng.IntN(10))},
			{Time: t0, Kind: cascade.MetricQueueBytes, Labels: `queue="q1"`, Value: float64(rng.IntN(1000))},
			{Time: t0, Kind: cascade.MetricPrefetch, Labels: `topic="q2"`, Value: 5},
			{Time: t0, Kind: cascade.MetricConsumers, Labels: `queue="q2`, Value: 5},
		}
		for _, level := range []graph.Level{graph.LevelService, graph.LevelOperation} {
			res, err := graph.Build(t.Context(), graph.Config{Level: level}, graph.Spans(spans), graph.Samples(samples))
			require.NoError(t, err, "seed %d", seed)
			data, err := cascade.EncodeModel(res.Model)
			require.NoError(t, err, "seed %d", seed)
			_, err = cascade.DecodeModel(data)
			require.NoError(t, err, "seed %d: the model must validate", seed)
		}
	}
}
