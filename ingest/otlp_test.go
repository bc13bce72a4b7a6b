package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// hotrodOTLPPath is the real HotROD capture, a Jaeger api_v3 answer.
var hotrodOTLPPath = repoTestdata("hotrod-baseline", "traces-otlp.json.gz")

// otlpHotRODFixtures holds the HotROD capture and the files real producers
// would have written from the same traces, built once per test binary.
type otlpHotRODFixtures struct {
	apiV3  []byte        // the capture, decompressed
	traces ptrace.Traces // the capture as pdata reads it
	// What the collector's file exporter writes for the traces split into
	// batches: JSON Lines and length-prefixed proto.
	jsonLines []byte
	framed    []byte
	// One ExportTraceServiceRequest holding every trace, as OTLP JSON and
	// as binary proto.
	jsonObject []byte
	proto      []byte
}

// otlpFixtureBatch is how many resourceSpans go into one exported batch.
const otlpFixtureBatch = 100

// The HotROD fixtures, built on first use.
var (
	otlpHotRODOnce sync.Once
	otlpHotROD     otlpHotRODFixtures
	otlpHotRODErr  error
)

// loadOTLPHotROD returns the HotROD fixtures, building them on first use.
func loadOTLPHotROD(tb testing.TB) *otlpHotRODFixtures {
	tb.Helper()
	otlpHotRODOnce.Do(func() { otlpHotRODErr = buildOTLPHotROD(&otlpHotROD) })
	require.NoError(tb, otlpHotRODErr)
	return &otlpHotROD
}

// buildOTLPHotROD reads the capture with pdata alone (independently of the
// decoder under test) and marshals it the way the collector's file
// exporter and an OTLP client do.
func buildOTLPHotROD(h *otlpHotRODFixtures) error {
	f, err := os.Open(hotrodOTLPPath)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	if h.apiV3, err = io.ReadAll(zr); err != nil {
		return err
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(h.apiV3, &answer); err != nil {
		return err
	}
	var ju ptrace.JSONUnmarshaler
	if h.traces, err = ju.UnmarshalTraces(answer.Result); err != nil {
		return err
	}
	var jm ptrace.JSONMarshaler
	var pm ptrace.ProtoMarshaler
	for _, batch := range splitOTLPTraces(h.traces, otlpFixtureBatch) {
		line, err := jm.MarshalTraces(batch)
		if err != nil {
			return err
		}
		h.jsonLines = append(append(h.jsonLines, line...), '\n')
		msg, err := pm.MarshalTraces(batch)
		if err != nil {
			return err
		}
		h.framed = binary.BigEndian.AppendUint32(h.framed, uint32(len(msg)))
		h.framed = append(h.framed, msg...)
	}
	if h.jsonObject, err = ptraceotlp.NewExportRequestFromTraces(h.traces).MarshalJSON(); err != nil {
		return err
	}
	h.proto, err = ptraceotlp.NewExportRequestFromTraces(h.traces).MarshalProto()
	return err
}

// splitOTLPTraces copies td into batches of at most n resourceSpans each, in
// order.
func splitOTLPTraces(td ptrace.Traces, n int) []ptrace.Traces {
	var out []ptrace.Traces
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i += n {
		batch := ptrace.NewTraces()
		for k := i; k < min(i+n, rss.Len()); k++ {
			rss.At(k).CopyTo(batch.ResourceSpans().AppendEmpty())
		}
		out = append(out, batch)
	}
	return out
}

// otlpCounts are facts about an OTLP JSON document counted from its text
// alone, to check the decoder against.
type otlpCounts struct {
	spans, traces, errors, servers, clients, roots int
}

// countOTLPJSON counts spans ("spanId" members; the captures have no
// links), distinct trace ids, error statuses, server and client kinds, and
// spans without a parent.
func countOTLPJSON(data []byte) otlpCounts {
	traces := map[string]bool{}
	for _, m := range regexp.MustCompile(`"traceId":"([0-9a-f]+)"`).FindAllSubmatch(data, -1) {
		traces[string(m[1])] = true
	}
	spans := bytes.Count(data, []byte(`"spanId"`))
	return otlpCounts{
		spans:   spans,
		traces:  len(traces),
		errors:  len(regexp.MustCompile(`"status":\{[^{}]*"code":2\b`).FindAll(data, -1)),
		servers: bytes.Count(data, []byte(`"kind":2`)),
		clients: bytes.Count(data, []byte(`"kind":3`)),
		roots:   spans - bytes.Count(data, []byte(`"parentSpanId":"`)),
	}
}

// otlpSpanCounts computes the same facts from decoded spans.
func otlpSpanCounts(spans []cascade.Span) otlpCounts {
	traces := map[string]bool{}
	c := otlpCounts{spans: len(spans)}
	for _, s := range spans {
		traces[s.TraceID] = true
		if s.Status == cascade.StatusError {
			c.errors++
		}
		switch s.Kind {
		case cascade.KindServer:
			c.servers++
		case cascade.KindClient:
			c.clients++
		}
		if s.IsRoot() {
			c.roots++
		}
	}
	c.traces = len(traces)
	return c
}

// otlpServices counts the spans of each service.
func otlpServices(spans []cascade.Span) map[string]int {
	m := map[string]int{}
	for _, s := range spans {
		m[s.Service]++
	}
	return m
}

// TestDecodeOTLPHotROD decodes the real HotROD capture and the files the
// collector would have written from it, and checks them against counts
// taken from the capture's text.
func TestDecodeOTLPHotROD(t *testing.T) {
	h := loadOTLPHotROD(t)
	want := countOTLPJSON(h.apiV3)
	// What SOURCE.md says of the capture, so that the independent count
	// is checked too.
	require.Equal(t, 11850, want.spans)
	require.Equal(t, 300, want.traces)
	require.Equal(t, 300, want.roots)

	ref, err := decodeTestFile(t, decodeOTLPJSON, hotrodOTLPPath, nil)
	require.NoError(t, err)
	require.Empty(t, ref.errs)
	require.Empty(t, ref.warns)
	require.Equal(t, want, otlpSpanCounts(ref.spans))
	svc := otlpServices(ref.spans)
	require.Len(t, svc, 6)
	for _, name := range []string{"frontend", "customer", "mysql", "driver", "redis-manual", "route"} {
		require.Contains(t, svc, name)
	}
	for _, s := range ref.spans {
		require.Len(t, s.TraceID, 32)
		require.Len(t, s.SpanID, 16)
		require.NotEmpty(t, s.Operation)
		require.Equal(t, "vm", s.Instance, "host.name")
		require.Positive(t, s.Start)
		require.GreaterOrEqual(t, s.Duration, int64(0))
		if s.Status == cascade.StatusError {
			// The exception event's type, not the status message.
			require.Equal(t, "*errors.errorString", s.ErrorType)
		} else {
			require.Empty(t, s.ErrorType)
		}
	}

	tests := []struct {
		name string
		dec  decodeFunc
		data []byte
	}{
		{"file exporter JSON Lines", decodeOTLPJSON, h.jsonLines},
		{"one JSON request", decodeOTLPJSON, h.jsonObject},
		{"file exporter proto", decodeOTLPProtoFramed, h.framed},
		{"one proto request", decodeOTLPProto, h.proto},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTestBytes(tc.dec, "traces", bytes.NewReader(tc.data), nil)
			require.NoError(t, err)
			require.Empty(t, got.errs)
			require.Equal(t, ref.spans, got.spans)
		})
	}
}

