package ingest

import (
	"bytes"
	"testing"

	"cascade"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// otlpCountSink counts what a decoder produces and keeps nothing, so that
// benchmarks measure the decoder alone.
type otlpCountSink struct {
	spans, invalids int
}

// span counts a span.
func (c *otlpCountSink) span(*cascade.Span) error { c.spans++; return nil }

// sample ignores a sample.
func (c *otlpCountSink) sample(*cascade.Sample) error { return nil }

// invalid counts an invalid record and goes on.
func (c *otlpCountSink) invalid(*ParseError) error { c.invalids++; return nil }

// infer ignores a note.
func (c *otlpCountSink) infer(string) {}

// warn ignores a warning.
func (c *otlpCountSink) warn(string)                {}
func (c *otlpCountSink) warnAt(string, *ParseError) {}

// benchOTLPDecode runs dec over data once per iteration and reports spans/s.
// The fixture is the HotROD capture, 11,850 spans, marshalled as real
// producers write it.
func benchOTLPDecode(b *testing.B, dec decodeFunc, data []byte) {
	want := loadOTLPHotROD(b).traces.SpanCount()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var r bytes.Reader
	n := 0
	for b.Loop() {
		r.Reset(data)
		var s otlpCountSink
		if err := dec("bench", &r, &s, &Options{}); err != nil {
			b.Fatal(err)
		}
		if s.spans != want || s.invalids != 0 {
			b.Fatalf("decoded %d spans and %d invalid records, want %d spans", s.spans, s.invalids, want)
		}
		n++
	}
	b.ReportMetric(float64(want*n)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDecodeOTLPJSON decodes one OTLP JSON ExportTraceServiceRequest
// holding every HotROD trace.
func BenchmarkDecodeOTLPJSON(b *testing.B) {
	benchOTLPDecode(b, decodeOTLPJSON, loadOTLPHotROD(b).jsonObject)
}

// BenchmarkDecodeOTLPJSONLines decodes the file exporter's JSON Lines.
func BenchmarkDecodeOTLPJSONLines(b *testing.B) {
	benchOTLPDecode(b, decodeOTLPJSON, loadOTLPHotROD(b).jsonLines)
}

// BenchmarkDecodeOTLPJSONAPIv3 decodes the capture as Jaeger's api_v3
// answered it (int64 as strings, enums as integers).
func BenchmarkDecodeOTLPJSONAPIv3(b *testing.B) {
	benchOTLPDecode(b, decodeOTLPJSON, loadOTLPHotROD(b).apiV3)
}

// BenchmarkDecodeOTLPProto decodes one binary ExportTraceServiceRequest.
func BenchmarkDecodeOTLPProto(b *testing.B) {
	benchOTLPDecode(b, decodeOTLPProto, loadOTLPHotROD(b).proto)
}

// BenchmarkDecodeOTLPProtoFramed decodes the file exporter's framed proto.
func BenchmarkDecodeOTLPProtoFramed(b *testing.B) {
	benchOTLPDecode(b, decodeOTLPProtoFramed, loadOTLPHotROD(b).framed)
}

// BenchmarkPdataUnmarshalJSON is the floor for BenchmarkDecodeOTLPJSON:
// pdata alone unmarshalling the same bytes, with no normalization.
func BenchmarkPdataUnmarshalJSON(b *testing.B) {
	h := loadOTLPHotROD(b)
	want := h.traces.SpanCount()
	b.ReportAllocs()
	b.SetBytes(int64(len(h.jsonObject)))
	var u ptrace.JSONUnmarshaler
	n := 0
	for b.Loop() {
		td, err := u.UnmarshalTraces(h.jsonObject)
		if err != nil || td.SpanCount() != want {
			b.Fatal(err, td.SpanCount())
		}
		n++
	}
	b.ReportMetric(float64(want*n)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkPdataUnmarshalProto is the floor for BenchmarkDecodeOTLPProto.
func BenchmarkPdataUnmarshalProto(b *testing.B) {
	h := loadOTLPHotROD(b)
	want := h.traces.SpanCount()
	b.ReportAllocs()
	b.SetBytes(int64(len(h.proto)))
	n := 0
	for b.Loop() {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(h.proto); err != nil || req.Traces().SpanCount() != want {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(want*n)/b.Elapsed().Seconds(), "spans/s")
}
