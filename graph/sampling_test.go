package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
)

// publishCounter returns the points of a broker's publish counter (its
// rabbitmq_queue_messages_published_total) scraped every second at
// 0.5 s, 1.5 s, … from fromS to toS seconds after t0: value(ms) is its
// value at a scrape ms after t0.
func publishCounter(labels string, fromS, toS int, value func(ms float64) float64) []cascade.Sample {
	var out []cascade.Sample
	for s := fromS; s <= toS; s++ {
		ms := float64(s)*1000 + 500
		out = append(out, cascade.Sample{
			Time: t0 + int64(ms*1e6), Service: "rabbitmq", Instance: "broker:15692",
			Metric: "rabbitmq_queue_messages_published_total", Kind: cascade.MetricPublished,
			Labels: labels, Value: value(ms),
		})
	}
	return out
}

// TestSampledTraces holds the scaling of entry rates by the broker's
// publish counters: otelFlows publishes message i into "orders" at
// i·200 ms + 5 ms, and the counters count ratio times as many (the
// traces keep one message in ratio).
func TestSampledTraces(t *testing.T) {
	const n = 100
	spans := otelFlows(n, 30, 0, once)
	// traced is how many of the traced publishes happened by ms.
	traced := func(ms float64) float64 {
		c := 0.0
		for i := range n {
			if float64(i)*200+5 <= ms {
				c++
			}
		}
		return c
	}
	times := func(k float64) func(ms float64) float64 { return func(ms float64) float64 { return k * traced(ms) } }
	const orders = `channel="<0.1.0>",exchange="",queue="orders"`
	// closed holds the gateway's requests back to back (199 ms every
	// 200 ms): one client that never thinks, a closed load.
	closed := slices.Clone(spans)
	for i := range closed {
		if closed[i].IsRoot() && closed[i].Service == "gw" {
			closed[i].Duration = 199e6
		}
	}
	tests := []struct {
		name    string
		spans   []cascade.Span // nil: spans
		samples []cascade.Sample
		scale   float64 // 0: unchanged
		delta   float64 // the scale's tolerance, relative
		load    string  // the load's shape
	}{{
		name: "no counters: unchanged",
	}, {
		name:    "1 in 10 kept: rates ×10",
		samples: publishCounter(orders, 0, 19, times(10)),
		scale:   10,
	}, {
		name:  "a closed load, every message kept: closed",
		spans: closed, samples: publishCounter(orders, 0, 19, times(1)),
		load: cascade.LoadClosed,
	}, {
		name:  "a closed load of a sample is not judged: open",
		spans: closed, samples: publishCounter(orders, 0, 19, times(10)),
		scale: 10, load: cascade.LoadOpen,
	}, {
		name:    "1 in 3 kept, the counter starting high: rates ×3",
		samples: publishCounter(orders, 0, 19, func(ms float64) float64 { return 5000 + 3*traced(ms) }),
		scale:   3,
	}, {
		name:    "every message kept: unchanged",
		samples: publishCounter(orders, 0, 19, times(1)),
	}, {
		name:    "1.3 as many counted as traced: below 1.5, unchanged",
		samples: publishCounter(orders, 0, 19, times(1.3)),
	}, {
		name: "a counter reset at 9.7 s: its value after counts from 0",
		samples: publishCounter(orders, 0, 19, func(ms float64) float64 {
			if ms < 9700 {
				return 10 * traced(ms)
			}
			return 10 * (traced(ms) - traced(9700))
		}),
		scale: 10, delta: 0.02, // the publishes from the last scrape to the reset are lost
	}, {
		name: "two channels' counters of the queue add up, one created at 5 s counting from 0",
		samples: append(
			publishCounter(orders, 0, 19, func(ms float64) float64 {
				return 10*traced(min(ms, 5000)) + 5*(traced(ms)-traced(min(ms, 5000)))
			}),
			publishCounter(`channel="<0.2.0>",exchange="",queue="orders"`, 5, 19, func(ms float64) float64 {
				return 5 * (traced(ms) - traced(5000))
			})...),
		scale: 10,
	}, {
		name:    "a counter that names no queue (a channel's): unchanged",
		samples: publishCounter(`channel="<0.1.0>"`, 0, 19, times(10)),
	}, {
		name:    "a queue the traces do not publish to: unchanged",
		samples: publishCounter(`channel="<0.1.0>",exchange="",queue="invoices"`, 0, 19, times(10)),
	}, {
		name:    "too few traced publishes in the counters' window (under 20): unchanged",
		samples: publishCounter(orders, 0, 3, times(10)),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spans == nil {
				tc.spans = spans
			}
			base, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(tc.spans), nil)
			require.NoError(t, err)
			require.NotEmpty(t, base.Model.Entries)
			res, err := graph.Build(t.Context(), graph.Config{}, graph.Spans(tc.spans), graph.Samples(tc.samples))
			require.NoError(t, err)
			m := res.Model
			if tc.load != "" {
				require.NotNil(t, m.Load)
				require.Equal(t, tc.load, m.Load.Shape)
			}
			require.Len(t, m.Entries, len(base.Model.Entries))
			notes := strings.Join(m.Source.Notes, "\n")
			for i, e := range m.Entries {
				b := base.Model.Entries[i]
				require.Equal(t, b.Node, e.Node)
				require.Equal(t, b.Share, e.Share, "shares do not move")
				if tc.scale == 0 {
					require.Equal(t, b.RatePerSec, e.RatePerSec, e.Node)
					continue
				}
				require.InEpsilon(t, tc.scale*b.RatePerSec, e.RatePerSec, max(tc.delta, 1e-5), e.Node)
			}
			if tc.scale == 0 {
				require.NotContains(t, notes, "traces hold 1 in")
				return
			}
			require.Contains(t, notes, "of the broker's publishes (queue counters: the median of 1 queues")
			require.Contains(t, notes, "entry rates scaled ×")
		})
	}
}

