package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cascade"
	"cascade/ingest"
)

// PullStats counts what was read from Prometheus and Jaeger.
type PullStats struct {
	// Requests counts HTTP requests that got an answer that was used, and
	// Retries the attempts that were repeated.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// Spans and Samples count the rows read (before deduplication).
	Spans   int64 `json:"spans"`
	Samples int64 `json:"samples"`
	// Skipped counts invalid records left out.
	Skipped int64 `json:"skipped"`
	// Truncated counts Jaeger windows that still returned --limit traces
	// at the smallest window: traces in them may be missing.
	Truncated int64 `json:"truncated"`
}

// fetcher gets URLs with a timeout per attempt and retries with
// exponential backoff and jitter when the server is unreachable, times
// out, or answers 429 or 5xx.
type fetcher struct {
	cfg    *PullConfig
	client *http.Client
	stats  *PullStats
	log    func(string, ...any)
}

// newFetcher returns a fetcher with its own transport; close releases its
// connections.
func newFetcher(cfg *PullConfig, stats *PullStats, log func(string, ...any)) *fetcher {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: min(cfg.Timeout, 10*time.Second)}).DialContext,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	return &fetcher{cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.Timeout}, stats: stats, log: log}
}

func (f *fetcher) close() { f.client.CloseIdleConnections() }

// answer is a final (not retried) HTTP answer.
type answer struct {
	status int
	body   []byte
}

// FetchError is a request that did not get a usable answer: the server
// was unreachable, timed out or kept failing through every attempt, or its
// answer was refused.
type FetchError struct {
	// Source is "prometheus" or "jaeger"; URL is the request's URL.
	Source, URL string
	// Attempts is how many attempts were made.
	Attempts int
	// Status is the last HTTP status, 0 when there was none.
	Status int
	// Err is the last failure.
	Err error
}

// Error names the source, the URL and the last failure.
func (e *FetchError) Error() string {
	what := "failed"
	switch {
	case e.Status == 0 && isTimeout(e.Err):
		what = "timed out"
	case e.Status == 0:
		what = "unreachable"
	}
	if e.Attempts > 1 {
		what += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return fmt.Sprintf("%s %s: %s: %v", e.Source, e.URL, what, e.Err)
}

// Unwrap returns the last failure.
func (e *FetchError) Unwrap() error { return e.Err }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// get fetches u. A 2xx answer, or a 4xx other than 429, is returned for
// the caller to judge; the rest is retried up to Attempts times and then
// returned as a *FetchError.
func (f *fetcher) get(ctx context.Context, source, u string) (*answer, error) {
	var (
		last       error
		lastStatus int
		retryAfter time.Duration
	)
	for attempt := 1; attempt <= f.cfg.Attempts; attempt++ {
		if attempt > 1 {
			f.stats.Retries++
			d := f.backoff(attempt-1, retryAfter)
			f.log("%s: %v; retrying in %s (attempt %d of %d)", source, last, d.Round(time.Millisecond), attempt, f.cfg.Attempts)
			if err := sleep(ctx, d); err != nil {
				return nil, err
			}
		}
		retryAfter = 0
		a, err := f.once(ctx, u)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			var tl *tooLargeError
			if errors.As(err, &tl) {
				return nil, &FetchError{Source: source, URL: u, Attempts: attempt, Status: lastStatus, Err: err}
			}
			last, lastStatus = unwrapURLError(err), 0
			continue
		}
		if a.status == http.StatusTooManyRequests || a.status >= 500 {
			last, lastStatus = fmt.Errorf("%d %s%s", a.status, http.StatusText(a.status), snippet(a.body)), a.status
			retryAfter = parseRetryAfter(a.header)
			continue
		}
		f.stats.Requests++
		return &answer{status: a.status, body: a.body}, nil
	}
	return nil, &FetchError{Source: source, URL: u, Attempts: f.cfg.Attempts, Status: lastStatus, Err: last}
}

// rawAnswer is one attempt's answer.
type rawAnswer struct {
	status int
	header http.Header
	body   []byte
}

// tooLargeError is an answer over MaxResponseBytes; it is not retried.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("answer larger than %d bytes: narrow the query or the time range, or raise --max-response-size", e.limit)
}

