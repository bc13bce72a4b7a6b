package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// db is rights' database: a fixed pool of slots, each query holding one
// for a fixed time; a query waits for a slot in turn (FIFO). A query whose
// caller gives up is cancelled, as a real driver cancels with the
// context: it leaves the wait, or frees its slot at once. So rights'
// capacity is a clear number, slots / query time, with no memory of
// earlier load: past it, the queries wait, and those that wait longer
// than the caller's deadline fail.
//
// Two settings make it behave as real pools under load do (issue 37),
// both off by default: with -db-slow s, a query takes its time × (1 + s ×
// the queries waiting for a slot as it starts), as a database slows with
// the connections contending for it; with -db-wait-cap c, a query that
// waited c for a slot is refused (HikariCP's connectionTimeout, a
// semaphore's TryAcquire with a timeout), at once and not at the
// caller's deadline.
type db struct {
	slots   chan struct{}
	query   time.Duration
	slow    float64
	waitCap time.Duration
	waiting atomic.Int64
}

func newDB(n int, query time.Duration, slow float64, waitCap time.Duration) *db {
	return &db{slots: make(chan struct{}, n), query: query, slow: slow, waitCap: waitCap}
}

// errPoolTimeout is a query refused for want of a slot within the wait
// cap.
var errPoolTimeout = errors.New("rights db: no slot within the wait cap")

func (d *db) do(ctx context.Context) error {
	var capped <-chan time.Time
	if d.waitCap > 0 {
		t := time.NewTimer(d.waitCap)
		defer t.Stop()
		capped = t.C
	}
	d.waiting.Add(1)
	select {
	case d.slots <- struct{}{}:
		d.waiting.Add(-1)
	case <-capped:
		d.waiting.Add(-1)
		return errPoolTimeout
	case <-ctx.Done():
		d.waiting.Add(-1)
		return fmt.Errorf("rights db: waiting for a slot: %w", ctx.Err())
	}
	defer func() { <-d.slots }()
	q := d.query
	if d.slow > 0 {
		q = time.Duration(float64(q) * (1 + d.slow*float64(d.waiting.Load())))
	}
	t := time.NewTimer(q)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rights db: query cancelled: %w", ctx.Err())
	}
}

// rightsHandler is rights' HTTP API: GET /rights reads the user's rights
// from the database, 503 when it cannot within the caller's deadline.
func (a *app) rightsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := a.tel.tracer("rights").Start(ctx, "GET /rights",
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", "GET"),
				attribute.String("http.route", "/rights"),
			))
		defer span.End()
		qctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
		code := http.StatusOK
		if err := a.rdb.do(qctx); err != nil {
			code = http.StatusServiceUnavailable
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			typ := "timeout"
			if errors.Is(err, errPoolTimeout) {
				typ = "pool_timeout"
			}
			span.SetAttributes(attribute.String("error.type", typ))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		w.WriteHeader(code)
	})
}

// errRights is points' call to rights failing.
var errRights = errors.New("rights unavailable")

// callRights is points' synchronous call to rights, in a client span.
func (a *app) callRights(ctx context.Context) error {
	ctx, span := a.tel.tracer("points").Start(ctx, "GET /rights",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", "GET"),
			attribute.String("peer.service", "rights"),
			attribute.String("server.address", "rights"),
		))
	defer span.End()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.rightsURL+"/rights", nil)
	if err != nil {
		return err
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := a.client.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%w: %s", errRights, resp.Status)
		}
	} else {
		err = fmt.Errorf("%w: %w", errRights, err)
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("error.type", errorType(err)))
	}
	return err
}
