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

// db is rights' database: a fixed pool of slots; a query's time grows with
// the queries waiting when it starts (contention), and a query whose
// caller gave up still holds its slot to the end (the database does not
// know), so under load rights gets slow, then fails by its deadline.
type db struct {
	slots   chan struct{}
	waiting atomic.Int64
	base    time.Duration
	perWait time.Duration
}

func newDB(n int, base, perWait time.Duration) *db {
	return &db{slots: make(chan struct{}, n), base: base, perWait: perWait}
}

func (d *db) query(ctx context.Context) error {
	d.waiting.Add(1)
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		d.waiting.Add(-1)
		return fmt.Errorf("rights db: waiting for a slot: %w", ctx.Err())
	}
	w := d.waiting.Add(-1)
	t := time.NewTimer(d.base + time.Duration(w)*d.perWait)
	select {
	case <-t.C:
		<-d.slots
		return nil
	case <-ctx.Done():
		go func() { <-t.C; <-d.slots }()
		return fmt.Errorf("rights db: query: %w", ctx.Err())
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
		if err := a.rdb.query(qctx); err != nil {
			code = http.StatusServiceUnavailable
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", "timeout"))
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
