package graph_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
	"cascade/internal/brokersim"
)

// brokersimDataset writes a brokersim capture (traces and the broker's
// scrapes) to a temporary directory and ingests it as `cascade ingest`
// does; it returns the dataset's directory.
func brokersimDataset(tb testing.TB, c *brokersim.Capture, format string) string {
	tb.Helper()
	dir := tb.TempDir()
	traces := filepath.Join(dir, format+".json")
	metrics := filepath.Join(dir, "rabbitmq.prom")
	require.NoError(tb, os.WriteFile(traces, c.Traces, 0o644))
	require.NoError(tb, os.WriteFile(metrics, c.Metrics, 0o644))
	cfg := ingest.DefaultConfig()
	cfg.Traces, cfg.Metrics = []string{traces}, []string{metrics}
	cfg.Out = filepath.Join(dir, "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(tb, err)
	return cfg.Out
}

// buildWithMetrics builds the model of a dataset from its spans and its
// metrics.
func buildWithMetrics(tb testing.TB, dir string) *graph.Result {
	tb.Helper()
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), readSpans(dir),
		func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(dir, fn) })
	require.NoError(tb, err)
	data, err := cascade.EncodeModel(res.Model)
	require.NoError(tb, err)
	_, err = cascade.DecodeModel(data)
	require.NoError(tb, err, "the model must validate")
	return res
}

