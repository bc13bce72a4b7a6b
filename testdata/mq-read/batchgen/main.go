// Command batchgen writes batch-publish.otlp.json.gz: the spans of a
// batch publisher instrumented with the OpenTelemetry Go SDK as the
// messaging semantic conventions' "Batch publishing" example has them,
// exported over OTLP/HTTP (protobuf) and written as one OTLP JSON document
// as testdata/notify's captures are (ptrace's JSON marshaler).
//
// The "api" service answers POST /events (a SERVER span, the root of the
// event's trace) and creates the event's message there: a PRODUCER span
// "create events" (messaging.operation.type create), whose context goes
// into the message. A batcher in the same process publishes the messages
// four at a time: a PRODUCER span "publish events" in a trace of its own
// (a timer's flush, no request behind it), messaging.operation.type
// publish, messaging.batch.message_count 4, with one link per message to
// its creation context. A "POST /events/bulk" request then creates two
// messages and publishes them itself, the publish span in its own trace
// linking to both. The "indexer" consumes each message in a CONSUMER
// span "process events" that starts a trace of its own and links to the
// message's creation context.
//
//	cd testdata/mq-read/batchgen && go run . -out ../batch-publish.otlp.json.gz
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	out := flag.String("out", "batch-publish.otlp.json.gz", "output file")
	events := flag.Int("events", 8, "events")
	batch := flag.Int("batch", 4, "messages per batch")
	flag.Parse()

	var mu sync.Mutex
	all := ptrace.NewTraces()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(b); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		req.Traces().ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()

	ctx := context.Background()
	provider := func(svc string) *sdktrace.TracerProvider {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
		if err != nil {
			log.Fatal(err)
		}
		return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
	}
	apiTP, indexerTP := provider("api"), provider("indexer")
	api, indexer := apiTP.Tracer("batchgen"), indexerTP.Tracer("batchgen")

	msgAttrs := func(op, id string) []attribute.KeyValue {
		return []attribute.KeyValue{
			attribute.String("messaging.system", "rabbitmq"),
			attribute.String("messaging.operation.type", op),
			attribute.String("messaging.operation.name", op),
			attribute.String("messaging.destination.name", "events"),
			attribute.String("messaging.message.id", id),
			attribute.Int("messaging.message.body.size", 512),
		}
	}
	type message struct {
		id      string
		created trace.SpanContext
	}
	var pending []message
	// flushIn publishes the pending messages in a span under ctx (a new
	// root when ctx holds no span), then lets the indexer process them.
	flushIn := func(ctx context.Context) {
		links := make([]trace.Link, len(pending))
		for i, m := range pending {
			links[i] = trace.Link{SpanContext: m.created}
		}
		_, pub := api.Start(ctx, "publish events",
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
			trace.WithAttributes(
				attribute.String("messaging.system", "rabbitmq"),
				attribute.String("messaging.operation.type", "publish"),
				attribute.String("messaging.operation.name", "publish"),
				attribute.String("messaging.destination.name", "events"),
				attribute.Int("messaging.batch.message_count", len(pending)),
			))
		time.Sleep(2 * time.Millisecond)
		pub.End()
		for _, m := range pending {
			_, proc := indexer.Start(context.Background(), "process events",
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithNewRoot(),
				trace.WithLinks(trace.Link{SpanContext: m.created}),
				trace.WithAttributes(append(msgAttrs("process", m.id),
					attribute.String("messaging.consumer.group.name", "events"))...))
			time.Sleep(3 * time.Millisecond)
			proc.End()
		}
		pending = pending[:0]
	}
	flush := func() { flushIn(context.Background()) }
	for i := range *events {
		id := fmt.Sprintf("event-%d", i+1)
		rctx, req := api.Start(context.Background(), "POST /events",
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", "POST"),
				attribute.String("http.route", "/events"),
			))
		_, create := api.Start(rctx, "create events",
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(msgAttrs("create", id)...))
		pending = append(pending, message{id: id, created: create.SpanContext()})
		create.End()
		req.SetAttributes(attribute.Int("http.response.status_code", 202))
		req.End()
		if len(pending) == *batch {
			flush()
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(pending) > 0 {
		flush()
	}
	// A bulk request publishes its own batch: two messages created and
	// published inside its trace, the publish span linking to both.
	bctx, bulk := api.Start(context.Background(), "POST /events/bulk",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", "POST"),
			attribute.String("http.route", "/events/bulk"),
		))
	for i := range 2 {
		id := fmt.Sprintf("bulk-%d", i+1)
		_, create := api.Start(bctx, "create events",
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(msgAttrs("create", id)...))
		pending = append(pending, message{id: id, created: create.SpanContext()})
		create.End()
	}
	flushIn(bctx)
	bulk.SetAttributes(attribute.Int("http.response.status_code", 202))
	bulk.End()
	for _, tp := range []*sdktrace.TracerProvider{apiTP, indexerTP} {
		if err := tp.Shutdown(ctx); err != nil {
			log.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(all)
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d spans\n", *out, all.SpanCount())
}
