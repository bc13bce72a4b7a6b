package brokersim

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"slices"
	"strings"
	"testing"

	"cascade"
	"cascade/ingest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// seed is the seed of the closed-form, ingest and recovery tests; try
// others with go test ./internal/brokersim -args -seed N.
var seed = flag.Uint64("seed", 1, "seed of the captures under test")

func generate(t *testing.T, name string, sd uint64) *Capture {
	t.Helper()
	c, err := Generate(Config{Scenario: name, Seed: sd})
	require.NoError(t, err, "scenario %s seed %d", name, sd)
	return c
}

func truthJSON(t *testing.T, c *Capture) []byte {
	t.Helper()
	b, err := json.Marshal(c.Truth)
	require.NoError(t, err)
	return b
}

func TestDeterministic(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			a, b := generate(t, name, 7), generate(t, name, 7)
			require.Equal(t, a.Traces, b.Traces, "traces, seed 7")
			require.Equal(t, a.Metrics, b.Metrics, "metrics, seed 7")
			require.Equal(t, truthJSON(t, a), truthJSON(t, b), "truth, seed 7")
			// Another seed gives another capture: the seed is used.
			c := generate(t, name, 8)
			require.NotEqual(t, a.Traces, c.Traces, "seeds 7 and 8")
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := Generate(Config{Scenario: "nope"})
	require.EqualError(t, err, `brokersim: unknown scenario "nope"`)
}

// within checks got against want ± k standard errors.
func within(t *testing.T, what string, got, want, se float64) {
	t.Helper()
	require.InDelta(t, want, got, 4*se, "%s: got %.4f, want %.4f ± 4×%.4f (seed %d)", what, got, want, se, *seed)
}

// TestClosedForms checks the outcomes against what probability says they
// must be, within four standard errors of the sample.
func TestClosedForms(t *testing.T) {
	tests := []struct {
		name  string
		check func(t *testing.T, tr *Truth)
	}{
		{"requeue-storm", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			p := q.FailP
			// Deliveries per message are geometric: mean 1/(1−p),
			// variance p/(1−p)².
			n := float64(q.Accepted)
			within(t, "deliveries per message", float64(q.Outcome.Delivered)/n, 1/(1-p), math.Sqrt(p/(1-p)/(1-p)/n))
			require.Equal(t, q.Accepted, q.Outcome.Acked, "unbounded requeue acks every message")
			require.Equal(t, q.Outcome.Delivered-q.Accepted, q.Outcome.Redelivered)
			require.Equal(t, 1.0, tr.Outcome.FlowSuccessRate)
		}},
		{"dead-letter", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			p, m := q.FailP, float64(q.MaxDeliveries)
			n := float64(q.Accepted)
			share := math.Pow(p, m)
			within(t, "dead-lettered share", float64(q.Outcome.DeadLettered)/n, share, math.Sqrt(share*(1-share)/n))
			// A message is delivered min(G, M) times, G geometric.
			meanD := (1 - share) / (1 - p)
			within(t, "deliveries per message", float64(q.Outcome.Delivered)/n, meanD, math.Sqrt(p/(1-p)/(1-p)/n))
			require.Equal(t, q.Accepted, q.Outcome.Acked+q.Outcome.DeadLettered)
			require.InDelta(t, 1-float64(q.Outcome.DeadLettered)/n, tr.Outcome.FlowSuccessRate, 0.001)
		}},
		{"delay-queue", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			p, n := q.FailP, float64(q.Accepted)
			within(t, "deliveries per message", float64(q.Outcome.Delivered)/n, 1/(1-p), math.Sqrt(p/(1-p)/(1-p)/n))
			// Back after the TTL, then behind what is ready: a little
			// over the delay.
			require.GreaterOrEqual(t, q.RedeliveryDelayMS, q.DelayMS)
			require.Less(t, q.RedeliveryDelayMS, 1.1*q.DelayMS)
		}},
		{"drop-head", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			require.Equal(t, q.MaxLength, q.PeakReady, "peak ready under overflow")
			require.Positive(t, q.Outcome.Dropped)
			require.Equal(t, q.Outcome.Published, q.Outcome.Acked+q.Outcome.Dropped)
			require.Zero(t, q.Outcome.Rejected)
		}},
		{"reject-publish", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			require.Equal(t, q.MaxLength, q.PeakReady, "peak ready under overflow")
			require.Positive(t, q.Outcome.Rejected)
			require.Equal(t, q.Outcome.Published-q.Accepted, q.Outcome.Rejected)
			require.Equal(t, q.Accepted, q.Outcome.Acked)
			require.InDelta(t, float64(q.Accepted)/float64(q.Outcome.Published), tr.Outcome.FlowSuccessRate, 0.001)
		}},
		{"block", func(t *testing.T, tr *Truth) {
			q := tr.Queues[0]
			require.Equal(t, q.MaxLength, q.PeakReady, "peak ready under overflow")
			require.Equal(t, q.Outcome.Published, q.Outcome.Acked, "block loses nothing")
			require.Positive(t, q.Outcome.BlockedMS)
			require.Equal(t, 1.0, tr.Outcome.FlowSuccessRate)
		}},
		{"memory-alarm", func(t *testing.T, tr *Truth) {
			b := tr.Broker
			require.Positive(t, b.Outcome.Alarms)
			require.Positive(t, b.FirstAlarmNS)
			require.GreaterOrEqual(t, b.Outcome.PeakBytes, float64(b.WatermarkBytes))
			q := tr.Queues[0]
			// Peak memory is the base plus the most messages held.
			require.Zero(t, math.Mod(b.Outcome.PeakBytes-float64(b.BaseBytes), float64(q.MessageBytes)))
			require.Positive(t, q.Outcome.BlockedMS)
			require.Equal(t, q.Outcome.Published, q.Outcome.Acked)
		}},
		{"fan-out", func(t *testing.T, tr *Truth) {
			require.Len(t, tr.Queues, 3)
			pts := tr.Queues[1]
			require.Equal(t, "points", pts.Name)
			n := float64(pts.Outcome.Delivered)
			within(t, "points failure share", pts.FailureShare, pts.CalleeFailP, math.Sqrt(pts.CalleeFailP*(1-pts.CalleeFailP)/n))
			for _, q := range tr.Queues {
				require.Equal(t, int64(tr.Requests), q.Outcome.Published, q.Name)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, generate(t, tc.name, *seed).Truth)
		})
	}
}

