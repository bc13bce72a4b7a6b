package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// TestSharedZipkinSpans ingests one trace as Brave reports it to Zipkin
// with B3 propagation: frontend calls backend, backend's server span
// shares the client's id and parent ("shared": true), and backend's own
// call to the database names the shared id as its parent. The server
// span is kept with an id of its own under the client, and the database
// call moves under it; a true repeat of a span is still dropped. The
// spans are given in both orders, the shared server first and last.
func TestSharedZipkinSpans(t *testing.T) {
	const (
		root   = `{"traceId":"463ac35c9f6413ad","id":"463ac35c9f6413ad","kind":"SERVER","name":"get /","timestamp":1700000000000000,"duration":20000,"localEndpoint":{"serviceName":"frontend","ipv4":"10.0.0.1"}}`
		client = `{"traceId":"463ac35c9f6413ad","parentId":"463ac35c9f6413ad","id":"72485a3953bb6124","kind":"CLIENT","name":"get","timestamp":1700000000001000,"duration":15000,"localEndpoint":{"serviceName":"frontend","ipv4":"10.0.0.1"},"tags":{"http.method":"GET","http.path":"/api"}}`
		server = `{"traceId":"463ac35c9f6413ad","parentId":"463ac35c9f6413ad","id":"72485a3953bb6124","kind":"SERVER","name":"get /api","timestamp":1700000000002000,"duration":13000,"localEndpoint":{"serviceName":"backend","ipv4":"10.0.0.2"},"remoteEndpoint":{"ipv4":"10.0.0.1","port":53412},"tags":{"http.method":"GET","http.path":"/api"},"shared":true}`
		query  = `{"traceId":"463ac35c9f6413ad","parentId":"72485a3953bb6124","id":"e457b5a2e4d86bd1","kind":"CLIENT","name":"query","timestamp":1700000000003000,"duration":8000,"localEndpoint":{"serviceName":"backend","ipv4":"10.0.0.2"},"remoteEndpoint":{"serviceName":"mysql"}}`
	)
	tests := []struct {
		name  string
		spans []string
		dups  int64
	}{
		{"server first", []string{server, query, root, client}, 0},
		{"server last", []string{root, client, query, server}, 0},
		{"a repeat too", []string{root, client, server, query, server}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "zipkin.json")
			doc := "["
			for i, s := range tc.spans {
				if i > 0 {
					doc += ","
				}
				doc += s
			}
			require.NoError(t, os.WriteFile(file, []byte(doc+"]"), 0o644))
			cfg := DefaultConfig()
			cfg.Traces = []string{file}
			cfg.Out = filepath.Join(dir, "dataset")
			sum, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			require.EqualValues(t, 1, sum.SharedServerSpans)
			require.EqualValues(t, tc.dups, sum.DuplicateSpans)
			require.EqualValues(t, 4, sum.Spans)
			require.Zero(t, sum.OrphanSpans)
			got := map[string][2]string{} // service/kind -> id, parent
			require.NoError(t, dataset.ReadSpans(cfg.Out, func(s *cascade.Span) error {
				got[s.Service+"/"+string(s.Kind)] = [2]string{s.SpanID, s.ParentSpanID}
				return nil
			}))
			require.Equal(t, map[string][2]string{
				"frontend/server": {"463ac35c9f6413ad", ""},
				"frontend/client": {"72485a3953bb6124", "463ac35c9f6413ad"},
				"backend/server":  {"72485a3953bb6124" + SharedSuffix, "72485a3953bb6124"},
				"backend/client":  {"e457b5a2e4d86bd1", "72485a3953bb6124" + SharedSuffix},
			}, got)
		})
	}
}

// FuzzTraceRows runs the per-trace pass (repeats dropped, shared pairs
// separated, cycles cut, error dispatches marked) on traces made from the
// fuzzer's bytes: four bytes a span (its id, its parent, its kind and
// service) from a small alphabet, so that repeats, shared pairs, cycles
// and orphans are common. It must not panic, and what it keeps must have
// one span per id, each parent one of them or missing.
func FuzzTraceRows(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 1, 1, 0, 2, 1, 2, 1, 3, 2, 1, 1})
	f.Add([]byte{1, 1, 2, 0, 1, 1, 1, 1, 1, 1, 2, 2})
	kinds := []cascade.SpanKind{cascade.KindServer, cascade.KindClient, cascade.KindProducer, cascade.KindConsumer, cascade.KindInternal, ""}
	ids := []string{"", "a", "b", "c", "d", "a" + SharedSuffix, "e"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rows []cascade.Span
		for i := 0; i+3 < len(data) && len(rows) < 64; i += 4 {
			id := ids[int(data[i])%len(ids)]
			if id == "" {
				id = "z"
			}
			rows = append(rows, cascade.Span{
				TraceID: "t", SpanID: id, ParentSpanID: ids[int(data[i+1])%len(ids)],
				Kind: kinds[int(data[i+2])%len(kinds)], Service: []string{"s1", "s2", "s3"}[int(data[i+3])%3],
				Operation: []string{"GET", "BasicErrorController.error"}[int(data[i+3]>>4)%2],
				Start:     int64(i), Duration: 10,
			})
		}
		st := newSpanStats()
		kept := st.trace(rows)
		seen := map[string]bool{}
		for _, s := range kept {
			require.False(t, seen[s.SpanID], "span id %q kept twice", s.SpanID)
			seen[s.SpanID] = true
		}
		require.LessOrEqual(t, len(kept), len(rows))
	})
}
