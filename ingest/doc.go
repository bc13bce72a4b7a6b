// Package ingest turns recorded sources into a cascade dataset: trace
// files (OTLP JSON or protobuf, Jaeger JSON, Zipkin JSON, span CSV),
// metric files (Prometheus text or query_range answers, OTLP metrics,
// metric CSV) and log files (OTLP logs, log CSV) become cascade.Span,
// cascade.Sample and cascade.LogRecord rows, normalised, deduplicated
// and sorted by trace and start, in a dataset directory (spans.parquet,
// metrics.parquet, logs.parquet; the README's "The dataset").
//
// Run is the entry point: it reads every input of a Config, detects each
// file's format (or takes the one given), and writes the dataset whole
// or not at all, returning a Summary of what was read and stored. Decode
// turns one input stream into rows for a RowSink; collect writes live
// sources through the same store (NewWriter). Package dataset writes the
// files and reads them back.
//
// Bad input is a *ParseError naming the file, line, byte offset and
// record path, unwrapping to a sentinel (ErrBadTimestamp, ErrNoService,
// …); up to Config.MaxErrors of them are collected before the run fails,
// or, with Config.SkipInvalid, counted by reason. Memory is bounded by
// Config.RunRows: sorted runs spill to disk and are merged.
//
// The formats, their options and the dataset's columns are in the
// README ("cascade ingest", "The dataset") and docs/csv.md.
package ingest