// once makes one attempt and reads the whole answer.
func (f *fetcher) once(ctx context.Context, u string) (*rawAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "cascade-collect")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, f.cfg.MaxResponseBytes+1))
	if n > f.cfg.MaxResponseBytes {
		return nil, &tooLargeError{limit: f.cfg.MaxResponseBytes}
	}
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return &rawAnswer{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}, nil
}

// backoff is the wait before retry n (1-based): Backoff·2^(n-1), capped at
// MaxBackoff, scaled by a random factor in [0.5, 1); a longer Retry-After
// wins, capped the same way.
func (f *fetcher) backoff(n int, retryAfter time.Duration) time.Duration {
	d := f.cfg.Backoff
	for i := 1; i < n && d < f.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, f.cfg.MaxBackoff)
	var r float64
	if f.cfg.Rand != nil {
		r = f.cfg.Rand.Float64()
	} else {
		r = rand.Float64()
	}
	d = time.Duration(float64(d) * (0.5 + r/2))
	if retryAfter > d {
		d = min(retryAfter, f.cfg.MaxBackoff)
	}
	return d
}

// parseRetryAfter reads a Retry-After header in seconds or as an HTTP
// date; zero when absent or unreadable.
func parseRetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// unwrapURLError drops the "Get \"URL\": " prefix a *url.Error adds: the
// FetchError names the URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// snippet quotes the start of an answer body for an error message.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	const n = 200
	if len(b) > n {
		return fmt.Sprintf(": %q...", b[:n])
	}
	return fmt.Sprintf(": %q", b)
}

// pullSink collects what decoding one pulled answer yields: the rows,
// skipped records, and the first syntax error (garbage).
type pullSink struct {
	b       batch
	skipped int64
	syntax  *ingest.ParseError
}

func (s *pullSink) Span(sp *cascade.Span) error { s.b.spans = append(s.b.spans, *sp); return nil }
func (s *pullSink) Sample(sm *cascade.Sample) error {
	s.b.samples = append(s.b.samples, *sm)
	return nil
}
func (s *pullSink) Infer(text string) { s.b.addNote(noteInfer, text) }
func (s *pullSink) Warn(text string)  { s.b.addNote(noteWarn, text) }

// Invalid skips a defective record, counting it, and stops at the first
// defect of the answer as a whole: one that leaves it unreadable
// (garbage), an API error, an unsupported result, or a defect outside any
// element of the answer's arrays.
func (s *pullSink) Invalid(e *ingest.ParseError) error {
	if errors.Is(e, ingest.ErrSyntax) || errors.Is(e, ingest.ErrUnsupported) || errors.Is(e, ingest.ErrUnknownFormat) || !strings.Contains(e.Path, "[") {
		s.syntax = e
		return e
	}
	s.skipped++
	s.b.addNote(noteWarn, "invalid record skipped: "+e.Reason())
	return nil
}

// pullRecordRows caps the rows of one record written for pulled data, so
// records stay small whatever a window returns.
const pullRecordRows = 8192

// storeBatch writes b to st as records of at most pullRecordRows rows,
// with one fsync. The notes go with the first record.
func storeBatch(st *store, b *batch) error {
	var payloads [][]byte
	notes := b.notes
	for i := 0; i < len(b.spans); i += pullRecordRows {
		part := batch{spans: b.spans[i:min(i+pullRecordRows, len(b.spans))], notes: notes}
		payloads = append(payloads, encodeRecord(nil, &part))
		notes = nil
	}
	for i := 0; i < len(b.samples); i += pullRecordRows {
		part := batch{samples: b.samples[i:min(i+pullRecordRows, len(b.samples))], notes: notes}
		payloads = append(payloads, encodeRecord(nil, &part))
		notes = nil
	}
	if len(payloads) == 0 {
		return nil
	}
	return st.appendRecords(payloads...)
}

// pull reads every configured source into st.
func pull(ctx context.Context, cfg *PullConfig, opts *ingest.Options, st *store, log func(string, ...any)) (PullStats, error) {
	var stats PullStats
	f := newFetcher(cfg, &stats, log)
	defer f.close()
	if cfg.Prometheus != "" {
		if err := pullPrometheus(ctx, f, opts, st); err != nil {
			return stats, err
		}
	}
	if cfg.Jaeger != "" {
		if err := pullJaeger(ctx, f, opts, st); err != nil {
			return stats, err
		}
	}
	return stats, nil
}
