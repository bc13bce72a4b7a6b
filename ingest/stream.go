package ingest

import (
	"fmt"
	"io"

	"cascade"
)

// This file exports the two halves of a run for callers that get their
// input some other way than from files: Decode turns one stream of a known
// format into rows, and Writer stores rows as a dataset exactly as Run
// does. cascade collect uses them for what it receives and pulls.

// RowSink receives what Decode produces from one input, in input order.
// Decode stops at the first non-nil error a method returns and returns it.
//
// The span or sample passed to Span or Sample may be reused by the decoder
// after the call returns: an implementation copies what it keeps (a
// cascade.Span is copied by assignment; its strings are immutable).
type RowSink interface {
	// Span receives one normalized span; TraceID, SpanID and Service are
	// non-empty (a span whose source names no service comes as
	// UnknownService, with a warning), its strings are UTF-8 and it is not
	// its own parent.
	Span(s *cascade.Span) error
	// Sample receives one metric point.
	Sample(s *cascade.Sample) error
	// Invalid receives a defective record, positioned. A nil return skips
	// it; a non-nil return stops decoding. A defect wrapping ErrSyntax
	// means the rest of the input could not be read: decoding ends after
	// it whatever Invalid returns.
	Invalid(err *ParseError) error
	// Infer records a fact the format lacked and that was inferred or
	// defaulted, as the Summary's Inferred map counts them.
	Infer(note string)
	// Warn records an anomaly that was kept, as the Summary's Warnings map
	// counts them.
	Warn(kind string)
}

// Decode decodes one whole input stream of the given format into rows.
// The format must be named (FormatAuto is an error wrapping
// ErrUnknownFormat); r must already be decompressed. name is used in the
// positions of ParseErrors, as a file name is; for FormatPromAPI it is also
// what stands in for a missing metric name (without its extension). A nil
// opts means the zero Options.
//
// Decode never panics, whatever r holds. The returned error is a read
// error of r or the first non-nil error of the sink; record defects go to
// rows.Invalid.
func Decode(name string, r io.Reader, format Format, opts *Options, rows RowSink) error {
	dec, ok := decoders[format]
	if !ok {
		return fmt.Errorf("%s: format %q: %w", name, format, ErrUnknownFormat)
	}
	if opts == nil {
		opts = &Options{}
	}
	return dec(name, r, rowSinkAdapter{rows}, opts)
}

// rowSinkAdapter lets an exported RowSink stand where decoders take the
// package's sink.
type rowSinkAdapter struct{ r RowSink }

func (a rowSinkAdapter) span(s *cascade.Span) error {
	checkSpan(s, a.r.Warn)
	return a.r.Span(s)
}

func (a rowSinkAdapter) sample(s *cascade.Sample) error {
	checkSample(s, a.r.Warn)
	return a.r.Sample(s)
}
func (a rowSinkAdapter) invalid(err *ParseError) error     { return a.r.Invalid(err) }
func (a rowSinkAdapter) infer(note string)                 { a.r.Infer(note) }
func (a rowSinkAdapter) warn(kind string)                  { a.r.Warn(kind) }
func (a rowSinkAdapter) warnAt(kind string, _ *ParseError) { a.r.Warn(kind) }

// Writer stores rows as a dataset the way Run does: rows are sorted with
// bounded memory (spilled in runs of runRows), spans deduplicated on
// (trace_id, span_id) and samples on (series, time) with the first row
// added winning, and the dataset is built in a temporary directory beside
// out and renamed into place by Commit. Until Commit returns, out holds
// what it held before; Abort (or a crash) leaves it so.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w    *store
	out  string
	done bool
}

// NewWriter starts a dataset at out. runRows is as Config.RunRows: rows
// sorted in memory before a run is spilled, zero meaning the default. It
// fails, as Run does, when out exists and is neither a dataset nor an
// empty directory.
func NewWriter(out string, runRows int) (*Writer, error) {
	if runRows < 0 {
		return nil, fmt.Errorf("run-rows: %d is negative", runRows)
	}
	w, err := createStore(out, runRows)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w, out: out}, nil
}

// Span adds one span, copying it.
func (w *Writer) Span(s *cascade.Span) error { return w.w.addSpan(s) }

// Sample adds one metric point, copying it.
func (w *Writer) Sample(s *cascade.Sample) error { return w.w.addSample(s) }

// Commit sorts, deduplicates and writes both files, then moves the dataset
// into place, replacing what was at out. The Summary describes the stored
// rows; its Inputs, Skipped, Warnings and Inferred are left for the caller
// to fill (the maps are empty, not nil). After Commit the Writer is done,
// whatever the outcome.
func (w *Writer) Commit() (*Summary, error) {
	if w.done {
		return nil, fmt.Errorf("dataset %s: writer already committed or aborted", w.out)
	}
	w.done = true
	sum := &Summary{
		Dataset:  w.out,
		Skipped:  map[string]int64{},
		Warnings: map[string]int64{},
		Inferred: map[string]int64{},
	}
	if err := w.w.commit(sum); err != nil {
		w.w.abort()
		return sum, err
	}
	return sum, nil
}

// Abort discards everything added and leaves out as it was. It may be
// called after Commit, where it does nothing.
func (w *Writer) Abort() {
	if !w.done {
		w.done = true
		w.w.abort()
	}
}
