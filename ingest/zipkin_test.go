package ingest

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// The Zipkin fixtures: HotROD traces as Zipkin's API answers them (see
// testdata/zipkin/README.md).
var (
	zipkinTraceFixture  = repoTestdata("zipkin", "hotrod-trace-ef5aa2102862164619b50936123de89b.json")
	zipkinTracesFixture = repoTestdata("zipkin", "hotrod-traces.json")
)

// readZipkinFixture returns a fixture's bytes.
func readZipkinFixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// countZipkinGeneric counts the spans of a Zipkin answer (an array of
// spans or of arrays of spans), the failed ones (an "error" tag) and the
// services, with a generic decode that shares no code with the decoder.
func countZipkinGeneric(t *testing.T, data []byte) (spans, failed int, services []string) {
	t.Helper()
	var doc []any
	require.NoError(t, json.Unmarshal(data, &doc))
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				visit(e)
			}
		case map[string]any:
			spans++
			if tags, ok := v["tags"].(map[string]any); ok {
				if _, ok := tags["error"]; ok {
					failed++
				}
			}
			local, _ := v["localEndpoint"].(map[string]any)
			name, _ := local["serviceName"].(string)
			if !slices.Contains(services, name) {
				services = append(services, name)
			}
		}
	}
	visit(doc)
	slices.Sort(services)
	return spans, failed, services
}

// TestDecodeZipkinFixtures decodes both fixtures and checks them against
// an independent count.
func TestDecodeZipkinFixtures(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		spans int
	}{
		{"GET /api/v2/trace/{id}: an array of spans", zipkinTraceFixture, 40},
		{"GET /api/v2/traces: an array of traces", zipkinTracesFixture, 39},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := readZipkinFixture(t, tc.path)
			wantSpans, wantFailed, wantServices := countZipkinGeneric(t, data)
			require.Equal(t, tc.spans, wantSpans)

			s, err := decodeTestFile(t, decodeZipkinJSON, tc.path, nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Empty(t, s.warns)
			require.Empty(t, s.notes)
			require.Len(t, s.spans, wantSpans)
			require.Equal(t, wantServices, spanServices(s.spans))
			failed := 0
			for _, sp := range s.spans {
				if sp.Status == cascade.StatusError {
					failed++
					require.Equal(t, "*errors.errorString", sp.ErrorType)
				}
			}
			require.Equal(t, wantFailed, failed)
			require.Positive(t, failed)
		})
	}
}

// TestZipkinFixtureMatchesJaeger compares the spans of the Zipkin fixtures
// with the same traces read from Jaeger's legacy JSON. The formats differ
// where Zipkin itself changes what it stores: it lower-cases span names,
// and it (zipkin-go, in the exporter) rounds times to the nearest
// microsecond where Jaeger truncates, so start and duration may differ by
// up to 1 µs. Everything else must be equal: ids, parents, services,
// instances (Zipkin's from the host.name tag), kinds, statuses, error types
// (from the exception annotation), status codes and peers (the mysql
// calls' from remoteEndpoint).
func TestZipkinFixtureMatchesJaeger(t *testing.T) {
	var z []cascade.Span
	for _, path := range []string{zipkinTraceFixture, zipkinTracesFixture} {
		s, err := decodeTestFile(t, decodeZipkinJSON, path, nil)
		require.NoError(t, err)
		z = append(z, s.spans...)
	}
	j, err := decodeTestFile(t, decodeJaegerJSON, hotrodJaeger, nil)
	require.NoError(t, err)
	var jaeger []cascade.Span
	for _, sp := range j.spans {
		if slices.ContainsFunc(z, func(s cascade.Span) bool { return s.TraceID == sp.TraceID }) {
			jaeger = append(jaeger, sp)
		}
	}
	sortSpansByTraceAndID(z)
	sortSpansByTraceAndID(jaeger)
	diffs := spanFieldDiffs(jaeger, z, 20, func(jg, zk *cascade.Span) {
		jg.Operation = strings.ToLower(jg.Operation)
		for _, f := range []struct{ j, z *int64 }{{&jg.Start, &zk.Start}, {&jg.Duration, &zk.Duration}} {
			if d := *f.z - *f.j; d >= -1000 && d <= 1000 {
				*f.z = *f.j
			}
		}
	})
	require.Empty(t, diffs, "Jaeger != Zipkin, first differences:\n%s", strings.Join(diffs, "\n"))
}

