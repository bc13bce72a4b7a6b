package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"

	"cascade"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// maxOTLPRecord caps one proto frame, one proto resourceSpans element and
// one JSON resourceSpans element. Anything larger is reported as ErrSyntax:
// it is far beyond what any exporter batches (the collector's gRPC receiver
// takes 4 MiB by default), and a corrupt length must not make the decoder
// try to allocate gigabytes.
const maxOTLPRecord = 256 << 20

// decodeOTLPJSON decodes OTLP JSON traces: successive top-level objects
// (one TracesData or ExportTraceServiceRequest per file, or JSON Lines of
// them as the collector's file exporter writes), each holding resourceSpans
// directly or inside a Jaeger api_v3 "result". It never holds more than one
// resourceSpans element in memory: the outer structure is scanned, and each
// element is unmarshalled by pdata on its own.
func decodeOTLPJSON(name string, r io.Reader, s sink, opts *Options) error {
	return decodeOTLPJSONSized(name, r, s, jsonChunk, maxOTLPRecord)
}

// decodeOTLPJSONSized is decodeOTLPJSON with the scanner's initial buffer
// size and its element size limit as parameters, which tests make tiny to
// exercise buffer growth, compaction and the limit.
func decodeOTLPJSONSized(name string, r io.Reader, s sink, chunk, limit int) error {
	sc := newJSONScanner(r, chunk)
	sc.limit = limit
	j := &otlpJSON{d: otlpDecoder{name: name, s: s}, sc: sc}
	err := j.run()
	if err == errStopped {
		return nil
	}
	return err
}

// decodeOTLPProto decodes one binary ExportTraceServiceRequest (or
// TracesData, which has the same encoding). It streams the message's
// top-level fields, so memory is bounded by the largest resourceSpans
// element, not by the file.
func decodeOTLPProto(name string, r io.Reader, s sink, opts *Options) error {
	p := newOTLPProto(name, r, s)
	err := p.request(-1)
	if me, ok := err.(*malformedError); ok {
		err = p.fatal(me)
	}
	if err == errStopped {
		return nil
	}
	if err != nil {
		return err
	}
	if p.off == 0 {
		s.infer("empty input")
	}
	return nil
}

// decodeOTLPProtoFramed decodes the collector file exporter's proto format:
// ExportTraceServiceRequest messages, each preceded by its length as a
// 4-byte big-endian integer. A malformed message is reported and skipped;
// a bad or truncated frame ends the input.
func decodeOTLPProtoFramed(name string, r io.Reader, s sink, opts *Options) error {
	p := newOTLPProto(name, r, s)
	err := p.frames()
	if err == errStopped {
		return nil
	}
	if err != nil {
		return err
	}
	if p.off == 0 {
		s.infer("empty input")
	}
	return nil
}

// recordPos locates one resourceSpans element in the input, for errors.
type recordPos struct {
	index  int   // position in its resourceSpans array
	offset int64 // byte offset of the element in the input
	line   int   // 1-based line of the element; 0 when the format has no lines
}

// otlpDecoder turns pdata spans into cascade spans. The JSON and proto front
// ends unmarshal one resourceSpans element at a time and hand it to
// resourceSpans, which normalizes every span into one reused cascade.Span.
type otlpDecoder struct {
	name string
	s    sink
	// prefix goes before "resourceSpans[i]" in record paths: "result."
	// inside a Jaeger api_v3 answer, empty otherwise.
	prefix string

	span cascade.Span
	// hexbuf holds a hex-encoded span id and parent id side by side, so
	// both become strings with a single allocation.
	hexbuf [32]byte
	// lastTrace and lastTraceHex cache the previous span's trace id:
	// consecutive spans mostly share it, and then share its string too.
	lastTrace    pcommon.TraceID
	lastTraceHex string
}

// invalid reports a defective record at pos and returns the sink's verdict.
func (d *otlpDecoder) invalid(pos recordPos, path string, err error) error {
	return d.s.invalid(&ParseError{File: d.name, Line: pos.line, Offset: pos.offset, Path: path, Err: err})
}

// elementPath is the record path of resourceSpans element i.
func (d *otlpDecoder) elementPath(i int) string {
	return fmt.Sprintf("%sresourceSpans[%d]", d.prefix, i)
}

