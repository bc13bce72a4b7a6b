package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cascade/ingest"
)

// ReceiverStats counts what the OTLP/HTTP endpoint answered.
type ReceiverStats struct {
	// Requests counts requests acknowledged (200), and Spans and Samples
	// the rows they carried, which are all durable in the segments.
	Requests int64 `json:"requests"`
	Spans    int64 `json:"spans"`
	Samples  int64 `json:"samples"`
	// Rejected counts spans and points dropped as invalid from
	// acknowledged requests (reported to the client as partial success).
	Rejected int64 `json:"rejected"`
	// Throttled counts requests answered 429 because the queue was full.
	Throttled int64 `json:"throttled"`
	// Refused counts requests answered with another 4xx: bad payload,
	// unknown content type, too large, wrong path or method.
	Refused int64 `json:"refused"`
	// Failed counts requests answered 503 because their batch could not
	// be written.
	Failed int64 `json:"failed"`
}

// receiver is the OTLP/HTTP handler. A request takes one of QueueSize
// slots before its body is read, or is answered 429 at once, and charges
// its body's bytes to a budget of QueueBytes as it reads them, or is
// answered 429 when the budget runs out; it keeps both until its batch is
// durable and it is answered. Memory is therefore bounded by the queue,
// however many clients push.
type receiver struct {
	cfg   *ReceiverConfig
	opts  *ingest.Options
	slots chan struct{}
	queue chan *pending // to the writer; as long as slots, so never full
	// memory bounds the body bytes the admitted requests hold.
	memory *memBudget
	// retryAfter is the Retry-After header value, in whole seconds.
	retryAfter string

	mu struct {
		sync.Mutex
		closed   bool
		admitted sync.WaitGroup
	}
	stats struct {
		requests, spans, samples, rejected atomic.Int64
		throttled, refused, failed         atomic.Int64
	}
}

// pending is one decoded batch on its way to the disk.
type pending struct {
	payload []byte
	done    chan error // receives the write's outcome, once
}

func newReceiver(cfg *ReceiverConfig, opts *ingest.Options) *receiver {
	secs := int((cfg.RetryAfter + time.Second - 1) / time.Second)
	return &receiver{
		cfg:        cfg,
		opts:       opts,
		slots:      make(chan struct{}, cfg.QueueSize),
		queue:      make(chan *pending, cfg.QueueSize),
		memory:     newMemBudget(cfg.QueueBytes),
		retryAfter: strconv.Itoa(max(secs, 1)),
	}
}

// admit takes a slot, or reports that none is free (or that the receiver
// is closing).
func (rc *receiver) admit() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.mu.closed {
		return false
	}
	select {
	case rc.slots <- struct{}{}:
		rc.mu.admitted.Add(1)
		return true
	default:
		return false
	}
}

func (rc *receiver) release() {
	<-rc.slots
	rc.mu.admitted.Done()
}

// close stops admitting, waits for every admitted request to be answered,
// and closes the writer's queue.
func (rc *receiver) close() {
	rc.mu.Lock()
	rc.mu.closed = true
	rc.mu.Unlock()
	rc.mu.admitted.Wait()
	close(rc.queue)
}

