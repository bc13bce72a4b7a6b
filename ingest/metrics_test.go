package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cascade"
	"cascade/internal/testutil"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

var (
	hotrodScrape    = repoTestdata("hotrod-baseline", "hotrod-metrics.prom")
	hotrodPromAPI   = repoTestdata("hotrod-baseline", "prometheus")
	otlpMetricsFile = repoTestdata("otlp-metrics", "sdk-runtime-http.jsonl")
)

// promSampleLines returns the sample lines of a text exposition: every
// line that is neither blank nor a comment.
func promSampleLines(t testing.TB, text []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// promLineName is the metric name of a sample line.
func promLineName(line string) string {
	if i := strings.IndexAny(line, "{ "); i >= 0 {
		return line[:i]
	}
	return line
}

func TestDecodePromTextHotROD(t *testing.T) {
	text, err := os.ReadFile(hotrodScrape)
	require.NoError(t, err)
	lines := promSampleLines(t, text)

	s, err := decodeTestFile(t, decodePromText, hotrodScrape, nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.samples, len(lines), "one sample per sample line")
	for i, l := range lines {
		require.Equal(t, promLineName(l), s.samples[i].Metric, "sample %d in line order", i)
		require.Zero(t, s.samples[i].Time)
	}
	require.Equal(t, len(lines), s.notes[noteNoScrapeTime])
	require.Equal(t, len(lines), s.notes[noteNoServiceLabel], "a scrape carries no job label")

	kinds := map[string]cascade.MetricKind{}
	for _, smp := range s.samples {
		kinds[smp.Metric] = smp.Kind
	}
	tests := []struct {
		metric string
		want   cascade.MetricKind
	}{
		{"hotrod_request_latency_bucket", cascade.MetricLatency},
		{"hotrod_request_latency_sum", cascade.MetricLatency},
		{"hotrod_request_latency_count", cascade.MetricRequests},
		{"hotrod_requests_total", cascade.MetricRequests},
		{"hotrod_http_requests_total", cascade.MetricRequests},
		{"process_cpu_seconds_total", cascade.MetricCPU},
		{"process_resident_memory_bytes", cascade.MetricMemory},
		{"go_goroutines", cascade.MetricOther},
		{"go_sched_gomaxprocs_threads", cascade.MetricOther},
		{"go_gc_duration_seconds", cascade.MetricOther},
		{"go_gc_duration_seconds_count", cascade.MetricOther},
		{"promhttp_metric_handler_requests_total", cascade.MetricRequests},
	}
	for _, tc := range tests {
		t.Run(tc.metric, func(t *testing.T) {
			got, ok := kinds[tc.metric]
			require.True(t, ok, "metric in scrape")
			require.Equal(t, tc.want, got)
		})
	}

	// Labels, buckets and quantiles as exposed.
	want := map[string]float64{
		`hotrod_request_latency_bucket|endpoint="/config",error="false",le="0.005"`:  1,
		`hotrod_request_latency_bucket|endpoint="/dispatch",error="false",le="+Inf"`: 300,
		`hotrod_request_latency_count|endpoint="/dispatch",error="false"`:            300,
		`hotrod_requests_total|endpoint="/route",error="false"`:                      3000,
		`hotrod_http_requests_total|endpoint="/config",status_code="2xx"`:            1,
		`go_gc_duration_seconds_count|`:                                              -1,
		`go_gc_duration_seconds|quantile="0.5"`:                                      -1,
	}
	got := map[string]float64{}
	for _, smp := range s.samples {
		got[smp.Metric+"|"+smp.Labels] = smp.Value
	}
	for k, v := range want {
		require.Contains(t, got, k)
		if v >= 0 {
			require.Equal(t, v, got[k], k)
		}
	}

	// With a scrape time, untimestamped points take it.
	s, err = decodeTestFile(t, decodePromText, hotrodScrape, &Options{ScrapeTime: 1796212200e9})
	require.NoError(t, err)
	require.Equal(t, int64(1796212200e9), s.samples[0].Time)
	require.Equal(t, len(lines), s.notes[noteScrapeTime])
}

// withTimestamps appends a timestamp in milliseconds to every sample line.
func withTimestamps(text []byte, ms int64, crlf bool) []byte {
	var b bytes.Buffer
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		l := sc.Text()
		b.WriteString(l)
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			fmt.Fprintf(&b, " %d", ms)
		}
		b.WriteString(eol)
	}
	return b.Bytes()
}

// withoutComments drops the # lines.
func withoutComments(text []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(text, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			b.Write(l)
		}
	}
	return b.Bytes()
}