// spanPath is the record path of span k of scope j of resourceSpans element i.
func (d *otlpDecoder) spanPath(i, j, k int) string {
	return fmt.Sprintf("%sresourceSpans[%d].scopeSpans[%d].spans[%d]", d.prefix, i, j, k)
}

// resourceSpans normalizes and emits every span of one resourceSpans
// element. Bad spans go to the sink as ParseErrors; the returned error is
// the sink's, meaning stop.
func (d *otlpDecoder) resourceSpans(rs ptrace.ResourceSpans, pos recordPos) error {
	res := rs.Resource().Attributes()
	var service string
	if v, ok := res.Get("service.name"); ok {
		service = v.AsString()
	}
	instance := instanceFrom(func(key string) (string, bool) {
		v, ok := res.Get(key)
		if !ok {
			return "", false
		}
		return v.AsString(), true
	})
	scopes := rs.ScopeSpans()
	for j := range scopes.Len() {
		spans := scopes.At(j).Spans()
		for k := range spans.Len() {
			if err := d.normalize(spans.At(k), service, instance); err != nil {
				if err := d.invalid(pos, d.spanPath(pos.index, j, k), err); err != nil {
					return err
				}
				continue
			}
			if err := d.s.span(&d.span); err != nil {
				return err
			}
		}
	}
	return nil
}

// normalize fills d.span from one pdata span of the given service and
// instance. It returns the defect that makes the span unusable, or nil.
func (d *otlpDecoder) normalize(sp ptrace.Span, service, instance string) error {
	if service == "" {
		return errorf(ErrNoService, "resource has no service.name")
	}
	tid := sp.TraceID()
	if tid.IsEmpty() {
		return errorf(ErrBadID, "trace id missing or all zero")
	}
	sid := sp.SpanID()
	if sid.IsEmpty() {
		return errorf(ErrBadID, "span id missing or all zero")
	}
	start, end := uint64(sp.StartTimestamp()), uint64(sp.EndTimestamp())
	if start == 0 {
		return errorf(ErrBadTimestamp, "start time missing")
	}
	if start > math.MaxInt64 {
		return errorf(ErrBadTimestamp, "start time %d out of range", start)
	}
	var dur int64
	negative := end < start
	if !negative {
		if end > math.MaxInt64 {
			return errorf(ErrBadTimestamp, "end time %d out of range", end)
		}
		dur = int64(end - start)
	}

	d.span = cascade.Span{
		TraceID:   d.traceHex(tid),
		Service:   service,
		Instance:  instance,
		Operation: sp.Name(),
		Kind:      spanKind(sp.Kind()),
		Start:     int64(start),
		Duration:  dur,
	}
	d.setSpanIDs(sid, sp.ParentSpanID())

	status := sp.Status()
	switch status.Code() {
	case ptrace.StatusCodeOk:
		d.span.Status = cascade.StatusOK
	case ptrace.StatusCodeError:
		d.span.Status = cascade.StatusError
	default:
		d.span.Status = cascade.StatusUnset
	}
	attrs := sp.Attributes()
	applySpanAttrs(&d.span, func(key string) (string, bool) {
		v, ok := attrs.Get(key)
		if !ok {
			return "", false
		}
		return v.AsString(), true
	})
	// OTLP's own status is the truth: applySpanAttrs may have found an
	// error.type on a span that did not fail, which Span.ErrorType must not
	// carry.
	if d.span.Status != cascade.StatusError {
		d.span.ErrorType = ""
	} else if d.span.ErrorType == "" {
		d.span.ErrorType = exceptionType(sp.Events())
		if d.span.ErrorType == "" {
			d.span.ErrorType = status.Message()
		}
	}
	if negative {
		d.s.warn("negative duration (clamped to 0)")
	}
	return nil
}

// traceHex returns tid as lower-case hex, reusing the previous string when
// the trace is the same.
func (d *otlpDecoder) traceHex(tid pcommon.TraceID) string {
	if tid != d.lastTrace || d.lastTraceHex == "" {
		hex.Encode(d.hexbuf[:], tid[:])
		d.lastTraceHex = string(d.hexbuf[:])
		d.lastTrace = tid
	}
	return d.lastTraceHex
}