// TestDecodeOTLPSampleTrace decodes the one-trace sample and checks its
// first span field by field.
func TestDecodeOTLPSampleTrace(t *testing.T) {
	path := repoTestdata("hotrod-baseline", "sample-trace-otlp.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	want := countOTLPJSON(data)
	require.Equal(t, otlpCounts{spans: 40, traces: 1, errors: 3, roots: 1, servers: want.servers, clients: want.clients}, want)

	got, err := decodeTestFile(t, decodeOTLPJSON, path, nil)
	require.NoError(t, err)
	require.Empty(t, got.errs)
	require.Equal(t, want, otlpSpanCounts(got.spans))
	require.Len(t, otlpServices(got.spans), 6)

	// The mysql span that opens the file, field by field.
	require.Equal(t, cascade.Span{
		TraceID:      "ef5aa2102862164619b50936123de89b",
		SpanID:       "0412240a9abca18d",
		ParentSpanID: "66e168d7ed1725d2",
		Service:      "mysql",
		Instance:     "vm",
		Operation:    "SQL SELECT",
		Kind:         cascade.KindClient,
		Start:        1796212097190011785,
		Duration:     1796212097524237704 - 1796212097190011785,
		Status:       cascade.StatusUnset,
		Peer:         "mysql",
	}, got.spans[0])
}

// otlpTestSpan describes one span for buildOTLPTraces.
type otlpTestSpan struct {
	trace, span, parent string // hex ids; empty for none
	name                string
	kind                ptrace.SpanKind
	start, end          uint64
	status              ptrace.StatusCode
	message             string
	attrs               map[string]any
	exception           string // exception.type of an "exception" event
}

// otlpTestResource is a resource with its spans.
type otlpTestResource struct {
	attrs map[string]any
	spans []otlpTestSpan
}

// buildOTLPTraces makes pdata traces with one scope per resource.
func buildOTLPTraces(t testing.TB, resources ...otlpTestResource) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		require.NoError(t, rs.Resource().Attributes().FromRaw(r.attrs))
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("test")
		for _, s := range r.spans {
			sp := ss.Spans().AppendEmpty()
			var tid pcommon.TraceID
			var sid, pid pcommon.SpanID
			otlpHexID(t, tid[:], s.trace)
			otlpHexID(t, sid[:], s.span)
			otlpHexID(t, pid[:], s.parent)
			sp.SetTraceID(tid)
			sp.SetSpanID(sid)
			sp.SetParentSpanID(pid)
			sp.SetName(s.name)
			sp.SetKind(s.kind)
			sp.SetStartTimestamp(pcommon.Timestamp(s.start))
			sp.SetEndTimestamp(pcommon.Timestamp(s.end))
			sp.Status().SetCode(s.status)
			sp.Status().SetMessage(s.message)
			require.NoError(t, sp.Attributes().FromRaw(s.attrs))
			if s.exception != "" {
				e := sp.Events().AppendEmpty()
				e.SetName("log")
				e = sp.Events().AppendEmpty()
				e.SetName("exception")
				e.Attributes().PutStr("exception.message", "boom")
				e.Attributes().PutStr("exception.type", s.exception)
			}
		}
	}
	return td
}

