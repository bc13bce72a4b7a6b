package ingest

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// hotrodJaeger is the Jaeger /api/traces answer for the HotROD baseline run.
var hotrodJaeger = repoTestdata("hotrod-baseline", "traces-jaeger-legacy.json.gz")

// hotrodCounts are what an independent reading of the capture finds: a
// generic decode into maps, sharing no code with the decoder.
type hotrodCounts struct {
	traces, spans, errors int
	services              []string
}

// countJaegerGeneric counts traces, spans, failed spans (otel.status_code
// ERROR or error=true) and services of a Jaeger JSON answer.
func countJaegerGeneric(t *testing.T, path string) hotrodCounts {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var doc struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, json.NewDecoder(zr).Decode(&doc))
	var c hotrodCounts
	services := map[string]bool{}
	for _, tr := range doc.Data {
		c.traces++
		procs, _ := tr["processes"].(map[string]any)
		for _, p := range procs {
			name, _ := p.(map[string]any)["serviceName"].(string)
			services[name] = true
		}
		spans, _ := tr["spans"].([]any)
		for _, sp := range spans {
			c.spans++
			tags, _ := sp.(map[string]any)["tags"].([]any)
			failed := false
			for _, tg := range tags {
				kv := tg.(map[string]any)
				switch {
				case kv["key"] == "otel.status_code" && kv["value"] == "ERROR",
					kv["key"] == "error" && (kv["value"] == true || kv["value"] == "true"):
					failed = true
				}
			}
			if failed {
				c.errors++
			}
		}
	}
	for s := range services {
		c.services = append(c.services, s)
	}
	slices.Sort(c.services)
	return c
}

// spanServices returns the sorted distinct services of spans.
func spanServices(spans []cascade.Span) []string {
	var out []string
	for _, s := range spans {
		if !slices.Contains(out, s.Service) {
			out = append(out, s.Service)
		}
	}
	slices.Sort(out)
	return out
}

// sortSpansByTraceAndID orders spans by trace id, then span id.
func sortSpansByTraceAndID(spans []cascade.Span) {
	slices.SortFunc(spans, func(a, b cascade.Span) int {
		if c := strings.Compare(a.TraceID, b.TraceID); c != 0 {
			return c
		}
		return strings.Compare(a.SpanID, b.SpanID)
	})
}

// spanFieldDiffs compares two span sets sorted by (trace, span) and lists
// up to max differences as "trace/span field: a != b". normalize, when not
// nil, adjusts each pair before comparing (for differences the formats
// make legitimately).
func spanFieldDiffs(a, b []cascade.Span, max int, normalize func(a, b *cascade.Span)) []string {
	var diffs []string
	add := func(format string, args ...any) bool {
		diffs = append(diffs, fmt.Sprintf(format, args...))
		return len(diffs) < max
	}
	if len(a) != len(b) {
		add("span count: %d != %d", len(a), len(b))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if normalize != nil {
			normalize(&x, &y)
		}
		id := x.TraceID + "/" + x.SpanID
		fields := []struct {
			name string
			x, y any
		}{
			{"trace_id", x.TraceID, y.TraceID},
			{"span_id", x.SpanID, y.SpanID},
			{"parent_span_id", x.ParentSpanID, y.ParentSpanID},
			{"service", x.Service, y.Service},
			{"instance", x.Instance, y.Instance},
			{"operation", x.Operation, y.Operation},
			{"kind", x.Kind, y.Kind},
			{"start", x.Start, y.Start},
			{"duration", x.Duration, y.Duration},
			{"status", x.Status, y.Status},
			{"error_type", x.ErrorType, y.ErrorType},
			{"status_code", x.StatusCode, y.StatusCode},
			{"peer", x.Peer, y.Peer},
			{"resend_count", x.ResendCount, y.ResendCount},
		}
		for _, f := range fields {
			if f.x != f.y && !add("%s %s: %v != %v", id, f.name, f.x, f.y) {
				return diffs
			}
		}
	}
	return diffs
}

