package graph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// blockedFlows returns a gateway request every 100 ms for 60 s; each
// publishes to the RabbitMQ queues "orders" and "audit", unless fails(i)
// (i the request, at i × 100 ms): then it fails at once, in 0.03 ms, with
// no publish, as a publisher blocked by its broker does. Request 50
// (at 5 s) fails otherwise when slow50: after 40 ms, its own error.
func blockedFlows(fails func(i int) bool, slow50 bool) []cascade.Span {
	var out []cascade.Span
	for i := range 600 {
		at := float64(i) * 100
		tr := fmt.Sprintf("g%04d", i)
		if i == 50 && slow50 {
			out = append(out, span(tr, "1", "", "gw", "/event", server, at, 40, failed("database error"), code(500)))
			continue
		}
		if fails(i) {
			out = append(out, span(tr, "1", "", "gw", "/event", server, at, 0.03, failed("broker blocked the connection"), code(503)))
			continue
		}
		out = append(out,
			span(tr, "1", "", "gw", "/event", server, at, 3),
			span(tr, "2", "1", "gw", "orders publish", producer, at+1, 0.2, publish("rabbitmq", "orders")),
			span(tr, "3", "1", "gw", "audit publish", producer, at+2, 0.2, publish("rabbitmq", "audit")))
	}
	return out
}

// alarmSeries returns the broker's memory alarm every second from 0 to
// 60 s: 1 at the seconds on says.
func alarmSeries(on func(sec int) bool) []cascade.Sample {
	var out []cascade.Sample
	for sec := 0; sec <= 60; sec++ {
		v := 0.0
		if on(sec) {
			v = 1
		}
		out = append(out, cascade.Sample{Time: t0 + int64(sec)*1e9, Metric: "rabbitmq_alarms_memory_used_watermark",
			Kind: cascade.MetricMemoryAlarm, Value: v})
	}
	return out
}

