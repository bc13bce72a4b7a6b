package ingest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"cascade"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// maxOTLPRecord caps one proto frame, one proto resourceSpans element and
// one JSON resourceSpans element. Anything larger is reported as ErrSyntax:
// it is far beyond what any exporter batches (the collector's gRPC receiver
// takes 4 MiB by default), and a corrupt length must not make the decoder
// try to allocate gigabytes.
const maxOTLPRecord = 256 << 20

// recordPos locates one resourceSpans element in the input, for errors.
type recordPos struct {
	index  int   // position in its resourceSpans array
	offset int64 // byte offset of the element in the input
	line   int   // 1-based line of the element; 0 when the format has no lines
	// scope and span locate a piece of an element decoded on its own (a
	// big JSON element's spans, in batches): its first scope and span in
	// the element, added to the piece's own indices in record paths.
	scope, span int
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
				if err := d.invalid(pos, d.spanPath(pos.index, pos.scope+j, pos.span+k), err); err != nil {
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
	d.span.Links = d.links(sp.Links())
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
	if d.span.Kind == cascade.KindUnspecified && sp.Kind() != ptrace.SpanKindUnspecified {
		d.s.warn(warnUnknownKind)
	}
	return nil
}

// links returns a span's links with their ids as lower-case hex; nil when
// it has none. Links without a trace or span id say nothing and are
// dropped. The slice is new for every span: the sink keeps it.
func (d *otlpDecoder) links(ls ptrace.SpanLinkSlice) []cascade.SpanLink {
	if ls.Len() == 0 {
		return nil
	}
	out := make([]cascade.SpanLink, 0, ls.Len())
	var buf [48]byte
	for i := range ls.Len() {
		l := ls.At(i)
		tid, sid := l.TraceID(), l.SpanID()
		if tid.IsEmpty() || sid.IsEmpty() {
			continue
		}
		hex.Encode(buf[:32], tid[:])
		hex.Encode(buf[32:], sid[:])
		ids := string(buf[:])
		out = append(out, cascade.SpanLink{TraceID: ids[:32], SpanID: ids[32:]})
	}
	if len(out) == 0 {
		return nil
	}
	return out
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