func TestDecodePromTextConcatenated(t *testing.T) {
	text, err := os.ReadFile(hotrodScrape)
	require.NoError(t, err)
	lines := promSampleLines(t, text)
	const t1, t2 = int64(1796212101000), int64(1796212116000)

	tests := []struct {
		name  string
		input []byte
	}{
		{"timestamps", append(withTimestamps(text, t1, false), withTimestamps(text, t2, false)...)},
		{"blank line between", append(append(withTimestamps(text, t1, false), '\n'), withTimestamps(text, t2, false)...)},
		{"OpenMetrics EOF between", append(append(withTimestamps(text, t1, false), "# EOF\n"...), withTimestamps(text, t2, false)...)},
		{"CRLF", append(withTimestamps(text, t1, true), withTimestamps(text, t2, true)...)},
		{"no comments", append(withoutComments(withTimestamps(text, t1, false)), withoutComments(withTimestamps(text, t2, false))...)},
		{"no final newline", bytes.TrimSuffix(append(withTimestamps(text, t1, false), withTimestamps(text, t2, false)...), []byte("\n"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodePromText, "scrapes.prom", bytes.NewReader(tc.input), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Len(t, s.samples, 2*len(lines))
			n := len(lines)
			for i := range n {
				a, b := s.samples[i], s.samples[n+i]
				require.Equal(t, t1*1e6, a.Time, "first scrape, sample %d", i)
				require.Equal(t, t2*1e6, b.Time, "second scrape, sample %d", i)
				b.Time = a.Time
				require.Equal(t, a, b, "same series in both scrapes")
			}
			require.Zero(t, s.notes[noteNoScrapeTime])
		})
	}
}

func TestDecodePromTextChunkCut(t *testing.T) {
	// One family larger than a chunk: it is cut, and the TYPE line is
	// carried so the histogram stays a histogram.
	var b bytes.Buffer
	b.WriteString("# HELP big_latency_seconds A big histogram.\n# TYPE big_latency_seconds histogram\n")
	series := 0
	for b.Len() < 3*promChunkMax {
		for _, le := range []string{"0.1", "1", "+Inf"} {
			fmt.Fprintf(&b, "big_latency_seconds_bucket{pod=\"p%d\",le=%q} %d\n", series, le, series)
		}
		fmt.Fprintf(&b, "big_latency_seconds_sum{pod=\"p%d\"} 1.5\n", series)
		fmt.Fprintf(&b, "big_latency_seconds_count{pod=\"p%d\"} %d\n", series, series)
		series++
	}
	b.WriteString("up 1\n")
	s, err := decodeTestBytes(decodePromText, "big.prom", bytes.NewReader(b.Bytes()), nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.samples, 5*series+1)
	for i, smp := range s.samples[:5*series] {
		pod := fmt.Sprintf("p%d", i/5)
		require.Equal(t, pod, smp.Instance)
		switch i % 5 {
		case 0, 1, 2:
			require.Equal(t, "big_latency_seconds_bucket", smp.Metric)
			require.Contains(t, smp.Labels, "le=")
		case 3:
			require.Equal(t, "big_latency_seconds_sum", smp.Metric)
		case 4:
			require.Equal(t, "big_latency_seconds_count", smp.Metric)
			require.Equal(t, cascade.MetricRequests, smp.Kind)
		}
	}
	require.Equal(t, "up", s.samples[5*series].Metric)
}

func TestDecodePromTextLabels(t *testing.T) {
	in := `# TYPE http_requests_total counter
http_requests_total{method="GET",job="api",instance="10.0.0.1:80",zone="a\"b\\c\nd"} 7 1700000000000
http_requests_total{service="checkout",job="api",pod="checkout-1"} 3
{"my.metric","http.route"="/x"} 2
`
	s, err := decodeTestBytes(decodePromText, "l.prom", strings.NewReader(in), nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.samples, 3)
	require.Equal(t, cascade.Sample{
		Time: 1700000000000e6, Service: "api", Instance: "10.0.0.1:80",
		Metric: "http_requests_total", Kind: cascade.MetricRequests,
		Labels: `method="GET",zone="a\"b\\c\nd"`, Value: 7,
	}, s.samples[0])
	require.Equal(t, "checkout", s.samples[1].Service)
	require.Equal(t, "checkout-1", s.samples[1].Instance)
	require.Equal(t, `job="api"`, s.samples[1].Labels, "only the chosen service label leaves Labels")
	require.Equal(t, "my.metric", s.samples[2].Metric)
	require.Equal(t, `"http.route"="/x"`, s.samples[2].Labels)
}

func TestDecodePromTextErrors(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		samples int      // samples still decoded
		errs    []string // ParseError texts, in order
		reason  error
	}{
		{
			name:    "bad value",
			input:   "# TYPE a gauge\na 1\na{x=\"y\"} abc\na 2\n",
			samples: 2,
			errs:    []string{`bad.prom:3 (byte 19): expected float as value, got "abc": malformed record`},
			reason:  ErrSyntax,
		},
		{
			name:    "two bad lines in one family",
			input:   "# TYPE a counter\na{x=\"1\"} 1\na{x=\"2} 2\na{x=\"3\"} 3\na{=\"4\"} 4\n",
			samples: 2,
			errs: []string{
				`bad.prom:3 (byte 28): label value "2} 2" contains unescaped new-line: malformed record`,
				`bad.prom:5 (byte 49): invalid label name for metric "a": malformed record`,
			},
			reason: ErrSyntax,
		},
		{
			name:    "bad escape",
			input:   "b{x=\"\\q\"} 1\nc 2\n",
			samples: 1,
			errs:    []string{`bad.prom:1: invalid escape sequence '\q': malformed record`},
			reason:  ErrSyntax,
		},
		{
			name:    "bad timestamp",
			input:   "a 1 12x\nb 1 99999999999999999\n",
			samples: 0,
			errs: []string{
				`bad.prom:1: expected integer as timestamp, got "12x": malformed record`,
				`bad.prom:2 (byte 8): b: timestamp 99999999999999999 ms out of range: bad timestamp`,
			},
		},
		{
			name:    "bad bucket bound",
			input:   "# TYPE h histogram\nh_bucket{le=\"x\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
			samples: 2,
			errs:    []string{`bad.prom:2 (byte 19): expected float as value for 'le' label, got "x": malformed record`},
			reason:  ErrSyntax,
		},
		{
			name:    "bad line inside a histogram",
			input:   "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"2\"} x\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n",
			samples: 4,
			errs:    []string{`bad.prom:3 (byte 38): expected float as value, got "x": malformed record`},
			reason:  ErrSyntax,
		},
		{
			name:    "unknown type",
			input:   "# TYPE a wibble\na 1\n",
			samples: 1,
			errs:    []string{`bad.prom:1: unknown metric type "wibble": malformed record`},
			reason:  ErrSyntax,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodePromText, "bad.prom", strings.NewReader(tc.input), nil)
			require.NoError(t, err)
			require.Len(t, s.samples, tc.samples)
			var got []string
			for _, e := range s.errs {
				e.File = "bad.prom"
				got = append(got, e.Error())
				if tc.reason != nil {
					require.ErrorIs(t, e, tc.reason)
				}
			}
			require.Equal(t, tc.errs, got)
		})
	}

	// Every other line bad: each costs one parse of what precedes it, not
	// of the whole family.
	var many strings.Builder
	many.WriteString("# TYPE g gauge\n")
	for i := range 20000 {
		fmt.Fprintf(&many, "g{i=\"%d\"} %d\ng{i=\"%d\"} x\n", i, i, i)
	}
	s, err := decodeTestBytes(decodePromText, "bad.prom", strings.NewReader(many.String()), nil)
	require.NoError(t, err)
	require.Len(t, s.samples, 20000)
	require.Len(t, s.errs, 20000)
	require.Equal(t, float64(19999), s.samples[19999].Value)
	require.Equal(t, 40001, s.errs[19999].Line)

	// A sink that stops at the first error stops the decoder with it.
	s = newCollectSink()
	s.failFast = true
	err = decodePromText("bad.prom", strings.NewReader("a x\nb 1\n"), s, &Options{})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Line)
	require.Empty(t, s.samples)
}

