package ingest

import (
	"bytes"
	"os"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// csvCountSink counts what a decoder produces and keeps nothing, so that
// benchmarks measure the decoder alone.
type csvCountSink struct{ nSpans, nSamples, nInvalid int }

// The csvCountSink methods count records and keep nothing.
func (c *csvCountSink) span(*cascade.Span) error     { c.nSpans++; return nil }
func (c *csvCountSink) sample(*cascade.Sample) error { c.nSamples++; return nil }
func (c *csvCountSink) invalid(*ParseError) error    { c.nInvalid++; return nil }
func (c *csvCountSink) infer(string)                 {}
func (c *csvCountSink) warn(string)                  {}
func (c *csvCountSink) warnAt(string, *ParseError)   {}

// BenchmarkDecodeSpanCSV decodes two minutes of Nezha OnlineBoutique spans.
func BenchmarkDecodeSpanCSV(b *testing.B) {
	// Two Nezha minutes, decompressed once: 12,033 spans, 1.6 MB.
	var data []byte
	for _, p := range []string{"05_19_trace.csv.gz", "05_20_trace.csv.gz"} {
		raw := readGzip(b, repoTestdata("nezha-onlineboutique", "trace", p))
		if data != nil {
			raw = raw[bytes.IndexByte(raw, '\n')+1:] // one header
		}
		data = append(data, raw...)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		s := &csvCountSink{}
		if err := decodeSpanCSV("bench.csv", bytes.NewReader(data), s, &Options{}); err != nil || s.nInvalid > 0 {
			b.Fatal(err, s.nInvalid)
		}
		spans += s.nSpans
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDecodeMetricCSV decodes one Nezha pod-day of metrics.
func BenchmarkDecodeMetricCSV(b *testing.B) {
	// One Nezha pod-day: 1,209 rows × 19 metrics, 492 KB.
	data, err := os.ReadFile(repoTestdata("nezha-onlineboutique", "metric", "currencyservice-cf787dd48-vpjrd_metric.csv"))
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	points := 0
	for b.Loop() {
		s := &csvCountSink{}
		if err := decodeMetricCSV("bench_metric.csv", bytes.NewReader(data), s, &Options{}); err != nil || s.nInvalid > 0 {
			b.Fatal(err, s.nInvalid)
		}
		points += s.nSamples
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}
