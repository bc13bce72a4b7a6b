// Package dataset reads and writes the dataset: the directory of Parquet
// files that ingest writes and every later stage reads.
//
// A dataset holds spans.parquet (SpansFile: cascade.Span rows sorted by
// trace, then start, then span id), metrics.parquet (MetricsFile:
// cascade.Sample rows sorted by series, then time; empty when no metrics
// were given) and, when logs were given, logs.parquet (LogsFile:
// cascade.LogRecord rows sorted by service, then time).
//
// ReadSpans, ReadSamples and ReadLogs call a function for each row, in
// the file's order; the row and its strings are lent for the call only.
// Columns are found by name, so files written by other tools read too.
// ReadArrivals reads a dataset's root requests.
//
// NewWriter starts a Writer: rows are added in any order, sorted with
// bounded memory, written through keep functions that drop or change
// them (ingest's deduplication), and published by renaming a temporary
// directory into place, so a dataset is never left half written.
// CleanStale removes the temporary directories of runs that were killed.
package dataset
