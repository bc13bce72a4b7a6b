package ingest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"sync"
	"testing"

	"cascade"
)

// traceJSONBenchSink counts spans and defects and keeps nothing, so that
// the benchmarks measure the decoder alone.
type traceJSONBenchSink struct{ spans, defects int }

// span counts a span.
func (c *traceJSONBenchSink) span(*cascade.Span) error { c.spans++; return nil }

// sample ignores a metric point.
func (c *traceJSONBenchSink) sample(*cascade.Sample) error { return nil }

// invalid counts a defect and goes on.
func (c *traceJSONBenchSink) invalid(*ParseError) error { c.defects++; return nil }

// infer ignores a note.
func (c *traceJSONBenchSink) infer(string) {}

// warn ignores a warning.
func (c *traceJSONBenchSink) warn(string)                {}
func (c *traceJSONBenchSink) warnAt(string, *ParseError) {}

// The benchmark inputs, built once: the HotROD capture as Jaeger's
// /api/traces answered it (11,850 spans), and the Zipkin fixtures' two
// traces repeated 150 times as one GET /api/v2/traces answer (11,850 spans).
var traceJSONBench struct {
	once           sync.Once
	jaeger, zipkin []byte
	err            error
}

// traceJSONBenchInputs returns the Jaeger and Zipkin benchmark inputs.
func traceJSONBenchInputs(b *testing.B) (jaeger, zipkin []byte) {
	b.Helper()
	tb := &traceJSONBench
	tb.once.Do(func() {
		f, err := os.Open(hotrodJaeger)
		if err != nil {
			tb.err = err
			return
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.err = err
			return
		}
		if tb.jaeger, tb.err = io.ReadAll(zr); tb.err != nil {
			return
		}
		var traces [][]byte
		for _, path := range []string{zipkinTraceFixture, zipkinTracesFixture} {
			data, err := os.ReadFile(path)
			if err != nil {
				tb.err = err
				return
			}
			data = bytes.TrimSpace(data)
			if path == zipkinTracesFixture { // [[…]]: one trace
				data = data[1 : len(data)-1]
			}
			traces = append(traces, data)
		}
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i := range 150 {
			for j, t := range traces {
				if i+j > 0 {
					buf.WriteByte(',')
				}
				buf.Write(t)
			}
		}
		buf.WriteByte(']')
		tb.zipkin = buf.Bytes()
	})
	if tb.err != nil {
		b.Fatal(tb.err)
	}
	return tb.jaeger, tb.zipkin
}

// benchTraceJSON runs dec over data once per iteration and reports spans/s.
func benchTraceJSON(b *testing.B, dec decodeFunc, data []byte, want int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var r bytes.Reader
	spans := 0
	for b.Loop() {
		r.Reset(data)
		var s traceJSONBenchSink
		if err := dec("bench.json", &r, &s, &Options{}); err != nil {
			b.Fatal(err)
		}
		if s.spans != want || s.defects != 0 {
			b.Fatalf("decoded %d spans and %d defects, want %d spans", s.spans, s.defects, want)
		}
		spans += s.spans
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDecodeJaegerJSON decodes the HotROD capture as Jaeger's query
// API answered it.
func BenchmarkDecodeJaegerJSON(b *testing.B) {
	jaeger, _ := traceJSONBenchInputs(b)
	benchTraceJSON(b, decodeJaegerJSON, jaeger, 11850)
}

// BenchmarkDecodeZipkinJSON decodes HotROD traces as Zipkin's API answers
// GET /api/v2/traces.
func BenchmarkDecodeZipkinJSON(b *testing.B) {
	_, zipkin := traceJSONBenchInputs(b)
	benchTraceJSON(b, decodeZipkinJSON, zipkin, 150*(40+39))
}
