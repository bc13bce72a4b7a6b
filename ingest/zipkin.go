package ingest

import (
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"

	"cascade"
)

// decodeZipkinJSON decodes Zipkin v2 JSON spans. It takes every shape
// Zipkin's API and its senders write:
//
//   - an array of spans (POST /api/v2/spans, GET /api/v2/trace/{id});
//   - an array of traces, each an array of spans (GET /api/v2/traces);
//   - several such arrays one after another (JSON Lines), or a lone span
//     object.
//
// Spans are decoded one at a time, so memory does not grow with the input.
//
// A span's service is localEndpoint.serviceName (a span without one is an
// ErrNoService defect); its instance is the local endpoint's address
// (ipv4[:port], else ipv6), else a host tag. Its peer is
// remoteEndpoint.serviceName, else what the peer tags name, else the remote
// address. Zipkin has no span status: an "error" tag fails the span (its
// value, unless just "true", is the error type when no exception type is
// recorded), otel.status_code counts where the OpenTelemetry mapping wrote
// it, and otherwise an HTTP status code decides as statusFromHTTP says.
//
// Bad records become ParseErrors positioned at the byte offset of the span
// and reported to the sink; a syntax error that leaves the rest of the
// input unreadable is reported the same way and ends decoding, with a nil
// error unless the sink asks to stop.
func decodeZipkinJSON(name string, r io.Reader, s sink, _ *Options) error {
	d := &zipkinDecoder{w: newJSONWalker(name, r, s)}
	return d.w.run(d.document)
}

// zipkinEndpoint is a Zipkin endpoint: a service and its address.
type zipkinEndpoint struct {
	ServiceName string `json:"serviceName"`
	IPv4        string `json:"ipv4"`
	IPv6        string `json:"ipv6"`
	Port        int64  `json:"port"`
}

// address is the endpoint's ipv4[:port], else its ipv6 ([ipv6]:port with a
// port); empty when it has neither.
func (e *zipkinEndpoint) address() string {
	host := e.IPv4
	if host == "" {
		host = e.IPv6
	}
	switch {
	case host == "":
		return ""
	case e.Port > 0:
		return net.JoinHostPort(host, strconv.FormatInt(e.Port, 10))
	}
	return host
}

// zipkinSpan is one Zipkin v2 span. Annotations are kept raw: they are read
// only when a failed span has no error type in its tags.
type zipkinSpan struct {
	TraceID        string             `json:"traceId"`
	ID             string             `json:"id"`
	ParentID       string             `json:"parentId"`
	Kind           string             `json:"kind"`
	Name           string             `json:"name"`
	Timestamp      jsonMicros         `json:"timestamp"`
	Duration       jsonMicros         `json:"duration"`
	LocalEndpoint  zipkinEndpoint     `json:"localEndpoint"`
	RemoteEndpoint zipkinEndpoint     `json:"remoteEndpoint"`
	Annotations    json.RawMessage    `json:"annotations"`
	Tags           map[string]tagText `json:"tags"`
	Shared         bool               `json:"shared"`
	// BinaryAnnotations marks a Zipkin v1 span, which is not read.
	BinaryAnnotations json.RawMessage `json:"binaryAnnotations"`
}

// reset empties sp for the next span, keeping its map and buffers.
func (sp *zipkinSpan) reset() {
	tags := sp.Tags
	clear(tags)
	*sp = zipkinSpan{Tags: tags, Annotations: sp.Annotations[:0], BinaryAnnotations: sp.BinaryAnnotations[:0]}
}

// get looks a tag up; it is an attrGetter.
func (sp *zipkinSpan) get(key string) (string, bool) {
	v, ok := sp.Tags[key]
	return string(v), ok
}

// zipkinPath is the record path of a span: [i] in an array of spans,
// [i][j] in an array of traces, empty for a lone top-level span.
type zipkinPath struct{ i, j int }

// String formats the path.
func (p zipkinPath) String() string {
	switch {
	case p.i < 0:
		return ""
	case p.j < 0:
		return "[" + strconv.Itoa(p.i) + "]"
	}
	return "[" + strconv.Itoa(p.i) + "][" + strconv.Itoa(p.j) + "]"
}

// zipkinDecoder decodes one Zipkin JSON input.
type zipkinDecoder struct {
	w    *jsonWalker
	span zipkinSpan   // reused for every span
	out  cascade.Span // reused for every span
	anns []zipkinAnnotation
}

// document decodes one top-level value starting at off.
func (d *zipkinDecoder) document(off int64, c byte) error {
	switch c {
	case '{':
		return d.spanAt(off, c, zipkinPath{-1, -1})
	case '[':
	default:
		return d.w.unexpected(off, "", ErrUnsupported, "want an array of Zipkin v2 spans")
	}
	if _, err := d.w.dec.Token(); err != nil {
		return d.w.decodeErr(off, "", err)
	}
	for i := 0; d.w.dec.More(); i++ {
		off, c := d.w.peek()
		if c != '[' {
			if err := d.spanAt(off, c, zipkinPath{i, -1}); err != nil {
				return err
			}
			continue
		}
		// An array of traces: GET /api/v2/traces.
		path := zipkinPath{i, -1}.String()
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, path, err)
		}
		for j := 0; d.w.dec.More(); j++ {
			off, c := d.w.peek()
			if err := d.spanAt(off, c, zipkinPath{i, j}); err != nil {
				return err
			}
		}
		if err := d.w.end(path); err != nil {
			return err
		}
	}
	return d.w.end("")
}

