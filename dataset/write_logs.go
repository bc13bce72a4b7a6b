package dataset

import (
	"cmp"

	"github.com/parquet-go/parquet-go"

	"cascade"
)

// CompareLogs orders logs.parquet: by service, then time, then the rest
// of the record, so that equal records are adjacent and the order depends
// on nothing but the records.
func CompareLogs(a, b *cascade.LogRecord) int {
	if c := cmp.Compare(a.Service, b.Service); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Instance, b.Instance); c != 0 {
		return c
	}
	if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.SpanID, b.SpanID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Body, b.Body); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Severity, b.Severity); c != 0 {
		return c
	}
	return cmp.Compare(a.TemplateID, b.TemplateID)
}

// WriteLogs writes logs.parquet: the records added, in stored order
// (CompareLogs), those keep reports true for; keep may change the record
// it is given. A dataset without logs is one whose writer never called
// WriteLogs.
func (w *Writer) WriteLogs(keep func(*cascade.LogRecord) bool) error {
	return writeFile(w.tmp, LogsFile, w.logs, keep, parquet.Ascending("service"), parquet.Ascending("time"))
}