// rows counts what ingest decodes.
type rows struct {
	spans   []cascade.Span
	samples []cascade.Sample
	invalid []string
}

func (r *rows) Span(s *cascade.Span) error     { r.spans = append(r.spans, *s); return nil }
func (r *rows) Sample(s *cascade.Sample) error { r.samples = append(r.samples, *s); return nil }
func (r *rows) Invalid(e *ingest.ParseError) error {
	r.invalid = append(r.invalid, e.Error())
	return nil
}
func (r *rows) Infer(string) {}
func (r *rows) Warn(string)  {}

// TestIngest reads every capture with cascade's ingest and checks the
// rows against the truth.
func TestIngest(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c := generate(t, name, *seed)
			tr := c.Truth
			var r rows
			require.NoError(t, ingest.Decode(name+".json", bytes.NewReader(c.Traces), ingest.FormatOTLPJSON, nil, &r))
			require.NoError(t, ingest.Decode(name+".prom", bytes.NewReader(c.Metrics), ingest.FormatPromText, nil, &r))
			require.Empty(t, r.invalid)
			require.Len(t, r.spans, tr.Outcome.Spans)
			require.Len(t, r.samples, tr.Outcome.Samples)

			var published, rejected, processed, failed, roots int64
			for _, s := range r.spans {
				switch {
				case s.Kind == cascade.KindProducer && strings.HasPrefix(s.Operation, "publish "):
					published++
					if s.Status == cascade.StatusError {
						rejected++
					}
				case s.Kind == cascade.KindConsumer && strings.HasPrefix(s.Operation, "process "):
					processed++
					if s.Status == cascade.StatusError {
						failed++
					}
				case s.Kind == cascade.KindServer && s.Operation == "POST /events":
					roots++
				}
			}
			var want cascade.QueueOutcome
			for _, q := range tr.Queues {
				want.Published += q.Outcome.Published
				want.Rejected += q.Outcome.Rejected
				want.Delivered += q.Outcome.Delivered
				want.Acked += q.Outcome.Acked
			}
			require.Equal(t, int64(tr.Requests), roots)
			require.Equal(t, want.Published, published)
			require.Equal(t, want.Rejected, rejected, "rejected = published − accepted, from the spans")
			require.Equal(t, want.Delivered, processed)
			require.Equal(t, want.Delivered-want.Acked, failed)

			// The scrapes: the most ready messages of each queue is at
			// most its peak, and a bounded queue's scrapes never pass
			// its bound; the alarm series is 1 only where the truth
			// has alarms.
			peak := map[string]float64{}
			alarm := 0.0
			for _, s := range r.samples {
				switch s.Metric {
				case MetricReady:
					peak[s.Labels] = max(peak[s.Labels], s.Value)
				case MetricAlarm:
					alarm = max(alarm, s.Value)
				}
			}
			for _, q := range tr.Queues {
				got, ok := peak[`queue="`+q.Name+`",vhost="/"`]
				require.True(t, ok, "no %s series for %s in %v", MetricReady, q.Name, peak)
				require.LessOrEqual(t, got, float64(q.PeakReady))
				if q.MaxLength > 0 {
					require.LessOrEqual(t, got, float64(q.MaxLength))
				}
			}
			require.Equal(t, tr.Broker.Outcome.Alarms > 0, alarm == 1)
		})
	}
}