// setSpanIDs sets the span's id and parent id as lower-case hex, with one
// string allocation for both; an all-zero parent means a root span.
func (d *otlpDecoder) setSpanIDs(sid, parent pcommon.SpanID) {
	hex.Encode(d.hexbuf[:16], sid[:])
	if parent.IsEmpty() {
		d.span.SpanID = string(d.hexbuf[:16])
		return
	}
	hex.Encode(d.hexbuf[16:], parent[:])
	ids := string(d.hexbuf[:])
	d.span.SpanID, d.span.ParentSpanID = ids[:16], ids[16:]
}

// spanKind maps an OTLP span kind to cascade's; unspecified and unknown
// kinds map to the empty kind.
func spanKind(k ptrace.SpanKind) cascade.SpanKind {
	switch k {
	case ptrace.SpanKindServer:
		return cascade.KindServer
	case ptrace.SpanKindClient:
		return cascade.KindClient
	case ptrace.SpanKindProducer:
		return cascade.KindProducer
	case ptrace.SpanKindConsumer:
		return cascade.KindConsumer
	case ptrace.SpanKindInternal:
		return cascade.KindInternal
	}
	return cascade.KindUnspecified
}

// exceptionType returns the exception.type of the first "exception" event
// that records one, as the OpenTelemetry exception conventions place it;
// empty when there is none.
func exceptionType(events ptrace.SpanEventSlice) string {
	for i := range events.Len() {
		e := events.At(i)
		if e.Name() != "exception" {
			continue
		}
		if v, ok := e.Attributes().Get("exception.type"); ok {
			if t := v.AsString(); t != "" {
				return t
			}
		}
	}
	return ""
}

// pdataJSONError shortens a pdata (json-iterator) error to its operation,
// message and the few bytes around the fault, dropping the 100-byte
// context dump.
func pdataJSONError(err error) string {
	msg := err.Error()
	head, rest, found := strings.Cut(msg, ", error found in #")
	if !found {
		return msg
	}
	if _, near, ok := strings.Cut(rest, "...|"); ok {
		if near, _, ok := strings.Cut(near, "|..."); ok {
			return fmt.Sprintf("%s near %q", head, near)
		}
	}
	return head
}

