package collect

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
)

// TestReceiverAnswers sends one request per case to a running endpoint
// and checks the answer, then stops it and checks what was stored.
func TestReceiverAnswers(t *testing.T) {
	cfg := testConfig(t)
	cfg.Receiver.MaxRequestBytes = 64 << 10
	r := startRun(t, cfg)

	badIDs := testTraces(90, 3, "svc")
	for i, ss := 0, badIDs.ResourceSpans().At(0).ScopeSpans().At(0).Spans(); i < ss.Len(); i++ {
		ss.At(i).SetSpanID(pcommon.SpanID{})
	}
	mixed := testTraces(91, 2, "svc")
	badIDs.ResourceSpans().At(0).CopyTo(mixed.ResourceSpans().AppendEmpty())
	// A span without service.name is kept as unknown_service, as the
	// Collector keeps it.
	noService := testTraces(92, 2, "")
	noService.ResourceSpans().At(0).Resource().Attributes().Remove("service.name")

	big := bytes.Repeat([]byte{'a'}, 70<<10)
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		encoding    string
		body        []byte
		status      int
		respType    string
		inBody      string
		stored      []uint64 // trace ids stored by this request
	}{
		{name: "proto", path: pathTraces, contentType: contentTypeProto, body: protoBody(t, testTraces(1, 3, "svc")), status: 200, respType: contentTypeProto, stored: []uint64{1}},
		{name: "json", path: pathTraces, contentType: contentTypeJSON, body: jsonBody(t, testTraces(2, 4, "svc")), status: 200, respType: contentTypeJSON, inBody: "{}", stored: []uint64{2}},
		{name: "json charset", path: pathTraces, contentType: "application/json; charset=utf-8", body: jsonBody(t, testTraces(3, 1, "svc")), status: 200, stored: []uint64{3}},
		{name: "proto gzip", path: pathTraces, contentType: contentTypeProto, encoding: "gzip", body: gzipped(t, protoBody(t, testTraces(4, 5, "svc"))), status: 200, stored: []uint64{4}},
		{name: "json gzip", path: pathTraces, contentType: contentTypeJSON, encoding: "gzip", body: gzipped(t, jsonBody(t, testTraces(5, 2, "svc"))), status: 200, stored: []uint64{5}},
		{name: "partial success", path: pathTraces, contentType: contentTypeJSON, body: jsonBody(t, mixed), status: 200, inBody: `"rejectedSpans":"3"`, stored: []uint64{91}},
		{name: "no service.name", path: pathTraces, contentType: contentTypeJSON, body: jsonBody(t, noService), status: 200, inBody: "{}", stored: []uint64{92}},
		{name: "empty proto", path: pathTraces, contentType: contentTypeProto, body: nil, status: 200},
		{name: "metrics proto", path: pathMetrics, contentType: contentTypeProto, body: metricsProto(t, testMetrics(4, "svc")), status: 200},
		{name: "metrics json gzip", path: pathMetrics, contentType: contentTypeJSON, encoding: "gzip", body: gzipped(t, metricsJSON(t, testMetrics(3, "svc2"))), status: 200, inBody: "{}"},
		{name: "garbage proto", path: pathTraces, contentType: contentTypeProto, body: []byte("\x0a\xff\xff\xff\x0fnot a message"), status: 400, respType: contentTypeProto, inBody: "malformed record"},
		{name: "garbage json", path: pathTraces, contentType: contentTypeJSON, body: []byte(`{"resourceSpans": [{"scopeSpans": [`), status: 400, respType: contentTypeJSON, inBody: `"code":3`},
		{name: "json as proto", path: pathTraces, contentType: contentTypeProto, body: jsonBody(t, testTraces(6, 1, "svc")), status: 400},
		{name: "bad gzip", path: pathTraces, contentType: contentTypeProto, encoding: "gzip", body: []byte("not gzip"), status: 400, inBody: "gzip"},
		{name: "unknown content type", path: pathTraces, contentType: "text/plain", body: []byte("x"), status: 415, inBody: "application/x-protobuf"},
		{name: "no content type", path: pathTraces, body: []byte("x"), status: 415},
		{name: "unknown encoding", path: pathTraces, contentType: contentTypeProto, encoding: "br", body: []byte("x"), status: 415, inBody: "Content-Encoding"},
		{name: "too large", path: pathTraces, contentType: contentTypeProto, body: big, status: 413},
		{name: "too large decompressed", path: pathTraces, contentType: contentTypeProto, encoding: "gzip", body: gzipped(t, big), status: 413},
		{name: "unknown path", path: "/v1/logs", contentType: contentTypeProto, body: []byte{}, status: 404},
		{name: "get", method: http.MethodGet, path: pathTraces, status: 405},
	}
	c := &http.Client{}
	defer c.CloseIdleConnections()
	want := map[string]int{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, r.addr+tc.path, bytes.NewReader(tc.body))
			require.NoError(t, err)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", body.String())
			if tc.respType != "" {
				require.Equal(t, tc.respType, resp.Header.Get("Content-Type"))
			}
			if tc.inBody != "" {
				require.Contains(t, body.String(), tc.inBody)
			}
			if tc.status == 200 && tc.contentType == contentTypeProto && tc.path == pathTraces {
				resp := ptraceotlp.NewExportResponse()
				require.NoError(t, resp.UnmarshalProto(body.Bytes()))
			}
		})
		for _, id := range tc.stored {
			want[traceHex(id)] = 0
		}
	}
	for id, n := range map[uint64]int{1: 3, 2: 4, 3: 1, 4: 5, 5: 2, 91: 2, 92: 2} {
		want[traceHex(id)] = n
	}

	res := r.stop(t)
	require.Equal(t, want, traceCounts(t, cfg.Out))
	require.Equal(t, int64(19), res.Receiver.Spans)
	require.Equal(t, int64(7), res.Receiver.Samples)
	require.Equal(t, int64(3), res.Receiver.Rejected)
	require.Equal(t, int64(10), res.Receiver.Requests)
	require.Equal(t, int64(11), res.Receiver.Refused)
	require.Equal(t, int64(19), res.Summary.Spans)
	require.Equal(t, int64(7), res.Summary.Samples)
	require.Equal(t, []string{"svc", "svc2"}, res.Summary.MetricServices)
	require.NoDirExists(t, cfg.WorkDir(), "finalizing removes the work directory")

	var samples []cascade.Sample
	require.NoError(t, dataset.ReadSamples(cfg.Out, func(s *cascade.Sample) error {
		c := *s
		c.Service, c.Metric, c.Labels, c.Instance = strings.Clone(s.Service), strings.Clone(s.Metric), strings.Clone(s.Labels), strings.Clone(s.Instance)
		c.Kind = cascade.MetricKind(strings.Clone(string(s.Kind)))
		samples = append(samples, c)
		return nil
	}))
	require.Len(t, samples, 7)
	require.Equal(t, "queue_size", samples[0].Metric)
}