// spanAt decodes the span at off, whose first byte is c, and passes it to
// the sink or reports its defect.
func (d *zipkinDecoder) spanAt(off int64, c byte, path zipkinPath) error {
	if c != '{' {
		return d.w.unexpected(off, path.String(), ErrBadValue, "want a span object")
	}
	d.span.reset()
	if err := d.w.dec.Decode(&d.span); err != nil {
		return d.w.decodeErr(off, path.String(), err)
	}
	notes, err := d.convert(&d.span, &d.out)
	if err != nil {
		return d.w.report(off, path.String(), err)
	}
	notes.report(d.w.s)
	if d.span.Shared {
		d.w.s.infer("Zipkin shared server spans keep their client's span id")
	}
	return d.w.s.span(&d.out)
}

// convert fills out from a decoded Zipkin span.
func (d *zipkinDecoder) convert(sp *zipkinSpan, out *cascade.Span) (spanNotes, error) {
	*out = cascade.Span{Operation: sp.Name}
	if len(sp.BinaryAnnotations) > 0 && string(sp.BinaryAnnotations) != "null" {
		return 0, errorf(ErrUnsupported, "Zipkin v1 span (binaryAnnotations): only v2 JSON is read")
	}
	var notes spanNotes
	var err error
	if out.TraceID, err = traceHexID("traceId", sp.TraceID); err != nil {
		return 0, err
	}
	if out.SpanID, err = spanHexID("id", sp.ID); err != nil {
		return 0, err
	}
	if out.ParentSpanID, err = parentHexID("parentId", sp.ParentID); err != nil {
		return 0, err
	}
	// A span that is its own parent, and one without a service, are
	// repaired by the sink, with a warning (checkSpan).
	out.Service = sp.LocalEndpoint.ServiceName
	if out.Start, out.Duration, notes, err = microsSpan("timestamp", sp.Timestamp, "duration", sp.Duration); err != nil {
		return 0, err
	}

	// The OpenTelemetry Zipkin mapping leaves kind out for internal spans
	// and says so in a span.kind tag.
	kind := sp.Kind
	if kind == "" {
		kind, _ = sp.get("span.kind")
	}
	if out.Kind = kindFromText(kind); out.Kind == cascade.KindUnspecified && unmappedKind(kind) {
		d.w.s.warn(warnUnknownKind)
	}
	if out.Instance = sp.LocalEndpoint.address(); out.Instance == "" {
		out.Instance = instanceFrom(sp.get)
	}

	out.Status = cascade.StatusUnset
	errTag, failed := sp.get("error")
	if failed && !strings.EqualFold(errTag, "false") {
		out.Status = cascade.StatusError
	} else if v, ok := sp.get("otel.status_code"); ok {
		out.Status = statusFromText(v)
	}

	out.Peer = sp.RemoteEndpoint.ServiceName
	applySpanAttrs(out, sp.get)
	if out.Peer == "" {
		out.Peer = sp.RemoteEndpoint.address()
	}
	if out.Status == cascade.StatusUnset && statusFromHTTP(out.Kind, out.StatusCode) == cascade.StatusError {
		out.Status = cascade.StatusError
		notes |= noteStatusFromCode
	}

	if out.Status != cascade.StatusError {
		out.ErrorType = ""
	} else if out.ErrorType == "" {
		out.ErrorType = d.exceptionType(sp.Annotations)
		if out.ErrorType == "" && !strings.EqualFold(errTag, "true") {
			out.ErrorType = errTag
		}
		if out.ErrorType == "" {
			out.ErrorType, _ = sp.get("otel.status_description")
		}
	}
	return notes, nil
}

// zipkinAnnotation is one Zipkin annotation: a timestamped text.
type zipkinAnnotation struct {
	Value string `json:"value"`
}

// exceptionType returns exception.type from the first "exception"
// annotation that records one. OpenTelemetry exporters write a span event
// as an annotation whose value is the event name and its attributes as a
// JSON object: "exception|{…}|0" (the Collector), or "exception: {…}" (the
// SDK exporters). Empty when there is none or it does not parse.
func (d *zipkinDecoder) exceptionType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	d.anns = d.anns[:0]
	if err := json.Unmarshal(raw, &d.anns); err != nil {
		return ""
	}
	for _, a := range d.anns {
		v := strings.TrimPrefix(a.Value, `"`)
		rest, ok := strings.CutPrefix(v, "exception")
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, `"|: `)
		i, j := strings.IndexByte(rest, '{'), strings.LastIndexByte(rest, '}')
		if i != 0 || j < 0 {
			continue
		}
		var attrs map[string]any
		if json.Unmarshal([]byte(rest[:j+1]), &attrs) != nil {
			continue
		}
		if t, ok := attrs["exception.type"].(string); ok && t != "" {
			return t
		}
	}
	return ""
}
