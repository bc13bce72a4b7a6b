package incident

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/shapetest"
	"cascade/testdata/shapes"
)

// TestLogWarnings: logs given and not judged are said (issue 38). A
// reference without logs leaves the capture's logs no normal range;
// with its logs, or without a reference (the first windows), they are
// judged and nothing is said.
func TestLogWarnings(t *testing.T) {
	refDir, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 1200, Format: shapes.NezhaCSV, Logs: true, Seed: 7})
	dir, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 2400, Format: shapes.NezhaCSV, Logs: true, Throw: "stock"})
	spans := func(d string) cascade.SpanSource {
		return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(d, fn) }
	}
	logs := func(d string) LogSource {
		return func(fn func(*cascade.LogRecord) error) error { return dataset.ReadLogs(d, fn) }
	}
	tests := []struct {
		name           string
		logs, ref      bool
		refLogs        bool
		want           string // a warning containing it; "" none
		wantOriginLogs bool   // the first origin's change is a log signal
	}{
		{"reference without logs", true, true, false, "the reference (--baseline) carries no logs", false},
		{"reference with its logs", true, true, true, "", true},
		{"first windows", true, false, false, "", true},
		{"reference logs alone", false, true, true, "the reference's logs were given without the capture's", false},
		{"no logs", false, true, false, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Slowdown, cfg.Verify = 0, 0
			in := Input{Spans: spans(dir)}
			if tc.logs {
				in.Logs = logs(dir)
			}
			if tc.ref {
				in.Reference = spans(refDir)
			}
			if tc.refLogs {
				in.ReferenceLogs = logs(refDir)
			}
			inc, err := Investigate(context.Background(), in, cfg)
			require.NoError(t, err)
			if tc.want == "" {
				require.Empty(t, inc.Warnings)
			} else {
				require.Len(t, inc.Warnings, 1)
				require.Contains(t, inc.Warnings[0], tc.want)
				require.True(t, strings.HasPrefix(inc.Warnings[0], "logs: "), inc.Warnings[0])
			}
			if tc.wantOriginLogs {
				require.NotEmpty(t, inc.Origins, "%+v", brief(inc))
				require.Equal(t, "stock", inc.Origins[0])
			}
		})
	}
}

// TestMetricWarnings: metric samples given and not judged are said. A
// CPU series of the capture's windows alone has no normal range; the
// reference's points of the same service and metric give it one, and
// then db's CPU rise at 60 s is judged (and found) and nothing is said.
// A series naming no service of the spans is said too; metrics of no
// kind the pass judges (latency, rates) are not.
func TestMetricWarnings(t *testing.T) {
	none := func(float64) float64 { return 0 }
	flat := func(string, float64) float64 { return 1 }
	spans := synth{slow: flat, starve: none}.spans()
	t0 := spans[0].Start
	series := func(kind cascade.MetricKind, svc string, from, to int, high float64, at int) cascade.SampleSource {
		var out []cascade.Sample
		for s := from; s < to; s += 10 {
			v := 0.2 + 0.01*float64(s%30)/10
			if s >= at {
				v = high
			}
			out = append(out, cascade.Sample{Time: t0 + int64(s)*1e9, Service: svc, Instance: svc + "-0",
				Metric: "series_" + string(kind), Kind: kind, Value: v})
		}
		return func(fn func(*cascade.Sample) error) error {
			for i := range out {
				if err := fn(&out[i]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	cpu := func(svc string, from, to int, high float64, at int) cascade.SampleSource {
		return series(cascade.MetricCPU, svc, from, to, high, at)
	}
	tests := []struct {
		name       string
		samples    cascade.SampleSource
		refSamples cascade.SampleSource
		want       string
		wantJudged bool // db's evidence holds the metric
	}{
		{"inside the capture only", cpu("db", 35, 120, 0.9, 60), nil, "no saturation series has 3 points before the judged windows", false},
		{"with the reference's points", cpu("db", 35, 120, 0.9, 60), cpu("db", 0, 120, 0.9, 1e6), "", true},
		{"before the capture too", cpu("db", -300, 120, 0.9, 60), nil, "", true},
		{"no service of the spans", cpu("elsewhere", -300, 120, 0.9, 60), nil, "names a service of the spans", false},
		{"reference metrics alone", nil, cpu("db", 0, 120, 0.9, 1e6), "the reference's metrics were given without the capture's", false},
		// Latency and rates are the spans' to judge (and other stages
		// read them): nothing of the pass's kinds was given or dropped.
		{"no saturation kind", series(cascade.MetricLatency, "db", 35, 120, 0.9, 60), nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Slowdown, cfg.Verify = 0, 0
			in := Input{Spans: graph.Spans(spans), Samples: tc.samples, ReferenceSamples: tc.refSamples}
			if tc.refSamples != nil {
				in.Reference = graph.Spans(spans)
			}
			inc, err := Investigate(context.Background(), in, cfg)
			require.NoError(t, err)
			if tc.want == "" {
				require.Empty(t, inc.Warnings)
			} else {
				require.Len(t, inc.Warnings, 1, "%v", inc.Warnings)
				require.Contains(t, inc.Warnings[0], tc.want)
			}
			judged := false
			for _, n := range inc.Nodes {
				for _, e := range n.Evidence {
					if n.Node == "db" && strings.HasPrefix(e.Metric, "metric:") {
						judged = true
					}
				}
			}
			require.Equal(t, tc.wantJudged, judged, "%+v", brief(inc))
		})
	}
}