// delivery is one process span as the capture shows it.
type delivery struct {
	queue, id      string
	start, end     int64
	failed         bool
	redelivery     int64
	bytes          int64
	linked         [24]byte
	selfNS, callNS int64
}

// readCapture reads the process and publish spans back from the OTLP
// JSON with pdata, attributes and links included.
func readCapture(t *testing.T, data []byte) (deliveries []delivery, publishes map[[24]byte]string, publishRate map[string]float64) {
	t.Helper()
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(data)
	require.NoError(t, err)
	publishes = map[[24]byte]string{}
	calls := map[[8]byte]int64{} // process span id -> its client call's duration
	byQueue := map[string][]int64{}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		ss := rss.At(i).ScopeSpans()
		for j := range ss.Len() {
			sps := ss.At(j).Spans()
			for k := range sps.Len() {
				sp := sps.At(k)
				str := func(key string) string { v, _ := sp.Attributes().Get(key); return v.AsString() }
				num := func(key string) int64 { v, _ := sp.Attributes().Get(key); return v.Int() }
				dur := int64(sp.EndTimestamp() - sp.StartTimestamp())
				switch sp.Kind() {
				case ptrace.SpanKindProducer:
					var key [24]byte
					tid, sid := sp.TraceID(), sp.SpanID()
					copy(key[:16], tid[:])
					copy(key[16:], sid[:])
					publishes[key] = str("messaging.message.id")
					q := str("messaging.destination.name")
					byQueue[q] = append(byQueue[q], int64(sp.StartTimestamp()))
				case ptrace.SpanKindClient:
					calls[sp.ParentSpanID()] += dur
				case ptrace.SpanKindConsumer:
					require.Equal(t, "process", str("messaging.operation.type"))
					require.Equal(t, 1, sp.Links().Len())
					l := sp.Links().At(0)
					d := delivery{queue: str("messaging.destination.name"), id: str("messaging.message.id"),
						start: int64(sp.StartTimestamp()), end: int64(sp.EndTimestamp()),
						failed: sp.Status().Code() == ptrace.StatusCodeError, redelivery: num(RedeliveryAttr),
						bytes: num("messaging.message.body.size"), selfNS: dur}
					tid, sid := l.TraceID(), l.SpanID()
					copy(d.linked[:16], tid[:])
					copy(d.linked[16:], sid[:])
					deliveries = append(deliveries, d)
				}
			}
		}
	}
	// A consumer's own work is its process span less its call.
	ids := map[[8]byte]int{}
	for i := range rss.Len() {
		ss := rss.At(i).ScopeSpans()
		for j := range ss.Len() {
			sps := ss.At(j).Spans()
			for k := range sps.Len() {
				if sp := sps.At(k); sp.Kind() == ptrace.SpanKindConsumer {
					ids[sp.SpanID()] = len(ids)
				}
			}
		}
	}
	for id, n := range ids {
		deliveries[n].callNS = calls[id]
		deliveries[n].selfNS -= calls[id]
	}
	publishRate = map[string]float64{}
	for q, ts := range byQueue {
		slices.Sort(ts)
		publishRate[q] = float64(len(ts)-1) / (float64(ts[len(ts)-1]-ts[0]) / 1e9)
	}
	return deliveries, publishes, publishRate
}