// promAPIPointCount counts the points of a Prometheus API answer with a
// generic JSON decode, as a reference.
func promAPIPointCount(t testing.TB, data []byte) int {
	t.Helper()
	var doc struct {
		Data struct {
			Result []struct {
				Values []any `json:"values"`
				Value  []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	n := 0
	for _, r := range doc.Data.Result {
		n += len(r.Values)
		if r.Value != nil {
			n++
		}
	}
	return n
}

// readMaybeGzip reads a file, decompressing .gz.
func readMaybeGzip(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		require.NoError(t, err)
		data, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	return data
}

func TestDecodePromAPIHotROD(t *testing.T) {
	tests := []struct {
		file   string
		metric string // metric of the first sample
		kind   cascade.MetricKind
		time   int64  // of the first sample
		labels string // of the first sample
		named  bool   // results carry __name__
	}{
		{"raw_hotrod_series.json.gz", "hotrod_http_requests_total", cascade.MetricRequests, 1796212101e9, `endpoint="/config",status_code="2xx"`, true},
		{"mean_latency_by_endpoint.json", "mean_latency_by_endpoint", cascade.MetricLatency, 1796212102e9, `endpoint="/config"`, false},
		{"request_rate_by_endpoint.json", "request_rate_by_endpoint", cascade.MetricRequestRate, 1796212102e9, `endpoint="/config",error="false"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(hotrodPromAPI, tc.file)
			want := promAPIPointCount(t, readMaybeGzip(t, path))
			require.Positive(t, want)
			s, err := decodeTestFile(t, decodePromAPI, path, nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Len(t, s.samples, want)
			first := s.samples[0]
			require.Equal(t, tc.metric, first.Metric)
			require.Equal(t, tc.kind, first.Kind)
			require.Equal(t, tc.time, first.Time)
			require.Equal(t, tc.labels, first.Labels)
			if tc.named {
				require.Zero(t, s.notes[noteNoMetricName])
				require.Equal(t, cascade.Sample{
					Time: 1796212101e9, Service: "hotrod", Instance: "127.0.0.1:8080",
					Metric: "hotrod_http_requests_total", Kind: cascade.MetricRequests,
					Labels: `endpoint="/config",status_code="2xx"`, Value: 1,
				}, first)
			} else {
				require.Equal(t, want, s.notes[noteNoMetricName])
			}
		})
	}
	// The decoder names the file as the loader passes it: a path with its
	// compression suffix.
	require.Equal(t, "raw_hotrod_series", fileMetricName("testdata/x/raw_hotrod_series.json.gz"))
	require.Equal(t, "query_result", fileMetricName("-"))
}

func TestDecodePromAPI(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		input   string
		want    []cascade.Sample
		errs    []string
		fatal   string // returned error text, "" for none
		sentinl error
	}{
		{
			name:  "vector with ms times and special values",
			input: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1435781451.781,"1"]},{"metric":{"__name__":"x"},"value":[1435781451.001,"+Inf"]},{"metric":{"__name__":"x"},"value":[-1.5,"-Inf"]}]}}`,
			want: []cascade.Sample{
				{Time: 1435781451781000000, Service: "a", Metric: "up", Kind: cascade.MetricOther, Value: 1},
				{Time: 1435781451001000000, Metric: "x", Kind: cascade.MetricOther, Value: math.Inf(1)},
				{Time: -1500000000, Metric: "x", Kind: cascade.MetricOther, Value: math.Inf(-1)},
			},
		},
		{
			name:  "result before resultType",
			input: `{"data":{"result":[{"metric":{"__name__":"q","instance":"i"},"values":[[1e9,"2"],[1000000001.5,"NaN"]]}],"resultType":"matrix"},"status":"success"}`,
			want: []cascade.Sample{
				{Time: 1e18, Instance: "i", Metric: "q", Kind: cascade.MetricOther, Value: 2},
				{Time: 1000000001500000000, Instance: "i", Metric: "q", Kind: cascade.MetricOther, Value: nan},
			},
		},
		{
			name:  "scalar",
			input: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}}`,
			want:  []cascade.Sample{{Time: 1700000000e9, Metric: "api", Kind: cascade.MetricOther, Value: 42}},
		},
		{
			name:  "native histogram",
			input: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"rpc_duration_seconds"},"histograms":[[10,{"count":"5","sum":"0.25","buckets":[[0,"0","1","5"]]}]]}]}}`,
			want: []cascade.Sample{
				{Time: 10e9, Metric: "rpc_duration_seconds_count", Kind: cascade.MetricRequests, Value: 5},
				{Time: 10e9, Metric: "rpc_duration_seconds_sum", Kind: cascade.MetricLatency, Value: 0.25},
			},
		},
		{
			name:  "bad points are skipped",
			input: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"q"},"values":[[1,"x"],[2,"3"],["t","4"],[3]]},{"metric":7},{"metric":{"__name__":"r"},"values":[[4,"5"]]}]}}`,
			want: []cascade.Sample{
				{Time: 2e9, Metric: "q", Kind: cascade.MetricOther, Value: 3},
				{Time: 4e9, Metric: "r", Kind: cascade.MetricOther, Value: 5},
			},
			errs: []string{
				`api.json (byte 60): data.result[0].values[0]: value "x": bad value`,
				`api.json (byte 60): data.result[0].values[2]: time "t": bad timestamp`,
				`api.json (byte 60): data.result[0].values[3]: want [time, value], got [3]: malformed record`,
				`api.json (byte 129): data.result[1]: json: cannot unmarshal number into Go struct field promAPISeries.metric of type map[string]string: malformed record`,
			},
		},
		{
			name:    "error answer",
			input:   `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": parse error"}`,
			fatal:   `api.json (byte 0): query failed: bad_data: invalid parameter "query": parse error: unsupported content`,
			sentinl: ErrUnsupported,
		},
		{
			name:    "string result",
			input:   `{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`,
			fatal:   `api.json (byte 0): data.result: result type string: unsupported content`,
			sentinl: ErrUnsupported,
		},
		{
			name:    "truncated",
			input:   `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]`,
			fatal:   `api.json (byte 60): data.result[0]: unexpected end of input: malformed record`,
			sentinl: ErrSyntax,
		},
		{
			name:    "not an object",
			input:   `[1,2]`,
			fatal:   `api.json (byte 0): want {, got [: malformed record`,
			sentinl: ErrSyntax,
		},
		{
			name:    "no data",
			input:   `{"status":"success"}`,
			fatal:   `api.json (byte 0): data: no data: missing field`,
			sentinl: ErrMissingField,
		},
		{
			name:    "empty",
			input:   ``,
			fatal:   `api.json (byte 0): empty input: missing field`,
			sentinl: ErrMissingField,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodePromAPI, "dir/api.json", strings.NewReader(tc.input), nil)
			if tc.fatal != "" {
				require.Error(t, err)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				pe.File = "api.json"
				require.Equal(t, tc.fatal, pe.Error())
				require.ErrorIs(t, err, tc.sentinl)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, e := range s.errs {
				e.File = "api.json"
				got = append(got, e.Error())
			}
			require.Equal(t, tc.errs, got)
			require.Len(t, s.samples, len(tc.want))
			for i, w := range tc.want {
				g := s.samples[i]
				if math.IsNaN(w.Value) {
					require.True(t, math.IsNaN(g.Value))
					g.Value, w.Value = 0, 0
				}
				require.Equal(t, w, g)
			}
		})
	}
}

func TestSecondsToNanos(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1796212102", 1796212102e9, true},
		{"1435781451.781", 1435781451781000000, true},
		{"1.000000001", 1000000001, true},
		{"1.0000000019", 1000000001, true}, // past ns: dropped
		{"-2.25", -2250000000, true},
		{"1.5e3", 1500e9, true},
		{"9223372036.854775807", math.MaxInt64, true},
		{"9223372037", 0, false},
		{"1e400", 0, false},
		{"abc", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := secondsToNanos(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// gcQuantileStep spaces the fixture's GC pause quantiles (a variable, so
// that tests multiply it as the generator does, in float64).
var gcQuantileStep = 2.5e-5

// otlpFixtureStart is the fixture's first export time.
const otlpFixtureStart = int64(1796212100e9)

// buildOTLPMetricsFixture builds what an OpenTelemetry Collector's file
// exporter receives from two SDK-instrumented services and one scraped
// Prometheus target over three 10-second export intervals: one
// ExportMetricsServiceRequest per interval.
//
//   - frontend (Go SDK): otelhttp's http.server.request.duration histogram
//     (the semantic-convention default bounds) and http.server.active_requests;
//     the runtime instrumentation's go.memory.used, go.goroutine.count,
//     go.memory.allocated and go.processor.limit.
//   - driver (Java agent): jvm.thread.count, jvm.memory.used,
//     jvm.cpu.recent_utilization (a gauge) and rpc.server.duration as an
//     exponential histogram (base-2 aggregation).
//   - redis (Prometheus receiver scraping redis_exporter): the
//     go_gc_duration_seconds summary and redis_connected_clients.
func buildOTLPMetricsFixture() []pmetric.Metrics {
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	var out []pmetric.Metrics
	for batch := range 3 {
		ts := pcommon.Timestamp(otlpFixtureStart + int64(batch)*10e9)
		start := pcommon.Timestamp(otlpFixtureStart - 60e9)
		n := uint64(batch + 1)
		md := pmetric.NewMetrics()

		// frontend, Go SDK.
		rm := md.ResourceMetrics().AppendEmpty()
		rm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		ra := rm.Resource().Attributes()
		ra.PutStr("service.name", "frontend")
		ra.PutStr("service.instance.id", "frontend-7d9f6c-x2k4p")
		ra.PutStr("host.name", "node-1")
		ra.PutStr("telemetry.sdk.language", "go")
		ra.PutStr("telemetry.sdk.name", "opentelemetry")
		ra.PutStr("telemetry.sdk.version", "1.38.0")
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
		sm.Scope().SetVersion("0.63.0")
		m := sm.Metrics().AppendEmpty()
		m.SetName("http.server.request.duration")
		m.SetDescription("Duration of HTTP server requests.")
		m.SetUnit("s")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i, route := range []string{"/dispatch", "/config"} {
			dp := h.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(ts)
			a := dp.Attributes()
			a.PutStr("http.request.method", "GET")
			a.PutInt("http.response.status_code", 200)
			a.PutStr("http.route", route)
			a.PutStr("network.protocol.version", "1.1")
			a.PutStr("url.scheme", "http")
			counts := make([]uint64, len(bounds)+1)
			var total uint64
			for b := range counts {
				c := (n * uint64(3+b)) % uint64(7+i)
				if i == 0 && b >= 9 && b <= 10 {
					c += 10 * n // /dispatch takes 1-2.5 s
				}
				counts[b] = c
				total += c
			}
			dp.BucketCounts().FromRaw(counts)
			dp.ExplicitBounds().FromRaw(bounds)
			dp.SetCount(total)
			dp.SetSum(float64(total) * []float64{1.46, 0.0008}[i])
			dp.SetMin([]float64{0.9, 0.0001}[i])
			dp.SetMax([]float64{1.68, 0.002}[i])
		}
		m = sm.Metrics().AppendEmpty()
		m.SetName("http.server.active_requests")
		m.SetUnit("{request}")
		sum := m.SetEmptySum()
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := sum.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(ts)
		dp.Attributes().PutStr("http.request.method", "GET")
		dp.Attributes().PutStr("url.scheme", "http")
		dp.SetIntValue(int64(batch + 4))

		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/runtime")
		sm.Scope().SetVersion("0.63.0")
		addSum := func(name, unit string, mono bool, attrs []string, v int64) {
			m := sm.Metrics().AppendEmpty()
			m.SetName(name)
			m.SetUnit(unit)
			s := m.SetEmptySum()
			s.SetIsMonotonic(mono)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dp := s.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(ts)
			for i := 0; i+1 < len(attrs); i += 2 {
				dp.Attributes().PutStr(attrs[i], attrs[i+1])
			}
			dp.SetIntValue(v)
		}
		addSum("go.memory.used", "By", false, []string{"go.memory.type", "stack"}, 1<<20+int64(batch)*4096)
		addSum("go.memory.used", "By", false, []string{"go.memory.type", "other"}, 9<<20+int64(batch)*65536)
		addSum("go.goroutine.count", "{goroutine}", false, nil, 41+int64(batch))
		addSum("go.memory.allocated", "By", true, nil, 120<<20+int64(batch)<<20)
		addSum("go.processor.limit", "{thread}", false, nil, 8)

		// driver, Java agent.
		rm = md.ResourceMetrics().AppendEmpty()
		ra = rm.Resource().Attributes()
		ra.PutStr("service.name", "driver")
		ra.PutStr("host.name", "node-2")
		ra.PutStr("telemetry.sdk.language", "java")
		ra.PutStr("telemetry.sdk.name", "opentelemetry")
		ra.PutStr("telemetry.sdk.version", "1.54.0")
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("io.opentelemetry.runtime-telemetry-java17")
		sm.Scope().SetVersion("2.20.0-alpha")
		for _, st := range []string{"runnable", "waiting", "timed_waiting"} {
			addSum("jvm.thread.count", "{thread}", false, []string{"jvm.thread.daemon", "true", "jvm.thread.state", st}, int64(len(st)+batch))
		}
		for _, pool := range []string{"G1 Eden Space", "G1 Old Gen"} {
			addSum("jvm.memory.used", "By", false, []string{"jvm.memory.pool.name", pool, "jvm.memory.type", "heap"}, int64(len(pool))<<20+int64(batch)<<16)
		}
		m = sm.Metrics().AppendEmpty()
		m.SetName("jvm.cpu.recent_utilization")
		m.SetUnit("1")
		dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(0.125 * float64(batch+1))
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("io.opentelemetry.grpc-1.6")
		sm.Scope().SetVersion("2.20.0-alpha")
		m = sm.Metrics().AppendEmpty()
		m.SetName("rpc.server.duration")
		m.SetUnit("ms")
		eh := m.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		edp := eh.DataPoints().AppendEmpty()
		edp.SetStartTimestamp(start)
		edp.SetTimestamp(ts)
		edp.Attributes().PutStr("rpc.method", "FindNearest")
		edp.Attributes().PutStr("rpc.service", "driver.DriverService")
		edp.Attributes().PutStr("rpc.system", "grpc")
		edp.Attributes().PutInt("rpc.grpc.status_code", 0)
		edp.SetScale(3)
		edp.SetCount(100 * n)
		edp.SetSum(21.5 * float64(100*n))
		edp.SetZeroCount(0)
		edp.Positive().SetOffset(33)
		edp.Positive().BucketCounts().FromRaw([]uint64{10 * n, 30 * n, 40 * n, 15 * n, 5 * n})
		edp.SetMin(11.2)
		edp.SetMax(48.9)

		// redis, scraped by the Prometheus receiver.
		rm = md.ResourceMetrics().AppendEmpty()
		ra = rm.Resource().Attributes()
		ra.PutStr("service.name", "redis")
		ra.PutStr("service.instance.id", "127.0.0.1:9121")
		ra.PutStr("server.address", "127.0.0.1")
		ra.PutStr("server.port", "9121")
		ra.PutStr("url.scheme", "http")
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver")
		sm.Scope().SetVersion("0.138.0")
		m = sm.Metrics().AppendEmpty()
		m.SetName("go_gc_duration_seconds")
		m.SetDescription("A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
		sdp := m.SetEmptySummary().DataPoints().AppendEmpty()
		sdp.SetStartTimestamp(start)
		sdp.SetTimestamp(ts)
		for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
			v := sdp.QuantileValues().AppendEmpty()
			v.SetQuantile(q)
			v.SetValue(gcQuantileStep * float64(i+1))
		}
		sdp.SetCount(17 + n)
		sdp.SetSum(0.0021 + 1e-4*float64(n))
		m = sm.Metrics().AppendEmpty()
		m.SetName("redis_connected_clients")
		dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(float64(6 + batch))

		out = append(out, md)
	}
	return out
}

// otlpMetricsJSONL encodes batches as the file exporter does: each
// request marshalled by pmetric.JSONMarshaler, one per line.
func otlpMetricsJSONL(t testing.TB, batches []pmetric.Metrics) []byte {
	t.Helper()
	var b bytes.Buffer
	m := &pmetric.JSONMarshaler{}
	for _, md := range batches {
		data, err := m.MarshalMetrics(md)
		require.NoError(t, err)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestOTLPMetricsFixture(t *testing.T) {
	got := otlpMetricsJSONL(t, buildOTLPMetricsFixture())
	testutil.GoldenFile(t, otlpMetricsFile, got)
	require.LessOrEqual(t, len(got), 50<<10)
}

// otlpPointCount counts the samples an OTLP metrics JSON document should
// give, from a generic JSON decode: one per gauge or sum point; per
// histogram point one per bucket, one for the sum when present and one for
// the count; sum and count per exponential histogram point; per summary
// point one per quantile plus sum and count.
func otlpPointCount(t testing.TB, doc []byte) int {
	t.Helper()
	var req map[string]any
	require.NoError(t, json.Unmarshal(doc, &req))
	n := 0
	list := func(v any, key string) []any {
		m, _ := v.(map[string]any)
		l, _ := m[key].([]any)
		return l
	}
	for _, rm := range list(req, "resourceMetrics") {
		for _, sm := range list(rm, "scopeMetrics") {
			for _, mv := range list(sm, "metrics") {
				m := mv.(map[string]any)
				for _, typ := range []string{"gauge", "sum"} {
					n += len(list(m[typ], "dataPoints"))
				}
				for _, dp := range list(m["histogram"], "dataPoints") {
					n += len(list(dp, "bucketCounts")) + 1
					if _, ok := dp.(map[string]any)["sum"]; ok {
						n++
					}
				}
				for _, dp := range list(m["exponentialHistogram"], "dataPoints") {
					n++
					if _, ok := dp.(map[string]any)["sum"]; ok {
						n++
					}
				}
				for _, dp := range list(m["summary"], "dataPoints") {
					n += len(list(dp, "quantileValues")) + 2
				}
			}
		}
	}
	return n
}

func TestDecodeOTLPMetricsJSON(t *testing.T) {
	data, err := os.ReadFile(otlpMetricsFile)
	require.NoError(t, err)
	want := 0
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		want += otlpPointCount(t, line)
	}
	s, err := decodeTestFile(t, decodeOTLPMetricsJSON, otlpMetricsFile, nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.samples, want)
	require.Empty(t, s.notes)

	find := func(metric, labels string, time int64) cascade.Sample {
		t.Helper()
		for _, smp := range s.samples {
			if smp.Metric == metric && smp.Labels == labels && smp.Time == time {
				return smp
			}
		}
		require.Failf(t, "sample not found", "%s{%s} @%d", metric, labels, time)
		return cascade.Sample{}
	}
	t0 := otlpFixtureStart
	route := `"http.request.method"="GET","http.response.status_code"="200","http.route"="/dispatch","network.protocol.version"="1.1","url.scheme"="http"`
	// le sorts between http.* and network.*.
	bucket := func(le string) string {
		return `"http.request.method"="GET","http.response.status_code"="200","http.route"="/dispatch",le="` + le + `","network.protocol.version"="1.1","url.scheme"="http"`
	}
	tests := []struct {
		name   string
		metric string
		labels string
		time   int64
		want   cascade.Sample
	}{
		{"first bucket", "http.server.request.duration_bucket", bucket("0.005"), t0,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricLatency, Value: 3}},
		{"cumulative bucket", "http.server.request.duration_bucket", bucket("0.01"), t0,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricLatency, Value: 3 + 4}},
		{"inf bucket is the count", "http.server.request.duration_bucket", bucket("+Inf"), t0 + 20e9,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricLatency, Value: -1}},
		{"count is requests", "http.server.request.duration_count", route, t0 + 20e9,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricRequests, Value: -1}},
		{"active requests", "http.server.active_requests", `"http.request.method"="GET","url.scheme"="http"`, t0 + 10e9,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricActiveWorkers, Value: 5}},
		{"go memory", "go.memory.used", `"go.memory.type"="stack"`, t0,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricMemory, Value: 1 << 20}},
		{"goroutines are not workers", "go.goroutine.count", "", t0,
			cascade.Sample{Service: "frontend", Instance: "frontend-7d9f6c-x2k4p", Kind: cascade.MetricOther, Value: 41}},
		{"host name as instance", "jvm.cpu.recent_utilization", "", t0 + 10e9,
			cascade.Sample{Service: "driver", Instance: "node-2", Kind: cascade.MetricOther, Value: 0.25}},
		{"exponential histogram count", "rpc.server.duration_count", `"rpc.grpc.status_code"="0","rpc.method"="FindNearest","rpc.service"="driver.DriverService","rpc.system"="grpc"`, t0,
			cascade.Sample{Service: "driver", Instance: "node-2", Kind: cascade.MetricRequests, Value: 100}},
		{"exponential histogram sum", "rpc.server.duration_sum", `"rpc.grpc.status_code"="0","rpc.method"="FindNearest","rpc.service"="driver.DriverService","rpc.system"="grpc"`, t0,
			cascade.Sample{Service: "driver", Instance: "node-2", Kind: cascade.MetricLatency, Value: 2150}},
		{"summary quantile", "go_gc_duration_seconds", `quantile="0.5"`, t0,
			cascade.Sample{Service: "redis", Instance: "127.0.0.1:9121", Kind: cascade.MetricOther, Value: gcQuantileStep * 3}},
		{"summary count", "go_gc_duration_seconds_count", "", t0,
			cascade.Sample{Service: "redis", Instance: "127.0.0.1:9121", Kind: cascade.MetricOther, Value: 18}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := find(tc.metric, tc.labels, tc.time)
			tc.want.Metric, tc.want.Labels, tc.want.Time = tc.metric, tc.labels, tc.time
			if tc.want.Value < 0 {
				tc.want.Value = got.Value
			}
			require.Equal(t, tc.want, got)
		})
	}
	inf := find("http.server.request.duration_bucket", bucket("+Inf"), t0+20e9)
	count := find("http.server.request.duration_count", route, t0+20e9)
	require.Equal(t, count.Value, inf.Value)
}

func TestDecodeOTLPMetricsEncodings(t *testing.T) {
	batches := buildOTLPMetricsFixture()
	ref, err := decodeTestFile(t, decodeOTLPMetricsJSON, otlpMetricsFile, nil)
	require.NoError(t, err)

	var pretty, concat, framed, raw bytes.Buffer
	pm := &pmetric.ProtoMarshaler{}
	jm := &pmetric.JSONMarshaler{}
	for i, md := range batches {
		j, err := jm.MarshalMetrics(md)
		require.NoError(t, err)
		require.NoError(t, json.Indent(&concat, j, "", "  "))
		concat.WriteString("\n")
		if i == 0 {
			require.NoError(t, json.Indent(&pretty, j, "", "  "))
		}
		p, err := pm.MarshalMetrics(md)
		require.NoError(t, err)
		framed.Write(binary.BigEndian.AppendUint32(nil, uint32(len(p))))
		framed.Write(p)
		if i == 0 {
			raw.Write(p)
		}
	}
	perBatch := len(ref.samples) / len(batches)
	tests := []struct {
		name  string
		dec   decodeFunc
		input []byte
		want  []cascade.Sample
	}{
		{"pretty JSON document", decodeOTLPMetricsJSON, pretty.Bytes(), ref.samples[:perBatch]},
		{"concatenated pretty documents", decodeOTLPMetricsJSON, concat.Bytes(), ref.samples},
		{"raw proto", decodeOTLPMetricsProto, raw.Bytes(), ref.samples[:perBatch]},
		{"framed proto", decodeOTLPMetricsProto, framed.Bytes(), ref.samples},
		{"empty JSON", decodeOTLPMetricsJSON, nil, nil},
		{"empty proto", decodeOTLPMetricsProto, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(tc.dec, "m", bytes.NewReader(tc.input), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Equal(t, tc.want, s.samples)
		})
	}
}

func TestDecodeOTLPMetricsErrors(t *testing.T) {
	good := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"5","asInt":"3"}]}}]}]}]}`
	tests := []struct {
		name    string
		dec     decodeFunc
		input   string
		samples int
		errs    []string
		fatal   string
	}{
		{
			name:    "bad line in JSON Lines",
			dec:     decodeOTLPMetricsJSON,
			input:   good + "\n{\"resourceMetrics\":[{\"scopeMetrics\":7}]}\n\n" + good + "\n",
			samples: 2,
			errs:    []string{`m.json:2 (byte 205): ReadArray: expect [ or , or ] or n, but found 7`},
		},
		{
			name:  "truncated document",
			dec:   decodeOTLPMetricsJSON,
			input: "{\n  \"resourceMetrics\": [\n",
			fatal: `m.json:3 (byte 25): unexpected end of input: malformed record`,
		},
		{
			name:    "histogram with mismatched buckets",
			dec:     decodeOTLPMetricsJSON,
			input:   `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","histogram":{"dataPoints":[{"timeUnixNano":"5","count":"3","sum":1,"bucketCounts":["1","2"],"explicitBounds":[1,2]}]}}]}]}]}`,
			samples: 2,
			errs:    []string{`m.json:1: resourceMetrics[0].scopeMetrics[0].metrics[0].dataPoints[0]: 2 bucket counts for 2 bounds: bad value`},
		},
		{
			name:  "truncated frame",
			dec:   decodeOTLPMetricsProto,
			input: "\x00\x00\x01\x00\x0a\x01",
			fatal: `m.json (byte 0): frame of 256 bytes, 2 left: malformed record`,
		},
		{
			name:  "bad proto",
			dec:   decodeOTLPMetricsProto,
			input: "\x0a\xff\xff\xff\xff\x0f",
			errs:  []string{`m.json (byte 0): `},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(tc.dec, "m.json", strings.NewReader(tc.input), nil)
			if tc.fatal != "" {
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				pe.File = "m.json"
				require.Equal(t, tc.fatal, pe.Error())
				return
			}
			require.NoError(t, err)
			require.Len(t, s.samples, tc.samples)
			require.Len(t, s.errs, len(tc.errs))
			for i, e := range s.errs {
				e.File = "m.json"
				require.True(t, strings.HasPrefix(e.Error(), tc.errs[i]), "%q has prefix %q", e.Error(), tc.errs[i])
				require.NotEqual(t, "other", e.Reason(), "wraps a sentinel")
			}
		})
	}
}

