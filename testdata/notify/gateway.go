package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// errBlocked is a publish refused because the broker blocked the
// connection (its memory alarm): a publisher that honours
// connection.blocked fails at once instead of hanging.
var errBlocked = errors.New("broker blocked the connection")

// syncLogWait is how long the before mode's gateway waits for the log
// task's publish confirm.
const syncLogWait = 2 * time.Second

// gatewayHandler answers POST /events?id=N: it fans the event out to the
// task queues and answers 200, or 503 when a publish failed.
func (a *app) gatewayHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		if err != nil {
			http.Error(w, "id: "+err.Error(), http.StatusBadRequest)
			return
		}
		ctx, span := a.tel.tracer("gateway").Start(context.Background(), "POST /events",
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", "POST"),
				attribute.String("http.route", "/events"),
				attribute.Int64("app.event.id", id),
			))
		defer span.End()
		start := time.Now()
		a.flows.begin(id, start)
		err = a.fanOut(ctx, id, start)
		code := http.StatusOK
		if err != nil {
			code = http.StatusServiceUnavailable
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", errorType(err)))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		a.flows.answer(id, err == nil)
		w.WriteHeader(code)
	})
}

// fanOut publishes one message per task. Before, the log task's publish
// is confirmed before the gateway answers (the synchronous path); the
// others are not waited for. After, the log is written locally.
func (a *app) fanOut(ctx context.Context, id int64, start time.Time) error {
	var errs []error
	for _, task := range a.set.tasks {
		if a.pub.blocked.Load() {
			errs = append(errs, fmt.Errorf("publish %s: %w", task, errBlocked))
			continue
		}
		wait := time.Duration(0)
		if task == "log" && a.set.syncLog {
			wait = syncLogWait
		}
		m := message{event: id, start: start, task: task}
		if err := a.publish(ctx, "gateway", a.pub, exchange, task, m, wait); err != nil {
			errs = append(errs, fmt.Errorf("publish %s: %w", task, err))
		}
	}
	if a.set.localLog {
		a.logLocal(fmt.Sprintf("%d event %d accepted\n", start.UnixNano(), id))
	}
	return errors.Join(errs...)
}