// otlpHexID decodes a hex id into dst; empty leaves it zero.
func otlpHexID(t testing.TB, dst []byte, s string) {
	t.Helper()
	if s == "" {
		return
	}
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	require.Len(t, b, len(dst))
	copy(dst, b)
}

// otlpEncodings marshals td in every OTLP encoding the decoders read, as the
// collector's file exporter and OTLP clients write them.
func otlpEncodings(t testing.TB, td ptrace.Traces) []struct {
	name string
	dec  decodeFunc
	data []byte
} {
	t.Helper()
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return []struct {
		name string
		dec  decodeFunc
		data []byte
	}{
		{"json", decodeOTLPJSON, js},
		{"jsonl", decodeOTLPJSON, append(append(append(slices.Clone(js), '\n'), js...), '\n')},
		{"api_v3", decodeOTLPJSON, append(append([]byte(`{"result":`), js...), '}')},
		{"proto", decodeOTLPProto, pb},
		{"framed", decodeOTLPProtoFramed, append(binary.BigEndian.AppendUint32(nil, uint32(len(pb))), pb...)},
	}
}

// Ids for hand-built spans.
const (
	otlpTID  = "0102030405060708090a0b0c0d0e0f10"
	otlpSID1 = "a1a2a3a4a5a6a7a8"
	otlpSID2 = "b1b2b3b4b5b6b7b8"
)

// TestDecodeOTLPFields checks the mapping of each span field, in every
// encoding.
func TestDecodeOTLPFields(t *testing.T) {
	res := map[string]any{"service.name": "checkout", "service.instance.id": "checkout-7", "host.name": "node-1"}
	tests := []struct {
		name string
		span otlpTestSpan
		want cascade.Span
	}{
		{
			name: "root server ok",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID1, name: "GET /cart", kind: ptrace.SpanKindServer, start: 1000, end: 1500,
				status: ptrace.StatusCodeOk, attrs: map[string]any{"http.response.status_code": 200}},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID1, Service: "checkout", Instance: "checkout-7", Operation: "GET /cart",
				Kind: cascade.KindServer, Start: 1000, Duration: 500, Status: cascade.StatusOK, StatusCode: 200},
		},
		{
			name: "client error with error.type",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID2, parent: otlpSID1, name: "charge", kind: ptrace.SpanKindClient, start: 1100, end: 1400,
				status: ptrace.StatusCodeError, message: "deadline", exception: "TimeoutError",
				attrs: map[string]any{"error.type": "timeout", "peer.service": "payments", "http.request.resend_count": 2, "http.response.status_code": "503"}},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID2, ParentSpanID: otlpSID1, Service: "checkout", Instance: "checkout-7", Operation: "charge",
				Kind: cascade.KindClient, Start: 1100, Duration: 300, Status: cascade.StatusError, ErrorType: "timeout",
				StatusCode: 503, Peer: "payments", ResendCount: 2},
		},
		{
			name: "error type from exception event",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID2, name: "q", kind: ptrace.SpanKindInternal, start: 5, end: 6,
				status: ptrace.StatusCodeError, message: "failed", exception: "SQLException"},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID2, Service: "checkout", Instance: "checkout-7", Operation: "q",
				Kind: cascade.KindInternal, Start: 5, Duration: 1, Status: cascade.StatusError, ErrorType: "SQLException"},
		},
		{
			name: "error type from status message",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID2, name: "q", kind: ptrace.SpanKindProducer, start: 5, end: 6,
				status: ptrace.StatusCodeError, message: "queue full", attrs: map[string]any{"messaging.destination.name": "orders"}},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID2, Service: "checkout", Instance: "checkout-7", Operation: "q",
				Kind: cascade.KindProducer, Start: 5, Duration: 1, Status: cascade.StatusError, ErrorType: "queue full", Peer: "orders",
				MessagingOperation: cascade.MessagingPublish, Destination: "orders"},
		},
		{
			name: "unset status keeps no error type, even with error.type and a 500",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID2, name: "q", kind: ptrace.SpanKindConsumer, start: 5, end: 6,
				attrs: map[string]any{"error.type": "x", "http.response.status_code": 500}},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID2, Service: "checkout", Instance: "checkout-7", Operation: "q",
				Kind: cascade.KindConsumer, Start: 5, Duration: 1, Status: cascade.StatusUnset, StatusCode: 500,
				MessagingOperation: cascade.MessagingReceive},
		},
		{
			name: "unspecified kind, db peer, grpc code",
			span: otlpTestSpan{trace: otlpTID, span: otlpSID2, name: "q", start: 5, end: 6,
				attrs: map[string]any{"db.system": "postgresql", "db.name": "shop", "rpc.grpc.status_code": 14}},
			want: cascade.Span{TraceID: otlpTID, SpanID: otlpSID2, Service: "checkout", Instance: "checkout-7", Operation: "q",
				Start: 5, Duration: 1, Status: cascade.StatusUnset, StatusCode: 14, Peer: "postgresql/shop"},
		},
	}
	for _, tc := range tests {
		td := buildOTLPTraces(t, otlpTestResource{attrs: res, spans: []otlpTestSpan{tc.span}})
		for _, enc := range otlpEncodings(t, td) {
			t.Run(tc.name+"/"+enc.name, func(t *testing.T) {
				got, err := decodeTestBytes(enc.dec, "t", bytes.NewReader(enc.data), nil)
				require.NoError(t, err)
				require.Empty(t, got.errs)
				want := []cascade.Span{tc.want}
				if enc.name == "jsonl" {
					want = append(want, tc.want)
				}
				require.Equal(t, want, got.spans)
			})
		}
	}
}