func TestKindMapDefaults(t *testing.T) {
	tests := []struct {
		metric string
		want   cascade.MetricKind
	}{
		// Micrometer executor.
		{"executor_queued_tasks", cascade.MetricQueueDepth},
		{"executor_active_threads", cascade.MetricActiveWorkers},
		{"executor_pool_size_threads", cascade.MetricPoolSize},
		{"executor_pool_max_threads", cascade.MetricPoolSize},
		{"executor_queue_remaining_tasks", cascade.MetricOther},
		{"executor_completed_tasks_total", cascade.MetricRequests},
		// Tomcat, Jetty, HikariCP.
		{"tomcat_threads_busy_threads", cascade.MetricActiveWorkers},
		{"tomcat_threads_config_max_threads", cascade.MetricPoolSize},
		{"jetty_threads_busy", cascade.MetricActiveWorkers},
		{"jetty_threads_jobs", cascade.MetricQueueDepth},
		{"jetty_threads_config_max", cascade.MetricPoolSize},
		{"hikaricp_connections_active", cascade.MetricActiveWorkers},
		{"hikaricp_connections_max", cascade.MetricPoolSize},
		{"hikaricp_connections_pending", cascade.MetricQueueDepth},
		// Go runtime and process.
		{"go_goroutines", cascade.MetricOther},
		{"go_sched_gomaxprocs_threads", cascade.MetricOther},
		{"go_gc_duration_seconds", cascade.MetricOther},
		{"go_gc_duration_seconds_count", cascade.MetricOther},
		{"process_cpu_seconds_total", cascade.MetricCPU},
		{"process_resident_memory_bytes", cascade.MetricMemory},
		// Kafka.
		{"kafka_consumergroup_lag", cascade.MetricConsumerLag},
		{"kafka_consumergroup_lag_sum", cascade.MetricConsumerLag},
		{"kafka_consumer_records_lag", cascade.MetricConsumerLag},
		{"kafka_consumer_records_lag_max", cascade.MetricConsumerLag},
		{"records-lag-max", cascade.MetricConsumerLag},
		// RabbitMQ (rabbitmq_prometheus, 3.10 names). The total of ready
		// and unacked is not a kind of its own: both parts are.
		{"rabbitmq_queue_messages", cascade.MetricOther},
		{"rabbitmq_queue_messages_ready", cascade.MetricQueueDepth},
		{"rabbitmq_queue_messages_unacked", cascade.MetricQueueUnacked},
		{"rabbitmq_detailed_queue_messages", cascade.MetricOther},
		{"rabbitmq_detailed_queue_messages_ready", cascade.MetricQueueDepth},
		{"rabbitmq_detailed_queue_messages_unacked", cascade.MetricQueueUnacked},
		{"rabbitmq_queue_consumers", cascade.MetricConsumers},
		{"rabbitmq_detailed_queue_consumers", cascade.MetricConsumers},
		{"rabbitmq_queue_messages_bytes", cascade.MetricQueueBytes},
		{"rabbitmq_detailed_queue_messages_bytes", cascade.MetricQueueBytes},
		{"rabbitmq_queue_messages_ready_bytes", cascade.MetricOther},
		{"rabbitmq_queue_messages_published_total", cascade.MetricPublished},
		{"rabbitmq_channel_messages_published_total", cascade.MetricPublished},
		{"rabbitmq_global_messages_received_total", cascade.MetricPublished},
		{"rabbitmq_channel_messages_redelivered_total", cascade.MetricRedelivered},
		{"rabbitmq_global_messages_redelivered_total", cascade.MetricRedelivered},
		{"rabbitmq_global_messages_dead_lettered_maxlen_total", cascade.MetricDeadLettered},
		{"rabbitmq_global_messages_dead_lettered_expired_total", cascade.MetricDeadLettered},
		{"rabbitmq_global_messages_dead_lettered_rejected_total", cascade.MetricDeadLettered},
		{"rabbitmq_global_messages_dead_lettered_delivery_limit_total", cascade.MetricDeadLettered},
		{"rabbitmq_global_messages_dead_lettered_confirmed_total", cascade.MetricDeadLettered},
		{"rabbitmq_consumer_prefetch", cascade.MetricPrefetch},
		{"rabbitmq_channel_prefetch", cascade.MetricPrefetch},
		{"rabbitmq_process_resident_memory_bytes", cascade.MetricBrokerMemory},
		{"rabbitmq_resident_memory_limit_bytes", cascade.MetricMemoryLimit},
		{"rabbitmq_alarms_memory_used_watermark", cascade.MetricMemoryAlarm},
		{"rabbitmq_alarms_free_disk_space_watermark", cascade.MetricOther},
		{"rabbitmq_connections", cascade.MetricOther},
		// NATS JetStream (prometheus-nats-exporter).
		{"jetstream_consumer_num_pending", cascade.MetricQueueDepth},
		{"jetstream_consumer_num_ack_pending", cascade.MetricQueueUnacked},
		{"jetstream_consumer_num_redelivered", cascade.MetricRedelivered},
		// resilience4j.
		{"resilience4j_circuitbreaker_state", cascade.MetricBreakerOpen},
		{"resilience4j_bulkhead_available_concurrent_calls", cascade.MetricOther},
		{"resilience4j_bulkhead_max_allowed_concurrent_calls", cascade.MetricPoolSize},
		{"resilience4j_circuitbreaker_not_permitted_calls_total", cascade.MetricRejected},
		{"resilience4j_ratelimiter_waiting_threads", cascade.MetricQueueDepth},
		{"resilience4j_ratelimiter_available_permissions", cascade.MetricOther},
		// HTTP and gRPC servers.
		{"http_server_requests_seconds_count", cascade.MetricRequests},
		{"http_server_requests_seconds_sum", cascade.MetricLatency},
		{"http_server_requests_seconds_bucket", cascade.MetricLatency},
		{"http_server_requests_seconds_max", cascade.MetricLatency},
		{"http_server_duration_milliseconds_bucket", cascade.MetricLatency},
		{"http_server_duration_milliseconds_count", cascade.MetricRequests},
		{"http_requests_total", cascade.MetricRequests},
		{"http_request_duration_seconds_bucket", cascade.MetricLatency},
		{"grpc_server_handled_total", cascade.MetricRequests},
		{"grpc_server_handling_seconds_bucket", cascade.MetricLatency},
		// OpenTelemetry semantic conventions.
		{"http.server.request.duration", cascade.MetricLatency},
		{"http.server.request.duration_bucket", cascade.MetricLatency},
		{"http.server.request.duration_count", cascade.MetricRequests},
		{"http.server.active_requests", cascade.MetricActiveWorkers},
		{"rpc.server.duration", cascade.MetricLatency},
		{"messaging.process.duration", cascade.MetricLatency},
		{"messaging.client.consumed.messages", cascade.MetricRequests},
		{"db.client.connection.pending_requests", cascade.MetricQueueDepth},
		// Envoy, Istio.
		{"envoy_cluster_upstream_rq_pending_active", cascade.MetricQueueDepth},
		{"envoy_cluster_upstream_rq_pending_overflow", cascade.MetricRejected},
		{"istio_requests_total", cascade.MetricRequests},
		{"istio_request_duration_milliseconds_bucket", cascade.MetricLatency},
		{"istio_request_duration_milliseconds_count", cascade.MetricRequests},
		// HotROD.
		{"hotrod_request_latency_bucket", cascade.MetricLatency},
		{"hotrod_request_latency_count", cascade.MetricRequests},
		{"hotrod_requests_total", cascade.MetricRequests},
		// Nezha CSV columns.
		{"CpuUsage(m)", cascade.MetricCPU},
		{"MemoryUsage(Mi)", cascade.MetricMemory},
		{"PodClientLatencyP90(s)", cascade.MetricLatency},
		{"PodServerLatencyP99(s)", cascade.MetricLatency},
		{"LatencyP50(s)", cascade.MetricLatency},
		{"PodWorkload(Ops)", cascade.MetricRequestRate},
		{"SuccessRate(%)", cascade.MetricSuccessRate},
		{"PodSuccessRate(%)", cascade.MetricSuccessRate},
		{"NodeCpuUsageRate(%)", cascade.MetricOther},
		{"SyscallRead", cascade.MetricOther},
		// Everything else.
		{"", cascade.MetricOther},
		{"_total", cascade.MetricOther},
		{"some_unknown_gauge", cascade.MetricOther},
	}
	for _, tc := range tests {
		t.Run(tc.metric, func(t *testing.T) {
			require.Equal(t, tc.want, DefaultMetricKinds().Kind(tc.metric))
			var nilMap *KindMap
			require.Equal(t, tc.want, nilMap.Kind(tc.metric), "nil map uses the defaults")
		})
	}
	for _, d := range defaultKindTable {
		require.True(t, knownMetricKind(d.kind), d.pattern)
	}
}