// TestDecodeZipkinShapes checks that every shape of Zipkin answer gives the
// same spans.
func TestDecodeZipkinShapes(t *testing.T) {
	trace := bytes.TrimSpace(readZipkinFixture(t, zipkinTraceFixture))
	traces := bytes.TrimSpace(readZipkinFixture(t, zipkinTracesFixture))
	var list []json.RawMessage
	require.NoError(t, json.Unmarshal(traces, &list))
	require.Len(t, list, 1)
	other := []byte(list[0]) // the second trace, as an array of spans
	var spans []json.RawMessage
	require.NoError(t, json.Unmarshal(trace, &spans))
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, trace, "", "  "))

	s, err := decodeTestBytes(decodeZipkinJSON, "z.json", bytes.NewReader(trace), nil)
	require.NoError(t, err)
	one := s.spans
	s, err = decodeTestBytes(decodeZipkinJSON, "z.json", bytes.NewReader(other), nil)
	require.NoError(t, err)
	both := append(slices.Clone(one), s.spans...)

	tests := []struct {
		name string
		in   []byte
		want []cascade.Span
	}{
		{"array of traces", []byte("[" + string(trace) + "," + string(other) + "]"), both},
		{"JSON Lines of arrays", []byte(string(trace) + "\n" + string(other) + "\n"), both},
		{"concatenated arrays of traces", []byte("[" + string(trace) + "][" + string(other) + "]"), both},
		{"pretty-printed, with a BOM", append([]byte("\ufeff"), pretty.Bytes()...), one},
		{"lone span object", spans[0], one[:1]},
		{"empty array", []byte("[]"), nil},
		{"empty trace list", []byte("[[],[]]"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeZipkinJSON, "z.json", bytes.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Equal(t, tc.want, s.spans)
		})
	}
}