// TestReceiverThrottles fills every slot with a request the disk holds up
// and checks that the next is answered 429 with Retry-After.
func TestReceiverThrottles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	st, err := openStore(dir, 1<<20)
	require.NoError(t, err)
	defer st.close()
	hold := make(chan struct{})
	st.syncHook = func() { <-hold }
	cfg := DefaultConfig().settled().Receiver
	cfg.QueueSize = 2
	rc := newReceiver(&cfg, &ingest.Options{})
	go rc.writeLoop(st, func(string, ...any) {})

	body := protoBody(t, testTraces(1, 1, "svc"))
	results := make(chan int, 2)
	for range 2 {
		go func() {
			results <- serveOne(rc, body).Code
		}()
	}
	// Wait until both hold a slot.
	for len(rc.slots) < 2 {
		runtimeGosched()
	}
	rec := serveOne(rc, body)
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	close(hold)
	require.Equal(t, 200, <-results)
	require.Equal(t, 200, <-results)
	rc.close()
	require.Equal(t, int64(1), rc.snapshot().Throttled)
	require.Equal(t, int64(2), rc.snapshot().Requests)
}

// TestReceiverMemoryBudget holds one request's batch on the disk and
// checks that a second, whose body would pass the memory budget, is
// answered 429 though slots are free, and that the budget comes back.
func TestReceiverMemoryBudget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	st, err := openStore(dir, 1<<20)
	require.NoError(t, err)
	defer st.close()
	hold := make(chan struct{})
	st.syncHook = func() { <-hold }
	cfg := DefaultConfig().settled().Receiver
	body := protoBody(t, testTraces(1, 100, "svc"))
	cfg.QueueBytes = int64(len(body)) * 3 / 2
	cfg.MaxRequestBytes = cfg.QueueBytes
	rc := newReceiver(&cfg, &ingest.Options{})
	go rc.writeLoop(st, func(string, ...any) {})

	first := make(chan int, 1)
	go func() { first <- serveOne(rc, body).Code }()
	// Wait until the first holds its body's bytes.
	for rc.memoryLeft() > cfg.QueueBytes-int64(len(body)) {
		runtimeGosched()
	}
	rec := serveOne(rc, body)
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "memory budget")
	close(hold)
	require.Equal(t, 200, <-first)
	require.Equal(t, 200, serveOne(rc, body).Code, "the budget is given back")
	rc.close()
	require.Equal(t, cfg.QueueBytes, rc.memoryLeft())
}

