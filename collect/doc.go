// Package collect records live sources into a cascade dataset: it is an
// OpenTelemetry OTLP/HTTP endpoint (POST /v1/traces and /v1/metrics,
// protobuf or JSON, gzip or not), and it pulls metrics from Prometheus'
// HTTP API (query_range) and traces from Jaeger's query service (api_v3,
// or the legacy /api/traces).
//
// The endpoint practises what cascade preaches. It admits a bounded number
// of requests at once (ReceiverConfig.QueueSize) and answers the next 429
// with Retry-After instead of growing memory. It acknowledges a request
// only once its rows are durable: each batch is appended to a segment file
// in the work directory as a length- and CRC-framed record and the file is
// fsynced (one fsync for every batch waiting, a group commit) before the
// 200 goes out. Stopping it (ctx done: SIGINT or SIGTERM) drains the
// requests in flight and finalizes: the segments are folded into the
// dataset through the ingest store (sorted, deduplicated, moved into place
// whole) and removed. A crash leaves the dataset as it was and the
// segments in the work directory; a torn last record is detected by its
// framing and discarded (it was never acknowledged), and the next run with
// the same dataset, or a Finalize run, includes every segment.
//
// Pulls go through the same segments, with a timeout per request and
// retries with exponential backoff and jitter when the server is
// unreachable, slow or answering 429 or 5xx.
//
// Run is the entry point; cmd/cascade's collect command wires flags to
// Config.
package collect