// TestFailBlocked holds graph to its rule for a publisher whose failures
// are its broker's memory alarm (blocked.go): the rule marks the
// publisher only when its own failures crowd into the alarm.
func TestFailBlocked(t *testing.T) {
	alarm20to30 := alarmSeries(func(sec int) bool { return sec >= 20 && sec < 30 })
	tests := []struct {
		name    string
		fails   func(i int) bool
		samples []cascade.Sample
		// samplesFirst adds the samples before the spans.
		samplesFirst bool
		slow50       bool // request 50 fails otherwise (blockedFlows)
		blocked      bool
		base         float64
	}{{
		name: "failures inside the alarm are the broker's",
		// The alarm reads 1 from 20 s to 29 s: on from 19 s to 30 s at
		// most. Every request from 21 s to 29 s fails, and one at 5 s,
		// slowly, with an error of its own.
		fails:   func(i int) bool { return i >= 210 && i < 290 },
		slow50:  true,
		samples: alarm20to30,
		blocked: true,
		base:    round(1.0 / (600 - 110)), // one own failure of the 490 requests outside 19–30 s
	}, {
		name:         "samples before spans judge alike",
		fails:        func(i int) bool { return i >= 210 && i < 290 },
		slow50:       true,
		samples:      alarm20to30,
		samplesFirst: true,
		blocked:      true,
		base:         round(1.0 / (600 - 110)),
	}, {
		name: "a failure outside the sampled alarm as fast as those inside is the alarm's",
		// Request 50 fails at once as those inside do: the alarm came
		// and went between two samples.
		fails:   func(i int) bool { return i >= 210 && i < 290 || i == 50 },
		samples: alarm20to30,
		blocked: true,
		base:    0,
	}, {
		name: "a single point of 1 covers from the point before to the point after",
		// Failures from 24.1 s to 25.9 s: all before the next point of
		// 0, half before the point of 1 itself.
		fails:   func(i int) bool { return i > 240 && i < 260 },
		samples: alarmSeries(func(sec int) bool { return sec == 25 }),
		blocked: true,
		base:    0,
	}, {
		name: "an alarm series that trails the broker by 2 s",
		// The alarm flickers: the publisher fails from 10 s to 11 s,
		// 20–21, 30–31 and 40–41, and the exporter, refreshing late,
		// reads 1 only at 12, 22, 32 and 42 s, whose intervals (the
		// point before to the point after) hold none of the failures.
		fails:   func(i int) bool { return i >= 100 && i < 410 && i%100 < 10 },
		slow50:  true,
		samples: alarmSeries(func(sec int) bool { return sec >= 12 && sec <= 42 && sec%10 == 2 }),
		blocked: true,
		base:    round(1.0 / (600 - 4*20)), // one own failure of the requests outside 10–12 s, 20–22, …
	}, {
		name: "an alarm series that leads the failures is not their cause",
		// The alarm reads 1 from 33 s to 42 s, after failures from 21 s
		// to 29 s: no exporter reads an alarm before it happens.
		fails:   func(i int) bool { return i >= 210 && i < 290 || i == 50 },
		samples: alarmSeries(func(sec int) bool { return sec >= 33 && sec < 43 }),
		base:    round(81.0 / 600),
	}, {
		name: "an alarm series that trails by more than 5 s is not joined",
		// It reads 1 from 36 s, 7 s after the last failure.
		fails:   func(i int) bool { return i >= 210 && i < 290 || i == 50 },
		samples: alarmSeries(func(sec int) bool { return sec >= 36 && sec < 46 }),
		base:    round(81.0 / 600),
	}, {
		name:    "failures spread evenly are the node's own",
		fails:   func(i int) bool { return i%7 == 3 },
		samples: alarm20to30,
		base:    round(86.0 / 600),
	}, {
		name:  "no alarm series",
		fails: func(i int) bool { return i >= 210 && i < 290 || i == 50 },
		base:  round(81.0 / 600),
	}, {
		name:    "an alarm that never went on",
		fails:   func(i int) bool { return i >= 210 && i < 290 || i == 50 },
		samples: alarmSeries(func(int) bool { return false }),
		base:    round(81.0 / 600),
	}, {
		name:    "four failures inside are too few",
		fails:   func(i int) bool { return i >= 250 && i < 254 },
		samples: alarm20to30,
		base:    round(4.0 / 600),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := graph.NewBuilder(graph.DefaultConfig())
			require.NoError(t, err)
			if tc.samplesFirst {
				for i := range tc.samples {
					b.AddSample(&tc.samples[i])
				}
			}
			spans := blockedFlows(tc.fails, tc.slow50)
			for i := range spans {
				b.AddSpan(&spans[i])
			}
			if !tc.samplesFirst {
				for i := range tc.samples {
					b.AddSample(&tc.samples[i])
				}
			}
			res, err := b.Finish()
			require.NoError(t, err)
			data, err := cascade.EncodeModel(res.Model)
			require.NoError(t, err)
			_, err = cascade.DecodeModel(data)
			require.NoError(t, err, "the model must validate")

			gw := res.Model.Node("gw")
			require.NotNil(t, gw)
			require.InDelta(t, tc.base, gw.Overload.Base, 1e-6)
			want := map[bool]cascade.Provenance{true: cascade.Inferred, false: cascade.Observed}[tc.blocked]
			require.Equal(t, want, gw.Provenance["overload.base"])
			for _, q := range []string{"queue:orders", "queue:audit"} {
				e := edgeOrNil(res.Model, "gw", q)
				require.NotNil(t, e, q)
				require.Equal(t, tc.blocked, e.FailBlocked, q)
				require.Equal(t, !tc.blocked, e.Async, q)
				require.Equal(t, 1.0, e.Propagation, q)
				if tc.blocked {
					require.Equal(t, cascade.Inferred, e.Provenance["fail_blocked"], q)
					require.Equal(t, cascade.Inferred, e.Provenance["propagation"], q)
					require.Equal(t, []int64{0, int64(e.Observed.Calls)}, e.Observed.FanOutHistogram,
						"%s: a blocked request made its publish: no zero in the fan-out", q)
				} else {
					require.NotContains(t, e.Provenance, "fail_blocked", q)
				}
			}
			warned := false
			for _, w := range res.Warnings {
				warned = warned || containsAll(w, "node gw:", "memory alarm", "fail_blocked")
			}
			require.Equal(t, tc.blocked, warned, "%q", res.Warnings)
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
