package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"cascade"

	"github.com/stretchr/testify/require"
)

// traceJSONFuzzMax caps the Jaeger and Zipkin fuzz inputs at 64 KiB:
// larger ones only slow the fuzzer, and the decoders hold one trace or
// span at a time anyway.
const traceJSONFuzzMax = 64 << 10

// addTraceJSONSeeds adds inputs to the fuzzer's corpus, skipping any over
// traceJSONFuzzMax.
func addTraceJSONSeeds(f *testing.F, inputs ...[]byte) {
	f.Helper()
	for _, in := range inputs {
		if len(in) <= traceJSONFuzzMax {
			f.Add(in)
		}
	}
}

// readSeed reads a seed file.
func readSeed(f *testing.F, path string) []byte {
	f.Helper()
	b, err := os.ReadFile(path)
	require.NoError(f, err)
	return b
}

// jaegerFuzzExcerpt returns the first n spans of the sample Jaeger trace
// in testdata, in the file's own layout. Whole files make slow seeds: the
// fuzzer minimizes every interesting input, and the seeds' 40 spans add
// nothing that a few do not.
func jaegerFuzzExcerpt(f *testing.F, n int) []byte {
	f.Helper()
	b, err := os.ReadFile(repoTestdata("hotrod-baseline", "sample-trace-jaeger-legacy.json"))
	require.NoError(f, err)
	var doc struct {
		Data []struct {
			TraceID   string            `json:"traceID"`
			Spans     []json.RawMessage `json:"spans"`
			Processes json.RawMessage   `json:"processes"`
		} `json:"data"`
	}
	require.NoError(f, json.Unmarshal(b, &doc))
	tr := doc.Data[0]
	spans := bytes.Join(rawBytes(tr.Spans[:n]), []byte(","))
	return fmt.Appendf(nil, `{"data":[{"traceID":%q,"spans":[%s],"processes":%s,"warnings":null}],"total":0,"limit":0,"offset":0,"errors":null}`,
		tr.TraceID, spans, tr.Processes)
}

// rawBytes converts raw JSON values for bytes.Join.
func rawBytes(raw []json.RawMessage) [][]byte {
	out := make([][]byte, len(raw))
	for i, r := range raw {
		out[i] = r
	}
	return out
}

// zipkinFuzzExcerpt returns the first n spans of a Zipkin fixture, as an
// array of spans, or as an array of one trace when nested.
func zipkinFuzzExcerpt(f *testing.F, path string, n int, nested bool) []byte {
	f.Helper()
	b, err := os.ReadFile(path)
	require.NoError(f, err)
	var spans []json.RawMessage
	require.NoError(f, json.Unmarshal(b, &spans))
	if len(spans) > 0 && spans[0][0] == '[' { // an array of traces: take the first
		inner := spans[0]
		spans = nil
		require.NoError(f, json.Unmarshal(inner, &spans))
	}
	out := append([]byte("["), bytes.Join(rawBytes(spans[:n]), []byte(","))...)
	out = append(out, ']')
	if nested {
		out = append(append([]byte("["), out...), ']')
	}
	return out
}