// TestDecodeOTLPJSONShapes checks the document shapes the JSON decoder
// accepts.
func TestDecodeOTLPJSONShapes(t *testing.T) {
	td := buildOTLPTraces(t, otlpTestResource{
		attrs: map[string]any{"service.name": "a"},
		spans: []otlpTestSpan{{trace: otlpTID, span: otlpSID1, name: "x", start: 1, end: 2}, {trace: otlpTID, span: otlpSID2, parent: otlpSID1, name: "y", start: 1, end: 2}},
	})
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	rs := strings.TrimSuffix(strings.TrimPrefix(string(js), `{"resourceSpans":[`), `]}`)
	tests := []struct {
		name  string
		in    string
		spans int
		notes map[string]int
	}{
		{"empty", "", 0, map[string]int{"empty input": 1}},
		{"whitespace", " \n\t\r\n", 0, map[string]int{"empty input": 1}},
		{"empty object", "{}", 0, nil},
		{"empty resourceSpans", `{"resourceSpans":[]}`, 0, nil},
		{"null resourceSpans", `{"resourceSpans":null}`, 0, nil},
		{"byte order mark", "\ufeff" + string(js), 2, nil},
		{"pretty printed", "{\n  \"resourceSpans\" : [\n" + rs + " ,\n " + rs + "\n ]\n}\n", 4, nil},
		{"snake case", `{"resource_spans":[` + rs + `]}`, 2, nil},
		{"escaped member name", `{"resource\u0053pans":[` + rs + `]}`, 2, nil},
		{"other members skipped", `{"a":{"resourceSpans":[` + rs + `]},"b":[1,"]",{"c":null}],"resourceSpans":[` + rs + `],"z":-1.5e3}`, 2, nil},
		{"api_v3", `{"result":{"resourceSpans":[` + rs + `,` + rs + `]}}`, 4, nil},
		{"api_v3 error answer", `{"error":{"httpCode":404,"message":"trace not found"}}`, 0, nil},
		{"result not at top is skipped", `{"x":{"result":{"resourceSpans":[` + rs + `]}}}`, 0, nil},
		{"JSON Lines", string(js) + "\n" + string(js) + "\n" + string(js), 6, nil},
		{"concatenated", string(js) + string(js), 4, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTestBytes(decodeOTLPJSON, "t.json", strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Empty(t, got.errs)
			require.Len(t, got.spans, tc.spans)
			if tc.notes == nil {
				tc.notes = map[string]int{}
			}
			require.Equal(t, tc.notes, got.notes)
			requireSameOneByteAtATime(t, "t.json", []byte(tc.in), got)
		})
	}
}

// TestDecodeOTLPProtoEmpty checks that empty proto input is noted, not
// an error.
func TestDecodeOTLPProtoEmpty(t *testing.T) {
	for _, dec := range []decodeFunc{decodeOTLPProto, decodeOTLPProtoFramed} {
		got, err := decodeTestBytes(dec, "t.pb", bytes.NewReader(nil), nil)
		require.NoError(t, err)
		require.Empty(t, got.spans)
		require.Empty(t, got.errs)
		require.Equal(t, map[string]int{"empty input": 1}, got.notes)
	}
}

// otlpWantErr is one ParseError a test expects.
type otlpWantErr struct {
	sentinel error
	text     []string // substrings of Error()
}

