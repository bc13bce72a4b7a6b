package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
)

// heldFlows returns a gateway request every 100 ms for 60 s: 0.5 ms of
// its own work, then a fire-and-forget publish to "orders" of 1 ms (1.2
// ms for every third request), unless held(i) (i the request, at i × 100
// ms): then the publish takes 60 ms, blocked (short of the next
// request, so that no two overlap).
func heldFlows(held func(i int) bool) []cascade.Span {
	var out []cascade.Span
	for i := range 600 {
		at := float64(i) * 100
		tr := fmt.Sprintf("h%04d", i)
		pub := 1.0
		if i%3 == 0 {
			pub = 1.2
		}
		if held(i) {
			pub = 60
		}
		out = append(out,
			span(tr, "1", "", "gw", "/event", server, at, 0.5+pub),
			span(tr, "2", "1", "gw", "orders publish", producer, at+0.5, pub, publish("rabbitmq", "orders")))
	}
	return out
}

// TestHeldPublishIsNoWork holds graph to held.go: a publish the broker
// held during its memory alarm is a wait, not the publisher's service
// time; a slow publish with no alarm is the publisher's own.
func TestHeldPublishIsNoWork(t *testing.T) {
	alarm20to30 := alarmSeries(func(sec int) bool { return sec >= 20 && sec < 30 })
	tests := []struct {
		name    string
		held    func(i int) bool
		samples []cascade.Sample
		// maxP99 bounds the service P99 (ms); minP99 is at least it.
		maxP99, minP99 float64
		warned         bool
	}{{
		name:    "publishes held inside the alarm leave the service time",
		held:    func(i int) bool { return i >= 210 && i < 290 && i%4 == 0 },
		samples: alarm20to30,
		maxP99:  2, warned: true,
	}, {
		name:   "the same slow publishes with no alarm series stay",
		held:   func(i int) bool { return i >= 210 && i < 290 && i%4 == 0 },
		minP99: 50,
	}, {
		name:    "slow publishes outside the alarm stay",
		held:    func(i int) bool { return i >= 410 && i < 490 && i%4 == 0 },
		samples: alarm20to30,
		minP99:  50,
	}, {
		name:    "an alarm with no slow publish changes nothing",
		held:    func(int) bool { return false },
		samples: alarm20to30,
		maxP99:  2,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := graph.NewBuilder(graph.DefaultConfig())
			require.NoError(t, err)
			spans := heldFlows(tc.held)
			for i := range spans {
				b.AddSpan(&spans[i])
			}
			for i := range tc.samples {
				b.AddSample(&tc.samples[i])
			}
			res, err := b.Finish()
			require.NoError(t, err)
			gw := res.Model.Node("gw")
			require.NotNil(t, gw)
			require.NotNil(t, gw.Tiers)
			t.Logf("service P50 %g P99 %g; warnings %q", gw.Tiers.P50, gw.Tiers.P99, res.Warnings)
			require.InDelta(t, 1.6, gw.Tiers.P50, 0.15, "the usual publish is the publisher's work")
			if tc.maxP99 > 0 {
				require.LessOrEqual(t, gw.Tiers.P99, tc.maxP99)
			}
			require.GreaterOrEqual(t, gw.Tiers.P99, tc.minP99)
			warned := false
			for _, w := range res.Warnings {
				warned = warned || containsAll(w, "node gw:", "memory alarm", "not its service time")
			}
			require.Equal(t, tc.warned, warned, "%q", res.Warnings)
			// The publish edge keeps what the publishes took.
			if e := edgeOrNil(res.Model, "gw", "queue:orders"); tc.maxP99 > 0 && tc.warned {
				require.Greater(t, e.Observed.LatencyP99MS, 50.0)
			}
		})
	}
}

// TestNotifyHeldPublish reads the real capture of testdata/notify-before:
// the gateway's log publishes waited for their confirm while the
// broker's memory alarm blocked the connection (0.65 s and 0.95 s in the
// kept traces). Read as its work, they made its service P99 684 ms; the
// broker's alarm series says they were held, so the service P99 is the
// publishes' usual time, while the gateway's latency and the log edge's
// keep what the requests and the publishes took.
func TestNotifyHeldPublish(t *testing.T) {
	dir := filepath.Join(repoData, "notify-before")
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{filepath.Join(dir, "traces.otlp.json.gz")}
	cfg.Metrics = []string{filepath.Join(dir, "prometheus")}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(t, err)
	samples := func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(cfg.Out, fn) }

	traces, err := graph.Build(t.Context(), graph.DefaultConfig(), readSpans(cfg.Out), nil)
	require.NoError(t, err)
	res, err := graph.Build(t.Context(), graph.DefaultConfig(), readSpans(cfg.Out), samples)
	require.NoError(t, err)
	before, after := traces.Model.Node("gateway"), res.Model.Node("gateway")
	require.NotNil(t, before)
	require.NotNil(t, after)
	t.Logf("gateway service P50/P95/P99: traces alone %g/%g/%g ms, with the alarm %g/%g/%g ms",
		before.Tiers.P50, before.Tiers.P95, before.Tiers.P99, after.Tiers.P50, after.Tiers.P95, after.Tiers.P99)
	require.Greater(t, before.Tiers.P99, 500.0, "without the alarm series the wait reads as work")
	require.Less(t, after.Tiers.P99, 50.0, "the blocked time is no service time")
	require.Less(t, after.Service.Points[len(after.Service.Points)-1], 100.0, "nor the service distribution's tail")
	require.InEpsilon(t, before.Tiers.P50, after.Tiers.P50, 0.15, "the usual publish stays the gateway's work")
	require.Equal(t, before.Observed.LatencyP99MS, after.Observed.LatencyP99MS, "the requests took what they took")
	e := edgeOrNil(res.Model, "gateway", "queue:log")
	require.NotNil(t, e)
	require.Greater(t, e.Observed.LatencyP99MS, 500.0, "the log publishes keep their wait")
	require.True(t, strings.Contains(strings.Join(res.Warnings, "\n"), "node gateway:") &&
		strings.Contains(strings.Join(res.Warnings, "\n"), "not its service time"), "%q", res.Warnings)
}
