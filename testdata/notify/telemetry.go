package main

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// services are the chain's services, one tracer provider each.
var services = []string{"gateway", "rights", "points", "sms", "push", "log"}

// telemetry holds a tracer provider per service, each exporting OTLP/HTTP.
type telemetry struct {
	providers map[string]*sdktrace.TracerProvider
}

func newTelemetry(ctx context.Context) (*telemetry, error) {
	t := &telemetry{providers: map[string]*sdktrace.TracerProvider{}}
	for _, svc := range services {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter for %s: %w", svc, err)
		}
		res := resource.NewSchemaless(attribute.String("service.name", svc))
		t.providers[svc] = sdktrace.NewTracerProvider(
			sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithBatcher(exp,
				sdktrace.WithMaxQueueSize(1<<17),
				sdktrace.WithMaxExportBatchSize(4096),
				sdktrace.WithBatchTimeout(sdktraceBatchTimeout)),
		)
	}
	return t, nil
}

func (t *telemetry) tracer(svc string) trace.Tracer {
	return t.providers[svc].Tracer("notify")
}

func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	for _, svc := range services {
		errs = append(errs, t.providers[svc].Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// propagator carries W3C trace context in HTTP and AMQP headers.
var propagator = propagation.TraceContext{}

// tableCarrier is a TextMapCarrier over an AMQP message's headers.
type tableCarrier amqp.Table

func (c tableCarrier) Get(key string) string {
	if v, ok := c[key].(string); ok {
		return v
	}
	return ""
}

func (c tableCarrier) Set(key, value string) { c[key] = value }

func (c tableCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Messaging attributes (OpenTelemetry semantic conventions), and the two
// this chain adds for its retries (see README.md).
const (
	attrSystem      = "messaging.system"
	attrOperation   = "messaging.operation.type"
	attrOpName      = "messaging.operation.name"
	attrDestination = "messaging.destination.name"
	attrRoutingKey  = "messaging.rabbitmq.destination.routing_key"
	attrGroup       = "messaging.consumer.group.name"
	attrMessageID   = "messaging.message.id"
	attrBodySize    = "messaging.message.body.size"
	attrDeliveryTag = "messaging.rabbitmq.message.delivery_tag"
	// attrRetryCount is the x-retry-count header: deliveries of this
	// message before this one (0 on a first delivery).
	attrRetryCount = "messaging.rabbitmq.message.delivery_count"
	// attrDeathCount is the sum of the x-death counts RabbitMQ keeps
	// when a message is dead-lettered (the delay queue's route).
	attrDeathCount = "messaging.rabbitmq.message.x_death_count"
	// attrRedelivered is the broker's redelivered flag.
	attrRedelivered = "messaging.rabbitmq.message.redelivered"
)