// TestDecodeOTLPBadRecords checks that well-formed documents with unusable
// spans report each span with its position, in every encoding.
func TestDecodeOTLPBadRecords(t *testing.T) {
	good := otlpTestSpan{trace: otlpTID, span: otlpSID1, name: "ok", start: 10, end: 20}
	tests := []struct {
		name  string
		res   []otlpTestResource
		spans int
		errs  []otlpWantErr
		warns map[string]int
	}{
		{
			name: "missing service.name",
			res: []otlpTestResource{
				{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{good}},
				{attrs: map[string]any{"host.name": "h"}, spans: []otlpTestSpan{good, good}},
			},
			spans: 3,
			warns: map[string]int{warnNoService: 2},
		},
		{
			name: "zero ids",
			res: []otlpTestResource{{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{
				{span: otlpSID1, name: "no trace", start: 1, end: 2},
				good,
				{trace: otlpTID, name: "no span", start: 1, end: 2},
			}}},
			spans: 1,
			errs: []otlpWantErr{
				{ErrBadID, []string{"resourceSpans[0].scopeSpans[0].spans[0]: trace id missing"}},
				{ErrBadID, []string{"resourceSpans[0].scopeSpans[0].spans[2]: span id missing"}},
			},
		},
		{
			name: "timestamps",
			res: []otlpTestResource{{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{
				{trace: otlpTID, span: otlpSID1, name: "no start", end: 2},
				{trace: otlpTID, span: otlpSID1, name: "end before start", start: 5, end: 2},
				{trace: otlpTID, span: otlpSID1, name: "no end", start: 5},
				{trace: otlpTID, span: otlpSID1, name: "start out of range", start: 1 << 63, end: 1<<63 + 1},
			}}},
			spans: 2,
			errs: []otlpWantErr{
				{ErrBadTimestamp, []string{"spans[0]: start time missing"}},
				{ErrBadTimestamp, []string{"spans[3]: start time 9223372036854775808 out of range"}},
			},
			warns: map[string]int{"negative duration (clamped to 0)": 2},
		},
	}
	for _, tc := range tests {
		td := buildOTLPTraces(t, tc.res...)
		for _, enc := range otlpEncodings(t, td) {
			if enc.name == "jsonl" {
				continue // two copies: the errors twice
			}
			t.Run(tc.name+"/"+enc.name, func(t *testing.T) {
				got, err := decodeTestBytes(enc.dec, "in.dat", bytes.NewReader(enc.data), nil)
				require.NoError(t, err)
				require.Len(t, got.spans, tc.spans)
				requireOTLPErrs(t, got.errs, tc.errs)
				for _, pe := range got.errs {
					require.Equal(t, "in.dat", pe.File)
					require.Contains(t, pe.Error(), pe.Path+": ")
					switch enc.name {
					case "json", "api_v3":
						require.Equal(t, 1, pe.Line)
						require.Contains(t, pe.Error(), fmt.Sprintf("in.dat:1 (byte %d): ", pe.Offset))
					case "framed":
						require.Equal(t, 0, pe.Line)
						require.GreaterOrEqual(t, pe.Offset, int64(4))
						require.Contains(t, pe.Error(), fmt.Sprintf("in.dat (byte %d): ", pe.Offset))
					}
					if enc.name == "api_v3" {
						require.True(t, strings.HasPrefix(pe.Path, "result.resourceSpans["), pe.Path)
					}
				}
				if tc.warns == nil {
					tc.warns = map[string]int{}
				}
				require.Equal(t, tc.warns, got.warns)
				for _, s := range got.spans {
					require.GreaterOrEqual(t, s.Duration, int64(0))
				}
			})
		}
	}
}

// requireOTLPErrs checks got against want in order.
func requireOTLPErrs(t *testing.T, got []*ParseError, want []otlpWantErr) {
	t.Helper()
	require.Len(t, got, len(want), "errors: %v", got)
	for i, w := range want {
		require.ErrorIs(t, got[i], w.sentinel)
		for _, s := range w.text {
			require.Contains(t, got[i].Error(), s)
		}
	}
}

