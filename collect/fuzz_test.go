package collect

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// fuzzMax caps fuzz inputs: larger ones only slow the fuzzer.
const fuzzMax = 64 << 10

// FuzzDecodeRecord checks that the record decoder never panics and that
// what it accepts encodes back to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(nil, &batch{spans: []cascade.Span{{TraceID: "t", SpanID: "s", Service: "svc", Start: 5, Duration: -1, StatusCode: 500}},
		notes: []note{{kind: noteWarn, text: "w", count: 2}}}))
	f.Add(encodeRecord(nil, &batch{samples: []cascade.Sample{{Time: 1, Metric: "m", Labels: `a="b"`, Value: 2.5}}}))
	f.Add([]byte{'S', 0, 0})
	f.Add([]byte{'M', 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > fuzzMax {
			t.Skip()
		}
		b, err := decodeRecord(in)
		if err != nil {
			require.ErrorIs(t, err, errBadRecord)
			return
		}
		again, err := decodeRecord(encodeRecord(nil, b))
		require.NoError(t, err)
		require.Equal(t, len(b.spans), len(again.spans))
		for i := range b.spans {
			require.Equal(t, b.spans[i], again.spans[i])
		}
		require.Equal(t, len(b.samples), len(again.samples))
		for i := range b.samples {
			// Compare bits: NaN values are not equal to themselves.
			x, y := b.samples[i], again.samples[i]
			require.Equal(t, encodeRecord(nil, &batch{samples: []cascade.Sample{x}}), encodeRecord(nil, &batch{samples: []cascade.Sample{y}}))
		}
		require.Equal(t, b.notes, again.notes)
	})
}

// FuzzScanSegment checks that the segment reader never panics, and that
// the records it returns are exactly the file up to where it stopped.
func FuzzScanSegment(f *testing.F) {
	seg := segmentHeaderBytes()
	seg = appendFrame(seg, []byte("first"))
	seg = appendFrame(seg, encodeRecord(nil, &batch{spans: []cascade.Span{{TraceID: "t", SpanID: "s", Service: "x"}}}))
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(append(bytes.Clone(seg), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add(segmentHeaderBytes()[:5])
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > fuzzMax {
			t.Skip()
		}
		rebuilt := segmentHeaderBytes()
		info, err := scanSegment(bytes.NewReader(in), int64(len(in)), func(p []byte) error {
			rebuilt = appendFrame(rebuilt, p)
			return nil
		})
		if err != nil {
			return
		}
		require.LessOrEqual(t, info.good, info.size)
		if info.torn == "" {
			require.Equal(t, int64(len(in)), info.good)
		}
		if info.good >= segmentHeader {
			// The header's last three bytes are reserved and not checked.
			require.Equal(t, in[segmentHeader:info.good], rebuilt[segmentHeader:])
		}
	})
}

// FuzzDecodeBody checks that the receiver's request decoding never
// panics, whatever the body, and that what it accepts survives the
// segment record.
func FuzzDecodeBody(f *testing.F) {
	apiV3, err := os.ReadFile("../testdata/hotrod-baseline/sample-trace-otlp.json")
	require.NoError(f, err)
	f.Add(protoBody(f, testTraces(1, 3, "svc")), false, false)
	f.Add(jsonBody(f, testTraces(2, 2, "svc")), true, false)
	f.Add(apiV3, true, false)
	f.Add(metricsProto(f, testMetrics(3, "svc")), false, true)
	f.Add(metricsJSON(f, testMetrics(2, "svc")), true, true)
	f.Add([]byte{}, false, false)
	f.Add([]byte("\x0a\x05hello"), false, false)
	f.Fuzz(func(t *testing.T, body []byte, isJSON, isMetrics bool) {
		if len(body) > fuzzMax {
			t.Skip()
		}
		sig, enc := signalTraces, encodingProto
		if isMetrics {
			sig = signalMetrics
		}
		if isJSON {
			enc = encodingJSON
		}
		d, err := decodeBody(sig, enc, body, nil)
		if err != nil {
			require.ErrorIs(t, err, errBadPayload)
			return
		}
		if len(d.batch.spans) > 0 && len(d.batch.samples) > 0 {
			t.Fatal("a body gave spans and samples")
		}
		back, err := decodeRecord(encodeRecord(nil, &d.batch))
		require.NoError(t, err)
		require.Equal(t, len(d.batch.spans), len(back.spans))
		require.Equal(t, len(d.batch.samples), len(back.samples))
	})
}
