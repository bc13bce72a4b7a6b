package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// metricsBenchSink counts what a decoder sends and keeps nothing.
type metricsBenchSink struct{ samples, bad int }

func (c *metricsBenchSink) span(*cascade.Span) error     { return nil }
func (c *metricsBenchSink) sample(*cascade.Sample) error { c.samples++; return nil }
func (c *metricsBenchSink) invalid(*ParseError) error    { c.bad++; return nil }
func (c *metricsBenchSink) infer(string)                 {}
func (c *metricsBenchSink) warn(string)                  {}
func (c *metricsBenchSink) warnAt(string, *ParseError)   {}

// benchMetricsDecode decodes data once per iteration and reports bytes
// and points per second.
func benchMetricsDecode(b *testing.B, dec decodeFunc, name string, data []byte) {
	b.Helper()
	opts := &Options{}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	points := 0
	for b.Loop() {
		s := &metricsBenchSink{}
		if err := dec(name, bytes.NewReader(data), s, opts); err != nil {
			b.Fatal(err)
		}
		if s.bad > 0 || s.samples == 0 {
			b.Fatalf("%d samples, %d invalid", s.samples, s.bad)
		}
		points += s.samples
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkDecodePromText decodes 40 concatenated timestamped copies of
// the HotROD scrape (338 points each, about 1 MB).
func BenchmarkDecodePromText(b *testing.B) {
	scrape, err := os.ReadFile(hotrodScrape)
	require.NoError(b, err)
	var data []byte
	for i := range 40 {
		data = append(data, withTimestamps(scrape, 1796212101000+int64(i)*1000, false)...)
	}
	benchMetricsDecode(b, decodePromText, "scrapes.prom", data)
}

// BenchmarkDecodePromAPI decodes the HotROD query_range answer holding
// every hotrod_* series at 1 s resolution.
func BenchmarkDecodePromAPI(b *testing.B) {
	data := readMaybeGzip(b, filepath.Join(hotrodPromAPI, "raw_hotrod_series.json.gz"))
	benchMetricsDecode(b, decodePromAPI, "raw_hotrod_series.json", data)
}

// BenchmarkDecodeOTLPMetricsJSON decodes the OTLP metrics fixture
// repeated 20 times (60 export requests, JSON Lines).
func BenchmarkDecodeOTLPMetricsJSON(b *testing.B) {
	one, err := os.ReadFile(otlpMetricsFile)
	require.NoError(b, err)
	data := bytes.Repeat(one, 20)
	benchMetricsDecode(b, decodeOTLPMetricsJSON, "metrics.jsonl", data)
}

// BenchmarkKindMap resolves a mix of known and unknown names without the
// per-decode memo: the cost of one lookup.
func BenchmarkKindMap(b *testing.B) {
	names := []string{
		"hotrod_request_latency_bucket", "go_memstats_heap_alloc_bytes",
		"executor_queued_tasks", "http.server.request.duration_count",
		"PodClientLatencyP90(s)", "some_unknown_gauge",
	}
	var m *KindMap
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			_ = m.Kind(n)
		}
	}
	b.ReportMetric(float64(b.N*len(names))/b.Elapsed().Seconds(), "lookups/s")
}
