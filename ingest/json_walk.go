package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"cascade"
)

// spanNotes are the warnings and inferences a span adds to the summary
// once it is stored.
type spanNotes uint8

// Span notes.
const (
	noteNegativeDuration spanNotes = 1 << iota
	noteNoDuration
	noteStatusFromCode
)

// report passes a stored span's notes to the sink.
func (n spanNotes) report(s sink) {
	if n&noteNegativeDuration != 0 {
		s.warn("negative duration (clamped to 0)")
	}
	if n&noteNoDuration != 0 {
		s.infer("duration: not recorded, stored as 0")
	}
	if n&noteStatusFromCode != 0 {
		s.infer("status: error inferred from HTTP status code")
	}
}

// microsSpan turns a start time and duration in microseconds into
// nanoseconds. A missing or non-positive start, or one that overflows, is
// an error; a missing duration is stored as 0, a negative one is clamped
// to 0, both with a note.
func microsSpan(startName string, start jsonMicros, durName string, dur jsonMicros) (int64, int64, spanNotes, error) {
	const maxMicros = math.MaxInt64 / 1000
	switch {
	case !start.set:
		return 0, 0, 0, errorf(ErrBadTimestamp, "%s missing", startName)
	case start.v <= 0:
		return 0, 0, 0, errorf(ErrBadTimestamp, "%s %d is not after 1970", startName, start.v)
	case start.v > maxMicros:
		return 0, 0, 0, errorf(ErrBadTimestamp, "%s %d µs is past the year 2262", startName, start.v)
	}
	var notes spanNotes
	d := dur.v
	switch {
	case !dur.set:
		notes |= noteNoDuration
	case d < 0:
		d = 0
		notes |= noteNegativeDuration
	case d > maxMicros-start.v:
		return 0, 0, 0, errorf(ErrBadTimestamp, "%s %d µs ends past the year 2262", durName, d)
	}
	return start.v * 1000, d * 1000, notes, nil
}

// kindFromText maps a span kind as text (span.kind tag values, Zipkin's
// CLIENT/SERVER/…) to cascade's; unknown text maps to the empty kind.
func kindFromText(v string) cascade.SpanKind {
	for _, k := range []cascade.SpanKind{cascade.KindServer, cascade.KindClient, cascade.KindProducer, cascade.KindConsumer, cascade.KindInternal} {
		if strings.EqualFold(v, string(k)) {
			return k
		}
	}
	return cascade.KindUnspecified
}

// unmappedKind reports whether a span kind given as text says something
// kindFromText cannot map: not empty and not "unspecified".
func unmappedKind(v string) bool {
	return v != "" && !strings.EqualFold(v, "unspecified") && !strings.EqualFold(v, "SPAN_KIND_UNSPECIFIED")
}

// statusFromText maps an otel.status_code tag value (OK, ERROR, as the
// OpenTelemetry Jaeger and Zipkin mappings write it) to a status.
func statusFromText(v string) cascade.Status {
	switch {
	case strings.EqualFold(v, "ERROR") || strings.EqualFold(v, "STATUS_CODE_ERROR"):
		return cascade.StatusError
	case strings.EqualFold(v, "OK") || strings.EqualFold(v, "STATUS_CODE_OK"):
		return cascade.StatusOK
	}
	return cascade.StatusUnset
}

// Identifiers. Jaeger and Zipkin write ids as hexadecimal text, Jaeger
// dropping leading zeros. Normalized ids are lower case and left-padded to
// the width of the OTLP binary form (32 digits for a trace, 16 for a
// span), so that the same trace read from any format has the same ids.

// traceHexID normalizes a trace id; field names it in errors.
func traceHexID(field, id string) (string, error) {
	s, zero, err := normHexID(field, id, 32)
	if err == nil && zero {
		err = errorf(ErrBadID, "%s is all zeros", field)
	}
	return s, err
}

// spanHexID normalizes a span id; field names it in errors.
func spanHexID(field, id string) (string, error) {
	s, zero, err := normHexID(field, id, 16)
	if err == nil && zero {
		err = errorf(ErrBadID, "%s is all zeros", field)
	}
	return s, err
}

// parentHexID normalizes a parent span id; empty and all-zero ids mean no
// parent.
func parentHexID(field, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	s, zero, err := normHexID(field, id, 16)
	if zero {
		return "", err
	}
	return s, err
}

// normHexID checks that id is at most width hexadecimal digits and returns
// it in lower case, left-padded with zeros to width; zero reports an
// all-zero id.
func normHexID(field, id string, width int) (s string, zero bool, err error) {
	switch {
	case id == "":
		return "", false, errorf(ErrBadID, "%s missing", field)
	case len(id) > width:
		return "", false, errorf(ErrBadID, "%s %q is longer than %d hex digits", field, truncateText(id), width)
	}
	upper := false
	zero = true
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return "", false, errorf(ErrBadID, "%s %q is not hexadecimal", field, truncateText(id))
		}
		if c != '0' {
			zero = false
		}
	}
	if len(id) == width && !upper {
		return id, zero, nil
	}
	if upper {
		id = strings.ToLower(id)
	}
	return strings.Repeat("0", width-len(id)) + id, zero, nil
}