// TestReceiverStoreFailure answers 503 when the batch cannot be written.
func TestReceiverStoreFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	st, err := openStore(dir, 1<<20)
	require.NoError(t, err)
	defer st.close()
	cfg := DefaultConfig().settled().Receiver
	rc := newReceiver(&cfg, &ingest.Options{})
	// A read-only file stands in for a segment: writing it fails.
	f, err := openReadOnly(filepath.Join(dir, "ro"))
	require.NoError(t, err)
	st.mu.f, st.mu.size = f, segmentHeader
	var logged []string
	done := make(chan struct{})
	go func() {
		rc.writeLoop(st, func(format string, _ ...any) { logged = append(logged, format) })
		close(done)
	}()
	rec := serveOne(rc, protoBody(t, testTraces(1, 1, "svc")))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	// The next batch goes to a new segment and succeeds.
	rec = serveOne(rc, protoBody(t, testTraces(2, 1, "svc")))
	require.Equal(t, http.StatusOK, rec.Code)
	rc.close()
	<-done
	require.Len(t, logged, 2)
	require.Equal(t, int64(1), rc.snapshot().Failed)
}

func TestRunEmptyFinalizesEmptyDataset(t *testing.T) {
	cfg := testConfig(t)
	r := startRun(t, cfg)
	res := r.stop(t)
	require.Equal(t, int64(0), res.Summary.Spans)
	require.FileExists(t, filepath.Join(cfg.Out, dataset.SpansFile))
	require.FileExists(t, filepath.Join(cfg.Out, dataset.MetricsFile))
}

// TestRunAddsToDataset collects twice into one dataset: the second run
// keeps the first one's rows, and a span sent again is stored once.
func TestRunAddsToDataset(t *testing.T) {
	cfg := testConfig(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	send := func(r *running, id uint64) {
		code, _, _, err := post(context.Background(), c, r.addr+pathTraces, contentTypeProto, "", protoBody(t, testTraces(id, 2, "svc")))
		require.NoError(t, err)
		require.Equal(t, 200, code)
	}
	r := startRun(t, cfg)
	send(r, 1)
	r.stop(t)
	r = startRun(t, cfg)
	send(r, 1)
	send(r, 2)
	res := r.stop(t)
	require.Equal(t, map[string]int{traceHex(1): 2, traceHex(2): 2}, traceCounts(t, cfg.Out))
	require.Equal(t, int64(2), res.Summary.DuplicateSpans)
	require.Equal(t, "dataset", string(res.Summary.Inputs[0].Format))
}

// TestRunAddsToDatasetKeepsMessaging records consumer spans with their
// messaging attributes and links, then runs again on the same dataset:
// the spans read back and written again keep every column (the messaging
// ones and the links were left in the reader's buffers, and came back
// as other spans' bytes).
func TestRunAddsToDatasetKeepsMessaging(t *testing.T) {
	cfg := testConfig(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	const n = 3000
	td := testTraces(1, n, "worker")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		sp := spans.At(i)
		sp.SetKind(ptrace.SpanKindConsumer)
		sp.SetParentSpanID(pcommon.SpanID{})
		a := sp.Attributes()
		a.PutStr("messaging.system", "rabbitmq")
		a.PutStr("messaging.operation.type", "process")
		a.PutStr("messaging.destination.name", fmt.Sprintf("queue-%d", i%7))
		a.PutStr("messaging.consumer.group.name", fmt.Sprintf("group-%d", i%5))
		a.PutStr("messaging.message.id", fmt.Sprintf("message-%06d", i))
		l := sp.Links().AppendEmpty()
		l.SetTraceID(traceID(uint64(1000 + i)))
		l.SetSpanID(spanID(uint64(2000 + i)))
	}
	r := startRun(t, cfg)
	code, _, _, err := post(context.Background(), c, r.addr+pathTraces, contentTypeProto, "", protoBody(t, td))
	require.NoError(t, err)
	require.Equal(t, 200, code)
	r.stop(t)
	r = startRun(t, cfg)
	code, _, _, err = post(context.Background(), c, r.addr+pathTraces, contentTypeProto, "", protoBody(t, testTraces(2, 2, "svc")))
	require.NoError(t, err)
	require.Equal(t, 200, code)
	r.stop(t)

	index := map[string]int{}
	for i := range n {
		id := spanID(uint64(i + 1))
		index[hex.EncodeToString(id[:])] = i
	}
	seen := 0
	require.NoError(t, dataset.ReadSpans(cfg.Out, func(s *cascade.Span) error {
		if s.Service != "worker" {
			return nil
		}
		i, ok := index[s.SpanID]
		require.True(t, ok, s.SpanID)
		require.Equal(t, "rabbitmq", s.MessagingSystem)
		require.Equal(t, "process", s.MessagingOperation)
		require.Equal(t, fmt.Sprintf("queue-%d", i%7), s.Destination, "span %d", i)
		require.Equal(t, fmt.Sprintf("group-%d", i%5), s.ConsumerGroup, "span %d", i)
		require.Equal(t, fmt.Sprintf("message-%06d", i), s.MessageID, "span %d", i)
		require.Len(t, s.Links, 1)
		tid, sid := traceID(uint64(1000+i)), spanID(uint64(2000+i))
		require.Equal(t, cascade.SpanLink{TraceID: hex.EncodeToString(tid[:]), SpanID: hex.EncodeToString(sid[:])}, s.Links[0], "span %d", i)
		seen++
		return nil
	}))
	require.Equal(t, n, seen)
}
