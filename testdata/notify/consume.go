package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// consume starts consumer k of queue q on a connection of its own: each
// delivery is handled in a goroutine of its own (at most the prefetch at
// once), inside a process span that starts a new trace linked to the
// publish span that sent the message.
func (a *app) consume(q string, k int, rng *rand.Rand) error {
	conn, err := a.dial(fmt.Sprintf("%s-%d", q, k))
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(a.cfg.Prefetch, 0, false); err != nil {
		return err
	}
	tag := fmt.Sprintf("%s-%d", q, k)
	deliveries, err := ch.Consume(q, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s: %w", q, err)
	}
	var mu sync.Mutex // guards rng
	go func() {
		for d := range deliveries {
			mu.Lock()
			u := rng.Float64()
			mu.Unlock()
			go a.process(q, d, u)
		}
	}()
	return nil
}

// process handles one delivery: the task's work, then an ack; on failure
// a retry (re-enqueued at once before, through the delay queue after, the
// first -immediate-retries of them at once there too) while
// retries are left, else the task fails for good.
func (a *app) process(q string, d amqp.Delivery, u float64) {
	parent := propagator.Extract(context.Background(), tableCarrier(d.Headers))
	retries := int32(headerInt(d.Headers["x-retry-count"]))
	deaths := deathCount(d.Headers)
	event := int64(headerInt(d.Headers["x-event-id"]))
	eventStart := time.Unix(0, int64(headerInt(d.Headers["x-event-start"])))
	svc := q
	ctx, span := a.tel.tracer(svc).Start(context.Background(), "process "+q,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithNewRoot(),
		trace.WithLinks(trace.LinkFromContext(parent, attribute.String("messaging.operation.type", "publish"))),
		trace.WithAttributes(
			attribute.String(attrSystem, "rabbitmq"),
			attribute.String(attrOperation, "process"),
			attribute.String(attrOpName, "consume"),
			attribute.String(attrDestination, q),
			attribute.String(attrGroup, q),
			attribute.String(attrMessageID, d.MessageId),
			attribute.Int(attrBodySize, len(d.Body)),
			attribute.Int64(attrDeliveryTag, int64(d.DeliveryTag)),
			attribute.Int(attrRetryCount, int(retries)),
			attribute.Int(attrDeathCount, int(deaths)),
			attribute.Bool(attrRedelivered, d.Redelivered || retries > 0),
		))
	defer span.End()

	err := a.work(ctx, q, u)
	if err == nil {
		d.Ack(false)
		a.stats.ok(q)
		a.flows.finish(event, q, true, time.Now())
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(attribute.String("error.type", errorType(err)))
	if retries < int32(a.set.maxRetries) {
		m := message{event: event, start: eventStart, task: q, retries: retries + 1}
		exch, key := exchange, q
		if a.set.delay > 0 && int(retries) >= a.set.immediate {
			exch, key = "", q+".delay"
		}
		var perr error
		if a.retry.blocked.Load() {
			perr = errBlocked
		} else {
			perr = a.publish(ctx, svc, a.retry, exch, key, m, 0)
		}
		d.Ack(false)
		if perr == nil {
			a.stats.retried(q)
			return
		}
		span.SetAttributes(attribute.String("app.retry.error", perr.Error()))
	} else {
		d.Ack(false)
	}
	a.stats.failed(q)
	a.flows.finish(event, q, false, time.Now())
}

// work is a task's processing. Rights takes a database slot; points reads
// the user's rights from rights' HTTP API first (it fails when rights
// does); the others take a few milliseconds.
func (a *app) work(ctx context.Context, q string, u float64) error {
	switch q {
	case "rights":
		ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
		return a.rdb.do(ctx)
	case "points":
		ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
		if err := a.callRights(ctx); err != nil {
			return err
		}
		sleep(2*time.Millisecond + time.Duration(u*float64(4*time.Millisecond)))
	case "sms":
		sleep(3*time.Millisecond + time.Duration(u*float64(4*time.Millisecond)))
		if a.set.pushInSMS {
			sleep(2*time.Millisecond + time.Duration(u*float64(2*time.Millisecond)))
		}
	case "push":
		sleep(2*time.Millisecond + time.Duration(u*float64(2*time.Millisecond)))
	case "log":
		sleep(1*time.Millisecond + time.Duration(u*float64(time.Millisecond)))
	}
	return nil
}

func sleep(d time.Duration) { time.Sleep(d) }

func headerInt(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	}
	return 0
}

// deathCount sums the counts of the x-death header RabbitMQ adds when it
// dead-letters a message.
func deathCount(h amqp.Table) int64 {
	deaths, _ := h["x-death"].([]any)
	var n int64
	for _, e := range deaths {
		if t, ok := e.(amqp.Table); ok {
			n += headerInt(t["count"])
		}
	}
	return n
}
