package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"cascade"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// otlpFuzzMax caps fuzz inputs: larger ones only slow the fuzzer, and the
// decoders hold at most one element in memory anyway.
const otlpFuzzMax = 64 << 10

// otlpSeeds are the fuzz seeds for the OTLP decoders: the repository's
// sample trace as Jaeger's api_v3 gave it, and the same trace written the
// ways the collector's file exporter and OTLP clients write it.
type otlpSeeds struct {
	json   [][]byte
	proto  [][]byte
	framed [][]byte
}

// loadOTLPSeeds builds the seeds from testdata, skipping inputs over
// otlpFuzzMax.
func loadOTLPSeeds(f *testing.F) otlpSeeds {
	f.Helper()
	apiV3, err := os.ReadFile(repoTestdata("hotrod-baseline", "sample-trace-otlp.json"))
	require.NoError(f, err)
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(f, json.Unmarshal(apiV3, &answer))
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(answer.Result)
	require.NoError(f, err)

	var seeds otlpSeeds
	add := func(dst *[][]byte, b []byte) {
		if len(b) <= otlpFuzzMax {
			*dst = append(*dst, b)
		}
	}
	add(&seeds.json, apiV3)
	add(&seeds.json, []byte(`{"resourceSpans":[]}`))
	add(&seeds.json, []byte(`{"result":{"resource_spans":[{"resource":{},"scope_spans":[{"spans":[{"trace_id":"01","span_id":"02"}]}]}]},"x":[1,"\"",{}]}`))
	add(&seeds.json, []byte(""))
	var framed []byte
	for i, batch := range splitOTLPTraces(td, 2) {
		js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(batch)
		require.NoError(f, err)
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(batch)
		require.NoError(f, err)
		if i < 3 {
			add(&seeds.json, js)
			add(&seeds.proto, pb)
		}
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(pb)))
		framed = append(framed, pb...)
	}
	add(&seeds.framed, framed)
	add(&seeds.framed, framed[:len(framed)/2])
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(f, err)
	lines := bytes.Join([][]byte{js, js[:len(js)/3], js}, []byte("\n"))
	add(&seeds.json, lines)
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(f, err)
	add(&seeds.proto, pb)
	// A producer and a consumer linked across traces, as the file
	// exporter writes them, and the same as protobuf.
	mq, err := os.ReadFile(filepath.Join("testdata", "mq", "otel-rabbitmq.jsonl"))
	require.NoError(f, err)
	add(&seeds.json, mq)
	for _, line := range bytes.Split(bytes.TrimSpace(mq), []byte("\n")) {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(line)
		require.NoError(f, err)
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(f, err)
		add(&seeds.proto, pb)
	}
	add(&seeds.proto, []byte{})
	// Found by the fuzzer: a field number beyond protobuf's range.
	add(&seeds.proto, []byte("0;\xf0\x8a\xce\xcd\xf900"))
	return seeds
}

// checkOTLPDecode runs dec over data twice, once going on after bad
// records and once stopping at the first, and checks what it produced:
// no panic (the fuzzer catches those), only positioned ParseErrors, and
// spans that keep the sink's contract.
func checkOTLPDecode(t *testing.T, dec decodeFunc, data []byte) *collectSink {
	got, err := decodeTestBytes(dec, "fuzz", bytes.NewReader(data), nil)
	require.NoError(t, err)
	for _, pe := range got.errs {
		require.Equal(t, "fuzz", pe.File)
		require.GreaterOrEqual(t, pe.Offset, int64(0))
		require.LessOrEqual(t, pe.Offset, int64(len(data)))
		require.NotEqual(t, "other", pe.Reason(), "error wraps no sentinel: %v", pe)
	}
	for i := range got.spans {
		checkOTLPSpan(t, &got.spans[i])
	}

	s := newCollectSink()
	s.failFast = true
	err = dec("fuzz", bytes.NewReader(data), s, &Options{})
	if len(got.errs) == 0 {
		require.NoError(t, err)
	} else {
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "error %v is not a ParseError", err)
		require.Equal(t, got.errs[0], pe)
	}
	return got
}

// checkOTLPSpan checks the guarantees the sink relies on.
func checkOTLPSpan(t *testing.T, s *cascade.Span) {
	require.Len(t, s.TraceID, 32)
	require.Len(t, s.SpanID, 16)
	require.NotEqual(t, "00000000000000000000000000000000", s.TraceID)
	require.NotEqual(t, "0000000000000000", s.SpanID)
	if s.ParentSpanID != "" {
		require.Len(t, s.ParentSpanID, 16)
	}
	require.NotEmpty(t, s.Service)
	require.NotEqual(t, s.SpanID, s.ParentSpanID, "a span its own parent")
	for _, str := range []string{s.Service, s.Instance, s.Operation, s.ErrorType, s.Peer} {
		require.True(t, utf8.ValidString(str), "%q is not UTF-8", str)
	}
	require.Positive(t, s.Start)
	require.GreaterOrEqual(t, s.Duration, int64(0))
	require.GreaterOrEqual(t, s.Start+s.Duration, s.Start, "end overflows")
	require.Contains(t, []cascade.Status{cascade.StatusUnset, cascade.StatusOK, cascade.StatusError}, s.Status)
	if s.Status != cascade.StatusError {
		require.Empty(t, s.ErrorType)
	}
}

// FuzzDecodeOTLPJSON fuzzes the OTLP JSON decoder.
func FuzzDecodeOTLPJSON(f *testing.F) {
	seeds := loadOTLPSeeds(f)
	for _, b := range seeds.json {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > otlpFuzzMax {
			t.Skip()
		}
		checkOTLPDecode(t, decodeOTLPJSON, data)
	})
}

// FuzzDecodeOTLPProto fuzzes the raw proto decoder against pdata.
func FuzzDecodeOTLPProto(f *testing.F) {
	seeds := loadOTLPSeeds(f)
	for _, b := range seeds.proto {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > otlpFuzzMax {
			t.Skip()
		}
		got := checkOTLPDecode(t, decodeOTLPProto, data)
		// pdata reading the whole request is the reference: where it
		// fails, the decoder must report something; where the decoder
		// reports nothing, it must emit every span pdata found.
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(data); err != nil {
			require.NotEmpty(t, got.errs, "pdata fails with %v", err)
		} else if len(got.errs) == 0 {
			require.Len(t, got.spans, req.Traces().SpanCount())
		}
	})
}

// FuzzDecodeOTLPProtoFramed fuzzes the framed proto decoder.
func FuzzDecodeOTLPProtoFramed(f *testing.F) {
	seeds := loadOTLPSeeds(f)
	for _, b := range seeds.framed {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > otlpFuzzMax {
			t.Skip()
		}
		checkOTLPDecode(t, decodeOTLPProtoFramed, data)
	})
}