// TestDecodeOTLPJSONMalformed checks the errors, and what is still
// decoded, for broken JSON.
func TestDecodeOTLPJSONMalformed(t *testing.T) {
	h := loadOTLPHotROD(t)
	lines := bytes.SplitAfter(h.jsonLines, []byte("\n"))
	require.Greater(t, len(lines), 3)
	td := buildOTLPTraces(t, otlpTestResource{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{{trace: otlpTID, span: otlpSID1, name: "x", start: 1, end: 2}}})
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	one := string(js)
	rs := strings.TrimSuffix(strings.TrimPrefix(one, `{"resourceSpans":[`), `]}`)

	// The JSON Lines with the third line cut in half.
	cut := bytes.Join(lines[:2], nil)
	cutAt := len(cut)
	cut = append(cut, lines[2][:len(lines[2])/2]...)
	spansBefore := bytes.Count(cut[:cutAt], []byte(`"spanId"`))

	tests := []struct {
		name  string
		in    string
		spans int
		errs  []otlpWantErr
	}{
		{
			name:  "truncated JSON Lines",
			in:    string(cut),
			spans: -1, // at least spansBefore; checked below
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:3 (byte ", "resourceSpans[", "unexpected end of input"}}},
		},
		{
			name:  "truncated object",
			in:    `{"resourceSpans":[` + rs + `,` + rs[:40],
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.json:1 (byte %d): resourceSpans[1]: unexpected end of input", len(rs)+19)}}},
		},
		{
			name:  "truncated after element",
			in:    `{"resourceSpans":[` + rs + "\n",
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:2 (byte ", "resourceSpans[0]: unexpected end of input"}}},
		},
		{
			name:  "bad hex id",
			in:    strings.Replace(one, otlpSID1, "zz", 1) + "\n" + one,
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:1 (byte 18): resourceSpans[0]: ", "ID.UnmarshalJSONIter"}}},
		},
		{
			name:  "short id",
			in:    one + "\n" + strings.Replace(one, otlpTID, "0102", 1),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.json:2 (byte %d): resourceSpans[0]: ", len(one)+1+18), "length mismatch"}}},
		},
		{
			name:  "bad member in element",
			in:    `{"resourceSpans":[{"resource":7}]}` + "\n" + one,
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:1 (byte 18): resourceSpans[0]: "}}},
		},
		{
			name:  "garbage bytes",
			in:    "\x00\x01\x02garbage",
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{`in.json:1: invalid character '\x00'`}}},
		},
		{
			name:  "garbage after a good line",
			in:    one + "\n@@@\n" + one,
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.json:2 (byte %d): invalid character '@'", len(one)+1)}}},
		},
		{
			name:  "top-level non-object is skipped",
			in:    `[1,2]` + "\n" + `"x"` + "\n" + one,
			spans: 1,
			errs: []otlpWantErr{
				{ErrSyntax, []string{"in.json:1: top-level value is not an object"}},
				{ErrSyntax, []string{"in.json:2 (byte 6): top-level value is not an object"}},
			},
		},
		{
			name:  "resourceSpans not an array",
			in:    `{"resourceSpans":{"a":1}}` + "\n" + one,
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:1 (byte 17): resourceSpans: not an array"}}},
		},
		{
			name:  "missing comma",
			in:    `{"resourceSpans":[` + rs + ` ` + rs + `]}`,
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"resourceSpans[0]: want ',' or ']', found '{'"}}},
		},
		{
			name:  "mismatched bracket",
			in:    `{"resourceSpans":[{"resource":{]}]}`,
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"(byte 31): resourceSpans[0]: invalid character ']'"}}},
		},
		{
			name:  "member without colon",
			in:    `{"result" {}}`,
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.json:1 (byte 10): want ':', found '{'"}}},
		},
		{
			name:  "unterminated string",
			in:    `{"resourceSpans`,
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"unexpected end of input"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTestBytes(decodeOTLPJSON, "in.json", strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			requireSameOneByteAtATime(t, "in.json", []byte(tc.in), got)
			if tc.spans < 0 {
				require.GreaterOrEqual(t, len(got.spans), spansBefore)
			} else {
				require.Len(t, got.spans, tc.spans)
			}
			requireOTLPErrs(t, got.errs, tc.errs)
		})
	}
}