func TestLoadKindMap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kinds.txt")
	require.NoError(t, os.WriteFile(path, []byte(`# our services
orders_worker_queue_size      queue_depth
  orders_workers_busy	active_workers
go_goroutines                 active_workers
jetty_threads_*               other
~.*_inflight( requests)?      active_workers
hikaricp_connections_max      other
hikaricp_*                    pool_size
`), 0o644))
	m, err := LoadKindMap(path)
	require.NoError(t, err)
	tests := []struct {
		metric string
		want   cascade.MetricKind
	}{
		{"orders_worker_queue_size", cascade.MetricQueueDepth},
		{"orders_workers_busy", cascade.MetricActiveWorkers},
		{"go_goroutines", cascade.MetricActiveWorkers},         // override beats default
		{"jetty_threads_busy", cascade.MetricOther},            // glob override
		{"api_inflight", cascade.MetricActiveWorkers},          // regexp, whole name
		{"api_inflight requests", cascade.MetricActiveWorkers}, // regexp with a space
		{"api_inflight_total", cascade.MetricActiveWorkers},    // suffix stripped
		{"x_api_inflight_y", cascade.MetricOther},              // anchored
		{"hikaricp_connections_max", cascade.MetricOther},      // first match wins
		{"hikaricp_connections_active", cascade.MetricPoolSize},
		{"executor_queued_tasks", cascade.MetricQueueDepth}, // defaults still apply
	}
	for _, tc := range tests {
		t.Run(tc.metric, func(t *testing.T) {
			require.Equal(t, tc.want, m.Kind(tc.metric))
		})
	}

	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("# bad\nfoo\nfoo queue\n~(  active_workers\nfoo[ other\nok pool_size\n~ other\n"), 0o644))
	_, err = LoadKindMap(bad)
	require.Error(t, err)
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorIs(t, err, ErrBadValue)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		bad + `:2: want PATTERN KIND, got "foo": malformed record`,
		bad + `:3: unknown kind "queue" (want one of queue_depth, active_workers, pool_size, rejected, breaker_open, cpu, memory, latency, request_rate, requests, error_rate, success_rate, consumer_lag, queue_unacked, consumers, prefetch, published, redelivered, dead_lettered, queue_bytes, broker_memory, memory_limit, memory_alarm, other): bad value`,
		bad + `:4: pattern "~(": error parsing regexp: missing closing ): ` + "`(`" + `: bad value`,
		bad + `:5: pattern "foo[": glob "foo[": syntax error in pattern: bad value`,
		bad + `:7: pattern "~": empty regular expression: bad value`,
	}, lines)

	_, err = LoadKindMap(filepath.Join(dir, "missing.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// One error comes back as the *ParseError itself.
	_, err = ParseKindMap("-", strings.NewReader("a b c\n"))
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, `-:1: unknown kind "c" (want one of queue_depth, active_workers, pool_size, rejected, breaker_open, cpu, memory, latency, request_rate, requests, error_rate, success_rate, consumer_lag, queue_unacked, consumers, prefetch, published, redelivered, dead_lettered, queue_bytes, broker_memory, memory_limit, memory_alarm, other): bad value`, pe.Error())

	// An empty file is no overrides.
	m, err = ParseKindMap("-", strings.NewReader("\n# nothing\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultMetricKinds().Kind("go_goroutines"), m.Kind("go_goroutines"))
}

func TestKindLookupMemo(t *testing.T) {
	l := newKindLookup(nil)
	for i := range kindLookupMax + 10 {
		l.kind(strconv.Itoa(i))
	}
	require.LessOrEqual(t, len(l.memo), kindLookupMax)
	require.Equal(t, cascade.MetricLatency, l.kind("hotrod_request_latency_bucket"))
	require.Equal(t, cascade.MetricLatency, l.kind("hotrod_request_latency_bucket"))
}