// lognormalP50Cut returns the median of a mixture: with probability 1−f a
// lognormal of median m (σ = 0.5), with probability f the same draw
// halved (brokersim's consumer whose synchronous call failed skips the
// second half of its own work).
func lognormalP50Cut(m, f float64) float64 {
	cdf := func(x, med float64) float64 { return 0.5 * (1 + math.Erf(math.Log(x/med)/(0.5*math.Sqrt2))) }
	lo, hi := m/4, 4*m
	for range 100 {
		mid := (lo + hi) / 2
		if (1-f)*cdf(mid, m)+f*cdf(mid, m/2) < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TestBrokersim builds the model of every brokersim scenario, in OTLP and
// as Brave reports it to Zipkin, and holds each queue's parameters to what
// the simulator measured in the capture (brokersim.QueueTruth), within
// 10% unless said otherwise.
//
// Not asserted, because the capture does not hold them: MaxLength and
// Overflow (queue arguments, invisible in traces and in the plugin's
// series; the capture shows only their effects), Prefetch (the plugin's
// per-queue series carry no prefetch and the spans none either), and the
// dead-letter route: RabbitMQ dead-letters through the queue's DLX
// inside the broker, which leaves no span, so the dead-letter queue shows
// only as a series of the broker's (orders.dlq) that graph ties to no
// queue node. Brave records no message size, so MessageBytes is held
// only in OTLP.
func TestBrokersim(t *testing.T) {
	for _, format := range []string{brokersim.OTLP, brokersim.ZipkinBrave} {
		for _, name := range brokersim.Names() {
			t.Run(format+"/"+name, func(t *testing.T) {
				c, err := brokersim.Generate(brokersim.Config{Scenario: name, Format: format})
				require.NoError(t, err)
				tr := c.Truth
				res := buildWithMetrics(t, brokersimDataset(t, c, format))
				m := res.Model

				// The publish rate: the gateway's root requests over the
				// time they arrived in.
				require.Len(t, m.Entries, 1)
				require.InEpsilon(t, tr.MeasuredRatePerS, m.Entries[0].RatePerSec, 0.10, "entry rate")
				require.Equal(t, "gateway", m.Entries[0].Node)

				require.Len(t, m.Brokers, 1)
				br := m.Brokers[0]
				require.Equal(t, float64(tr.Broker.WatermarkBytes), br.MemoryWatermarkBytes, "watermark")
				require.Equal(t, cascade.Observed, br.Provenance["memory_watermark_bytes"])
				// The least memory scraped: the base plus the few
				// messages held at that scrape.
				require.InEpsilon(t, float64(tr.Broker.BaseBytes), br.BaseBytes, 0.10, "base bytes")

				for _, q := range tr.Queues {
					what := q.Name
					qn := m.Node("queue:" + q.Name)
					require.NotNil(t, qn, what)
					require.NotNil(t, qn.Queue, what)
					mq := qn.Queue
					pub := edge(t, m, "gateway", qn.Name)
					del := edge(t, m, qn.Name, q.Consumer)
					info := queueInfo(t, res, qn.Name)
					cons := m.Node(q.Consumer)
					require.NotNil(t, cons, q.Consumer)
					t.Logf("%s: consumers %d (%d) prefetch %d (%d, not in capture) redelivery %s (%s) delay %g (%g) "+
						"max deliveries %d (%d) bytes %g (%d) service mean %.3f (%.3f) error rate %.4f (%.4f) "+
						"redelivery share %.4f (%.4f) dead letter %q (%q)",
						what, mq.Consumers, q.Consumers, mq.Prefetch, q.Prefetch, mq.Redelivery, q.Redelivery,
						mq.DelayMS, q.RedeliveryDelayMS, mq.MaxDeliveries, q.MaxDeliveries, mq.MessageBytes,
						q.MessageBytes, cons.Service.MeanValue(), q.ServiceMeanMS, cons.Observed.ErrorRate,
						q.FailureShare, info.RedeliveryShare, q.RedeliveryShare, mq.DeadLetter, q.DeadLetter)

					require.Equal(t, "rabbitmq", mq.System, what)
					require.Equal(t, q.Consumers, mq.Consumers, "%s consumers", what)
					require.Equal(t, q.Outcome.Published, pub.Observed.Calls, "%s publishes", what)
					// The gateway waits for every confirm, but the traces
					// show it only where the broker refused a publish:
					// the publish span fails and so does the request.
					// That failure is the publish's, not the gateway's.
					if q.Outcome.Rejected > 0 {
						require.False(t, pub.Async, "%s: a refused publish was confirmed", what)
						require.InDelta(t, float64(q.Outcome.Rejected)/float64(q.Outcome.Published), pub.Observed.ErrorRate, 1e-6, what)
					} else {
						require.True(t, pub.Async, "%s: no refusal, no sign of a confirm", what)
					}
					require.Zero(t, m.Node("gateway").Overload.Base, "the gateway fails only through its publishes")
					require.Equal(t, q.Outcome.Delivered, del.Observed.Calls, "%s deliveries", what)
					require.Equal(t, q.Outcome.Delivered, info.Deliveries, what)
					require.Equal(t, q.Outcome.Redelivered, info.Redelivered, what)
					if format == brokersim.OTLP {
						require.Equal(t, float64(q.MessageBytes), mq.MessageBytes, "%s message bytes", what)
						require.Equal(t, cascade.Observed, qn.Provenance["message_bytes"], what)
					}

					// The consumer's own work per delivery, as measured.
					// points-task calls rights-api in the middle of it
					// (the measured process spans include the call) and,
					// when the call fails, skips the rest: its own time
					// is the configured work with the failed share halved.
					meanMS, p50MS := q.MeasuredServiceMeanMS, q.MeasuredServiceP50MS
					if q.Callee != "" {
						f := q.FailureShare
						meanMS = q.ServiceMeanMS * (1 - f/2)
						p50MS = lognormalP50Cut(q.ServiceP50MS, f)
						callee := m.Node(q.Callee)
						require.NotNil(t, callee, q.Callee)
						require.InEpsilon(t, q.CalleeP50MS*math.Exp(0.125), callee.Service.MeanValue(), 0.10, "%s service mean", q.Callee)
						require.InDelta(t, q.CalleeFailP, callee.Overload.Base, 0.1*q.CalleeFailP+0.01, "%s failure probability", q.Callee)
						require.Zero(t, cons.Overload.Base, "%s fails only through its call", q.Consumer)
						require.Equal(t, 1.0, edge(t, m, q.Consumer, q.Callee).Propagation, "a failed call fails the delivery")
					} else {
						require.InDelta(t, q.FailureShare, cons.Overload.Base, 0.1*q.FailureShare+0.002, "%s failure probability", what)
					}
					require.InEpsilon(t, meanMS, cons.Service.MeanValue(), 0.10, "%s consumer service mean", what)
					require.NotNil(t, cons.Tiers, what)
					require.InEpsilon(t, p50MS, cons.Tiers.P50, 0.10, "%s consumer service p50", what)
					require.InDelta(t, q.FailureShare, cons.Observed.ErrorRate, 0.1*q.FailureShare+0.002, "%s failure share", what)

					// Redelivery: the share, the policy and the wait
					// before a redelivery.
					require.InDelta(t, q.RedeliveryShare, info.RedeliveryShare, 0.1*q.RedeliveryShare+0.002, "%s redelivery share", what)
					require.InDelta(t, q.RedeliveryShare, del.Observed.RetryShare, 0.1*q.RedeliveryShare+0.002, what)
					switch {
					case q.Outcome.Redelivered > 0:
						require.Equal(t, q.Redelivery, mq.Redelivery, "%s redelivery", what)
						require.Equal(t, graph.EvidenceRedelivery, del.Observed.RetryEvidence, what)
						if q.Redelivery == cascade.RedeliverDelay {
							require.InEpsilon(t, q.RedeliveryDelayMS, mq.DelayMS, 0.10, "%s delay before a redelivery", what)
							require.Equal(t, cascade.Inferred, qn.Provenance["delay_ms"], what)
						} else {
							require.Zero(t, mq.DelayMS, what)
							// Requeued at the head: delivered again within
							// a millisecond.
							require.Less(t, info.RedeliveryDelayMS[0], 1.0, what)
						}
					case q.Outcome.Delivered > q.Outcome.Acked && q.Redelivery == cascade.RedeliverNone:
						require.Equal(t, cascade.RedeliverNone, mq.Redelivery, "%s: failures never redelivered", what)
					}

					// The delivery limit is seen where some message ran
					// out of deliveries; else the most deliveries seen is
					// a lower bound of it.
					switch {
					case q.MaxDeliveries > 0 && q.Outcome.DeadLettered > 0:
						require.Equal(t, q.MaxDeliveries, mq.MaxDeliveries, "%s max deliveries", what)
						require.Equal(t, cascade.Observed, qn.Provenance["max_deliveries"], what)
						require.Equal(t, q.Outcome.DeadLettered, info.Exhausted, "%s exhausted messages", what)
					case q.Outcome.Redelivered > 0:
						require.Equal(t, cascade.ObservedPeak, qn.Provenance["max_deliveries"], what)
						if q.MaxDeliveries > 0 {
							require.LessOrEqual(t, mq.MaxDeliveries, q.MaxDeliveries, what)
						}
					default:
						require.Zero(t, mq.MaxDeliveries, what)
					}
					require.Empty(t, mq.DeadLetter, "%s: the broker's dead-lettering leaves no span", what)

					// Ready messages: the broker's series, at most the
					// peak the simulator saw.
					require.Equal(t, graph.DepthMetric, info.DepthSource, what)
					require.LessOrEqual(t, qn.Observed.QueueDepthMax, float64(q.PeakReady), what)
					if q.MaxLength > 0 {
						// Full for seconds, the queue is scraped at or a few
						// messages under its bound.
						require.InEpsilon(t, float64(q.MaxLength), qn.Observed.QueueDepthMax, 0.10, "%s: the bounded queue fills", what)
					}
				}
			})
		}
	}
}

// TestEntryRateArrivalWindow checks that an entry's rate counts its root
// requests over the time they arrived in, not over the work they set off
// after the last one ended: 20 requests 200 ms apart, each publishing a
// message that a worker takes 3 s later, arrive at 5/s, while the
// capture lasts 7 s. The last request's end does not bound the
// arrivals either: held 2 s by a blocked publish, it still arrived at
// 3.8 s.
func TestEntryRateArrivalWindow(t *testing.T) {
	spans := otelFlows(20, 100, 0, once)
	for i := range spans {
		if spans[i].Service == "worker" {
			spans[i].Start += 3e9
		}
	}
	for _, held := range []bool{false, true} {
		if held {
			for i := range spans {
				if spans[i].TraceID == "p0019" && spans[i].Service == "gw" {
					spans[i].Duration += 2e9
				}
			}
		}
		res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(spans), nil)
		require.NoError(t, err)
		m := res.Model
		require.Greater(t, m.Source.EndNS-m.Source.StartNS, int64(6e9), "the capture runs on after the arrivals")
		require.Len(t, m.Entries, 1)
		// 20 roots from 0 to 3.8 s, one 200 ms gap past the last.
		require.InDelta(t, 5.0, m.Entries[0].RatePerSec, 1e-6, "last request held: %v", held)
	}
}

// TestRefusedPublish checks that a publish the broker refused, whose
// request failed with it, is the request's failed call, not a failure of
// its own, and makes the edge a confirmed publish: every fourth of 40
// gateway requests has its publish nacked and fails.
func TestRefusedPublish(t *testing.T) {
	spans := otelFlows(40, 100, 0, once)
	for i := range spans {
		s := &spans[i]
		if n := (s.Start - t0) / 200e6; n%4 == 0 && s.Service == "gw" {
			s.Status, s.ErrorType = cascade.StatusError, "basic.nack"
		}
	}
	res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(spans), nil)
	require.NoError(t, err)
	m := res.Model
	pub := edge(t, m, "gw", "queue:orders")
	require.False(t, pub.Async, "the gateway learnt of the nacks: it waits for confirms")
	require.Equal(t, 0.25, pub.Observed.ErrorRate)
	require.Zero(t, m.Node("gw").Overload.Base, "the gateway fails only through its publishes")
	require.Equal(t, 0.25, m.Node("gw").Observed.ErrorRate)
	require.Equal(t, int64(30), queueInfo(t, res, "queue:orders").Published, "a refused publish enqueues nothing")
}