// byteSize formats a size limit for errors: "256 MiB", or bytes below 1 MiB.
func byteSize(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readError names the input in an I/O error, which is not a defect of a
// record and so not a ParseError.
func readError(name string, err error) error {
	return fmt.Errorf("read %s: %w", name, err)
}

// errStopped ends a front end after a defect that leaves the rest of the
// input unreadable was reported and the sink chose to go on: there is
// nothing more to decode, and no error to return.
var errStopped = errors.New("ingest: decoding stopped")

// fatal reports a defect after which the input cannot be read further. It
// returns the sink's error, or errStopped when the sink accepted it.
func (d *otlpDecoder) fatal(pos recordPos, path string, err error) error {
	if err := d.invalid(pos, path, err); err != nil {
		return err
	}
	return errStopped
}

// otlpJSON is the JSON front end: it walks the outer structure of each
// top-level value with a jsonScanner and unmarshals resourceSpans elements
// one by one.
type otlpJSON struct {
	d    otlpDecoder
	sc   *jsonScanner
	un   ptrace.JSONUnmarshaler
	wrap []byte // `{"resourceSpans":[` element `]}`, reused
}

// Wrapping of one resourceSpans element into a document pdata reads.
const (
	wrapHead = `{"resourceSpans":[`
	wrapTail = `]}`
)

// run decodes every top-level value of the input.
func (j *otlpJSON) run() error {
	sc := j.sc
	sc.skipBOM()
	values := 0
	for {
		c, ok := sc.peek()
		if !ok {
			break
		}
		values++
		j.d.prefix = ""
		if c != '{' {
			pos := sc.here()
			if err := sc.skipValue(); err != nil {
				return j.syntax(err, "")
			}
			if err := j.d.invalid(pos, "", errorf(ErrSyntax, "top-level value is not an object")); err != nil {
				return err
			}
			continue
		}
		if err := j.object(true); err != nil {
			return err
		}
	}
	if sc.err != nil {
		return readError(j.d.name, sc.err)
	}
	if values == 0 {
		j.d.s.infer("empty input")
	}
	return nil
}

// syntax reports a scanner error, after which the input cannot be read
// further, at path. A read error is returned as such.
func (j *otlpJSON) syntax(err error, path string) error {
	if j.sc.err != nil {
		return readError(j.d.name, j.sc.err)
	}
	pos := j.sc.here()
	var se *scanError
	if errors.As(err, &se) {
		pos = se.pos
	}
	return j.d.fatal(pos, path, errorf(ErrSyntax, "%s", err.Error()))
}

// syntaxAt reports that the scanner met something other than what it
// expected at its current position.
func (j *otlpJSON) syntaxAt(path, want string) error {
	c, ok := j.sc.peek()
	if !ok {
		return j.syntax(errUnexpectedEnd, path)
	}
	return j.syntax(&scanError{pos: j.sc.here(), msg: fmt.Sprintf("want %s, found %q", want, c)}, path)
}

// object walks one object whose '{' is next in the input: the top-level
// value (top is true), or the "result" object of a Jaeger api_v3 answer.
// resourceSpans arrays are decoded, other members skipped.
func (j *otlpJSON) object(top bool) error {
	sc := j.sc
	path := strings.TrimSuffix(j.d.prefix, ".")
	sc.pos++ // '{'
	c, ok := sc.peek()
	if !ok {
		return j.syntax(errUnexpectedEnd, path)
	}
	if c == '}' {
		sc.pos++
		return nil
	}
	for {
		if c, _ := sc.peek(); c != '"' {
			return j.syntaxAt(path, "a member name")
		}
		key, err := sc.readString()
		if err != nil {
			return j.syntax(err, path)
		}
		if c, _ := sc.peek(); c != ':' {
			return j.syntaxAt(path, "':'")
		}
		sc.pos++
		c, ok := sc.peek()
		if !ok {
			return j.syntax(errUnexpectedEnd, path)
		}
		switch {
		case (key == "resourceSpans" || key == "resource_spans") && c == '[':
			if err := j.array(); err != nil {
				return err
			}
		case (key == "resourceSpans" || key == "resource_spans") && c != 'n':
			// Neither an array nor null: pdata would reject the document.
			pos := sc.here()
			if err := sc.skipValue(); err != nil {
				return j.syntax(err, j.d.prefix+"resourceSpans")
			}
			if err := j.d.invalid(pos, j.d.prefix+"resourceSpans", errorf(ErrSyntax, "not an array")); err != nil {
				return err
			}
		case key == "result" && top && c == '{':
			j.d.prefix = "result."
			err := j.object(false)
			j.d.prefix = ""
			if err != nil {
				return err
			}
		default:
			if err := sc.skipValue(); err != nil {
				return j.syntax(err, path)
			}
		}
		c, ok = sc.peek()
		switch {
		case !ok:
			return j.syntax(errUnexpectedEnd, path)
		case c == ',':
			sc.pos++
		case c == '}':
			sc.pos++
			return nil
		default:
			return j.syntaxAt(path, "',' or '}'")
		}
	}
}

// array decodes a resourceSpans array whose '[' is next in the input, one
// element at a time.
func (j *otlpJSON) array() error {
	sc := j.sc
	sc.pos++ // '['
	c, ok := sc.peek()
	if !ok {
		return j.syntax(errUnexpectedEnd, j.d.prefix+"resourceSpans")
	}
	if c == ']' {
		sc.pos++
		return nil
	}
	for i := 0; ; i++ {
		sc.peek()
		pos := sc.here()
		pos.index = i
		sc.keep = sc.pos
		sc.oversize = false
		if err := sc.skipValue(); err != nil {
			sc.keep = -1
			if errors.Is(err, errUnexpectedEnd) {
				// A truncated element: its start says more than the end.
				err = errorf(ErrSyntax, "unexpected end of input in element")
				if sc.err != nil {
					return readError(j.d.name, sc.err)
				}
				return j.d.fatal(pos, j.d.elementPath(i), err)
			}
			return j.syntax(err, j.d.elementPath(i))
		}
		var err error
		if sc.oversize {
			err = j.d.invalid(pos, j.d.elementPath(i), errorf(ErrSyntax, "element larger than %s", byteSize(sc.limit)))
		} else {
			err = j.element(sc.buf[sc.keep:sc.pos], pos)
		}
		sc.keep = -1
		if err != nil {
			return err
		}
		c, ok := sc.peek()
		switch {
		case !ok:
			return j.syntax(errUnexpectedEnd, j.d.elementPath(i))
		case c == ',':
			sc.pos++
		case c == ']':
			sc.pos++
			return nil
		default:
			return j.syntaxAt(j.d.elementPath(i), "',' or ']'")
		}
	}
}

// element unmarshals one resourceSpans element with pdata and emits its
// spans. pdata's errors carry no usable position, so they are reported
// against the element.
func (j *otlpJSON) element(elem []byte, pos recordPos) error {
	j.wrap = append(j.wrap[:0], wrapHead...)
	j.wrap = append(j.wrap, elem...)
	j.wrap = append(j.wrap, wrapTail...)
	td, err := j.un.UnmarshalTraces(j.wrap)
	if err != nil {
		return j.d.invalid(pos, j.d.elementPath(pos.index), errorf(ErrSyntax, "%s", pdataJSONError(err)))
	}
	rss := td.ResourceSpans()
	for k := range rss.Len() {
		if err := j.d.resourceSpans(rss.At(k), pos); err != nil {
			return err
		}
	}
	return nil
}

// errUnexpectedEnd is the scanner's error for input that ends inside a
// value.
var errUnexpectedEnd = errors.New("unexpected end of input")

// scanError is a JSON syntax error at a position.
type scanError struct {
	pos recordPos
	msg string
}

// Error returns the message; the position goes into the ParseError.
func (e *scanError) Error() string { return e.msg }

// jsonChunk is the scanner's usual initial buffer size.
const jsonChunk = 64 << 10

// jsonScanner reads JSON text from r in chunks and walks it byte by byte
// without building values. It keeps in memory the unread bytes and, while
// keep is set, every byte from keep on, so that a captured value stays
// contiguous; memory is thus bounded by the largest captured value.
//
// It checks structure (strings, nesting, separators within the outer
// objects) but not the content of captured values, which pdata checks.
type jsonScanner struct {
	r    io.Reader
	buf  []byte // buf[:len(buf)] holds data read; buf[pos:] is unread
	pos  int
	keep int   // first byte to keep across fills, or -1
	base int64 // input offset of buf[0]
	// lines counts the newlines in the input before buf[mark]; line
	// numbers are counted forward from there on demand.
	lines int
	mark  int
	eof   bool  // r is exhausted
	err   error // read error other than io.EOF
	// oversize is set when the value being kept grew past limit; the
	// scanner then stops keeping it and only skips.
	oversize bool
	stack    []byte // open brackets of the value being skipped
	chunk    int    // initial buffer size
	limit    int    // largest value kept; see oversize
}

// newJSONScanner returns a scanner over r whose buffer starts at chunk
// bytes.
func newJSONScanner(r io.Reader, chunk int) *jsonScanner {
	return &jsonScanner{r: r, keep: -1, chunk: max(chunk, 1), limit: maxOTLPRecord}
}

// here returns the position of the next unread byte.
func (s *jsonScanner) here() recordPos {
	return recordPos{offset: s.base + int64(s.pos), line: s.lineAt(s.pos)}
}

// lineAt returns the 1-based line of buf[p], counting newlines from the
// last position asked about.
func (s *jsonScanner) lineAt(p int) int {
	if p >= s.mark {
		s.lines += bytes.Count(s.buf[s.mark:p], []byte{'\n'})
	} else {
		s.lines -= bytes.Count(s.buf[p:s.mark], []byte{'\n'})
	}
	s.mark = p
	return s.lines + 1
}

// fill reads more input after the buffered bytes, first dropping bytes
// that are neither unread nor kept when the buffer is full. It reports
// whether any byte was added.
func (s *jsonScanner) fill() bool {
	if s.eof {
		return false
	}
	if len(s.buf) == cap(s.buf) {
		drop := s.pos
		if s.keep >= 0 && s.keep < drop {
			drop = s.keep
		}
		if s.keep >= 0 && s.pos-s.keep > s.limit {
			s.oversize = true
			s.keep = -1
			drop = s.pos
		}
		s.lineAt(drop)
		live := len(s.buf) - drop
		switch {
		case cap(s.buf) == 0:
			s.buf = make([]byte, 0, s.chunk)
		case live > cap(s.buf)/2:
			nb := make([]byte, live, 2*cap(s.buf))
			copy(nb, s.buf[drop:])
			s.buf = nb
		default:
			s.buf = s.buf[:copy(s.buf, s.buf[drop:])]
		}
		s.pos -= drop
		s.mark -= drop
		if s.keep >= 0 {
			s.keep -= drop
		}
		s.base += int64(drop)
	}
	for range 100 {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.err = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	s.eof, s.err = true, io.ErrNoProgress
	return false
}

// skipBOM drops a UTF-8 byte order mark at the start of the input.
func (s *jsonScanner) skipBOM() {
	for len(s.buf)-s.pos < 3 && s.fill() {
	}
	if bytes.HasPrefix(s.buf[s.pos:], []byte("\ufeff")) {
		s.pos += 3
	}
}

// peek skips whitespace and returns the next byte without consuming it;
// ok is false at the end of the input.
func (s *jsonScanner) peek() (c byte, ok bool) {
	for {
		for s.pos < len(s.buf) {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, true
			}
		}
		if !s.fill() {
			return 0, false
		}
	}
}

// readString consumes the string that starts at the next byte and returns
// its value. It is used for member names of the outer objects, never while
// an element is being kept.
func (s *jsonScanner) readString() (string, error) {
	s.keep, s.oversize = s.pos, false
	err := s.skipValue()
	start := s.keep
	s.keep = -1
	if err != nil {
		return "", err
	}
	if s.oversize {
		return "", &scanError{pos: s.here(), msg: "member name too long"}
	}
	raw := s.buf[start:s.pos]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", &scanError{pos: s.here(), msg: "bad escape in member name"}
	}
	return v, nil
}

