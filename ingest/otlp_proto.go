package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

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
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(migrateScopeSpans(p.buf))
	if err != nil {
		return p.d.invalid(pos, p.d.elementPath(pos.index), errorf(ErrSyntax, "%s", err.Error()))
	}
	rss := td.ResourceSpans()
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

// migrateScopeSpans does for one resourceSpans field (tag, length and
// content) what an ExportRequest's UnmarshalProto does after unmarshaling
// and ptrace's unmarshaler, which this decoder uses, does not: a
// resourceSpans that has no scopeSpans (field 2) takes the deprecated
// instrumentationLibrarySpans (field 1000, the same message) in their
// place. It returns buf itself when there is nothing to migrate or the
// bytes do not parse (the unmarshaler then reports them). ptraceotlp,
// which does the migration, would link grpc into every cascade command
// for this one call (2.2 ms of each process's start-up; BENCHMARKS.md).
func migrateScopeSpans(buf []byte) []byte {
	const (
		scopeSpans      = 2
		deprecatedSpans = 1000
	)
	num, typ, n := protowire.ConsumeTag(buf)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return buf
	}
	content, m := protowire.ConsumeBytes(buf[n:])
	if m < 0 || n+m != len(buf) {
		return buf
	}
	deprecated := false
	for b := content; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return buf
		}
		if num == scopeSpans {
			return buf
		}
		if num == deprecatedSpans && typ == protowire.BytesType {
			deprecated = true
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return buf
		}
		b = b[n+m:]
	}
	if !deprecated {
		return buf
	}
	// Field 1000 becomes field 2, in place of each entry, so the order is
	// kept; everything else is copied as it is.
	out := make([]byte, 0, len(content))
	for b := content; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if num == deprecatedSpans && typ == protowire.BytesType {
			out = protowire.AppendTag(out, scopeSpans, protowire.BytesType)
			out = append(out, b[n:n+m]...)
		} else {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	res := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(res, out)
}