// checkTraceJSONDecode runs dec over data and checks what any input must
// give: no panic; every defect a positioned *ParseError that wraps a
// sentinel; every span complete and normalized; and the same result
// whether the input arrives whole or a byte at a time (which moves every
// buffer boundary the decoder's position tracking must cross). With a sink
// that stops at the first defect, the decoder must return that defect.
func checkTraceJSONDecode(t *testing.T, dec decodeFunc, data []byte) {
	if len(data) > traceJSONFuzzMax {
		t.Skip("input over 64 KiB")
	}
	whole, err := decodeTestBytes(dec, "fuzz.json", bytes.NewReader(data), nil)
	require.NoError(t, err, "only a sink's error may end decoding with an error")
	for _, pe := range whole.errs {
		require.Equal(t, "fuzz.json", pe.File)
		require.NotEqual(t, "other", pe.Reason(), "%v wraps no sentinel", pe)
		require.True(t, pe.Offset >= 0 && pe.Offset <= int64(len(data)), "%v: offset outside the input", pe)
	}
	for _, sp := range whole.spans {
		require.Len(t, sp.TraceID, 32, "%+v", sp)
		require.Len(t, sp.SpanID, 16, "%+v", sp)
		require.True(t, sp.ParentSpanID == "" || len(sp.ParentSpanID) == 16, "%+v", sp)
		require.NotEmpty(t, sp.Service, "%+v", sp)
		require.NotEqual(t, sp.SpanID, sp.ParentSpanID, "%+v", sp)
		for _, str := range []string{sp.Service, sp.Instance, sp.Operation, sp.ErrorType, sp.Peer} {
			require.True(t, utf8.ValidString(str), "%q is not UTF-8", str)
		}
		require.Positive(t, sp.Start, "%+v", sp)
		require.GreaterOrEqual(t, sp.Duration, int64(0), "%+v", sp)
		require.GreaterOrEqual(t, sp.End(), sp.Start, "%+v", sp)
		require.Contains(t, []cascade.Status{cascade.StatusUnset, cascade.StatusOK, cascade.StatusError}, sp.Status, "%+v", sp)
		require.True(t, sp.Status == cascade.StatusError || sp.ErrorType == "", "%+v", sp)
		for _, l := range sp.Links {
			require.True(t, l.TraceID != "" && l.SpanID != "", "%+v", sp)
		}
	}

	bytewise, err := decodeTestBytes(dec, "fuzz.json", iotest.OneByteReader(bytes.NewReader(data)), nil)
	require.NoError(t, err)
	require.Equal(t, whole.spans, bytewise.spans)
	require.Equal(t, whole.errs, bytewise.errs)
	require.Equal(t, whole.notes, bytewise.notes)
	require.Equal(t, whole.warns, bytewise.warns)

	s := newCollectSink()
	s.failFast = true
	err = dec("fuzz.json", bytes.NewReader(data), s, &Options{})
	if len(whole.errs) == 0 {
		require.NoError(t, err)
		return
	}
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, whole.errs[0], pe)
}

// FuzzDecodeJaeger fuzzes the Jaeger decoder from an excerpt of the sample
// trace and hand-written answers; see checkTraceJSONDecode.
func FuzzDecodeJaeger(f *testing.F) {
	good := jaegerSpanJSON("a1", tagsJSON(tagJSON("span.kind", "string", "client"), tagJSON("error", "bool", true)))
	addTraceJSONSeeds(f,
		jaegerFuzzExcerpt(f, 3),
		readSeed(f, "testdata/mq/jaeger-follows-from.json"),
		[]byte(""),
		[]byte(jaegerDoc(good, jaegerSpanJSON("a2", `"references":[{"refType":"CHILD_OF","traceID":"1","spanID":"a1"}]`))),
		[]byte(jaegerDoc(good)[:150]),
		[]byte(`{"traceID":"1","spans":[`+good+`],"processes":{"p1":{"serviceName":"svc","tags":[]}}}`),
		[]byte(`[{"traceID":"1","processes":{"p1":{"serviceName":"s"}},"spans":[`+good+`]}]`+"\n"+jaegerDoc(good)),
		[]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`),
		[]byte(jaegerDoc(`{"spanID":"A","startTime":"1e3","duration":-1,"process":{"serviceName":"x"},"logs":[{"fields":[{"key":"event","value":"exception"},{"key":"exception.type","value":"E"}]}],"tags":[{"key":"otel.status_code","value":"ERROR"}]}`)),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTraceJSONDecode(t, decodeJaegerJSON, data)
	})
}

// FuzzDecodeZipkin fuzzes the Zipkin decoder from excerpts of the fixtures
// and hand-written answers; see checkTraceJSONDecode.
func FuzzDecodeZipkin(f *testing.F) {
	good := zipkinSpanJSON("a1", `"kind":"CLIENT","tags":{"error":"boom","http.status_code":"503"}`)
	addTraceJSONSeeds(f,
		zipkinFuzzExcerpt(f, zipkinTraceFixture, 3, false),
		zipkinFuzzExcerpt(f, zipkinTracesFixture, 3, true),
		readSeed(f, "testdata/mq/brave-rabbit-kafka.json"),
		[]byte(""),
		[]byte("["+good+"]"),
		[]byte("[["+good+"],["+zipkinSpanJSON("a2", `"parentId":"a1","shared":true`)+"]]\n["+good+"]"),
		[]byte(good),
		[]byte(`[{"traceId":"1","id":"2","timestamp":"5","duration":-1,"localEndpoint":{"serviceName":"s","ipv6":"::1","port":1}}]`),
		[]byte(`[{"traceId":"1","id":"2","timestamp":5,"localEndpoint":{"serviceName":"s"},"annotations":[{"value":"exception: {\"exception.type\":\"E\"}"}],"tags":{"error":""}}]`),
		[]byte("["+good+","+good[:30]),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTraceJSONDecode(t, decodeZipkinJSON, data)
	})
}