// isScalarByte reports whether c may appear in a JSON number or literal.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// Byte classes outside strings, for skipValue.
const (
	classPlain   = iota // whitespace, separators, number and literal bytes
	classQuote          // '"'
	classOpen           // '{' or '['
	classClose          // '}' or ']'
	classInvalid        // anything else
)

// jsonClass maps each byte to its class.
var jsonClass = func() (t [256]uint8) {
	for c := range 256 {
		switch b := byte(c); {
		case b == '"':
			t[c] = classQuote
		case b == '{' || b == '[':
			t[c] = classOpen
		case b == '}' || b == ']':
			t[c] = classClose
		case b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == ',' || b == ':' || isScalarByte(b):
			t[c] = classPlain
		default:
			t[c] = classInvalid
		}
	}
	return t
}()

// quoteOrBackslash returns the index of the first '"' or '\\' in b at or
// after i, or len(b). It tests eight bytes at a time: a byte of w^pattern
// is zero where w matches, and (x-0x01…)&^x&0x80… flags zero bytes exactly
// up to the first one, which is all that is needed.
func quoteOrBackslash(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ (ones * '"')
		e := w ^ (ones * '\\')
		if m := ((q-ones)&^q | (e-ones)&^e) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// skipValue consumes one JSON value (after any whitespace). It checks
// strings, bracket nesting and the characters used, not the full grammar.
func (s *jsonScanner) skipValue() error {
	c, ok := s.peek()
	if !ok {
		return errUnexpectedEnd
	}
	if isScalarByte(c) {
		for {
			for s.pos < len(s.buf) {
				if !isScalarByte(s.buf[s.pos]) {
					return nil
				}
				s.pos++
			}
			if !s.fill() {
				return nil
			}
		}
	}
	if c != '"' && c != '{' && c != '[' {
		return s.invalidChar(c)
	}
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	// The state between buffers: inside a string, and just after its
	// backslash.
	inString, escaped := false, false
	for {
		buf, i := s.buf, s.pos
	scan:
		for i < len(buf) {
			if inString {
				if escaped {
					escaped = false
					i++
				}
				for {
					if i = quoteOrBackslash(buf, i); i >= len(buf) {
						break scan
					}
					if buf[i] == '"' {
						break
					}
					if i+1 == len(buf) {
						escaped = true
						i++
						break scan
					}
					i += 2
				}
				inString = false
				i++
				if len(stack) == 0 {
					s.pos = i
					return nil
				}
				continue
			}
			switch c := buf[i]; jsonClass[c] {
			case classPlain:
			case classQuote:
				inString = true
			case classOpen:
				stack = append(stack, c)
			case classClose:
				if len(stack) == 0 || stack[len(stack)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
					s.pos = i
					return s.invalidChar(c)
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					s.pos = i + 1
					return nil
				}
			default:
				s.pos = i
				return s.invalidChar(c)
			}
			i++
		}
		s.pos = i
		if !s.fill() {
			return errUnexpectedEnd
		}
	}
}

// invalidChar reports the unexpected byte c at the scanner's position.
func (s *jsonScanner) invalidChar(c byte) error {
	return &scanError{pos: s.here(), msg: fmt.Sprintf("invalid character %q", c)}
}

// otlpProto is the proto front end. It reads an ExportTraceServiceRequest
// field by field from a buffered reader and unmarshals each resourceSpans
// element (field 1) on its own, so memory is bounded by the largest element
// and each element has an offset.
type otlpProto struct {
	d   otlpDecoder
	br  *bufio.Reader
	off int64  // input offset of the next byte of br
	end int64  // input offset of the end of the current frame, or -1
	buf []byte // the field being read: tag, length and content, reused
}

// newOTLPProto returns a proto front end over r.
func newOTLPProto(name string, r io.Reader, s sink) *otlpProto {
	return &otlpProto{d: otlpDecoder{name: name, s: s}, br: bufio.NewReaderSize(r, 64<<10), end: -1}
}

// malformedError is a defect in a proto message's own encoding: a bad tag,
// length or wire type, or the input ending inside the message.
type malformedError struct {
	pos recordPos // of the field where the defect is; index counts resourceSpans
	msg string
	// truncated says the input ended inside the message, so that nothing
	// after it can be read either.
	truncated bool
}

// Error returns the message; the position goes into the ParseError.
func (e *malformedError) Error() string { return e.msg }

// fatal reports a malformed message after which the input cannot be read.
func (p *otlpProto) fatal(me *malformedError) error {
	return p.d.fatal(me.pos, p.d.elementPath(me.pos.index), errorf(ErrSyntax, "%s", me.msg))
}

// readErr turns an error of the underlying reader into a malformedError
// (the input ended early) or a read error.
func (p *otlpProto) readErr(err error, pos recordPos, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &malformedError{pos: pos, msg: "input ends inside " + what, truncated: true}
	}
	return readError(p.d.name, err)
}