// TestDecodeOTLPProtoMalformed checks the errors, and what is still
// decoded, for broken proto and framing.
func TestDecodeOTLPProtoMalformed(t *testing.T) {
	td := buildOTLPTraces(t, otlpTestResource{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{{trace: otlpTID, span: otlpSID1, name: "x", start: 1, end: 2}}})
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	frame := func(msg []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...) }
	// A resourceSpans field whose content is not a ResourceSpans: field 1
	// (resource) with wire type 7.
	badElem := []byte{0x0a, 0x01, 0x0f}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	tests := []struct {
		name  string
		dec   decodeFunc
		in    []byte
		spans int
		errs  []otlpWantErr
		// some says the errors end with errs, after others.
		some bool
	}{
		{
			name:  "raw: bad element then good",
			dec:   decodeOTLPProto,
			in:    join(badElem, pb),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 0): resourceSpans[0]: "}}},
		},
		{
			name:  "raw: truncated",
			dec:   decodeOTLPProto,
			in:    join(pb, pb[:len(pb)-3]),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): resourceSpans[1]: input ends inside a resourceSpans element", len(pb))}}},
		},
		{
			name:  "raw: garbage",
			dec:   decodeOTLPProto,
			in:    []byte("garbage, not proto"),
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 0): resourceSpans[0]: field 12 has bad wire type 7"}}},
		},
		{
			// Found by FuzzDecodeOTLPProto: pdata rejects it whole.
			name:  "raw: field number too large",
			dec:   decodeOTLPProto,
			in:    []byte("0;\xf0\x8a\xce\xcd\xf900"),
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 2): resourceSpans[0]: bad field number 210238861486"}}},
		},
		{
			name:  "raw: element over the limit",
			dec:   decodeOTLPProto,
			in:    join(pb, []byte{0x0a, 0x80, 0x80, 0x80, 0x90, 0x01}),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): resourceSpans[1]: field of 301989888 bytes exceeds 256 MiB", len(pb))}}},
		},
		{
			name:  "raw: unknown fields skipped",
			dec:   decodeOTLPProto,
			in:    join([]byte{0x10, 0x96, 0x01, 0x1a, 0x02, 'h', 'i', 0x25, 1, 2, 3, 4, 0x29, 1, 2, 3, 4, 5, 6, 7, 8}, pb),
			spans: 1,
		},
		{
			name:  "raw: JSON is not proto",
			dec:   decodeOTLPProto,
			in:    []byte(`{"resourceSpans":[]}`),
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 0): "}}},
		},
		{
			name:  "framed: three frames",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame(pb), frame(nil), frame(join(pb, pb))),
			spans: 3,
		},
		{
			name:  "framed: bad frame is skipped",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame(pb), frame([]byte("garbage")), frame(join(badElem, pb)), frame(pb)),
			spans: 3,
			errs: []otlpWantErr{
				{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): resourceSpans[0]: frame 1: field 12 has bad wire type 7", 2*4+len(pb))}},
				{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): resourceSpans[0]: ", 3*4+len(pb)+7)}},
			},
		},
		{
			name:  "framed: element runs past its frame",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame(pb[:len(pb)-1]), frame(pb)),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 4): resourceSpans[0]: frame 0: field runs past the end of its frame"}}},
		},
		{
			name:  "framed: frame ends inside a field",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame([]byte{0x0a}), frame([]byte{0x0a, 0x85}), frame(pb)),
			spans: 1,
			errs: []otlpWantErr{
				{ErrSyntax, []string{"in.pb (byte 4): resourceSpans[0]: frame 0: frame ends inside a length"}},
				{ErrSyntax, []string{"in.pb (byte 9): resourceSpans[0]: frame 1: frame ends inside a length"}},
			},
		},
		{
			name:  "framed: truncated frame",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame(pb), frame(pb)[:len(pb)]),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): resourceSpans[0]: frame 1: input ends inside a resourceSpans element", 4+len(pb)+4)}}},
		},
		{
			name:  "framed: truncated length",
			dec:   decodeOTLPProtoFramed,
			in:    join(frame(pb), []byte{0, 0}),
			spans: 1,
			errs:  []otlpWantErr{{ErrSyntax, []string{fmt.Sprintf("in.pb (byte %d): frame 1: input ends inside its length", 4+len(pb))}}},
		},
		{
			name:  "framed: huge length",
			dec:   decodeOTLPProtoFramed,
			in:    []byte{0xff, 0xff, 0xff, 0xff, 0x0a},
			spans: 0,
			errs:  []otlpWantErr{{ErrSyntax, []string{"in.pb (byte 0): frame 0: length 4294967295 exceeds 256 MiB"}}},
		},
		{
			name:  "framed: raw request is not framed",
			dec:   decodeOTLPProtoFramed,
			in:    pb,
			spans: 0,
			// The first bytes read as a length of over 100 MiB, and the
			// request as a frame's content, until the input ends.
			some: true,
			errs: []otlpWantErr{{ErrSyntax, []string{"frame 0: input ends inside"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTestBytes(tc.dec, "in.pb", bytes.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Len(t, got.spans, tc.spans)
			if tc.some {
				require.GreaterOrEqual(t, len(got.errs), len(tc.errs))
				got.errs = got.errs[len(got.errs)-len(tc.errs):]
			}
			requireOTLPErrs(t, got.errs, tc.errs)
		})
	}
}

// TestDecodeOTLPJSONElementLimit checks that an element over the size
// limit is reported and skipped without being kept in memory.
func TestDecodeOTLPJSONElementLimit(t *testing.T) {
	small := `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[{"traceId":"` +
		otlpTID + `","spanId":"` + otlpSID1 + `","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}`
	big := `{"resource":{"attributes":[{"key":"pad","value":{"stringValue":"` + strings.Repeat("x", 2000) + `"}}]}}`
	in := `{"resourceSpans":[` + small + `,` + big + `,` + small + "]}"
	for _, chunk := range []int{16, 1024} {
		got := newCollectSink()
		require.NoError(t, decodeOTLPJSONSized("in.json", strings.NewReader(in), got, chunk, 1000))
		require.Len(t, got.spans, 2)
		requireOTLPErrs(t, got.errs, []otlpWantErr{{ErrSyntax, []string{
			fmt.Sprintf("in.json:1 (byte %d): resourceSpans[1]: element larger than 1000 bytes", 18+len(small)+1)}}})
	}
}

// TestDecodeOTLPBoundedMemory checks that the decoders buffer one
// resourceSpans element at a time, not the input: decoding the 12 MB HotROD
// request leaves buffers sized by its largest element.
func TestDecodeOTLPBoundedMemory(t *testing.T) {
	h := loadOTLPHotROD(t)
	largest := 0
	rss := h.traces.ResourceSpans()
	for i := range rss.Len() {
		one := ptrace.NewTraces()
		rss.At(i).CopyTo(one.ResourceSpans().AppendEmpty())
		js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(one)
		require.NoError(t, err)
		largest = max(largest, len(js))
	}
	require.Greater(t, len(h.jsonObject), 100*largest)

	j := &otlpJSON{d: otlpDecoder{name: "t", s: newCollectSink()}, sc: newJSONScanner(bytes.NewReader(h.jsonObject), jsonChunk)}
	require.NoError(t, j.run())
	require.LessOrEqual(t, cap(j.sc.buf), 4*max(largest, jsonChunk))
	require.LessOrEqual(t, cap(j.wrap), 2*largest)

	p := newOTLPProto("t", bytes.NewReader(h.proto), newCollectSink())
	require.NoError(t, p.request(-1))
	require.LessOrEqual(t, cap(p.buf), 2*largest)
}

// otlpErrReader returns its data and then a read error.
type otlpErrReader struct {
	data []byte
	err  error
}

// Read implements io.Reader.
func (r *otlpErrReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestDecodeOTLPStops checks that read errors are returned as such and
// that a sink refusing an invalid record stops the decoder with its error.
func TestDecodeOTLPStops(t *testing.T) {
	h := loadOTLPHotROD(t)
	errBroken := errors.New("disk on fire")
	noSpanID := buildOTLPTraces(t, otlpTestResource{attrs: map[string]any{"service.name": "a"}, spans: []otlpTestSpan{{trace: otlpTID, start: 1, end: 2}}})
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(noSpanID)
	require.NoError(t, err)
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(noSpanID)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		dec  decodeFunc
		in   []byte
	}{
		{"json", decodeOTLPJSON, h.jsonLines[:len(h.jsonLines)/2]},
		{"proto", decodeOTLPProto, h.proto[:len(h.proto)/2]},
		{"framed", decodeOTLPProtoFramed, h.framed[:len(h.framed)/2]},
	} {
		t.Run("read error/"+tc.name, func(t *testing.T) {
			got, err := decodeTestBytes(tc.dec, "in", &otlpErrReader{data: tc.in, err: errBroken}, nil)
			require.ErrorIs(t, err, errBroken)
			require.Contains(t, err.Error(), "read in: ")
			require.Empty(t, got.errs)
		})
	}
	for _, tc := range []struct {
		name string
		dec  decodeFunc
		in   []byte
	}{
		{"json bad record", decodeOTLPJSON, append(js, js...)},
		{"json syntax", decodeOTLPJSON, []byte("{]")},
		{"proto bad record", decodeOTLPProto, append(pb, pb...)},
		{"proto syntax", decodeOTLPProto, []byte{0xff}},
		{"framed syntax", decodeOTLPProtoFramed, []byte{0xff}},
	} {
		t.Run("fail fast/"+tc.name, func(t *testing.T) {
			s := newCollectSink()
			s.failFast = true
			err := tc.dec("in", bytes.NewReader(tc.in), s, &Options{})
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Len(t, s.errs, 1)
			require.Same(t, s.errs[0], pe)
		})
	}
}

// otlpStopSink stops decoding at the nth span.
type otlpStopSink struct {
	*collectSink
	n int
}

// errOTLPEnough is otlpStopSink's error.
var errOTLPEnough = errors.New("enough")

// span keeps the first n spans and then refuses.
func (s *otlpStopSink) span(sp *cascade.Span) error {
	if len(s.spans) == s.n {
		return errOTLPEnough
	}
	return s.collectSink.span(sp)
}

// TestDecodeOTLPSinkStops checks that a sink refusing a span stops the
// decoder with its error.
func TestDecodeOTLPSinkStops(t *testing.T) {
	h := loadOTLPHotROD(t)
	for _, tc := range []struct {
		name string
		dec  decodeFunc
		in   []byte
	}{
		{"json", decodeOTLPJSON, h.jsonLines},
		{"proto", decodeOTLPProto, h.proto},
		{"framed", decodeOTLPProtoFramed, h.framed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &otlpStopSink{collectSink: newCollectSink(), n: 5}
			err := tc.dec("in", bytes.NewReader(tc.in), s, &Options{})
			require.ErrorIs(t, err, errOTLPEnough)
			require.Len(t, s.spans, 5)
		})
	}
}

