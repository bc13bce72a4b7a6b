package collect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"cascade"
	"cascade/dataset"
)

// testTraces builds one trace of n spans (a root and n-1 children) of
// service svc, with trace id derived from id. Times start at base.
func testTraces(id uint64, n int, svc string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", svc)
	ss := rs.ScopeSpans().AppendEmpty()
	tid := traceID(id)
	base := pcommon.Timestamp(1_700_000_000_000_000_000 + id*1000)
	for i := range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(spanID(uint64(i + 1)))
		if i > 0 {
			sp.SetParentSpanID(spanID(1))
			sp.SetKind(ptrace.SpanKindClient)
		} else {
			sp.SetKind(ptrace.SpanKindServer)
		}
		sp.SetName("op")
		sp.SetStartTimestamp(base + pcommon.Timestamp(i))
		sp.SetEndTimestamp(base + pcommon.Timestamp(i) + 500)
	}
	return td
}

func traceID(id uint64) pcommon.TraceID {
	var t pcommon.TraceID
	t[0] = 0xca
	binary.BigEndian.PutUint64(t[8:], id)
	return t
}

func spanID(id uint64) pcommon.SpanID {
	var s pcommon.SpanID
	binary.BigEndian.PutUint64(s[:], id)
	s[0] |= 0x10
	return s
}

// traceHex is the dataset's trace_id of testTraces(id, ...).
func traceHex(id uint64) string {
	t := traceID(id)
	return hex.EncodeToString(t[:])
}

func protoBody(t testing.TB, td ptrace.Traces) []byte {
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return b
}

func jsonBody(t testing.TB, td ptrace.Traces) []byte {
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	require.NoError(t, err)
	return b
}

// testMetrics builds a gauge of n points of service svc.
func testMetrics(n int, svc string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", svc)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("queue_size")
	g := m.SetEmptyGauge()
	for i := range n {
		dp := g.DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(i)*1_000_000_000))
		dp.SetDoubleValue(float64(i))
	}
	return md
}

func metricsProto(t testing.TB, md pmetric.Metrics) []byte {
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	require.NoError(t, err)
	return b
}

func metricsJSON(t testing.TB, md pmetric.Metrics) []byte {
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalJSON()
	require.NoError(t, err)
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// post sends one request and returns the status, headers and body.
func post(ctx context.Context, c *http.Client, url, contentType, encoding string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// running is a Run in progress on a goroutine.
type running struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
	res    *Result
	err    error
}

// startRun starts Run with cfg listening on a free loopback port and
// returns once it listens.
func startRun(t testing.TB, cfg Config) *running {
	t.Helper()
	cfg.Receiver.Listen = "127.0.0.1:0"
	ready := make(chan net.Addr, 1)
	cfg.Receiver.Ready = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = Run(ctx, cfg)
	}()
	select {
	case a := <-ready:
		r.addr = "http://" + a.String()
	case <-r.done:
		t.Fatalf("Run ended before listening: %v", r.err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("Run did not listen within 10s")
	}
	t.Cleanup(func() { r.cancel(); <-r.done })
	return r
}

// stop ends the run (as SIGTERM would) and returns its outcome.
func (r *running) stop(t testing.TB) *Result {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not stop within 60s")
	}
	require.NoError(t, r.err)
	return r.res
}

// spanKey identifies a span in a dataset.
type spanKey struct{ trace, span string }

// readSpans reads a dataset's spans, keyed, failing on a repeated key.
func readSpans(t testing.TB, dir string) map[spanKey]cascade.Span {
	t.Helper()
	out := map[spanKey]cascade.Span{}
	err := dataset.ReadSpans(dir, func(s *cascade.Span) error {
		c := *s
		c.TraceID, c.SpanID, c.ParentSpanID = strings.Clone(s.TraceID), strings.Clone(s.SpanID), strings.Clone(s.ParentSpanID)
		c.Service, c.Operation = strings.Clone(s.Service), strings.Clone(s.Operation)
		k := spanKey{c.TraceID, c.SpanID}
		if _, dup := out[k]; dup {
			t.Errorf("span %v stored twice", k)
		}
		out[k] = c
		return nil
	})
	require.NoError(t, err)
	return out
}

// traceCounts counts a dataset's spans per trace id.
func traceCounts(t testing.TB, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := range readSpans(t, dir) {
		out[k.trace]++
	}
	return out
}

// testConfig is a config writing to a fresh dataset in a temporary
// directory.
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Out = filepath.Join(t.TempDir(), "ds")
	return cfg
}
