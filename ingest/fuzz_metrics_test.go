package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// metricsFuzzMax is the largest input the metric fuzzers decode.
const metricsFuzzMax = 64 << 10

// metricsFuzzSeed trims a seed to metricsFuzzMax at a line boundary.
func metricsFuzzSeed(data []byte) []byte {
	if len(data) <= metricsFuzzMax {
		return data
	}
	data = data[:metricsFuzzMax]
	if i := bytes.LastIndexByte(data, '\n'); i > 0 {
		data = data[:i+1]
	}
	return data
}

// checkMetricsDecode asserts the decoder contract on any input: a returned
// error is a *ParseError, every reported record error wraps a sentinel,
// and every sample has a name and a known kind.
func checkMetricsDecode(t *testing.T, err error, s *collectSink) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "not a *ParseError: %v", err)
		require.NotEqual(t, "other", pe.Reason(), pe.Error())
	}
	for _, e := range s.errs {
		require.NotNil(t, e.Err)
		require.NotEqual(t, "other", e.Reason(), e.Error())
	}
	for _, smp := range s.samples {
		require.NotEmpty(t, smp.Metric)
		require.True(t, knownMetricKind(smp.Kind), "kind %q", smp.Kind)
	}
}

func FuzzDecodePromText(f *testing.F) {
	scrape, err := os.ReadFile(hotrodScrape)
	require.NoError(f, err)
	f.Add(scrape)
	f.Add(withTimestamps(scrape[:4096], 1796212101000, false))
	for _, s := range []string{
		"",
		"# EOF\n",
		"a 1\na 2 1000\n# TYPE a gauge\na 3\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n# TYPE h histogram\nh_count 4\n",
		"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 3\n",
		"{\"my.metric\",\"a.b\"=\"c\"} 1 -5\r\n",
		"a{x=\"\\q\"} 1\nb 1 99999999999999999\n",
		"# HELP\n# TYPE\n#\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		s, err := decodeTestBytes(decodePromText, "fuzz.prom", bytes.NewReader(data), &Options{})
		checkMetricsDecode(t, err, s)
	})
}

func FuzzDecodePromAPI(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(hotrodPromAPI, "*.json*"))
	require.NoError(f, err)
	require.NotEmpty(f, paths)
	for _, p := range paths {
		f.Add(metricsFuzzSeed(readMaybeGzip(f, p)))
	}
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up"},"value":[1435781451.781,"1"]}]}}`,
		`{"data":{"result":[{"metric":{},"values":[[1e9,"NaN"],[1.5,"+Inf"]]}],"resultType":"matrix"},"status":"success"}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"h"},"histograms":[[1,{"count":"1","sum":"2"}]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":7},{"values":[[1,"x"],["1e99999","1"],[1]]}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		s, err := decodeTestBytes(decodePromAPI, "fuzz.json", bytes.NewReader(data), &Options{})
		checkMetricsDecode(t, err, s)
	})
}

// otlpMetricsFuzzSeeds returns the OTLP fixture in its encodings: JSON
// Lines, one pretty-printed document, a raw and a framed proto.
func otlpMetricsFuzzSeeds(f *testing.F) (jsonSeeds, protoSeeds [][]byte) {
	data, err := os.ReadFile(otlpMetricsFile)
	require.NoError(f, err)
	jsonSeeds = append(jsonSeeds, metricsFuzzSeed(data))
	first, _, _ := bytes.Cut(data, []byte("\n"))
	jsonSeeds = append(jsonSeeds, first)
	var pretty bytes.Buffer
	require.NoError(f, json.Indent(&pretty, first, "", "  "))
	jsonSeeds = append(jsonSeeds, pretty.Bytes())
	jsonSeeds = append(jsonSeeds, []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","histogram":{"dataPoints":[{"timeUnixNano":"5","bucketCounts":["1"],"explicitBounds":[1,2]}]}}]}]}]}`))

	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(first)
	require.NoError(f, err)
	raw, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	require.NoError(f, err)
	framed := append(binary.BigEndian.AppendUint32(nil, uint32(len(raw))), raw...)
	protoSeeds = append(protoSeeds, raw, framed)
	return jsonSeeds, protoSeeds
}

func FuzzDecodeOTLPMetricsJSON(f *testing.F) {
	seeds, _ := otlpMetricsFuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		s, err := decodeTestBytes(decodeOTLPMetricsJSON, "fuzz.jsonl", bytes.NewReader(data), &Options{})
		checkMetricsDecode(t, err, s)
	})
}

func FuzzDecodeOTLPMetricsProto(f *testing.F) {
	_, seeds := otlpMetricsFuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		s, err := decodeTestBytes(decodeOTLPMetricsProto, "fuzz.pb", bytes.NewReader(data), &Options{})
		checkMetricsDecode(t, err, s)
	})
}

func FuzzParseKindMap(f *testing.F) {
	for _, s := range []string{
		"",
		"# comment\n\norders_queue queue_depth\n",
		"jetty_threads_* other\n~.*_inflight( requests)? active_workers\nfoo[ other\n",
		"a b c\n~ other\n~( latency\nx\n",
		"Pod*Latency*(s) latency\n\\x other\n",
	} {
		f.Add([]byte(s))
	}
	names := []string{"orders_queue", "jetty_threads_busy", "api_inflight_total", "hotrod_request_latency_count", "", "PodClientLatencyP90(s)"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		m, err := ParseKindMap("fuzz.txt", bytes.NewReader(data))
		if err != nil {
			require.Nil(t, m)
			// One *ParseError, or several joined, each naming its line.
			var errs []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			} else {
				errs = []error{err}
			}
			for _, e := range errs {
				var pe *ParseError
				require.True(t, errors.As(e, &pe), "not a *ParseError: %v", e)
				require.Positive(t, pe.Line)
				require.True(t, strings.HasPrefix(pe.Error(), "fuzz.txt:"), pe.Error())
			}
			return
		}
		for _, n := range append(names, string(data)) {
			require.Contains(t, cascade.MetricKinds, m.Kind(n))
		}
	})
}
