package ingest

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors that every ParseError unwraps to. The summary counts
// skipped records by these reasons, so each names one kind of defect.
var (
	ErrSyntax        = errors.New("malformed record")
	ErrBadTimestamp  = errors.New("bad timestamp")
	ErrBadID         = errors.New("bad trace or span id")
	ErrNoService     = errors.New("no service name")
	ErrMissingField  = errors.New("missing field")
	ErrBadValue      = errors.New("bad value")
	ErrUnknownFormat = errors.New("unknown format")
	ErrUnsupported   = errors.New("unsupported content")
	ErrErrorAnswer   = errors.New("an error answer, not data")
	ErrNoInput       = errors.New("nothing to read")
	ErrTooManyErrors = errors.New("too many invalid records")
)

// InputError is an input that is unusable as a whole rather than in one
// of its records: a directory holding no file of the wanted kind.
type InputError struct {
	File string // the input as given
	Err  error  // the defect; unwraps to a sentinel above
}

// Error formats the input and the defect as "traces/: a directory with ...".
func (e *InputError) Error() string { return e.File + ": " + e.Err.Error() }

// Unwrap returns the underlying defect.
func (e *InputError) Unwrap() error { return e.Err }

// ParseError is a defect in one record of one input, with its position.
// Decoders fill Line, Offset and Path; the file loader adds File.
// Line and Offset are 1-based and 0-based respectively and zero when
// unknown; Path is a record path such as
// "resourceSpans[3].scopeSpans[0].spans[12]".
type ParseError struct {
	File   string // input file name, "-" for stdin
	Line   int    // 1-based line, 0 when the format has no lines
	Offset int64  // byte offset of the record in the (decompressed) input
	Path   string // record path within the document
	Err    error  // the defect; unwraps to a sentinel above
}

// Error formats the position and the defect as
// "spans.jsonl:1042 (byte 88113): resourceSpans[3].spans[12]: end before start".
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<input>")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Offset > 0 || e.Line == 0 {
		fmt.Fprintf(&b, " (byte %d)", e.Offset)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying defect.
func (e *ParseError) Unwrap() error { return e.Err }

// Reason returns the sentinel the error wraps, used to count skipped
// records by kind; "other" when it wraps none.
func (e *ParseError) Reason() string {
	for _, s := range []error{ErrSyntax, ErrBadTimestamp, ErrBadID, ErrNoService, ErrMissingField, ErrBadValue, ErrUnknownFormat, ErrUnsupported, ErrErrorAnswer} {
		if errors.Is(e.Err, s) {
			return s.Error()
		}
	}
	return "other"
}

// errorf builds a defect that wraps a sentinel with detail:
// errorf(ErrBadTimestamp, "end %d before start %d", end, start).
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), sentinel)
}
