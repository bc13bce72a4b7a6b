package collect

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

func TestRecordRoundTrip(t *testing.T) {
	span := cascade.Span{
		TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", ParentSpanID: "00f067aa0ba902b7",
		Service: "frontend", Instance: "pod-1", Operation: "GET /dispatch", Kind: cascade.KindServer,
		Start: 1_700_000_000_123_456_789, Duration: 42, Status: cascade.StatusError, ErrorType: "timeout",
		StatusCode: 503, Peer: "redis", ResendCount: 2,
	}
	consumer := cascade.Span{
		TraceID: "1af7651916cd43dd8448eb211c80319c", SpanID: "c7ad6b7169203331", Service: "points",
		Operation: "process points", Kind: cascade.KindConsumer, Start: 5, Duration: 7,
		Links:           []cascade.SpanLink{{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}, {TraceID: "2a", SpanID: "3b"}},
		MessagingSystem: "rabbitmq", MessagingOperation: cascade.MessagingProcess, Destination: "points",
		ConsumerGroup: "points", MessageID: "m-17", BatchCount: 1, MessageBytes: 32768, Redelivery: 3,
	}
	tests := []struct {
		name string
		b    batch
	}{
		{name: "empty spans", b: batch{}},
		{name: "one span", b: batch{spans: []cascade.Span{span}}},
		{name: "a consumer span: links and messaging columns", b: batch{spans: []cascade.Span{consumer, span}}},
		{name: "spans and notes", b: batch{spans: []cascade.Span{span, {TraceID: "t", SpanID: "s", Service: "x", Start: -5, Duration: math.MaxInt64}},
			notes: []note{{kind: noteWarn, text: "negative duration (clamped to 0)", count: 3}, {kind: noteInfer, text: "empty input", count: 1}}}},
		{name: "samples", b: batch{samples: []cascade.Sample{
			{Time: 1, Service: "s", Instance: "i", Metric: "m", Kind: cascade.MetricQueueDepth, Labels: `a="b"`, Value: 1.5},
			{Time: -1, Metric: "nan", Value: math.Inf(-1)},
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := encodeRecord(nil, &tc.b)
			got, err := decodeRecord(enc)
			require.NoError(t, err)
			require.Equal(t, len(tc.b.spans), len(got.spans))
			for i := range tc.b.spans {
				require.Equal(t, tc.b.spans[i], got.spans[i])
			}
			require.Equal(t, tc.b.samples, nilIfEmpty(got.samples))
			require.Equal(t, tc.b.notes, got.notes)
		})
	}
}

// TestRecordKeepsEverySpanColumn fills every field of a span and round
// trips it: a column added to cascade.Span without a line in the record
// codec fails here (a collect's segments would drop it).
func TestRecordKeepsEverySpanColumn(t *testing.T) {
	var s cascade.Span
	v := reflect.ValueOf(&s).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("field-%d", i))
		case reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			s.Links = []cascade.SpanLink{{TraceID: "lt", SpanID: "ls"}}
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	got, err := decodeRecord(encodeRecord(nil, &batch{spans: []cascade.Span{s}}))
	require.NoError(t, err)
	require.Len(t, got.spans, 1)
	require.True(t, s.Equal(&got.spans[0]), "\n%+v\n%+v", s, got.spans[0])
}

// TestRecordReadsSpansV1 reads a spans record as written before the
// messaging columns (kind 'S'): a segment left by an older collect.
func TestRecordReadsSpansV1(t *testing.T) {
	s := cascade.Span{TraceID: "t", SpanID: "s", Service: "x", Kind: cascade.KindServer, Start: 3, Duration: 4, Peer: "p", ResendCount: 1}
	enc := []byte{recordSpansV1, 1}
	for _, f := range []string{s.TraceID, s.SpanID, s.ParentSpanID, s.Service, s.Instance, s.Operation, string(s.Kind)} {
		enc = appendString(enc, f)
	}
	enc = binary.AppendVarint(enc, s.Start)
	enc = binary.AppendVarint(enc, s.Duration)
	enc = appendString(enc, string(s.Status))
	enc = appendString(enc, s.ErrorType)
	enc = binary.AppendVarint(enc, int64(s.StatusCode))
	enc = appendString(enc, s.Peer)
	enc = binary.AppendVarint(enc, int64(s.ResendCount))
	enc = binary.AppendUvarint(enc, 0) // notes
	got, err := decodeRecord(enc)
	require.NoError(t, err)
	require.Equal(t, []cascade.Span{s}, got.spans)
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestRecordNaN(t *testing.T) {
	b := batch{samples: []cascade.Sample{{Metric: "m", Value: math.NaN()}}}
	got, err := decodeRecord(encodeRecord(nil, &b))
	require.NoError(t, err)
	require.True(t, math.IsNaN(got.samples[0].Value))
}

func TestDecodeRecordErrors(t *testing.T) {
	valid := encodeRecord(nil, &batch{spans: []cascade.Span{{TraceID: "t", SpanID: "s", Service: "x"}}})
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{name: "empty", in: nil, want: "kind: truncated"},
		{name: "unknown kind", in: []byte{'X', 0, 0}, want: `unknown kind 'X'`},
		{name: "count beyond bytes", in: []byte{'S', 0x7f}, want: "span count: 127 exceeds"},
		{name: "truncated", in: valid[:len(valid)-3], want: "malformed record"},
		{name: "trailing bytes", in: append(append([]byte{}, valid...), 1), want: "1 bytes after the notes"},
		{name: "bad note kind", in: []byte{'S', 0, 1, 'Z', 0, 1}, want: "unknown note kind"},
		{name: "sample value cut", in: []byte{'M', 1, 0, 0, 0, 0, 0, 0, 1, 2}, want: "value: truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRecord(tc.in)
			require.ErrorIs(t, err, errBadRecord)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