// sameHexID reports whether two trace ids as written are the same id,
// treating an empty reference id as "this trace".
func sameHexID(ref, own string) bool {
	if ref == "" || own == "" || ref == own {
		return true
	}
	a, _, errA := normHexID("", ref, 32)
	b, _, errB := normHexID("", own, 32)
	return errA == nil && errB == nil && a == b
}

// truncateText shortens text quoted in an error message.
func truncateText(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// tagText is a JSON scalar kept as text: a string's value, or the literal
// text of a number or boolean (an object or array keeps its JSON). Jaeger
// tag values are typed; Zipkin's should be strings but are not always.
type tagText string

// UnmarshalJSON implements json.Unmarshaler.
func (t *tagText) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) >= 2 && b[0] == '"':
		if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
			*t = tagText(b[1 : len(b)-1])
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = tagText(s)
	case string(b) == "null":
		*t = ""
	default:
		*t = tagText(b)
	}
	return nil
}

// jsonMicros is an optional integer count of microseconds: a JSON number,
// or a number in a string as some exporters write 64-bit integers.
type jsonMicros struct {
	v   int64
	set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *jsonMicros) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = jsonMicros{}
		return nil
	}
	text := b
	if len(text) >= 2 && text[0] == '"' {
		text = text[1 : len(text)-1]
	}
	v, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(text), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) >= math.MaxInt64 {
			return &jsonValueError{errorf(ErrBadTimestamp, "%s is not a whole number of microseconds", truncateText(string(b)))}
		}
		v = int64(f)
	}
	*m = jsonMicros{v: v, set: true}
	return nil
}

// jsonValueError is a defect found by an UnmarshalJSON method. The value
// has been read whole, so decoding can go on with the next record.
type jsonValueError struct{ err error }

// Error returns the defect's text.
func (e *jsonValueError) Error() string { return e.err.Error() }

// Unwrap returns the defect.
func (e *jsonValueError) Unwrap() error { return e.err }

// errWalkStop unwinds a JSON decoder after a fatal defect was reported to
// a sink that said to go on: decoding ends with a nil error.
var errWalkStop = errors.New("ingest: JSON decoding stopped")

// jsonWalker streams a JSON input with encoding/json's Decoder: callers walk
// the outer structure token by token and decode one record at a time, and
// the walker positions every defect by byte offset and reports it.
type jsonWalker struct {
	name    string
	s       sink
	br      *bufio.Reader
	dec     *json.Decoder
	base    int64 // bytes skipped before the decoder started (a BOM)
	scratch [64]byte
	raw     json.RawMessage // reused by skip
}

// utf8BOM is the byte order mark some Windows tools put before JSON.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// newJSONWalker starts a walk over r, skipping a leading byte order mark.
func newJSONWalker(name string, r io.Reader, s sink) *jsonWalker {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	w := &jsonWalker{name: name, s: s, br: br}
	if head, _ := br.Peek(len(utf8BOM)); bytes.Equal(head, utf8BOM) {
		br.Discard(len(utf8BOM))
		w.base = int64(len(utf8BOM))
	}
	w.dec = json.NewDecoder(br)
	return w
}

// run calls value for each top-level value of the input, with its offset
// and first byte, until the input ends or value fails. An empty input is
// noted, not an error.
func (w *jsonWalker) run(value func(off int64, c byte) error) error {
	n := 0
	for ; ; n++ {
		if !w.dec.More() {
			// The end of the input, or something that cannot start a value.
			off := w.offset()
			_, err := w.dec.Token()
			if err == io.EOF {
				break
			}
			if err == nil {
				err = errorf(ErrSyntax, "unexpected closing bracket")
			}
			err = w.decodeErr(off, "", err)
			if errors.Is(err, errWalkStop) {
				return nil
			}
			return err
		}
		off, c := w.peek()
		if err := value(off, c); err != nil {
			if errors.Is(err, errWalkStop) {
				return nil
			}
			return err
		}
	}
	if n == 0 {
		w.s.infer("empty input")
	}
	return nil
}

// offset is the decoder's position in the input.
func (w *jsonWalker) offset() int64 { return w.base + w.dec.InputOffset() }

