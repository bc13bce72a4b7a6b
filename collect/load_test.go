package collect

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"cascade/ingest"
)

// heapSampler records the peak of the live heap while it runs. It forces
// a collection before each reading, so that a reading is the heap in use at
// that moment rather than at the end of the last (perhaps long past) cycle.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

const metricHeapLive = "/gc/heap/live:bytes"

func heapLive() uint64 {
	s := []metrics.Sample{{Name: metricHeapLive}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.GC()
			h.peak = max(h.peak, heapLive())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) finish() uint64 {
	close(h.stop)
	<-h.done
	return h.peak
}

// loadBody is a request of spansPerRequest spans of one trace, each with a
// large attribute, so that the body is large and its rows small. The trace
// id is at the offsets returned, to be patched per request.
func loadBody(t testing.TB, spansPerRequest int) ([]byte, []int) {
	td := testTraces(0xfeedfacecafe, spansPerRequest, "load")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		spans.At(i).Attributes().PutStr("http.url", strings.Repeat("u", 800))
	}
	body := protoBody(t, td)
	tid := traceID(0xfeedfacecafe)
	var offs []int
	for i := 0; ; {
		j := bytes.Index(body[i:], tid[:])
		if j < 0 {
			break
		}
		offs = append(offs, i+j)
		i += j + len(tid)
	}
	require.Len(t, offs, spansPerRequest)
	return body, offs
}

// TestReceiverOverload pushes about ten times what a slowed-down disk can
// take, from many concurrent clients on loopback, for a bounded time. It
// checks that every acknowledged span is in the final dataset, that the
// overflow was answered 429, and that the live heap stayed within a bound
// set by the queue size, not by the load.
func TestReceiverOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	const (
		clients         = 96
		queueSize       = 4
		spansPerRequest = 200
		loadFor         = 2 * time.Second
		maxRequest      = 512 << 10
		syncDelay       = 10 * time.Millisecond
		pause           = 40 * time.Millisecond // after a 429
	)
	dir := t.TempDir()
	out := filepath.Join(dir, "ds")
	st, err := openStore(out+".collect", 64<<20)
	require.NoError(t, err)
	var syncs atomic.Int64
	st.syncHook = func() { syncs.Add(1); time.Sleep(syncDelay) }
	rcfg := DefaultConfig().settled().Receiver
	rcfg.QueueSize = queueSize
	rcfg.MaxRequestBytes = maxRequest

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String() + pathTraces

	// Every client's body is built before the baseline: during the load
	// clients only patch a trace id, so the heap growth is the server's.
	template, offs := loadBody(t, spansPerRequest)
	require.Less(t, len(template), maxRequest)
	bodies := make([][]byte, clients)
	for i := range bodies {
		bodies[i] = bytes.Clone(template)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	ctx, stopServer := context.WithCancel(context.Background())
	defer stopServer()
	var stats ReceiverStats
	served := make(chan error, 1)
	go func() {
		var err error
		stats, err = serve(ctx, &rcfg, &ingest.Options{}, ln, st, t.Logf)
		served <- err
	}()

	// The bookkeeping is sized before the baseline, so it does not grow.
	var (
		next               atomic.Uint64
		mu                 sync.Mutex
		acked              = make(map[uint64]bool, 1<<15)
		sent               = make(map[uint64]bool, 1<<15)
		attempts, throttle atomic.Int64
	)
	// Open every client's connection first (an empty request is
	// answered without touching the disk), so that the baseline holds
	// the connections' fixed cost and the growth is the load's.
	var warm errgroup.Group
	for range clients {
		warm.Go(func() error {
			for {
				code, _, _, err := post(context.Background(), client, url, contentTypeProto, "", nil)
				switch {
				case err != nil:
					return err
				case code == http.StatusOK:
					return nil
				case code != http.StatusTooManyRequests:
					return fmt.Errorf("warm-up: status %d", code)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	require.NoError(t, warm.Wait())
	runtime.GC()
	runtime.GC()
	base := heapLive()
	sampler := startHeapSampler()

	deadline := time.Now().Add(loadFor)
	var g errgroup.Group
	for c := range clients {
		g.Go(func() error {
			body := bodies[c]
			for time.Now().Before(deadline) {
				id := next.Add(1)
				tid := traceID(id)
				for _, o := range offs {
					copy(body[o:], tid[:])
				}
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				attempts.Add(1)
				code, hdr, _, err := post(context.Background(), client, url, contentTypeProto, "", body)
				switch {
				case err != nil:
					return err
				case code == http.StatusOK:
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				case code == http.StatusTooManyRequests:
					throttle.Add(1)
					if hdr.Get("Retry-After") == "" {
						t.Error("429 without Retry-After")
					}
					time.Sleep(pause) // a client that does not honour Retry-After
				default:
					t.Errorf("status %d", code)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	peak := sampler.finish()
	stopServer()
	require.NoError(t, <-served)
	require.NoError(t, st.finish())
	fin, err := finalize(context.Background(), out, out+".collect", 0, t.Logf)
	require.NoError(t, err)
	require.NoError(t, st.close())

	// Acknowledged == stored: every acknowledged request's spans are all
	// there; nothing stored was never sent.
	counts := traceCounts(t, out)
	for id := range acked {
		require.Equal(t, spansPerRequest, counts[traceHex(id)], "acknowledged trace %d", id)
	}
	sentHex := map[string]bool{}
	for id := range sent {
		sentHex[traceHex(id)] = true
	}
	for h, n := range counts {
		require.True(t, sentHex[h], "stored trace %s was never sent", h)
		require.Equal(t, spansPerRequest, n)
	}
	require.Equal(t, int64(len(acked)+clients), stats.Requests, "acknowledged requests, with the warm-up's")
	require.Equal(t, len(acked)*spansPerRequest, int(fin.sum.Spans))

	offered := attempts.Load()
	ratio := float64(offered) / float64(len(acked))
	growth := int64(peak) - int64(base)
	// A request admitted holds its body (in a buffer up to twice its
	// size), the pdata element being decoded, its rows and their
	// encoding: under 8 bodies at its peak (about 5 measured). 4 MiB more
	// stand for what does not scale with the queue (the writer's frame,
	// requests being answered 429, measurement noise). Without the queue
	// bound, the growth is about the clients' count times a request's
	// cost: 25 to 30 MiB here, three times this bound.
	bound := int64(queueSize*8*len(template) + 4<<20)
	t.Logf("%d clients, queue %d, fsync +%s: offered %d requests, acknowledged %d (%d spans), throttled %d: %.1fx overload; %d group commits; live heap %d KiB at start, peak %d KiB (+%d KiB, bound +%d KiB)",
		clients, queueSize, syncDelay, offered, len(acked), len(acked)*spansPerRequest, throttle.Load(), ratio, syncs.Load(), base>>10, peak>>10, growth>>10, bound>>10)
	require.GreaterOrEqual(t, stats.Throttled, throttle.Load(), "the load's 429s, with the warm-up's")
	require.Greater(t, len(acked), 10, "the endpoint must make progress under overload")
	require.GreaterOrEqual(t, ratio, 5.0, "the test must overload the endpoint")
	require.LessOrEqual(t, growth, bound, "live heap grew with the load, not with the queue")
}