// TestJSONScannerSmallReads feeds the JSON decoder one byte per Read, so
// that every token crosses a buffer boundary, and checks it decodes the
// same spans with the same error positions. The shape and malformed-input
// tests do the same for their inputs.
func TestJSONScannerSmallReads(t *testing.T) {
	path := repoTestdata("hotrod-baseline", "sample-trace-otlp.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := append(bytes.Replace(data, []byte(`"spanId":"`), []byte(`"spanId":"x`), 1), "\n{\"resourceSpans\":[{]}"...)
	escapes := `{"x\"y":"a\\\"b\\","resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s\"\\\u0041"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"` + otlpTID + `","spanId":"` + otlpSID1 + `","name":"\\\"","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`
	for _, in := range [][]byte{data, bad, []byte(escapes)} {
		want, err := decodeTestBytes(decodeOTLPJSON, "t", bytes.NewReader(in), nil)
		require.NoError(t, err)
		require.NotEmpty(t, want.spans)
		requireSameOneByteAtATime(t, "t", in, want)
	}
	got, err := decodeTestBytes(decodeOTLPJSON, "t", strings.NewReader(escapes), nil)
	require.NoError(t, err)
	require.Empty(t, got.errs)
	require.Equal(t, `s"\A`, got.spans[0].Service)
	require.Equal(t, `\"`, got.spans[0].Operation)
}

// requireSameOneByteAtATime decodes in again, read one byte at a time into
// buffers that start tiny (so that they grow and are compacted often) or
// at the usual size, and requires the same result as want.
func requireSameOneByteAtATime(t *testing.T, name string, in []byte, want *collectSink) {
	t.Helper()
	for _, chunk := range []int{1, 7, jsonChunk} {
		got := newCollectSink()
		require.NoError(t, decodeOTLPJSONSized(name, otlpOneByteReader{bytes.NewReader(in)}, got, chunk, maxOTLPRecord))
		require.Equal(t, want.spans, got.spans)
		require.Equal(t, want.errs, got.errs)
		require.Equal(t, want.notes, got.notes)
	}
}

// otlpOneByteReader reads one byte at a time.
type otlpOneByteReader struct{ r io.Reader }

// Read implements io.Reader, one byte per call.
func (o otlpOneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}