// peek returns the offset and first byte of the next value (or key),
// skipping the separator and spaces before it; the byte is 0 when the
// input ends first. It reads nothing the decoder will not read.
func (w *jsonWalker) peek() (int64, byte) {
	w.dec.More() // buffers the next significant byte
	off := w.offset()
	rd := w.dec.Buffered()
	for {
		n, _ := rd.Read(w.scratch[:])
		if n == 0 {
			break
		}
		for _, c := range w.scratch[:n] {
			if !isJSONSeparator(c) {
				return off, c
			}
			off++
		}
	}
	// The decoder's buffer ends in separators: what follows is still in
	// the reader.
	for skip := 0; ; {
		b, err := w.br.Peek(skip + len(w.scratch))
		for _, c := range b[skip:] {
			if !isJSONSeparator(c) {
				return off, c
			}
			off++
			skip++
		}
		if err != nil {
			return off, 0
		}
	}
}

// isJSONSeparator reports whether c is JSON white space, a comma or a
// colon: what lies between two values.
func isJSONSeparator(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':'
}

// key reads an object member's name and returns it with the offset of its
// value.
func (w *jsonWalker) key(path string) (string, int64, error) {
	off := w.offset()
	tok, err := w.dec.Token()
	if err != nil {
		return "", 0, w.decodeErr(off, path, err)
	}
	k, _ := tok.(string)
	voff, _ := w.peek()
	return k, voff, nil
}

// end reads the closing bracket of the array or object being walked.
func (w *jsonWalker) end(path string) error {
	off := w.offset()
	if _, err := w.dec.Token(); err != nil {
		return w.decodeErr(off, path, err)
	}
	return nil
}

// skip reads and discards one value.
func (w *jsonWalker) skip(off int64, path string) error {
	if err := w.dec.Decode(&w.raw); err != nil {
		return w.decodeErr(off, path, err)
	}
	return nil
}

// decodeValue decodes one value into v.
func (w *jsonWalker) decodeValue(v any, path string) error {
	off, _ := w.peek()
	if err := w.dec.Decode(v); err != nil {
		return w.decodeErr(off, path, err)
	}
	return nil
}

// unexpected skips a value of the wrong kind and reports it as a defect of
// the given sentinel ("want …, found an array").
func (w *jsonWalker) unexpected(off int64, path string, sentinel error, want string) error {
	if err := w.dec.Decode(&w.raw); err != nil {
		return w.decodeErr(off, path, err)
	}
	return w.report(off, path, errorf(sentinel, "%s, found %s", want, jsonKindOf(w.raw)))
}

// jsonKindOf names the kind of a JSON value for error messages.
func jsonKindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// report passes a defective record to the sink and returns its verdict.
func (w *jsonWalker) report(off int64, path string, err error) error {
	return w.s.invalid(&ParseError{File: w.name, Offset: off, Path: path, Err: err})
}

// recoverable tells the defects of a record that was read whole, after
// which decoding goes on, from the rest; it returns the defect to report.
func (w *jsonWalker) recoverable(err error) (error, bool) {
	var ve *jsonValueError
	if errors.As(err, &ve) {
		return ve.err, true
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return jsonTypeDefect(te), true
	}
	return nil, false
}

// decodeErr handles an error from the decoder at off: a recoverable defect
// is reported and decoding goes on (nil, unless the sink says stop); a
// syntax error or a truncated input is reported and ends decoding
// (errWalkStop, or the sink's error); a read error is returned as is.
func (w *jsonWalker) decodeErr(off int64, path string, err error) error {
	if defect, ok := w.recoverable(err); ok {
		return w.report(off, path, defect)
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		err = errorf(ErrSyntax, "%s", se.Error())
	case errors.Is(err, ErrSyntax):
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		err = errorf(ErrSyntax, "unexpected end of input")
	default:
		return fmt.Errorf("read %s: %w", w.name, err)
	}
	if serr := w.report(off, path, err); serr != nil {
		return serr
	}
	return errWalkStop
}

// jsonTypeDefect describes a JSON value of the wrong type in sentences
// about the input, not about Go types, and picks its sentinel by field.
func jsonTypeDefect(te *json.UnmarshalTypeError) error {
	field := te.Field
	last := field[strings.LastIndexByte(field, '.')+1:]
	sentinel := ErrBadValue
	switch last {
	case "startTime", "duration", "timestamp":
		sentinel = ErrBadTimestamp
	case "traceID", "spanID", "parentSpanID", "traceId", "id", "parentId":
		sentinel = ErrBadID
	}
	want := "a value of another type"
	if te.Type != nil {
		switch te.Type.Kind() {
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "a boolean"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Slice, reflect.Array:
			want = "an array"
		case reflect.Map, reflect.Struct, reflect.Pointer:
			want = "an object"
		}
	}
	if field == "" {
		return errorf(sentinel, "want %s, found JSON %s", want, te.Value)
	}
	return errorf(sentinel, "%s: want %s, found JSON %s", field, want, te.Value)
}
