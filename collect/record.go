package collect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"cascade"
)

// A record is one batch of rows as a segment stores it: the rows one
// request (or one pulled answer) produced, with the notes its decoding made.
// Its encoding is
//
//	kind   byte     'T' (spans), 'M' (samples), or 'S' (spans as written
//	                before the messaging columns: read, no longer written)
//	count  uvarint  rows that follow
//	rows   ...      each field in cascade's declaration order: strings as
//	                uvarint length + bytes, integers as zigzag varints,
//	                the sample value as 8 little-endian bytes (IEEE 754),
//	                a span's links as a uvarint count then each link's
//	                trace and span ids
//	notes  uvarint  count, then each: byte 'W' (warning) or 'I' (inferred),
//	                string, uvarint repeat count
//
// Records are framed and checksummed by the segment (segment.go); the
// codec only has to reject what it cannot parse, never panic.

// Record kinds, the first byte of an encoded record.
const (
	recordSpansV1 = 'S' // up to resend_count
	recordSpans   = 'T' // every column of cascade.Span
	recordSamples = 'M'
)

// Note kinds inside a record.
const (
	noteWarn  = 'W'
	noteInfer = 'I'
)

// errBadRecord is what decodeRecord returns for bytes it cannot parse.
var errBadRecord = errors.New("malformed record")

// batch is the decoded content of one record.
type batch struct {
	spans   []cascade.Span
	samples []cascade.Sample
	notes   []note
}

// note is a warning or inference note, counted.
type note struct {
	kind  byte // noteWarn or noteInfer
	text  string
	count int64
}

// rows returns how many rows the batch holds.
func (b *batch) rows() int { return len(b.spans) + len(b.samples) }

// addNote counts one note, merging it with an equal one already held.
func (b *batch) addNote(kind byte, text string) {
	for i := range b.notes {
		if b.notes[i].kind == kind && b.notes[i].text == text {
			b.notes[i].count++
			return
		}
	}
	b.notes = append(b.notes, note{kind: kind, text: text, count: 1})
}

// encodeRecord appends the encoding of b to dst. A batch holds spans or
// samples, never both; one with samples is a samples record.
func encodeRecord(dst []byte, b *batch) []byte {
	if len(b.samples) > 0 {
		dst = append(dst, recordSamples)
		dst = binary.AppendUvarint(dst, uint64(len(b.samples)))
		for i := range b.samples {
			dst = appendSample(dst, &b.samples[i])
		}
	} else {
		dst = append(dst, recordSpans)
		dst = binary.AppendUvarint(dst, uint64(len(b.spans)))
		for i := range b.spans {
			dst = appendSpan(dst, &b.spans[i])
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.notes)))
	for _, n := range b.notes {
		dst = append(dst, n.kind)
		dst = appendString(dst, n.text)
		dst = binary.AppendUvarint(dst, uint64(n.count))
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendSpan(dst []byte, s *cascade.Span) []byte {
	dst = appendString(dst, s.TraceID)
	dst = appendString(dst, s.SpanID)
	dst = appendString(dst, s.ParentSpanID)
	dst = appendString(dst, s.Service)
	dst = appendString(dst, s.Instance)
	dst = appendString(dst, s.Operation)
	dst = appendString(dst, string(s.Kind))
	dst = binary.AppendVarint(dst, s.Start)
	dst = binary.AppendVarint(dst, s.Duration)
	dst = appendString(dst, string(s.Status))
	dst = appendString(dst, s.ErrorType)
	dst = binary.AppendVarint(dst, int64(s.StatusCode))
	dst = appendString(dst, s.Peer)
	dst = binary.AppendVarint(dst, int64(s.ResendCount))
	dst = binary.AppendUvarint(dst, uint64(len(s.Links)))
	for _, l := range s.Links {
		dst = appendString(dst, l.TraceID)
		dst = appendString(dst, l.SpanID)
	}
	dst = appendString(dst, s.MessagingSystem)
	dst = appendString(dst, s.MessagingOperation)
	dst = appendString(dst, s.Destination)
	dst = appendString(dst, s.ConsumerGroup)
	dst = appendString(dst, s.MessageID)
	dst = binary.AppendVarint(dst, int64(s.BatchCount))
	dst = binary.AppendVarint(dst, s.MessageBytes)
	return binary.AppendVarint(dst, int64(s.Redelivery))
}

func appendSample(dst []byte, s *cascade.Sample) []byte {
	dst = binary.AppendVarint(dst, s.Time)
	dst = appendString(dst, s.Service)
	dst = appendString(dst, s.Instance)
	dst = appendString(dst, s.Metric)
	dst = appendString(dst, string(s.Kind))
	dst = appendString(dst, s.Labels)
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.Value))
}

