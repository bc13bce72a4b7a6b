package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeOTLPJSONStreamAt is decodeOTLPJSON with the size from which an
// element's spans are decoded in batches as a parameter.
func decodeOTLPJSONStreamAt(data []byte, streamAt int) (*collectSink, error) {
	s := newCollectSink()
	sc := newJSONScanner(bytes.NewReader(data), 64)
	j := &otlpJSON{d: otlpDecoder{name: "t.json", s: s}, sc: sc, streamAt: streamAt}
	err := j.run()
	if err == errStopped {
		err = nil
	}
	return s, err
}

// TestOTLPJSONStreamedElements decodes elements in batches (streamAt as
// small as one span, a few spans, and the default, which no element here
// reaches) and checks the spans and the invalid records against decoding
// them whole: the same spans in the same order, and a bad span placed at
// its own scope and span index.
func TestOTLPJSONStreamedElements(t *testing.T) {
	h := loadOTLPHotROD(t)
	const res = `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]}`
	span := func(id int) string {
		return fmt.Sprintf(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"%016x","name":"op","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`,
			id, 1_767_225_600_000_000_000+id, 1_767_225_600_000_001_000+id)
	}
	spans := func(from, to int) string {
		var s []string
		for i := from; i < to; i++ {
			s = append(s, span(i))
		}
		return strings.Join(s, ",")
	}
	twoScopes := `{"resourceSpans":[` + res + `,"scopeSpans":[{"scope":{"name":"a"},"spans":[` + spans(1, 40) +
		`]},{"spans":[` + spans(40, 90) + `],"scope":{"name":"b"}}],"schemaUrl":"x"}]}`
	badID := strings.Replace(twoScopes, fmt.Sprintf(`"spanId":"%016x"`, 47), `"spanId":""`, 1)
	badSpan := strings.Replace(twoScopes, fmt.Sprintf(`"spanId":"%016x"`, 77), `"spanId":{}`, 1)
	tests := []struct {
		name string
		in   []byte
		at   []int // streamAt values to decode with
		// errs are the invalid records with streamAt 1, and spans the
		// number of spans, when they differ from decoding whole (nil,
		// -1: the same)
		errs  []string
		spans int
	}{
		{name: "one request object", in: h.jsonObject, at: []int{2000}, spans: -1},
		{name: "JSON Lines", in: h.jsonLines, at: []int{2000}, spans: -1},
		{name: "Jaeger api_v3", in: h.apiV3, at: []int{2000}, spans: -1},
		{name: "two scopes, members in any order", in: []byte(twoScopes), at: []int{1, 700, 5000}, spans: -1},
		{name: "resource after its spans: read whole", in: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + spans(1, 30) + `]}],"resource":{}}]}`),
			at: []int{1, 700}, spans: -1},
		{name: "a span without an id, in the second scope", in: []byte(badID), spans: 88,
			errs: []string{"t.json:1 (byte 7931): resourceSpans[0].scopeSpans[1].spans[7]: span id missing or all zero: bad trace or span id"}},
		{name: "a span pdata rejects", in: []byte(badSpan), spans: 88,
			errs: []string{`t.json:1 (byte 13001): resourceSpans[0].scopeSpans[1].spans[37]: ReadStringAsSlice: expects " or n, but found { near "\"spanId\":{},\"name\":\"" (in the 1 spans from here): malformed record`}},
		{name: "the element malformed after its first spans", in: []byte(`{"resourceSpans":[` + res + `,"scopeSpans":[{"spans":[` + spans(1, 30) + `]}] "x":1}]}`), spans: 29,
			errs: []string{"t.json:1 (byte 5028): resourceSpans[0]: element malformed after its first spans were read: malformed record"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := decodeOTLPJSONStreamAt(tc.in, otlpStreamAt)
			require.NoError(t, err)
			for _, at := range tc.at {
				got, err := decodeOTLPJSONStreamAt(tc.in, at)
				require.NoError(t, err, "streamAt %d", at)
				require.Equal(t, whole.spans, got.spans, "streamAt %d", at)
				require.Equal(t, errStrings(whole.errs), errStrings(got.errs), "streamAt %d", at)
				require.Equal(t, whole.notes, got.notes)
				require.Equal(t, whole.warns, got.warns)
			}
			if tc.spans >= 0 {
				got, err := decodeOTLPJSONStreamAt(tc.in, 1)
				require.NoError(t, err)
				require.Equal(t, tc.errs, errStrings(got.errs))
				require.Len(t, got.spans, tc.spans)
			}
		})
	}
}

// FuzzDecodeOTLPJSONStreamed decodes inputs with elements streamed in
// batches of a few hundred bytes and holds them to decoding whole: the
// same outcome, and where whole decoding found no invalid record, the same
// spans.
func FuzzDecodeOTLPJSONStreamed(f *testing.F) {
	seeds := loadOTLPSeeds(f)
	for _, b := range seeds.json {
		f.Add(b, uint16(300))
	}
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		if len(data) > otlpFuzzMax {
			t.Skip()
		}
		whole, werr := decodeOTLPJSONStreamAt(data, otlpStreamAt)
		got, err := decodeOTLPJSONStreamAt(data, int(at)+1)
		require.Equal(t, werr == nil, err == nil, "whole: %v, streamed: %v", werr, err)
		if werr == nil && len(whole.errs) == 0 {
			require.Empty(t, errStrings(got.errs))
			require.Equal(t, whole.spans, got.spans)
		}
	})
}