// TestDecodeJaegerHotROD decodes the real capture and checks it against an
// independent count: spans, traces, services, failed spans, and a parent
// within its trace for every span but the roots.
func TestDecodeJaegerHotROD(t *testing.T) {
	want := countJaegerGeneric(t, hotrodJaeger)
	require.Equal(t, 300, want.traces)
	require.Equal(t, 11850, want.spans)
	require.Equal(t, []string{"customer", "driver", "frontend", "mysql", "redis-manual", "route"}, want.services)

	s, err := decodeTestFile(t, decodeJaegerJSON, hotrodJaeger, nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Empty(t, s.warns)
	require.Empty(t, s.notes)
	require.Len(t, s.spans, want.spans)
	require.Equal(t, want.services, spanServices(s.spans))

	traces := map[string]bool{}
	ids := map[string]bool{}
	failed := 0
	var odd []string // spans that break an expectation below
	for _, sp := range s.spans {
		traces[sp.TraceID] = true
		ids[sp.TraceID+"/"+sp.SpanID] = true
		ok := len(sp.TraceID) == 32 && len(sp.SpanID) == 16 && sp.Instance == "vm" &&
			(sp.Kind == cascade.KindClient || sp.Kind == cascade.KindServer)
		if sp.Status == cascade.StatusError {
			failed++
			ok = ok && sp.ErrorType == "*errors.errorString"
		} else {
			ok = ok && sp.ErrorType == ""
		}
		if !ok {
			odd = append(odd, fmt.Sprintf("%+v", sp))
		}
	}
	require.Empty(t, odd)
	require.Len(t, traces, want.traces)
	require.Equal(t, want.errors, failed)
	require.Equal(t, 750, failed)
	roots := 0
	for _, sp := range s.spans {
		switch {
		case sp.IsRoot():
			roots++
		case !ids[sp.TraceID+"/"+sp.ParentSpanID]:
			odd = append(odd, sp.TraceID+"/"+sp.SpanID)
		}
	}
	require.Empty(t, odd, "spans whose parent is not in their trace")
	require.Equal(t, want.traces, roots)
}

// TestDecodeJaegerSampleTrace checks one real span field by field.
func TestDecodeJaegerSampleTrace(t *testing.T) {
	s, err := decodeTestFile(t, decodeJaegerJSON, repoTestdata("hotrod-baseline", "sample-trace-jaeger-legacy.json"), nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.spans, 40)
	// The first span of the file, a failed redis call.
	require.Equal(t, cascade.Span{
		TraceID:      "ef5aa2102862164619b50936123de89b",
		SpanID:       "b79c0475535f0413",
		ParentSpanID: "a4c51e64130a07a8",
		Service:      "redis-manual",
		Instance:     "vm",
		Operation:    "GetDriver",
		Kind:         cascade.KindClient,
		Start:        1796212097551257000,
		Duration:     28203000,
		Status:       cascade.StatusError,
		ErrorType:    "*errors.errorString",
	}, s.spans[0])
}

// TestHotRODJaegerMatchesOTLP decodes the same 300 traces from Jaeger's
// legacy JSON and from its OTLP (api_v3) answer and compares them field by
// field. Jaeger's legacy model keeps microseconds: it truncates the start
// time and the duration (end minus start) to whole microseconds, so the
// OTLP side's start and duration are truncated the same way before the
// comparison. Every other field must be equal.
func TestHotRODJaegerMatchesOTLP(t *testing.T) {
	o, err := decodeTestFile(t, decodeOTLPJSON, repoTestdata("hotrod-baseline", "traces-otlp.json.gz"), nil)
	if errors.Is(err, ErrUnsupported) {
		t.Skip("the OTLP JSON decoder is not implemented yet (decodeOTLPJSON returns ErrUnsupported)")
	}
	require.NoError(t, err)
	require.Empty(t, o.errs)
	j, err := decodeTestFile(t, decodeJaegerJSON, hotrodJaeger, nil)
	require.NoError(t, err)
	require.Empty(t, j.errs)

	sortSpansByTraceAndID(o.spans)
	sortSpansByTraceAndID(j.spans)
	diffs := spanFieldDiffs(o.spans, j.spans, 20, func(otlp, _ *cascade.Span) {
		otlp.Start = otlp.Start / 1000 * 1000
		otlp.Duration = otlp.Duration / 1000 * 1000
	})
	require.Empty(t, diffs, "OTLP != Jaeger, first differences:\n%s", strings.Join(diffs, "\n"))
}

// jaegerDoc wraps span JSON objects in a one-trace query API answer whose
// processes p1 (service "svc", host.name "h1") and p2 (no service name)
// come after the spans, as Jaeger writes them.
func jaegerDoc(spans ...string) string {
	return `{"data":[{"traceID":"1","spans":[` + strings.Join(spans, ",") + `],"processes":{` +
		`"p1":{"serviceName":"svc","tags":[{"key":"host.name","type":"string","value":"h1"}]},` +
		`"p2":{"serviceName":"","tags":[]}}}],"total":0,"limit":0,"offset":0,"errors":null}`
}

// jaegerSpanJSON is a minimal valid span with extra members appended.
func jaegerSpanJSON(id string, extra string) string {
	s := `{"traceID":"1","spanID":"` + id + `","operationName":"op","startTime":1000,"duration":5,"processID":"p1"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// tagJSON is one Jaeger tag.
func tagJSON(key, typ string, value any) string {
	v, _ := json.Marshal(value)
	return fmt.Sprintf(`{"key":%q,"type":%q,"value":%s}`, key, typ, v)
}

// tagsJSON is a "tags" member.
func tagsJSON(tags ...string) string { return `"tags":[` + strings.Join(tags, ",") + `]` }

// TestDecodeJaegerMapping checks how each Jaeger field and tag becomes a
// span field, and the input shapes the decoder takes.
func TestDecodeJaegerMapping(t *testing.T) {
	base := cascade.Span{
		TraceID: "00000000000000000000000000000001", SpanID: "00000000000000a1",
		Service: "svc", Instance: "h1", Operation: "op", Start: 1_000_000, Duration: 5000,
		Status: cascade.StatusUnset,
	}
	with := func(f func(s *cascade.Span)) cascade.Span {
		s := base
		f(&s)
		return s
	}
	tests := []struct {
		name  string
		in    string
		want  []cascade.Span
		notes map[string]int
		warns map[string]int
	}{
		{
			name: "minimal span, short ids padded",
			in:   jaegerDoc(jaegerSpanJSON("a1", "")),
			want: []cascade.Span{base},
		},
		{
			name: "upper-case ids lowered",
			in:   jaegerDoc(`{"traceID":"ABCDEF0123456789ABCDEF0123456789","spanID":"00000000000000A1","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`),
			want: []cascade.Span{with(func(s *cascade.Span) { s.TraceID = "abcdef0123456789abcdef0123456789" })},
		},
		{
			name: "parent is the first CHILD_OF reference",
			in: jaegerDoc(jaegerSpanJSON("a1", `"references":[`+
				`{"refType":"FOLLOWS_FROM","traceID":"1","spanID":"f1"},`+
				`{"refType":"CHILD_OF","traceID":"1","spanID":"c1"},`+
				`{"refType":"CHILD_OF","traceID":"1","spanID":"c2"}]`)),
			// The references that are not the parent are links, as
			// OpenTelemetry's Jaeger receiver reads them.
			want: []cascade.Span{with(func(s *cascade.Span) {
				s.ParentSpanID = "00000000000000c1"
				s.Links = []cascade.SpanLink{
					{TraceID: "00000000000000000000000000000001", SpanID: "00000000000000f1"},
					{TraceID: "00000000000000000000000000000001", SpanID: "00000000000000c2"},
				}
			})},
		},
		{
			name: "parent is FOLLOWS_FROM without CHILD_OF",
			in:   jaegerDoc(jaegerSpanJSON("a1", `"references":[{"refType":"FOLLOWS_FROM","traceID":"1","spanID":"f1"}]`)),
			want: []cascade.Span{with(func(s *cascade.Span) { s.ParentSpanID = "00000000000000f1" })},
		},
		{
			name: "references to other traces are not parents",
			in: jaegerDoc(jaegerSpanJSON("a1", `"references":[{"refType":"CHILD_OF","traceID":"2","spanID":"c1"}],`+
				`"parentSpanID":"b1"`)),
			want: []cascade.Span{with(func(s *cascade.Span) {
				s.ParentSpanID = "00000000000000b1"
				s.Links = []cascade.SpanLink{{TraceID: "00000000000000000000000000000002", SpanID: "00000000000000c1"}}
			})},
		},
		{
			name: "reference trace id written in full is the same trace",
			in:   jaegerDoc(jaegerSpanJSON("a1", `"references":[{"refType":"CHILD_OF","traceID":"00000000000000000000000000000001","spanID":"c1"}]`)),
			want: []cascade.Span{with(func(s *cascade.Span) { s.ParentSpanID = "00000000000000c1" })},
		},
		{
			name: "deprecated parentSpanID, zero means root",
			in:   jaegerDoc(jaegerSpanJSON("a1", `"parentSpanID":"0"`), jaegerSpanJSON("a2", `"parentSpanID":"a1"`)),
			want: []cascade.Span{base, with(func(s *cascade.Span) { s.SpanID = "00000000000000a2"; s.ParentSpanID = "00000000000000a1" })},
		},
		{
			name: "kind and OTel status",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("span.kind", "string", "server"), tagJSON("otel.status_code", "string", "OK")))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Kind = cascade.KindServer; s.Status = cascade.StatusOK })},
		},
		{
			name: "error tag as bool, error type from the exception log",
			in: jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("error", "bool", true), tagJSON("otel.status_description", "string", "boom"))+
				`,"logs":[{"timestamp":1001,"fields":[`+tagJSON("event", "string", "retry")+`,`+tagJSON("exception.type", "string", "NotThisOne")+`]},`+
				`{"timestamp":1002,"fields":[`+tagJSON("event", "string", "exception")+`,`+tagJSON("exception.type", "string", "IOError")+`]}]`)),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "IOError" })},
		},
		{
			name: "error tag as string, error type from the status description",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("error", "string", "true"), tagJSON("otel.status_description", "string", "boom")))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "boom" })},
		},
		{
			name: "error.type tag wins over logs",
			in: jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("otel.status_code", "string", "ERROR"), tagJSON("error.type", "string", "timeout"))+
				`,"logs":[{"timestamp":1002,"fields":[`+tagJSON("event", "string", "exception")+`,`+tagJSON("exception.type", "string", "IOError")+`]}]`)),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "timeout" })},
		},
		{
			name: "error type only when failed",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("error.type", "string", "timeout"), tagJSON("error", "bool", false)))),
			want: []cascade.Span{base},
		},
		{
			name: "HTTP 503 fails a server span without status",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("span.kind", "string", "server"), tagJSON("http.status_code", "int64", 503)))),
			want: []cascade.Span{with(func(s *cascade.Span) {
				s.Kind = cascade.KindServer
				s.Status = cascade.StatusError
				s.StatusCode = 503
			})},
			notes: map[string]int{"status: error inferred from HTTP status code": 1},
		},
		{
			name: "HTTP 404 leaves a server span unset",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("span.kind", "string", "server"), tagJSON("http.response.status_code", "int64", 404)))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Kind = cascade.KindServer; s.StatusCode = 404 })},
		},
		{
			name: "HTTP code on a span of unknown kind keeps the tags' status",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("http.status_code", "int64", 503)))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.StatusCode = 503 })},
		},
		{
			name: "OTel status OK wins over an HTTP code",
			in: jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("span.kind", "string", "client"),
				tagJSON("otel.status_code", "string", "OK"), tagJSON("http.status_code", "int64", 500)))),
			want: []cascade.Span{with(func(s *cascade.Span) {
				s.Kind = cascade.KindClient
				s.Status = cascade.StatusOK
				s.StatusCode = 500
			})},
		},
		{
			name: "tag value types rendered as text",
			in: jaegerDoc(jaegerSpanJSON("a1", tagsJSON(
				tagJSON("span.kind", "string", "client"),
				tagJSON("peer.service", "string", "db\u00e9"),
				tagJSON("rpc.grpc.status_code", "int64", 14),
				tagJSON("retry.count", "float64", 2.0),
				tagJSON("http.request.resend_count", "int64", 3),
				tagJSON("payload", "binary", "AQID"),
			))),
			want: []cascade.Span{with(func(s *cascade.Span) {
				s.Kind = cascade.KindClient
				s.Peer = "db\u00e9"
				s.StatusCode = 14
				s.ResendCount = 3
			})},
		},
		{
			name: "escaped strings decoded",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("peer.service", "string", "a\"b\\c<d>")))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Peer = "a\"b\\c<d>" })},
		},
		{
			name: "db peer from db.system and db.name",
			in:   jaegerDoc(jaegerSpanJSON("a1", tagsJSON(tagJSON("db.system", "string", "mysql"), tagJSON("db.name", "string", "customers")))),
			want: []cascade.Span{with(func(s *cascade.Span) { s.Peer = "mysql/customers" })},
		},
		{
			name: "processes before spans, embedded process",
			in: `{"data":[{"traceID":"1","processes":{"p1":{"serviceName":"svc","tags":[]}},"spans":[` +
				jaegerSpanJSON("a1", "") + `,` +
				`{"traceID":"1","spanID":"a2","operationName":"op","startTime":1000,"duration":5,"process":{"serviceName":"own","tags":[{"key":"hostname","type":"string","value":"h2"}]}}` +
				`]}]}`,
			want: []cascade.Span{
				with(func(s *cascade.Span) { s.Instance = "" }),
				with(func(s *cascade.Span) { s.SpanID = "00000000000000a2"; s.Service = "own"; s.Instance = "h2" }),
			},
		},
		{
			name: "span without traceID takes the trace's",
			in:   jaegerDoc(`{"spanID":"a1","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`),
			want: []cascade.Span{base},
		},
		{
			name: "single trace without the data wrapper",
			in:   `{"traceID":"1","spans":[` + jaegerSpanJSON("a1", "") + `],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"host.name","type":"string","value":"h1"}]}}}`,
			want: []cascade.Span{base},
		},
		{
			name: "bare array of traces",
			in:   `[{"traceID":"1","spans":[` + jaegerSpanJSON("a1", "") + `],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"host.name","type":"string","value":"h1"}]}}}]`,
			want: []cascade.Span{base},
		},
		{
			name: "JSON Lines of answers, pretty-printed, with a BOM",
			in: "\ufeff" + jaegerDoc(jaegerSpanJSON("a1", "")) + "\n" +
				strings.ReplaceAll(jaegerDoc(jaegerSpanJSON("a2", "")), ",", ",\n\t ") + "\n",
			want: []cascade.Span{base, with(func(s *cascade.Span) { s.SpanID = "00000000000000a2" })},
		},
		{
			name: "times as quoted integers",
			in:   jaegerDoc(`{"traceID":"1","spanID":"a1","operationName":"op","startTime":"1000","duration":"5","processID":"p1"}`),
			want: []cascade.Span{base},
		},
		{
			name:  "negative duration clamped",
			in:    jaegerDoc(`{"traceID":"1","spanID":"a1","operationName":"op","startTime":1000,"duration":-5,"processID":"p1"}`),
			want:  []cascade.Span{with(func(s *cascade.Span) { s.Duration = 0 })},
			warns: map[string]int{"negative duration (clamped to 0)": 1},
		},
		{
			name:  "missing duration stored as 0",
			in:    jaegerDoc(`{"traceID":"1","spanID":"a1","operationName":"op","startTime":1000,"processID":"p1"}`),
			want:  []cascade.Span{with(func(s *cascade.Span) { s.Duration = 0 })},
			notes: map[string]int{"duration: not recorded, stored as 0": 1},
		},
		{
			name:  "empty input",
			in:    " \n\t",
			notes: map[string]int{"empty input": 1},
		},
		{
			name:  "answer with traces and errors",
			in:    `{"errors":[{"code":404,"msg":"trace not found"}],"data":[]}`,
			warns: map[string]int{"Jaeger query API answer lists an error": 1},
		},
		{
			name: "no traces",
			in:   `{"data":[],"total":0}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeJaegerJSON, "t.json", strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Equal(t, tc.want, s.spans)
			if tc.notes == nil {
				tc.notes = map[string]int{}
			}
			if tc.warns == nil {
				tc.warns = map[string]int{}
			}
			require.Equal(t, tc.notes, s.notes)
			require.Equal(t, tc.warns, s.warns)
		})
	}
}

// TestDecodeJaegerErrors checks the text, position and sentinel of every
// kind of defect, and that good spans around a bad one are kept.
func TestDecodeJaegerErrors(t *testing.T) {
	good := jaegerSpanJSON("a1", "")
	tests := []struct {
		name     string
		in       string
		spans    int      // good spans still decoded
		errs     []string // every ParseError, as printed
		sentinel error    // what the first error wraps
	}{
		{
			name:     "truncated input",
			in:       jaegerDoc(good, good)[:150],
			spans:    0, // the first span waited for processes that never came
			errs:     []string{"t.json (byte 131): data[0].spans[1]: unexpected end of input: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "truncated after the spans: held spans are lost",
			in:       `{"data":[{"traceID":"1","spans":[` + good + `],"processes":{"p1":`,
			errs:     []string{"t.json (byte 144): data[0].processes: unexpected end of input: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "unknown processID",
			in:       jaegerDoc(good, `{"traceID":"1","spanID":"a2","operationName":"op","startTime":1000,"duration":5,"processID":"p9"}`),
			spans:    1,
			errs:     []string{`t.json (byte 131): data[0].spans[1]: processID "p9" is not in the trace's processes: no service name`},
			sentinel: ErrNoService,
		},
		{
			name:     "error answer saved in place of traces",
			in:       `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":500,"msg":"storage unavailable"},{"code":500}]}`,
			errs:     []string{`t.json (byte 53): errors: the Jaeger query API answered with errors and no traces: code 500 "storage unavailable" (and 1 more): an error answer, not data`},
			sentinel: ErrErrorAnswer,
		},
		{
			name:     "no process at all",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","startTime":1000,"duration":5}`),
			errs:     []string{`t.json (byte 33): data[0].spans[0]: span has neither processID nor process: no service name`},
			sentinel: ErrNoService,
		},
		{
			name:     "missing startTime",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","duration":5,"processID":"p1"}`, good),
			spans:    1,
			errs:     []string{"t.json (byte 33): data[0].spans[0]: startTime missing: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "startTime of the wrong type",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","startTime":"soon","duration":5,"processID":"p1"}`, good),
			spans:    1,
			errs:     []string{`t.json (byte 33): data[0].spans[0]: "soon" is not a whole number of microseconds: bad timestamp`},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "negative startTime",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","startTime":-1,"duration":5,"processID":"p1"}`),
			errs:     []string{"t.json (byte 33): data[0].spans[0]: startTime -1 is not after 1970: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "startTime in nanoseconds overflows",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","startTime":1796212097551257000,"duration":5,"processID":"p1"}`),
			errs:     []string{"t.json (byte 33): data[0].spans[0]: startTime 1796212097551257000 µs is past the year 2262: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "fractional duration",
			in:       jaegerDoc(`{"traceID":"1","spanID":"a2","operationName":"op","startTime":1000,"duration":1.5,"processID":"p1"}`),
			errs:     []string{"t.json (byte 33): data[0].spans[0]: 1.5 is not a whole number of microseconds: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "span id not hexadecimal",
			in:       jaegerDoc(`{"traceID":"1","spanID":"xyz","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`, good),
			spans:    1,
			errs:     []string{`t.json (byte 33): data[0].spans[0]: spanID "xyz" is not hexadecimal: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "span id a number",
			in:       jaegerDoc(`{"traceID":"1","spanID":12,"operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`, good),
			spans:    1,
			errs:     []string{`t.json (byte 33): data[0].spans[0]: spanID: want a string, found JSON number: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "trace id too long",
			in:       jaegerDoc(`{"traceID":"0123456789abcdef0123456789abcdef0","spanID":"a2","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`),
			errs:     []string{`t.json (byte 33): data[0].spans[0]: traceID "0123456789abcdef0123456789abcdef0" is longer than 32 hex digits: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "span id all zeros",
			in:       jaegerDoc(`{"traceID":"1","spanID":"0000","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`),
			errs:     []string{`t.json (byte 33): data[0].spans[0]: spanID is all zeros: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "span not an object",
			in:       jaegerDoc(`[1,2]`, good),
			spans:    1,
			errs:     []string{`t.json (byte 33): data[0].spans[0]: want an object, found JSON array: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "trace not an object",
			in:       `{"data":[7,{"traceID":"1","spans":[` + good + `],"processes":{"p1":{"serviceName":"svc"}}}]}`,
			spans:    1,
			errs:     []string{`t.json (byte 9): data[0]: want a trace object, found a number: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "data not an array",
			in:       `{"data":{"traceID":"1"}}`,
			errs:     []string{`t.json (byte 8): data: want an array of traces, found an object: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "processes of the wrong type",
			in:       `{"data":[{"traceID":"1","spans":[` + good + `],"processes":[]}]}`,
			errs:     []string{`t.json (byte 144): data[0].processes: want an object, found JSON array: bad value`, `t.json (byte 33): data[0].spans[0]: processID "p1" is not in the trace's processes: no service name`},
			sentinel: ErrBadValue,
		},
		{
			name:     "garbage",
			in:       "this is not JSON",
			errs:     []string{"t.json (byte 0): invalid character 'h' in literal true (expecting 'r'): malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "top-level scalar",
			in:       `"traces"`,
			errs:     []string{"t.json (byte 0): want a Jaeger JSON object, found a string: unsupported content"},
			sentinel: ErrUnsupported,
		},
		{
			name:     "syntax error inside a span",
			in:       jaegerDoc(good, `{"traceID":"1","spanID":"a2",,}`),
			spans:    0,
			errs:     []string{"t.json (byte 131): data[0].spans[1]: invalid character ',' looking for beginning of object key string: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "stray closing bracket after a good answer",
			in:       jaegerDoc(good) + "]",
			spans:    1,
			errs:     []string{"t.json (byte 312): invalid character ']' looking for beginning of value: malformed record"},
			sentinel: ErrSyntax,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeJaegerJSON, "t.json", strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Len(t, s.spans, tc.spans)
			var got []string
			for _, e := range s.errs {
				got = append(got, e.Error())
			}
			require.Equal(t, tc.errs, got)
			require.ErrorIs(t, s.errs[0], tc.sentinel)
		})
	}
}

// TestDecodeJaegerStops checks that the decoder returns at once the error
// of a sink that refuses a bad record.
func TestDecodeJaegerStops(t *testing.T) {
	bad := `{"traceID":"1","spanID":"xyz","operationName":"op","startTime":1000,"duration":5,"processID":"p1"}`
	s := newCollectSink()
	s.failFast = true
	err := decodeJaegerJSON("t.json", strings.NewReader(jaegerDoc(bad, jaegerSpanJSON("a1", ""))), s, &Options{})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrBadID)
	require.Equal(t, "data[0].spans[0]", pe.Path)
	require.Empty(t, s.spans)
}
