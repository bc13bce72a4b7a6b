package graph_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
	"cascade/ingest"
)

// mqReadData holds the captures of issue 37's messaging misreadings.
const mqReadData = "../testdata/mq-read"

// mqReadDataset ingests traces and metrics files of testdata/mq-read as
// `cascade ingest` does and returns the dataset's directory.
func mqReadDataset(tb testing.TB, traces, metrics []string) string {
	tb.Helper()
	cfg := ingest.DefaultConfig()
	for _, f := range traces {
		cfg.Traces = append(cfg.Traces, filepath.Join(mqReadData, f))
	}
	for _, f := range metrics {
		cfg.Metrics = append(cfg.Metrics, filepath.Join(mqReadData, f))
	}
	cfg.Out = filepath.Join(tb.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(tb, err)
	return cfg.Out
}

// TestMessagingReadRight reads real producers' captures of fan-out and
// pub-sub (issue 37, item 6): each row is one way the queues were misread.
func TestMessagingReadRight(t *testing.T) {
	const sharedID = "notify-shared-id.otlp.json.gz"
	tests := []struct {
		name    string
		traces  []string
		metrics []string
		check   func(t *testing.T, res *graph.Result)
	}{{
		// testdata/notify's gateway stamps the event's id on the copy
		// it publishes to each task queue; event 350's gateway trace is
		// not in the capture, so its deliveries find their publish by
		// the id alone, and rights' and points' retries of it (the same
		// id, published again into their own queues) were taken for the
		// publish of every copy: a dead-letter route from rights to the
		// other queues.
		name:   "a message id is joined per destination: the copies of one event are fan-out",
		traces: []string{sharedID},
		check: func(t *testing.T, res *graph.Result) {
			for _, q := range []string{"log", "points", "push", "rights", "sms"} {
				n := res.Model.Node("queue:" + q)
				require.NotNil(t, n, q)
				require.Empty(t, n.Queue.DeadLetter, "queue:%s: no message moves between the task queues", q)
				info := queueInfo(t, res, "queue:"+q)
				require.Equal(t, int64(3), info.Messages, "queue:%s: events 340, 350, 360", q)
				want := int64(0)
				if q == "rights" || q == "points" {
					want = 1 // event 350's retry
				}
				require.Equal(t, want, info.Redelivered, "queue:%s", q)
			}
		},
	}, {
		// RabbitMQ 3.10's aggregated /metrics, 41 consumers of prefetch 1
		// on four queues, each on a channel of its own: the plugin sums
		// the channels' prefetch (41) as it sums their consumers (41).
		name:    "prefetch from the aggregated /metrics is one consumer's: the sum over channels over the consumers",
		traces:  []string{sharedID},
		metrics: []string{"rabbitmq-aggregated.prom", "rabbitmq-detailed.prom"},
		check: func(t *testing.T, res *graph.Result) {
			for q, consumers := range map[string]int{"rights": 12, "points": 12, "sms": 9, "push": 8} {
				n := res.Model.Node("queue:" + q)
				require.Equal(t, 1, n.Queue.Prefetch, "queue:%s", q)
				require.Equal(t, cascade.Inferred, n.Provenance["prefetch"], "queue:%s", q)
				require.Equal(t, consumers, n.Queue.Consumers, "queue:%s", q)
			}
		},
	}, {
		// Per object (/metrics/per-object), each channel's prefetch: 5 on
		// rights' and points' consumers, 1 on sms' and push's. The
		// channels' deliveries name their queue.
		name:    "prefetch per consumer channel, per queue",
		traces:  []string{sharedID},
		metrics: []string{"rabbitmq-per-object.prom"},
		check: func(t *testing.T, res *graph.Result) {
			for q, pf := range map[string]int{"rights": 5, "points": 5, "sms": 1, "push": 1} {
				n := res.Model.Node("queue:" + q)
				require.Equal(t, pf, n.Queue.Prefetch, "queue:%s", q)
				require.Equal(t, cascade.Observed, n.Provenance["prefetch"], "queue:%s", q)
			}
		},
	}, {
		// Brave's kafka-clients: the orders service sends each order to
		// the topic; billing and shipping, two applications and so two
		// consumer groups, each poll every order (Brave tags poll spans
		// with kafka.topic only).
		name:   "two Kafka consumer groups on one topic each get every message: fan-out, not redelivery",
		traces: []string{"brave-kafka-two-groups.json"},
		check: func(t *testing.T, res *graph.Result) {
			require.Nil(t, res.Model.Node("queue:orders"))
			for _, g := range []string{"billing", "shipping"} {
				q := "queue:orders/" + g
				require.NotNil(t, res.Model.Node(q), q)
				info := queueInfo(t, res, q)
				require.Equal(t, int64(3), info.Published, q)
				require.Equal(t, int64(3), info.Messages, q)
				require.Zero(t, info.Redelivered, q)
				e := edgeOrNil(res.Model, q, g)
				require.NotNil(t, e, q)
				require.Equal(t, 1.0, e.Observed.FanOutMean, q)
			}
		},
	}, {
		// A batch publisher as the messaging conventions' batch
		// publishing has it: each POST /events creates its message
		// ("create events"), a flush publishes four at a time in a
		// trace of its own, linking to their creation contexts; a
		// POST /events/bulk creates two and publishes them itself.
		name:   "a batch publisher's links join the events it carries: no extra roots, no extra messages",
		traces: []string{"batch-publish.otlp.json.gz"},
		check: func(t *testing.T, res *graph.Result) {
			require.Equal(t, int64(9), res.Stats.Roots, "the eight POST /events and the bulk one")
			require.Len(t, res.Model.Entries, 1)
			require.Equal(t, "api", res.Model.Entries[0].Node)
			require.Equal(t, "POST /events", res.Model.Entries[0].Operation)
			info := queueInfo(t, res, "queue:events")
			require.Equal(t, int64(10), info.Published)
			require.Equal(t, int64(10), info.Messages)
			require.Zero(t, info.Redelivered)
			e := edgeOrNil(res.Model, "api", "queue:events")
			require.NotNil(t, e)
			require.Equal(t, 2.0, e.Observed.FanOutMax, "the bulk request's two messages, its publish no third")
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := buildWithMetrics(t, mqReadDataset(t, tc.traces, tc.metrics))
			tc.check(t, res)
		})
	}
}
