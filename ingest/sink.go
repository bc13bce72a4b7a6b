package ingest

import (
	"io"

	"cascade"
)

// sink receives what a decoder produces from one input. Decoders call it
// for every record, in input order, and stop when it returns an error.
//
// A span or sample passed to the sink may be reused by the decoder after the
// call returns: the sink copies what it keeps.
type sink interface {
	// span receives one normalized span. The decoder has checked that
	// TraceID and SpanID are non-empty; an empty Service, a span that is
	// its own parent and strings that are not UTF-8 are the sink's to
	// repair (checkSpan).
	span(s *cascade.Span) error
	// sample receives one metric point.
	sample(s *cascade.Sample) error
	// invalid receives a defective record. A nil return means "skip it and
	// go on"; a non-nil return means stop decoding and return that error.
	invalid(err *ParseError) error
	// infer records a fact the format lacks and that ingest inferred or
	// defaulted, for the summary, e.g. "status: not recorded by format".
	// Repeated notes are counted, not repeated.
	infer(note string)
	// warn records an anomaly that is reported but not fatal (negative
	// duration clamped, clock skew), counted by kind.
	warn(kind string)
	// warnAt is warn with the position the decoder knows (File unset).
	warnAt(kind string, at *ParseError)
}

// decodeFunc decodes one whole input stream of one format into a sink.
// name is the input's display name (for errors); the reader is already
// decompressed. Decoders never panic on any input.
type decodeFunc func(name string, r io.Reader, s sink, opts *Options) error
