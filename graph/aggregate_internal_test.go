package graph

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name, in string
		want     []labelPair
		err      string
	}{
		{"empty", ``, nil, ""},
		{"plain", `client="a",server="b"`, []labelPair{{"client", "a"}, {"server", "b"}}, ""},
		{"escapes", `a="x\"y\\z\nw",b=""`, []labelPair{{"a", "x\"y\\z\nw"}, {"b", ""}}, ""},
		{"quoted name", `"http.route"="/x",le="0.5"`, []labelPair{{"http.route", "/x"}, {"le", "0.5"}}, ""},
		{"comma in value", `a="1,2"`, []labelPair{{"a", "1,2"}}, ""},
		{"no equals", `abc`, nil, "no '='"},
		{"unquoted value", `a=b`, nil, "want '\"'"},
		{"unterminated", `a="b`, nil, "unterminated"},
		{"bad separator", `a="b";c="d"`, nil, "want ','"},
		{"escape at end", `a="b\`, nil, "escape at the end"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLabels(nil, tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		metric string
		kind   seriesKind
		part   histPart
		unit   unitScale
	}{
		{"traces_service_graph_request_total", kindEdgeRequests, partValue, 0},
		{"traces_service_graph_request_failed_total", kindEdgeFailed, partValue, 0},
		{"traces_service_graph_request_server_seconds_bucket", kindEdgeServerHist, partBucket, 1000},
		{"traces_service_graph_request_client_seconds_sum", kindEdgeClientHist, partSum, 1000},
		{"traces_service_graph_request_client_milliseconds_count", kindEdgeClientHist, partCount, 1},
		{"traces_service_graph_request_duration_seconds_bucket", kindEdgeServerHist, partBucket, 1000},
		{"traces_service_graph_unpaired_spans_total", kindNone, 0, 0},
		{"traces_span_metrics_calls_total", kindSpanCalls, partValue, 0},
		{"traces_span_metrics_duration_milliseconds_bucket", kindSpanHist, partBucket, 1},
		{"traces_span_metrics_duration_seconds_bucket", kindSpanHist, partBucket, 1000},
		{"traces_spanmetrics_calls_total", kindSpanCalls, partValue, 0},
		{"traces_spanmetrics_latency_bucket", kindSpanHist, partBucket, 0},
		{"traces_spanmetrics_duration_bucket", kindSpanHist, partBucket, 0},
		{"traces_spanmetrics_size_total", kindNone, 0, 0},
		{"calls_total", kindNone, 0, 0},
		{"hotrod_requests_total", kindNone, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.metric, func(t *testing.T) {
			kind, part, unit := classify(tc.metric)
			require.Equal(t, tc.kind, kind)
			if kind != kindNone {
				require.Equal(t, tc.part, part)
				require.Equal(t, tc.unit, unit)
			}
		})
	}
}

func TestSeriesIncrease(t *testing.T) {
	pts := func(tv ...float64) []point {
		var p []point
		for i := 0; i+1 < len(tv); i += 2 {
			p = append(p, point{int64(tv[i] * 1e9), tv[i+1]})
		}
		return p
	}
	tests := []struct {
		name     string
		pts      []point
		start    int64
		inc      float64
		from, to float64 // seconds
		rose     bool
	}{
		{"present at the start", pts(0, 5, 1, 7, 2, 10), 0, 5, 0, 2, true},
		{"created in the range", pts(3, 4, 4, 6, 5, 6), 0, 6, 2, 4, true},
		{"reset", pts(0, 5, 1, 8, 2, 2, 3, 4), 0, 7, 0, 3, true},
		{"out of order and repeated", pts(2, 10, 0, 5, 1, 7, 1, 7), 0, 5, 0, 2, true},
		{"flat", pts(0, 3, 1, 3), 0, 0, 0, 0, false},
		{"single point created in the range", pts(5, 2), 0, 2, 5, 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &aggSeries{pts: tc.pts}
			from, to, ok := s.increase(tc.start)
			require.Equal(t, tc.rose, ok)
			require.InDelta(t, tc.inc, s.inc, 1e-9)
			if ok {
				require.Equal(t, int64(tc.from*1e9), from)
				require.Equal(t, int64(tc.to*1e9), to)
			}
		})
	}
}

func TestHistQuantile(t *testing.T) {
	// 10 observations ≤ 10 ms, 10 more in (10, 50], none above.
	h := &hist{}
	for le, n := range map[float64]float64{2: 0, 10: 10, 50: 20, math.Inf(1): 20} {
		h.addBucket(le, n)
	}
	require.InDelta(t, 10, h.quantile(0.5), 1e-9)
	require.InDelta(t, 46, h.quantile(0.95), 1e-9) // 10 + 40·(19−10)/10
	require.InDelta(t, 6, h.quantile(0.25), 1e-9)  // 2 + 8·(5−0)/10, in (2, 10]
	// Everything above the last finite bound: its bound.
	top := &hist{}
	top.addBucket(100, 0)
	top.addBucket(math.Inf(1), 5)
	require.Equal(t, 100.0, top.quantile(0.99))
	require.Equal(t, 0.0, (&hist{}).quantile(0.5))
}

func TestMeanFanOut(t *testing.T) {
	require.Equal(t, cascade.Const(10), meanFanOut(10))
	d := meanFanOut(1.227)
	require.Equal(t, cascade.DistEmpirical, d.Kind)
	require.InDelta(t, 1.23, d.MeanValue(), 1e-9)
	require.Equal(t, cascade.Const(3), meanFanOut(2.999))
}

// sample makes a connector point.
func sample(metric, labels string, at time.Duration, v float64) cascade.Sample {
	return cascade.Sample{Time: int64(at), Metric: metric, Labels: labels, Value: v}
}

// TestAggregateEdgeCases builds from hand-made series: a legacy edge with
// request_failed_total and no failed label, a messaging edge, a database
// virtual node, a service with no user calls (an entry by default), and
// points that are not connector series or do not parse.
func TestAggregateEdgeCases(t *testing.T) {
	var s []cascade.Sample
	add := func(metric, labels string, v0, v1 float64) {
		s = append(s, sample(metric, labels, 0, v0), sample(metric, labels, 10*time.Second, v1))
	}
	// Tempo spells the service label service; ingest moves it into
	// Sample.Service.
	addSvc := func(metric, service, labels string, v0, v1 float64) {
		add(metric, labels, v0, v1)
		s[len(s)-1].Service, s[len(s)-2].Service = service, service
	}
	add("traces_service_graph_request_total", `client="api",server="db",connection_type="database"`, 0, 50)
	add("traces_service_graph_request_total", `client="api",server="worker",connection_type="messaging_system"`, 0, 20)
	add("traces_service_graph_request_failed_total", `client="api",server="worker",connection_type="messaging_system"`, 0, 2)
	addSvc("traces_spanmetrics_calls_total", "api", `span_kind="SPAN_KIND_SERVER",span_name="GET /",status_code="STATUS_CODE_OK"`, 0, 10)
	addSvc("traces_spanmetrics_calls_total", "worker", `span_kind="SPAN_KIND_CONSUMER",span_name="job",status_code="STATUS_CODE_ERROR"`, 0, 4)
	addSvc("traces_spanmetrics_calls_total", "worker", `span_kind="SPAN_KIND_CONSUMER",span_name="job",status_code="STATUS_CODE_UNSET"`, 0, 16)
	for _, le := range []string{"0.1", "1", "+Inf"} {
		addSvc("traces_spanmetrics_latency_bucket", "api", `le="`+le+`",span_kind="SPAN_KIND_SERVER",span_name="GET /",status_code="STATUS_CODE_OK"`, 0, map[string]float64{"0.1": 5, "1": 10, "+Inf": 10}[le])
	}
	add("hotrod_requests_total", `endpoint="/"`, 0, 1)
	add("traces_service_graph_request_total", `client="api",server=`, 0, 1)                  // bad labels
	add("traces_service_graph_request_total", `server="x"`, 0, 1)                            // no client
	add("traces_service_graph_request_server_seconds_bucket", `client="a",server="b"`, 0, 1) // no le
	s = append(s, sample("traces_service_graph_request_total", `client="api",server="db",connection_type="database"`, 5*time.Second, math.NaN()))
	res, err := BuildAggregates(context.Background(), Config{}, Samples(s))
	require.NoError(t, err)
	m := res.Model
	require.Equal(t, cascade.FromAggregates, m.Source.From)
	require.Len(t, m.Entries, 1)
	require.Equal(t, "api", m.Entries[0].Node)
	require.Equal(t, "GET /", m.Entries[0].Operation)
	require.InDelta(t, 1.0, m.Entries[0].RatePerSec, 1e-9)
	require.Contains(t, res.Warnings[0], "6 points of service-graph or span-metrics series left out")
	require.Contains(t, res.Warnings[1], "entries are the nodes")
	require.Len(t, m.Edges, 2)
	db, worker := m.Edges[0], m.Edges[1]
	require.Equal(t, "db", db.To)
	require.True(t, m.Node("db").Virtual)
	require.Equal(t, int64(50), db.Observed.Calls)
	require.Equal(t, cascade.Const(5), db.FanOut)
	require.Equal(t, "worker", worker.To)
	require.True(t, worker.Async)
	require.InDelta(t, 0.1, worker.Observed.ErrorRate, 1e-9)
	require.Equal(t, cascade.Const(2), worker.FanOut)
	require.InDelta(t, 0.2, m.Node("worker").Observed.ErrorRate, 1e-9)
	api := m.Node("api")
	require.InDelta(t, 100, api.Observed.LatencyP50MS, 1e-9, "seconds buckets read as seconds")
	require.Equal(t, cascade.Aggregated, api.Provenance["overload.base"])
	require.Equal(t, cascade.Inferred, db.Provenance["fan_out"])
	require.Equal(t, cascade.Default, db.Provenance["retry"])
	require.NoError(t, m.Validate())

	// Nothing to build from.
	_, err = BuildAggregates(context.Background(), Config{}, Samples([]cascade.Sample{sample("up", "", 0, 1)}))
	require.ErrorIs(t, err, ErrNoAggregates)
	_, err = NewAggregateBuilder(Config{Level: LevelOperation})
	require.ErrorContains(t, err, "name services, not operations")
}

// FuzzAggregateLabels feeds label texts and values to the builder: it
// must never panic, and what it builds must validate.
func FuzzAggregateLabels(f *testing.F) {
	f.Add("traces_service_graph_request_total", `client="a",server="b"`, 3.0)
	f.Add("traces_span_metrics_calls_total", `service_name="a",span_kind="SPAN_KIND_SERVER"`, 1.0)
	f.Add("traces_service_graph_request_client_seconds_bucket", `client="user",le="+Inf",server="a"`, 2.0)
	f.Fuzz(func(t *testing.T, metric, labels string, v float64) {
		if len(labels) > 1<<16 {
			return
		}
		_, _ = parseLabels(nil, labels)
		s := []cascade.Sample{sample(metric, labels, 0, 0), sample(metric, labels, time.Second, v)}
		res, err := BuildAggregates(context.Background(), Config{}, Samples(s))
		if err == nil {
			require.NoError(t, res.Model.Validate())
		}
	})
}