// TestRecoverable checks that each parameter of the truth can be read
// back from the capture within 10%, the way a graph would read it: the
// capture carries enough of each behaviour.
func TestRecoverable(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c := generate(t, name, *seed)
			tr := c.Truth
			deliveries, publishes, rates := readCapture(t, c.Traces)
			var r rows
			require.NoError(t, ingest.Decode(name+".prom", bytes.NewReader(c.Metrics), ingest.FormatPromText, nil, &r))
			for _, q := range tr.Queues {
				near := func(what string, got, want float64) {
					t.Helper()
					require.InEpsilon(t, want, got, 0.10, "%s %s: got %.4f, want %.4f (seed %d)", q.Name, what, got, want, *seed)
				}
				near("publish rate", rates[q.Name], tr.RatePerS)
				var self, gaps []float64
				var failed, total int
				perMsg := map[string][]delivery{}
				for _, d := range deliveries {
					if d.queue != q.Name {
						continue
					}
					require.Equal(t, d.id, publishes[d.linked], "the link names the message's publish span")
					require.Equal(t, q.MessageBytes, d.bytes)
					total++
					if d.failed {
						failed++
					}
					if !d.failed || d.callNS == 0 {
						self = append(self, float64(d.selfNS)/1e6)
					}
					perMsg[d.id] = append(perMsg[d.id], d)
				}
				near("consumer service mean", mean(self), q.ServiceMeanMS)
				near("consumer service p50", quantile(self, 0.5), q.ServiceP50MS)
				if p := q.FailP + q.CalleeFailP; p >= 0.1 {
					near("failure probability", float64(failed)/float64(total), p)
				}
				most := 0
				for _, ds := range perMsg {
					most = max(most, len(ds))
					for k, d := range ds {
						require.Equal(t, int64(k), d.redelivery, "%s: %s counts the deliveries before", d.id, RedeliveryAttr)
						if k > 0 {
							gaps = append(gaps, float64(d.start-ds[k-1].end)/1e6)
						}
					}
				}
				if q.MaxDeliveries > 0 && q.Outcome.DeadLettered > 0 && q.Redelivery != cascade.RedeliverNone {
					require.Equal(t, q.MaxDeliveries, most, "max deliveries")
				}
				if q.Redelivery == cascade.RedeliverDelay {
					near("delay before a redelivery", mean(gaps), q.DelayMS)
				}
				if q.Outcome.Redelivered > 0 {
					near("redelivery share", float64(len(gaps))/float64(total), q.RedeliveryShare)
				}
				var consumers, unacked float64
				for _, s := range r.samples {
					if !strings.Contains(s.Labels, `queue="`+q.Name+`"`) {
						continue
					}
					switch s.Metric {
					case MetricConsumers:
						consumers = max(consumers, s.Value)
					case MetricUnacked:
						unacked = max(unacked, s.Value)
					}
				}
				require.Equal(t, float64(q.Consumers), consumers, "consumers")
				if q.PeakReady >= q.MaxLength && q.MaxLength > 0 {
					// Saturated: every consumer holds a full prefetch.
					require.Equal(t, float64(q.Consumers*q.Prefetch), unacked, "consumers × prefetch")
				}
			}
			for _, s := range r.samples {
				if s.Metric == MetricMemoryLimit {
					require.Equal(t, float64(tr.Broker.WatermarkBytes), s.Value)
				}
			}
		})
	}
}

// TestZipkinBrave reads the Brave captures with ingest: each delivery a
// CONSUMER span under its publish span, in the publish's trace, with an
// on-message child that carries the failure.
func TestZipkinBrave(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c, err := Generate(Config{Scenario: name, Seed: *seed, Format: ZipkinBrave})
			require.NoError(t, err)
			again, err := Generate(Config{Scenario: name, Seed: *seed, Format: ZipkinBrave})
			require.NoError(t, err)
			require.Equal(t, c.Traces, again.Traces, "seed %d", *seed)
			tr := c.Truth
			var r rows
			require.NoError(t, ingest.Decode(name+".zipkin.json", bytes.NewReader(c.Traces), ingest.FormatZipkinJSON, nil, &r))
			require.Empty(t, r.invalid)
			var delivered, acked int64
			for _, q := range tr.Queues {
				delivered += q.Outcome.Delivered
				acked += q.Outcome.Acked
			}
			require.Len(t, r.spans, tr.Outcome.Spans+int(delivered))
			// A server span shares its client's id (B3); ingest gives it
			// its own when it stores the dataset, not in Decode.
			type key struct {
				trace, span string
				server      bool
			}
			byID := map[key]cascade.Span{}
			for _, s := range r.spans {
				k := key{s.TraceID, s.SpanID, s.Kind == cascade.KindServer}
				_, dup := byID[k]
				require.False(t, dup, "span %v twice", k)
				byID[k] = s
			}
			var consumers, failed int64
			for _, s := range r.spans {
				switch {
				case s.Kind == cascade.KindConsumer:
					consumers++
					p, ok := byID[key{s.TraceID, s.ParentSpanID, false}]
					require.True(t, ok, "next-message %s has its publish span in its trace", s.SpanID)
					require.Equal(t, cascade.KindProducer, p.Kind)
				case s.Operation == "on-message" && s.Status == cascade.StatusError:
					failed++
				}
			}
			require.Equal(t, delivered, consumers)
			require.Equal(t, delivered-acked, failed)
		})
	}
	_, err := Generate(Config{Scenario: "block", Format: "nope"})
	require.EqualError(t, err, `brokersim: unknown format "nope"`)
}
