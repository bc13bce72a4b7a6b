package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// publisher is a connection with a few confirm-mode channels used in turn.
// It notes when the broker blocks the connection (a resource alarm).
type publisher struct {
	conn    *amqp.Connection
	chans   []*amqp.Channel
	next    atomic.Uint64
	blocked atomic.Bool
	alarmed atomic.Bool // blocked at least once
}

func (a *app) newPublisher(name string, n int) (*publisher, error) {
	conn, err := a.dial(name)
	if err != nil {
		return nil, err
	}
	p := &publisher{conn: conn}
	for range n {
		ch, err := conn.Channel()
		if err != nil {
			return nil, err
		}
		if err := ch.Confirm(false); err != nil {
			return nil, err
		}
		p.chans = append(p.chans, ch)
	}
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 16))
	go func() {
		for b := range blocks {
			p.blocked.Store(b.Active)
			if b.Active {
				p.alarmed.Store(true)
				a.broker.noteBlocked(name, b.Reason)
			}
		}
	}()
	return p, nil
}

// errConfirm is a publish the broker did not confirm in time, or nacked.
var errConfirm = errors.New("publish not confirmed")

// message is a task message's content.
type message struct {
	event   int64
	start   time.Time // the event's start at the gateway
	task    string
	retries int32
}

// publish sends a task message to routingKey on exch inside a producer
// span of tracer's service. With wait > 0 it waits that long for the
// broker's confirm; else it does not wait. The span ends when the publish
// is written (or confirmed, when waited for).
func (a *app) publish(ctx context.Context, svc string, p *publisher, exch, routingKey string, m message, wait time.Duration) error {
	id := fmt.Sprintf("%d-%s", m.event, m.task)
	ctx, span := a.tel.tracer(svc).Start(ctx, "publish "+m.task,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String(attrSystem, "rabbitmq"),
			attribute.String(attrOperation, "publish"),
			attribute.String(attrOpName, "publish"),
			attribute.String(attrDestination, routingKey),
			attribute.String(attrRoutingKey, routingKey),
			attribute.String(attrMessageID, id),
			attribute.Int(attrBodySize, a.cfg.Body),
			attribute.Int(attrRetryCount, int(m.retries)),
		))
	defer span.End()
	headers := amqp.Table{
		"x-event-id":    m.event,
		"x-event-start": m.start.UnixNano(),
		"x-retry-count": m.retries,
	}
	propagator.Inject(ctx, tableCarrier(headers))
	ch := p.chans[p.next.Add(1)%uint64(len(p.chans))]
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conf, err := ch.PublishWithDeferredConfirmWithContext(pctx, exch, routingKey, false, false, amqp.Publishing{
		Headers:      headers,
		ContentType:  "application/json",
		DeliveryMode: amqp.Transient,
		MessageId:    id,
		Timestamp:    m.start,
		Body:         body(a.cfg.Body, m),
	})
	if err == nil && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		ok, werr := conf.WaitContext(wctx)
		switch {
		case werr != nil:
			err = fmt.Errorf("%w: %v", errConfirm, werr)
		case !ok:
			err = fmt.Errorf("%w: nacked", errConfirm)
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		return err
	}
	a.stats.published(m.task)
	return nil
}

func errorType(err error) string {
	switch {
	case errors.Is(err, errConfirm):
		return "publish_unconfirmed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, errRights):
		return "rights_unavailable"
	}
	return "error"
}

// body is a message body of n bytes: the event's JSON padded with spaces.
func body(n int, m message) []byte {
	b := fmt.Appendf(nil, `{"event":%d,"task":%q,"start":%d}`, m.event, m.task, m.start.UnixNano())
	for len(b) < n {
		b = append(b, ' ')
	}
	return b
}