// varint reads a base-128 varint, appending its bytes to p.buf. It does not
// read past the end of the current frame.
func (p *otlpProto) varint() (uint64, error) {
	var v uint64
	for i := range 10 {
		if p.end >= 0 && p.off >= p.end {
			return 0, errFrameEnd
		}
		c, err := p.br.ReadByte()
		if err != nil {
			return 0, err
		}
		p.off++
		p.buf = append(p.buf, c)
		if i == 9 && c > 1 {
			return 0, errVarintOverflow
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errVarintOverflow
}

// maxFieldNumber is the largest field number protobuf allows.
const maxFieldNumber = 1<<29 - 1

// Errors of varint.
var (
	errVarintOverflow = errors.New("varint overflows 64 bits")
	errFrameEnd       = errors.New("frame ends inside a field")
)

// read appends the next n bytes of input to p.buf, growing it as the
// bytes arrive rather than trusting n up front.
func (p *otlpProto) read(n int) error {
	for n > 0 {
		chunk := min(n, 1<<20)
		old := len(p.buf)
		p.buf = slices.Grow(p.buf, chunk)[:old+chunk]
		m, err := io.ReadFull(p.br, p.buf[old:])
		p.off += int64(m)
		p.buf = p.buf[:old+m]
		if err != nil {
			return err
		}
		n -= chunk
	}
	return nil
}

// skip drops the next n bytes of input.
func (p *otlpProto) skip(n int64) error {
	for n > 0 {
		chunk := int(min(n, 1<<30))
		m, err := p.br.Discard(chunk)
		p.off += int64(m)
		if err != nil {
			return err
		}
		n -= int64(m)
	}
	return nil
}

// request decodes one ExportTraceServiceRequest of limit bytes, or up to
// the end of the input when limit is negative. Fields other than
// resourceSpans are skipped.
func (p *otlpProto) request(limit int64) error {
	p.end = -1
	if limit >= 0 {
		p.end = p.off + limit
	}
	for i := 0; p.end < 0 || p.off < p.end; {
		pos := recordPos{index: i, offset: p.off}
		p.buf = p.buf[:0]
		tag, err := p.varint()
		if err == io.EOF && len(p.buf) == 0 && p.end < 0 {
			return nil
		}
		if err != nil {
			return p.varintErr(err, pos, "field tag")
		}
		field, wire := tag>>3, tag&7
		var n uint64
		switch wire {
		case 0: // varint
			if _, err := p.varint(); err != nil {
				return p.varintErr(err, pos, "varint")
			}
		case 1: // 64-bit
			n = 8
		case 5: // 32-bit
			n = 4
		case 2: // length-delimited
			if n, err = p.varint(); err != nil {
				return p.varintErr(err, pos, "length")
			}
		default:
			return &malformedError{pos: pos, msg: fmt.Sprintf("field %d has bad wire type %d", field, wire)}
		}
		if field == 0 || field > maxFieldNumber {
			return &malformedError{pos: pos, msg: fmt.Sprintf("bad field number %d", field)}
		}
		if field == 1 && wire != 2 {
			return &malformedError{pos: pos, msg: fmt.Sprintf("resourceSpans has wire type %d", wire)}
		}
		if n > maxOTLPRecord {
			return &malformedError{pos: pos, msg: fmt.Sprintf("field of %d bytes exceeds %s", n, byteSize(maxOTLPRecord))}
		}
		if p.end >= 0 && p.off+int64(n) > p.end {
			return &malformedError{pos: pos, msg: "field runs past the end of its frame"}
		}
		if field != 1 {
			if err := p.skip(int64(n)); err != nil {
				return p.readErr(err, pos, "a field")
			}
			continue
		}
		if err := p.read(int(n)); err != nil {
			return p.readErr(err, pos, "a resourceSpans element")
		}
		if err := p.element(pos); err != nil {
			return err
		}
		i++
	}
	return nil
}

// varintErr describes a failure to read the varint named what.
func (p *otlpProto) varintErr(err error, pos recordPos, what string) error {
	switch err {
	case errVarintOverflow:
		return &malformedError{pos: pos, msg: "bad " + what}
	case errFrameEnd:
		return &malformedError{pos: pos, msg: "frame ends inside a " + what}
	}
	return p.readErr(err, pos, "a "+what)
}

// element unmarshals the resourceSpans field in p.buf (tag, length and
// content, which is itself a one-element ExportTraceServiceRequest) and
// emits its spans.
func (p *otlpProto) element(pos recordPos) error {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(p.buf); err != nil {
		return p.d.invalid(pos, p.d.elementPath(pos.index), errorf(ErrSyntax, "%s", err.Error()))
	}
	rss := req.Traces().ResourceSpans()
	for k := range rss.Len() {
		if err := p.d.resourceSpans(rss.At(k), pos); err != nil {
			return err
		}
	}
	return nil
}

// frames decodes length-prefixed ExportTraceServiceRequest messages to the
// end of the input.
func (p *otlpProto) frames() error {
	var hdr [4]byte
	for frame := 0; ; frame++ {
		start := p.off
		pos := recordPos{offset: start}
		n, err := io.ReadFull(p.br, hdr[:])
		p.off += int64(n)
		switch {
		case err == io.EOF:
			return nil
		case err == io.ErrUnexpectedEOF:
			return p.d.fatal(pos, "", errorf(ErrSyntax, "frame %d: input ends inside its length", frame))
		case err != nil:
			return readError(p.d.name, err)
		}
		size := binary.BigEndian.Uint32(hdr[:])
		if size > maxOTLPRecord {
			return p.d.fatal(pos, "", errorf(ErrSyntax, "frame %d: length %d exceeds %s", frame, size, byteSize(maxOTLPRecord)))
		}
		err = p.request(int64(size))
		end := p.end
		if err == nil {
			continue
		}
		me, ok := err.(*malformedError)
		if !ok {
			return err
		}
		// A malformed message: report it and go on with the next frame,
		// whose position the framing still gives, unless the input ended.
		me.msg = fmt.Sprintf("frame %d: %s", frame, me.msg)
		if me.truncated {
			return p.fatal(me)
		}
		if err := p.d.invalid(me.pos, p.d.elementPath(me.pos.index), errorf(ErrSyntax, "%s", me.msg)); err != nil {
			return err
		}
		if err := p.skip(end - p.off); err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				return readError(p.d.name, err)
			}
			return p.d.fatal(pos, "", errorf(ErrSyntax, "frame %d: input ends inside the frame", frame))
		}
	}
}
