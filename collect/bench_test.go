package collect

import (
	"net/http"
	"path/filepath"
	"testing"

	"cascade/ingest"
)

// benchBody is a request of 512 spans, the OpenTelemetry SDK's default
// batch.
func benchBody(b *testing.B) []byte {
	td := testTraces(1, 512, "bench")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		a := spans.At(i).Attributes()
		a.PutStr("http.request.method", "GET")
		a.PutStr("server.address", "driver")
		a.PutInt("http.response.status_code", 200)
	}
	return protoBody(b, td)
}

// BenchmarkDecodeBody measures turning a request body into a segment
// record: decoding, normalizing, encoding.
func BenchmarkDecodeBody(b *testing.B) {
	body := benchBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var spans int
	for b.Loop() {
		d, err := decodeBody(signalTraces, encodingProto, body, &ingest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		encodeRecord(nil, &d.batch)
		spans += len(d.batch.spans)
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkReceiver measures one request at a time through the handler to
// an fsynced segment: the latency floor of an acknowledgement, with no
// group commit to share the fsync.
func BenchmarkReceiver(b *testing.B) {
	body := benchBody(b)
	st, err := openStore(filepath.Join(b.TempDir(), "work"), 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer st.close()
	cfg := DefaultConfig().settled().Receiver
	rc := newReceiver(&cfg, &ingest.Options{})
	done := make(chan struct{})
	go func() { rc.writeLoop(st, func(string, ...any) {}); close(done) }()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var spans int
	for b.Loop() {
		if rec := serveOne(rc, body); rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		spans += 512
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
	rc.close()
	<-done
}
