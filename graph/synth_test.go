package graph_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// synth generates a deterministic trace set of a small shop, about 28
// spans a trace:
//
//	gateway /api (entry, 3 replicas)
//	 ├─ client → items /items ─ internal load ─ 1–5 sequential client
//	 │   spans to the uninstrumented "postgres" (virtual node)
//	 ├─ 6 client calls → pricing /price, at most 3 at once; each calls
//	 │   the "redis" peer once, 10% fail and are retried after 1 ms
//	 └─ producer → audit consumer (asynchronous)
//
// Traces start at rate per second; spans come sorted by trace id and then
// start, as in a dataset.
type synth struct {
	rng   *rand.Rand
	t     int64
	rate  float64
	spans []cascade.Span
	next  uint64
}

func newSynth(seed uint64, rate float64) *synth {
	return &synth{rng: rand.New(rand.NewPCG(seed, 7)), t: 1_700_000_000_000_000_000, rate: rate}
}

func (g *synth) id() string {
	g.next++
	return fmt.Sprintf("%016x", g.next*0x9e3779b97f4a7c15)
}

func (g *synth) ms(mean float64) int64 {
	return int64((mean/2 + g.rng.ExpFloat64()*mean/2) * 1e6)
}

func (g *synth) span(trace, parent, svc, op string, kind cascade.SpanKind, start, dur int64) *cascade.Span {
	g.spans = append(g.spans, cascade.Span{
		TraceID: trace, SpanID: g.id(), ParentSpanID: parent, Service: svc,
		Instance: fmt.Sprintf("%s-%d", svc, g.rng.IntN(3)), Operation: op, Kind: kind,
		Start: start, Duration: dur, Status: cascade.StatusUnset,
	})
	return &g.spans[len(g.spans)-1]
}

// trace appends one trace.
func (g *synth) trace() {
	g.t += int64(g.rng.ExpFloat64() / g.rate * 1e9)
	tid := fmt.Sprintf("%016x%016x", g.rng.Uint64(), g.rng.Uint64())
	first := len(g.spans)
	root := g.span(tid, "", "gateway", "/api", cascade.KindServer, g.t, 0)
	rootID := root.SpanID
	now := g.t + g.ms(0.2)

	// items, with sequential database calls
	cl := g.span(tid, rootID, "gateway", "GET /items", cascade.KindClient, now, 0)
	clIdx, clID := len(g.spans)-1, cl.SpanID
	srv := g.span(tid, clID, "items", "/items", cascade.KindServer, now+g.ms(0.1), 0)
	srvIdx, srvID := len(g.spans)-1, srv.SpanID
	in := g.span(tid, srvID, "items", "load", cascade.KindInternal, g.spans[srvIdx].Start+g.ms(0.1), 0)
	inIdx, inID := len(g.spans)-1, in.SpanID
	t := g.spans[inIdx].Start + g.ms(0.1)
	for range 1 + g.rng.IntN(5) {
		d := g.ms(2)
		db := g.span(tid, inID, "items", "SELECT items", cascade.KindClient, t, d)
		db.Peer = "postgres"
		t += d + g.ms(0.05)
	}
	g.spans[inIdx].Duration = t - g.spans[inIdx].Start
	g.spans[srvIdx].Duration = t + g.ms(0.1) - g.spans[srvIdx].Start
	g.spans[clIdx].Duration = g.spans[srvIdx].Start + g.spans[srvIdx].Duration + g.ms(0.1) - g.spans[clIdx].Start
	now = g.spans[clIdx].Start + g.spans[clIdx].Duration

	// pricing: 6 calls through 3 workers
	var workers [3]int64
	for i := range workers {
		workers[i] = now
	}
	end := now
	for range 6 {
		w := 0
		for i := range workers {
			if workers[i] < workers[w] {
				w = i
			}
		}
		st := workers[w]
		c := g.span(tid, rootID, "gateway", "GET /price", cascade.KindClient, st, 0)
		cIdx, cID := len(g.spans)-1, c.SpanID
		s := g.span(tid, cID, "pricing", "/price", cascade.KindServer, st+g.ms(0.1), 0)
		sIdx, sID := len(g.spans)-1, s.SpanID
		tt := g.spans[sIdx].Start + g.ms(0.5)
		for attempt := 0; attempt < 3; attempt++ {
			// The client's deadline is 5 ms: an attempt that runs into
			// it fails then, with the client's own "i/o timeout".
			d := min(g.ms(1), 5e6)
			r := g.span(tid, sID, "pricing", "GET", cascade.KindClient, tt, d)
			r.Peer = "redis"
			if g.rng.Float64() >= 0.1 {
				tt += d
				break
			}
			r.Duration = 5e6
			tt += r.Duration
			r.Status, r.ErrorType = cascade.StatusError, "redis: i/o timeout"
			tt += 1e6
		}
		g.spans[sIdx].Duration = tt + g.ms(0.5) - g.spans[sIdx].Start
		g.spans[cIdx].Duration = g.spans[sIdx].Start + g.spans[sIdx].Duration + g.ms(0.1) - st
		workers[w] = st + g.spans[cIdx].Duration
		end = max(end, workers[w])
	}

	// audit, asynchronous
	p := g.span(tid, rootID, "gateway", "publish audit", cascade.KindProducer, end, g.ms(0.2))
	p.Peer = "audit-queue"
	g.span(tid, p.SpanID, "audit", "consume audit", cascade.KindConsumer, end+g.ms(5), g.ms(3))
	g.spans[first].Duration = end + g.ms(0.5) - g.spans[first].Start
}

// generate returns at least n spans, sorted by trace id and start.
func (g *synth) generate(n int) []cascade.Span {
	for len(g.spans) < n {
		g.trace()
	}
	s := g.spans
	slices.SortStableFunc(s, func(a, b cascade.Span) int {
		if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
			return c
		}
		return cmp.Compare(a.Start, b.Start)
	})
	return s
}

// writeDataset writes spans as a dataset's spans.parquet the way ingest
// stores it (zstd, row groups of 2^18 rows, sorted by trace and start).
func writeDataset(tb testing.TB, dir string, spans []cascade.Span) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, dataset.SpansFile))
	require.NoError(tb, err)
	w := parquet.NewGenericWriter[cascade.Span](f,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(1<<18),
		parquet.SortingWriterConfig(parquet.SortingColumns(parquet.Ascending("trace_id"), parquet.Ascending("start"))),
	)
	for lo := 0; lo < len(spans); lo += 4096 {
		_, err := w.Write(spans[lo:min(lo+4096, len(spans))])
		require.NoError(tb, err)
	}
	require.NoError(tb, w.Close())
	require.NoError(tb, f.Close())
}