// zipkinSpanJSON is a minimal valid Zipkin span with extra members.
func zipkinSpanJSON(id, extra string) string {
	s := `{"traceId":"1","id":"` + id + `","name":"op","timestamp":1000,"duration":5,"localEndpoint":{"serviceName":"svc"}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// TestDecodeZipkinMapping checks how each Zipkin field and tag becomes a
// span field.
func TestDecodeZipkinMapping(t *testing.T) {
	base := cascade.Span{
		TraceID: "00000000000000000000000000000001", SpanID: "00000000000000a1",
		Service: "svc", Operation: "op", Start: 1_000_000, Duration: 5000,
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
		want  cascade.Span
		notes map[string]int
		warns map[string]int
	}{
		{name: "minimal span, ids padded", in: zipkinSpanJSON("a1", ""), want: base},
		{
			name: "full-width upper-case ids",
			in:   `{"traceId":"463AC35C9F6413AD48485A3953BB6124","id":"A2FB4A1D1A96D312","parentId":"0020000000000001","name":"op","timestamp":1000,"duration":5,"localEndpoint":{"serviceName":"svc"}}`,
			want: with(func(s *cascade.Span) {
				s.TraceID = "463ac35c9f6413ad48485a3953bb6124"
				s.SpanID = "a2fb4a1d1a96d312"
				s.ParentSpanID = "0020000000000001"
			}),
		},
		{
			name:  "parent equal to the span is dropped, with a warning",
			in:    zipkinSpanJSON("a1", `"parentId":"a1"`),
			want:  base,
			warns: map[string]int{warnSelfParent: 1},
		},
		{
			name:  "missing service kept as unknown_service",
			in:    `{"traceId":"1","id":"a1","name":"op","timestamp":1000,"duration":5,"localEndpoint":{"ipv4":"10.0.0.1"}}`,
			want:  with(func(s *cascade.Span) { s.Service, s.Instance = UnknownService, "10.0.0.1" }),
			warns: map[string]int{warnNoService: 1},
		},
		{
			name:  "unknown kind left empty",
			in:    zipkinSpanJSON("a1", `"kind":"SIDEWAYS"`),
			want:  base,
			warns: map[string]int{warnUnknownKind: 1},
		},
		{
			name: "kind, instance from ipv4 and port, peer from the remote service",
			in: zipkinSpanJSON("a1", `"kind":"CLIENT","localEndpoint":{"serviceName":"svc","ipv4":"10.0.0.1","port":8080},`+
				`"remoteEndpoint":{"serviceName":"backend","ipv4":"10.0.0.2","port":80},"tags":{"peer.service":"other"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Instance = "10.0.0.1:8080"; s.Peer = "backend" }),
		},
		{
			name: "instance from ipv6, peer from the remote address",
			in:   zipkinSpanJSON("a1", `"kind":"PRODUCER","localEndpoint":{"serviceName":"svc","ipv6":"::1","port":9000},"remoteEndpoint":{"ipv4":"10.0.0.2","port":5672}`),
			want: with(func(s *cascade.Span) {
				s.Kind = cascade.KindProducer
				s.Instance = "[::1]:9000"
				s.Peer = "10.0.0.2:5672"
				s.MessagingOperation = cascade.MessagingPublish // a producer span publishes
			}),
		},
		{
			name: "instance from a host tag, peer from tags",
			in:   zipkinSpanJSON("a1", `"kind":"client","tags":{"host.name":"h1","server.address":"db.local"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Instance = "h1"; s.Peer = "db.local" }),
		},
		{
			name: "peer from an IP server.address keeps server.port",
			in:   zipkinSpanJSON("a1", `"kind":"client","tags":{"server.address":"127.0.0.1","server.port":"6379"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Peer = "127.0.0.1:6379" }),
		},
		{
			name: "peer from an IPv6 net.peer.name keeps net.peer.port",
			in:   zipkinSpanJSON("a1", `"kind":"client","tags":{"net.peer.name":"::1","net.peer.port":"9090"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Peer = "[::1]:9090" }),
		},
		{
			name: "peer from a named server.address drops the port",
			in:   zipkinSpanJSON("a1", `"kind":"client","tags":{"server.address":"db.local","server.port":"5432"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Peer = "db.local" }),
		},
		{
			name: "internal kind from the span.kind tag",
			in:   zipkinSpanJSON("a1", `"tags":{"span.kind":"internal"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindInternal }),
		},
		{
			name: "error tag true, error type from the collector's exception annotation",
			in: zipkinSpanJSON("a1", `"annotations":[{"timestamp":1001,"value":"retry|{\"exception.type\":\"No\"}|0"},`+
				`{"timestamp":1002,"value":"exception|{\"exception.message\":\"redis timeout\",\"exception.type\":\"*errors.errorString\"}|0"}],`+
				`"tags":{"error":"true","otel.status_code":"ERROR","otel.status_description":"An error occurred"}`),
			want: with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "*errors.errorString" }),
		},
		{
			name: "error type from an SDK exporter's exception annotation",
			in:   zipkinSpanJSON("a1", `"annotations":[{"timestamp":1002,"value":"exception: {\"exception.type\":\"IOError\"}"}],"tags":{"error":""}`),
			want: with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "IOError" }),
		},
		{
			name: "error tag message is the error type",
			in:   zipkinSpanJSON("a1", `"tags":{"error":"Connection refused"}`),
			want: with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "Connection refused" }),
		},
		{
			name: "error tag true falls back to the status description",
			in:   zipkinSpanJSON("a1", `"tags":{"error":"true","otel.status_description":"deadline exceeded"}`),
			want: with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "deadline exceeded" }),
		},
		{
			name: "error.type tag first",
			in:   zipkinSpanJSON("a1", `"tags":{"error":"Connection refused","error.type":"ECONNREFUSED"}`),
			want: with(func(s *cascade.Span) { s.Status = cascade.StatusError; s.ErrorType = "ECONNREFUSED" }),
		},
		{
			name: "error tag false is no error",
			in:   zipkinSpanJSON("a1", `"tags":{"error":"false","error.type":"x"}`),
			want: base,
		},
		{
			name: "otel.status_code OK",
			in:   zipkinSpanJSON("a1", `"kind":"SERVER","tags":{"otel.status_code":"OK","http.status_code":"500"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindServer; s.Status = cascade.StatusOK; s.StatusCode = 500 }),
		},
		{
			name:  "HTTP 503 fails a server span",
			in:    zipkinSpanJSON("a1", `"kind":"SERVER","tags":{"http.status_code":"503"}`),
			want:  with(func(s *cascade.Span) { s.Kind = cascade.KindServer; s.Status = cascade.StatusError; s.StatusCode = 503 }),
			notes: map[string]int{"status: error inferred from HTTP status code": 1},
		},
		{
			name:  "HTTP 404 fails a client span",
			in:    zipkinSpanJSON("a1", `"kind":"CLIENT","tags":{"http.response.status_code":"404"}`),
			want:  with(func(s *cascade.Span) { s.Kind = cascade.KindClient; s.Status = cascade.StatusError; s.StatusCode = 404 }),
			notes: map[string]int{"status: error inferred from HTTP status code": 1},
		},
		{
			name: "HTTP 404 leaves a server span unset",
			in:   zipkinSpanJSON("a1", `"kind":"SERVER","tags":{"http.status_code":"404"}`),
			want: with(func(s *cascade.Span) { s.Kind = cascade.KindServer; s.StatusCode = 404 }),
		},
		{
			name: "non-string tag values taken as text",
			in:   zipkinSpanJSON("a1", `"kind":"CLIENT","tags":{"http.status_code":200,"retry.count":2,"peer.service":"p"}`),
			want: with(func(s *cascade.Span) {
				s.Kind = cascade.KindClient
				s.StatusCode = 200
				s.ResendCount = 2
				s.Peer = "p"
			}),
		},
		{
			name:  "shared server span",
			in:    zipkinSpanJSON("a1", `"kind":"SERVER","shared":true`),
			want:  with(func(s *cascade.Span) { s.Kind = cascade.KindServer }),
			notes: map[string]int{"Zipkin shared server spans keep their client's span id": 1},
		},
		{
			name:  "negative duration clamped",
			in:    `{"traceId":"1","id":"a1","name":"op","timestamp":1000,"duration":-5,"localEndpoint":{"serviceName":"svc"}}`,
			want:  with(func(s *cascade.Span) { s.Duration = 0 }),
			warns: map[string]int{"negative duration (clamped to 0)": 1},
		},
		{
			name:  "missing duration stored as 0",
			in:    `{"traceId":"1","id":"a1","name":"op","timestamp":1000,"localEndpoint":{"serviceName":"svc"}}`,
			want:  with(func(s *cascade.Span) { s.Duration = 0 }),
			notes: map[string]int{"duration: not recorded, stored as 0": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeZipkinJSON, "z.json", strings.NewReader("["+tc.in+"]"), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Equal(t, []cascade.Span{tc.want}, s.spans)
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

// TestDecodeZipkinEmpty checks that an empty input is noted, not an error.
func TestDecodeZipkinEmpty(t *testing.T) {
	s, err := decodeTestBytes(decodeZipkinJSON, "z.json", strings.NewReader("\n"), nil)
	require.NoError(t, err)
	require.Empty(t, s.spans)
	require.Empty(t, s.errs)
	require.Equal(t, map[string]int{"empty input": 1}, s.notes)
}

// TestDecodeZipkinErrors checks the text, position and sentinel of every
// kind of defect, and that good spans around a bad one are kept.
func TestDecodeZipkinErrors(t *testing.T) {
	good := zipkinSpanJSON("a1", "")
	tests := []struct {
		name     string
		in       string
		spans    int
		errs     []string
		sentinel error
	}{
		{
			name:     "truncated input",
			in:       "[" + good + "," + good[:40],
			spans:    1,
			errs:     []string{"z.json (byte 107): [1]: unexpected end of input: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "truncated array of traces",
			in:       "[[" + good + "],[" + good,
			spans:    2,
			errs:     []string{"z.json (byte 215): [1]: unexpected end of input: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "missing timestamp",
			in:       `[{"traceId":"1","id":"a2","duration":5,"localEndpoint":{"serviceName":"svc"}},` + good + `]`,
			spans:    1,
			errs:     []string{"z.json (byte 1): [0]: timestamp missing: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "timestamp zero",
			in:       `[{"traceId":"1","id":"a2","timestamp":0,"localEndpoint":{"serviceName":"svc"}}]`,
			errs:     []string{"z.json (byte 1): [0]: timestamp 0 is not after 1970: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "timestamp as a date",
			in:       `[{"traceId":"1","id":"a2","timestamp":"2026-12-02T10:00:00Z","localEndpoint":{"serviceName":"svc"}},` + good + `]`,
			spans:    1,
			errs:     []string{`z.json (byte 1): [0]: "2026-12-02T10:00:00Z" is not a whole number of microseconds: bad timestamp`},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "duration overflows",
			in:       `[{"traceId":"1","id":"a2","timestamp":1000,"duration":9223372036854775,"localEndpoint":{"serviceName":"svc"}}]`,
			errs:     []string{"z.json (byte 1): [0]: duration 9223372036854775 µs ends past the year 2262: bad timestamp"},
			sentinel: ErrBadTimestamp,
		},
		{
			name:     "bad span id",
			in:       `[{"traceId":"1","id":"0x12","timestamp":1000,"localEndpoint":{"serviceName":"svc"}}]`,
			errs:     []string{`z.json (byte 1): [0]: id "0x12" is not hexadecimal: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "span id too long",
			in:       `[{"traceId":"1","id":"463ac35c9f6413ad4","timestamp":1000,"localEndpoint":{"serviceName":"svc"}}]`,
			errs:     []string{`z.json (byte 1): [0]: id "463ac35c9f6413ad4" is longer than 16 hex digits: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "missing trace id",
			in:       `[{"id":"a2","timestamp":1000,"localEndpoint":{"serviceName":"svc"}}]`,
			errs:     []string{`z.json (byte 1): [0]: traceId missing: bad trace or span id`},
			sentinel: ErrBadID,
		},
		{
			name:     "tags of the wrong type",
			in:       `[{"traceId":"1","id":"a2","timestamp":1000,"localEndpoint":{"serviceName":"svc"},"tags":["a"]},` + good + `]`,
			spans:    1,
			errs:     []string{`z.json (byte 1): [0]: tags: want an object, found JSON array: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "Zipkin v1 span",
			in:       `[{"traceId":"1","id":"a2","name":"get","timestamp":1000,"annotations":[{"timestamp":1000,"value":"sr","endpoint":{"serviceName":"svc"}}],"binaryAnnotations":[{"key":"http.path","value":"/"}]}]`,
			errs:     []string{`z.json (byte 1): [0]: Zipkin v1 span (binaryAnnotations): only v2 JSON is read: unsupported content`},
			sentinel: ErrUnsupported,
		},
		{
			name:     "element neither span nor trace",
			in:       `[` + good + `,"span",null,` + good + `]`,
			spans:    2,
			errs:     []string{`z.json (byte 107): [1]: want a span object, found a string: bad value`, `z.json (byte 114): [2]: want a span object, found null: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "arrays nested too deep",
			in:       `[[[` + good + `]]]`,
			errs:     []string{`z.json (byte 2): [0][0]: want a span object, found an array: bad value`},
			sentinel: ErrBadValue,
		},
		{
			name:     "garbage",
			in:       "<html><body>502 Bad Gateway</body></html>",
			errs:     []string{"z.json (byte 0): invalid character '<' looking for beginning of value: malformed record"},
			sentinel: ErrSyntax,
		},
		{
			name:     "top-level scalar",
			in:       `42`,
			errs:     []string{"z.json (byte 0): want an array of Zipkin v2 spans, found a number: unsupported content"},
			sentinel: ErrUnsupported,
		},
		{
			name:     "garbage after a good array",
			in:       "[" + good + "]\n}",
			spans:    1,
			errs:     []string{"z.json (byte 108): invalid character '}' looking for beginning of value: malformed record"},
			sentinel: ErrSyntax,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeZipkinJSON, "z.json", strings.NewReader(tc.in), nil)
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

// TestDecodeZipkinStops checks that the decoder returns at once the error
// of a sink that refuses a bad record.
func TestDecodeZipkinStops(t *testing.T) {
	in := `[[{"id":"a2","timestamp":1000,"localEndpoint":{"serviceName":"svc"}}],[` + zipkinSpanJSON("a1", "") + `]]`
	s := newCollectSink()
	s.failFast = true
	err := decodeZipkinJSON("z.json", strings.NewReader(in), s, &Options{})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrBadID)
	require.Equal(t, "[0][0]", pe.Path)
	require.Equal(t, int64(2), pe.Offset)
	require.Empty(t, s.spans)
}