// recordReader parses one encoded record. Strings are interned per record
// (trace ids, services and operations repeat within a batch), so a decoded
// batch holds one copy of each.
type recordReader struct {
	b      []byte
	err    error
	intern map[string]string
}

func (r *recordReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errBadRecord, what)
	}
}

func (r *recordReader) byte1(what string) byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail(what + ": truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *recordReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what + ": bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what + ": bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) int32(what string) int32 {
	v := r.varint(what)
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail(what + ": out of range")
		return 0
	}
	return int32(v)
}

func (r *recordReader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail(what + ": string runs past the record")
		return ""
	}
	raw := r.b[:n]
	r.b = r.b[n:]
	if s, ok := r.intern[string(raw)]; ok {
		return s
	}
	s := string(raw)
	r.intern[s] = s
	return s
}

// count reads a row or note count, which cannot exceed the bytes left
// (every row and note takes at least one byte), so a corrupt count cannot
// make the reader allocate more than the record's size.
func (r *recordReader) count(what string) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail(fmt.Sprintf("%s: %d exceeds the %d bytes left", what, n, len(r.b)))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// decodeRecord parses one encoded record. It never panics; any defect is
// an error wrapping errBadRecord.
func decodeRecord(p []byte) (*batch, error) {
	r := &recordReader{b: p, intern: map[string]string{}}
	b := &batch{}
	switch kind := r.byte1("kind"); kind {
	case recordSpans, recordSpansV1:
		n := r.count("span count")
		b.spans = make([]cascade.Span, 0, n)
		for range n {
			var s cascade.Span
			s.TraceID = r.str("trace_id")
			s.SpanID = r.str("span_id")
			s.ParentSpanID = r.str("parent_span_id")
			s.Service = r.str("service")
			s.Instance = r.str("instance")
			s.Operation = r.str("operation")
			s.Kind = cascade.SpanKind(r.str("kind"))
			s.Start = r.varint("start")
			s.Duration = r.varint("duration")
			s.Status = cascade.Status(r.str("status"))
			s.ErrorType = r.str("error_type")
			s.StatusCode = r.int32("status_code")
			s.Peer = r.str("peer")
			s.ResendCount = r.int32("resend_count")
			if kind == recordSpans {
				if links := r.count("link count"); links > 0 {
					s.Links = make([]cascade.SpanLink, 0, links)
					for range links {
						s.Links = append(s.Links, cascade.SpanLink{TraceID: r.str("link trace_id"), SpanID: r.str("link span_id")})
					}
				}
				s.MessagingSystem = r.str("messaging_system")
				s.MessagingOperation = r.str("messaging_operation")
				s.Destination = r.str("destination")
				s.ConsumerGroup = r.str("consumer_group")
				s.MessageID = r.str("message_id")
				s.BatchCount = r.int32("batch_count")
				s.MessageBytes = r.varint("message_bytes")
				s.Redelivery = r.int32("redelivery")
			}
			if r.err != nil {
				break
			}
			b.spans = append(b.spans, s)
		}
	case recordSamples:
		n := r.count("sample count")
		b.samples = make([]cascade.Sample, 0, n)
		for range n {
			var s cascade.Sample
			s.Time = r.varint("time")
			s.Service = r.str("service")
			s.Instance = r.str("instance")
			s.Metric = r.str("metric")
			s.Kind = cascade.MetricKind(r.str("kind"))
			s.Labels = r.str("labels")
			if r.err == nil && len(r.b) < 8 {
				r.fail("value: truncated")
			}
			if r.err != nil {
				break
			}
			s.Value = math.Float64frombits(binary.LittleEndian.Uint64(r.b))
			r.b = r.b[8:]
			b.samples = append(b.samples, s)
		}
	default:
		if r.err == nil {
			r.fail(fmt.Sprintf("unknown kind %q", kind))
		}
	}
	n := r.count("note count")
	for range n {
		kind := r.byte1("note kind")
		text := r.str("note")
		c := r.uvarint("note count")
		if r.err == nil && kind != noteWarn && kind != noteInfer {
			r.fail(fmt.Sprintf("unknown note kind %q", kind))
		}
		if r.err == nil && c > math.MaxInt64 {
			r.fail("note count out of range")
		}
		if r.err != nil {
			break
		}
		b.notes = append(b.notes, note{kind: kind, text: text, count: int64(c)})
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Sprintf("%d bytes after the notes", len(r.b)))
	}
	if r.err != nil {
		return nil, r.err
	}
	return b, nil
}