// ServeHTTP answers POST /v1/traces and POST /v1/metrics.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sig signal
	switch r.URL.Path {
	case pathTraces:
		sig = signalTraces
	case pathMetrics:
		sig = signalMetrics
	default:
		rc.stats.refused.Add(1)
		http.Error(w, "404 page not found: OTLP/HTTP is served at "+pathTraces+" and "+pathMetrics, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		rc.stats.refused.Add(1)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "405 method not allowed: use POST", http.StatusMethodNotAllowed)
		return
	}
	enc, ok := parseContentType(r.Header.Get("Content-Type"))
	if !ok {
		rc.stats.refused.Add(1)
		http.Error(w, fmt.Sprintf("415 unsupported media type %q: want %s or %s", r.Header.Get("Content-Type"), contentTypeProto, contentTypeJSON), http.StatusUnsupportedMediaType)
		return
	}
	gzipped, ok := contentEncoding(r.Header.Get("Content-Encoding"))
	if !ok {
		rc.stats.refused.Add(1)
		w.Header().Set("Accept-Encoding", "gzip")
		rc.fail(w, enc, http.StatusUnsupportedMediaType, codeInvalidArgument, fmt.Sprintf("unsupported Content-Encoding %q: want gzip or none", r.Header.Get("Content-Encoding")))
		return
	}
	if r.ContentLength > rc.cfg.MaxRequestBytes {
		rc.stats.refused.Add(1)
		rc.tooLarge(w, enc)
		return
	}
	if !rc.admit() {
		rc.stats.throttled.Add(1)
		w.Header().Set("Retry-After", rc.retryAfter)
		rc.fail(w, enc, http.StatusTooManyRequests, codeResourceExhausted, "queue full: retry later")
		return
	}
	defer rc.release()

	body := &chargedBuffer{budget: rc.memory}
	defer body.release()
	err := readBody(r.Body, gzipped, rc.cfg.MaxRequestBytes, body)
	switch {
	case errors.Is(err, errNoMemory):
		rc.stats.throttled.Add(1)
		w.Header().Set("Retry-After", rc.retryAfter)
		rc.fail(w, enc, http.StatusTooManyRequests, codeResourceExhausted, "queue full (memory budget): retry later")
		return
	case errors.Is(err, errTooLarge):
		rc.stats.refused.Add(1)
		rc.tooLarge(w, enc)
		return
	case err != nil:
		rc.stats.refused.Add(1)
		rc.fail(w, enc, http.StatusBadRequest, codeInvalidArgument, "read body: "+err.Error())
		return
	}
	d, err := decodeBody(sig, enc, body.buf.Bytes(), rc.opts)
	body.buf = bytes.Buffer{} // the budget stays held until the answer
	if err != nil {
		rc.stats.refused.Add(1)
		rc.fail(w, enc, http.StatusBadRequest, codeInvalidArgument, err.Error())
		return
	}
	if d.batch.rows() > 0 {
		p := &pending{payload: encodeRecord(nil, &d.batch), done: make(chan error, 1)}
		spans, samples := int64(len(d.batch.spans)), int64(len(d.batch.samples))
		d.batch = batch{}
		rc.queue <- p
		if err := <-p.done; err != nil {
			rc.stats.failed.Add(1)
			w.Header().Set("Retry-After", rc.retryAfter)
			rc.fail(w, enc, http.StatusServiceUnavailable, codeUnavailable, "not stored: "+err.Error())
			return
		}
		rc.stats.spans.Add(spans)
		rc.stats.samples.Add(samples)
	}
	rc.stats.requests.Add(1)
	rc.stats.rejected.Add(d.rejected)
	resp, err := exportResponse(sig, enc, d.rejected, d.rejectMsg)
	if err != nil {
		// The batch is stored; the answer cannot be encoded, which pdata
		// never fails to do for these messages.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", enc.contentType())
	w.WriteHeader(http.StatusOK)
	w.Write(resp)
}

func (rc *receiver) tooLarge(w http.ResponseWriter, enc encoding) {
	rc.fail(w, enc, http.StatusRequestEntityTooLarge, codeInvalidArgument,
		fmt.Sprintf("request body over %d bytes (as sent or decompressed)", rc.cfg.MaxRequestBytes))
}

// fail answers with an HTTP error status and a google.rpc.Status body.
func (rc *receiver) fail(w http.ResponseWriter, enc encoding, status int, code int32, msg string) {
	w.Header().Set("Content-Type", enc.contentType())
	w.WriteHeader(status)
	w.Write(statusBody(enc, code, msg))
}

// writeLoop appends queued batches to the store until the queue is closed.
// It takes every batch waiting at once and writes them with one fsync (a
// group commit), then answers each.
func (rc *receiver) writeLoop(st *store, log func(string, ...any)) {
	var (
		group    []*pending
		payloads [][]byte
		failing  bool
	)
	for p := range rc.queue {
		group = append(group[:0], p)
	more:
		for len(group) < cap(rc.queue) {
			select {
			case q, ok := <-rc.queue:
				if !ok {
					break more
				}
				group = append(group, q)
			default:
				break more
			}
		}
		payloads = payloads[:0]
		for _, g := range group {
			payloads = append(payloads, g.payload)
		}
		err := st.appendRecords(payloads...)
		switch {
		case err != nil && !failing:
			log("cannot store: %v (answering 503 until it can)", err)
			failing = true
		case err == nil && failing:
			log("storing again")
			failing = false
		}
		for _, g := range group {
			g.done <- err
		}
		clear(group)
		clear(payloads)
	}
}

// stats returns the counts so far.
func (rc *receiver) snapshot() ReceiverStats {
	return ReceiverStats{
		Requests:  rc.stats.requests.Load(),
		Spans:     rc.stats.spans.Load(),
		Samples:   rc.stats.samples.Load(),
		Rejected:  rc.stats.rejected.Load(),
		Throttled: rc.stats.throttled.Load(),
		Refused:   rc.stats.refused.Load(),
		Failed:    rc.stats.failed.Load(),
	}
}

// serve runs the endpoint on ln until ctx is done, then drains: it stops
// listening, lets requests in flight finish (up to DrainTimeout, then
// closes their connections), and writes every admitted batch before it
// returns. Batches are appended to st.
func serve(ctx context.Context, cfg *ReceiverConfig, opts *ingest.Options, ln net.Listener, st *store, log func(string, ...any)) (ReceiverStats, error) {
	rc := newReceiver(cfg, opts)
	srv := &http.Server{
		Handler:           rc,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		rc.writeLoop(st, log)
		return nil
	})
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", ln.Addr(), err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
		defer cancel()
		err := srv.Shutdown(dctx)
		if err != nil {
			log("drain: %v after %s; closing the remaining connections", err, cfg.DrainTimeout)
			srv.Close()
		}
		rc.close()
		return nil
	})
	err := g.Wait()
	return rc.snapshot(), err
}