// TestSampledNotify builds the kept captures of testdata/notify (every
// 10th event's flows, the broker's series whole) and holds the entry
// rate, scaled by the broker's publish counters, to the rate the app
// measured over its whole run (measured.json's capture.event_rate_per_s)
// within 10%.
func TestSampledNotify(t *testing.T) {
	for _, name := range []string{"notify-before", "notify-after"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(repoData, name)
			b, err := os.ReadFile(filepath.Join(dir, "measured.json"))
			require.NoError(t, err)
			var measured struct {
				Capture struct {
					SampleEvery   float64 `json:"sample_every"`
					EventRatePerS float64 `json:"event_rate_per_s"`
				} `json:"capture"`
			}
			require.NoError(t, json.Unmarshal(b, &measured), name)
			require.Positive(t, measured.Capture.EventRatePerS)

			cfg := ingest.DefaultConfig()
			cfg.Traces = []string{filepath.Join(dir, "traces.otlp.json.gz")}
			cfg.Metrics = []string{filepath.Join(dir, "prometheus")}
			cfg.Out = filepath.Join(t.TempDir(), "dataset")
			_, err = ingest.Run(context.Background(), cfg)
			require.NoError(t, err)
			samples := func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(cfg.Out, fn) }

			traces, err := graph.Build(t.Context(), graph.DefaultConfig(), readSpans(cfg.Out), nil)
			require.NoError(t, err)
			res, err := graph.Build(t.Context(), graph.DefaultConfig(), readSpans(cfg.Out), samples)
			require.NoError(t, err)
			rate := func(m *cascade.Model) float64 {
				var r float64
				for _, e := range m.Entries {
					r += e.RatePerSec
				}
				return r
			}
			t.Logf("%s: entry rate %.3g/s from the traces alone, %.3g/s scaled, %.3g/s measured; notes %q",
				name, rate(traces.Model), rate(res.Model), measured.Capture.EventRatePerS, res.Model.Source.Notes)
			require.InEpsilon(t, measured.Capture.EventRatePerS/measured.Capture.SampleEvery, rate(traces.Model), 0.2,
				"the traces alone: the sample's rate")
			require.InEpsilon(t, measured.Capture.EventRatePerS, rate(res.Model), 0.10, "the scaled rate")
			require.Contains(t, strings.Join(res.Model.Source.Notes, "\n"), fmt.Sprintf("traces hold 1 in %.3g", rate(res.Model)/rate(traces.Model)))
		})
	}
}
