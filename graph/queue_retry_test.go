package graph_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// Retry modes of retryFlows: how a consumer retries a message it failed.
const (
	retryRepublish = "republish" // ack + publish the message again to its own queue (testdata/notify before)
	retryDelay     = "delay"     // ack + publish it to <queue>.delay, a TTL queue dead-lettered back (after)
	retryNew       = "new"       // publish a new message (another id, no delivery count) to its own queue
)

// retryFlows returns n flows shaped as testdata/notify's: a gateway
// publishes message i to queue "rights" (waitMS before its delivery: a
// deep queue); the consumer, in a trace of its own linked to the
// publish, processes it for 40 ms; a delivery that fails publishes the
// message again inside its processing span, 1 ms before its end (mode),
// and the next delivery's span links to that publish. In delay mode the
// message comes back ttlMS after the republish, then waits waitMS as
// every message does. fails(i) is how many deliveries of message i fail
// (the last one tried fails too when maxDeliveries is reached).
func retryFlows(n int, mode string, waitMS, ttlMS float64, maxDeliveries int, fails func(i int) int) []cascade.Span {
	var out []cascade.Span
	for i := range n {
		at := float64(i) * 100
		gw, id := fmt.Sprintf("g%04d", i), fmt.Sprintf("m%d", i)
		out = append(out,
			span(gw, "1", "", "gateway", "POST /events", server, at, 2),
			span(gw, "2", "1", "gateway", "publish rights", producer, at+0.5, 0.2,
				publish("rabbitmq", "rights"), messageID(id), msgBytes(8192)))
		linkTr, linkID := gw, "2"
		ready := at + 0.7 // the message in the queue
		f := fails(i)
		cnt := int32(0) // the message's earlier deliveries
		for k := range maxDeliveries {
			tr := fmt.Sprintf("c%04d-%d", i, k)
			start := ready + waitMS
			o := opts(process("rabbitmq", "rights"), link(linkTr, linkID), messageID(id),
				instance(fmt.Sprintf("w%d", i%2)), redelivery(cnt))
			fail := k < f
			if fail {
				o = append(o, failed("timeout"))
			}
			out = append(out, span(tr, "1", "", "rights", "process rights", consumer, start, 40, o...))
			if !fail {
				break
			}
			if k+1 == maxDeliveries {
				break // the consumer gives up: no retry published
			}
			pubAt := start + 40 - 1
			cnt++
			switch mode {
			case retryRepublish:
				out = append(out, span(tr, "2", "1", "rights", "publish rights", producer, pubAt, 0.2,
					publish("rabbitmq", "rights"), messageID(id), msgBytes(8192), redelivery(cnt)))
				ready = pubAt + 0.2
			case retryDelay:
				out = append(out, span(tr, "2", "1", "rights", "publish rights.delay", producer, pubAt, 0.2,
					publish("rabbitmq", "rights.delay"), messageID(id), msgBytes(8192), redelivery(cnt)))
				ready = pubAt + 0.2 + ttlMS
			case retryNew:
				out = append(out, span(tr, "2", "1", "rights", "publish rights", producer, pubAt, 0.2,
					publish("rabbitmq", "rights"), messageID(fmt.Sprintf("%s-next%d", id, k)), msgBytes(8192)))
				ready = pubAt + 0.2
				id, cnt = fmt.Sprintf("%s-next%d", id, k), 0
			}
			linkTr, linkID = tr, "2"
		}
	}
	return out
}

// TestQueueRetries holds graph to how a consumer's retries read: ack +
// republish into the same queue and a retry through a delay queue are the
// queue's redeliveries (no publish edge from the consumer to its own
// queue, no cycle), with the delay measured from the failure to the
// message back in the queue, not to its next delivery (which adds the
// queue's wait); a new message the consumer publishes to its own queue
// stays a publish edge.
func TestQueueRetries(t *testing.T) {
	// Message i fails i%4 times: 0 to 3 retries, the 4th delivery the
	// last (maxDeliveries 4); in delay mode at most 1 retry.
	fourth := func(i int) int { return i % 4 }
	tests := []struct {
		name          string
		spans         []cascade.Span
		redelivery    string
		delayMS       float64 // want, within 1%
		maxDeliveries int
		redelivered   int64
		republished   int64
		viaDelay      int64
		delayQueue    string
		selfEdge      bool // consumer → queue:rights
	}{{
		name: "ack + republish into the same queue, 300 ms deep: back at the tail at once",
		// 40 messages: 10 each fail 0..3 times; 3 of them per message of
		// 3 failures (4 deliveries: the last fails too, given up).
		spans:      retryFlows(40, retryRepublish, 300, 0, 4, fourth),
		redelivery: cascade.RedeliverDelay, delayMS: 0.001, maxDeliveries: 4,
		redelivered: 10*1 + 10*2 + 10*3, republished: 60,
	}, {
		name: "a delay queue: TTL 1500 ms, dead-lettered back, 400 ms deep",
		spans: retryFlows(40, retryDelay, 400, 1500, 2, func(i int) int {
			return i % 3 // 0, 1 (retried, ok) or 2 (retried, failed for good)
		}),
		redelivery: cascade.RedeliverDelay, delayMS: 1500, maxDeliveries: 2,
		redelivered: 26, viaDelay: 26, delayQueue: "queue:rights.delay",
	}, {
		name:       "a new message published to the consumer's own queue is a publish edge",
		spans:      retryFlows(40, retryNew, 300, 0, 2, func(i int) int { return i % 2 }),
		redelivery: cascade.RedeliverNone, maxDeliveries: 0,
		selfEdge: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sortByTrace(tc.spans)
			res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(tc.spans), nil)
			require.NoError(t, err)
			data, err := cascade.EncodeModel(res.Model)
			require.NoError(t, err)
			_, err = cascade.DecodeModel(data)
			require.NoError(t, err, "the model must validate")
			m := res.Model

			q := m.Node("queue:rights")
			require.NotNil(t, q)
			require.Equal(t, tc.redelivery, q.Queue.Redelivery)
			if tc.delayMS > 0 {
				require.InEpsilon(t, tc.delayMS, q.Queue.DelayMS, 0.01, "delay from the failure to the message back in the queue")
				require.Equal(t, cascade.Inferred, q.Provenance["delay_ms"])
			} else {
				require.Zero(t, q.Queue.DelayMS)
			}
			require.Equal(t, tc.maxDeliveries, q.Queue.MaxDeliveries)
			require.Empty(t, q.Queue.DeadLetter, "a retry route is no dead-letter route")
			require.Nil(t, m.Node("queue:rights.delay"), "the delay queue is the redelivery policy, not a node")
			require.Nil(t, edgeOrNil(m, "rights", "queue:rights.delay"))
			require.Equal(t, tc.selfEdge, edgeOrNil(m, "rights", "queue:rights") != nil, "publish edge rights → queue:rights")
			require.Equal(t, tc.selfEdge, len(res.Cycles) > 0, "cycles %v", res.Cycles)
			require.Equal(t, int64(40), edge(t, m, "gateway", "queue:rights").Observed.Calls)

			info := queueInfo(t, res, "queue:rights")
			if !tc.selfEdge {
				require.Equal(t, tc.redelivered, info.Redelivered)
			}
			require.Equal(t, tc.republished, info.Republished)
			require.Equal(t, tc.viaDelay, info.ViaDelay)
			require.Equal(t, tc.delayQueue, info.DelayQueue)
		})
	}
}
