package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

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
	j := &otlpJSON{d: otlpDecoder{name: name, s: s}, sc: sc, streamAt: otlpStreamAt}
	err := j.run()
	if err == errStopped {
		return nil
	}
	return err
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

// otlpJSON is the JSON front end: it walks the outer structure of each
// top-level value with a jsonScanner and unmarshals resourceSpans elements
// one by one.
type otlpJSON struct {
	d    otlpDecoder
	sc   *jsonScanner
	un   ptrace.JSONUnmarshaler
	wrap []byte // `{"resourceSpans":[` element `]}`, reused
	// found is set when the top-level object being walked names
	// resourceSpans (or a Jaeger api_v3 result): one that does not, such
	// as a Jaeger line in an OTLP JSONL file, holds nothing read and is
	// dropped with a warning.
	found bool
	// streamAt is the size from which a resourceSpans element's spans are
	// decoded in batches of about this size rather than whole (see walk).
	streamAt int
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
		pos := sc.here()
		j.found = false
		if err := j.object(true); err != nil {
			return err
		}
		if !j.found {
			j.d.s.warnAt(noticeNotOTLP+" (dropped)", &ParseError{Line: pos.line, Offset: pos.offset})
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
		if key == "resourceSpans" || key == "resource_spans" || key == "result" {
			j.found = true
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
		streamed, err := j.walk(pos)
		if ws := (*walkStop)(nil); errors.As(err, &ws) {
			sc.keep = -1
			return ws.err
		}
		if err != nil {
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
		switch {
		case streamed:
		case sc.oversize:
			err = j.d.invalid(pos, j.d.elementPath(i), errorf(ErrSyntax, "element larger than %s", byteSize(sc.limit)))
		default:
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
	return s.unquote(s.buf[start:s.pos])
}

// unquote returns the value of the JSON string raw, quotes included.
func (s *jsonScanner) unquote(raw []byte) (string, error) {
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
	return s.skipIn(nil)
}

// skipIn consumes JSON text up to the close of the brackets in open (from
// the outermost), or, with none open, one string, object or array. The
// next byte is not inside a string.
func (s *jsonScanner) skipIn(open []byte) error {
	stack := append(s.stack[:0], open...)
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
