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

// This file holds the Jaeger query API decoder and the JSON streaming
// helpers it shares with the Zipkin decoder (zipkin.go).

// decodeJaegerJSON decodes the JSON that Jaeger's query service answers on
// /api/traces and /api/traces/{id}, and that its UI downloads:
//
//	{"data": [{"traceID": …, "spans": […], "processes": {"p1": {…}}}], "total": …, "errors": …}
//
// It also takes a single trace object without the "data" wrapper, a bare
// array of trace objects, and several such documents one after another
// (JSON Lines). Traces are decoded one at a time, so memory is bounded by
// the largest trace, not by the input.
//
// A span's service is its process's serviceName (processes[processID], or
// the span's own "process" object); its parent is its first CHILD_OF
// reference within the trace, else the first FOLLOWS_FROM, else the
// deprecated parentSpanID field, as Jaeger itself decides. Times are
// microseconds in the input and nanoseconds in the output. Status and error
// type come from the tags the OpenTelemetry-to-Jaeger translation writes
// (otel.status_code, error, otel.status_description) and from an
// "exception" log.
//
// Bad records become ParseErrors positioned at the byte offset of the span
// (or trace) and reported to the sink; a syntax error that leaves the rest
// of the input unreadable is reported the same way and ends decoding, with
// a nil error unless the sink asks to stop.
func decodeJaegerJSON(name string, r io.Reader, s sink, _ *Options) error {
	d := &jaegerDecoder{w: newJSONWalker(name, r, s)}
	return d.w.run(d.document)
}

// jaegerKV is one Jaeger tag or log field. Its value is kept as text
// whatever its "type" (string, bool, int64, float64, or binary as base64),
// so the type member is not decoded.
type jaegerKV struct {
	Key   string  `json:"key"`
	Value tagText `json:"value"`
}

// jaegerTags is a Jaeger tag list. Keys may repeat; the first wins.
type jaegerTags []jaegerKV

// get looks a tag up by key; it is an attrGetter.
func (t jaegerTags) get(key string) (string, bool) {
	for i := range t {
		if t[i].Key == key {
			return string(t[i].Value), true
		}
	}
	return "", false
}

// jaegerRef is one span reference.
type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// jaegerLog is one span log (an OpenTelemetry span event, whose name is
// the "event" field).
type jaegerLog struct {
	Fields jaegerTags `json:"fields"`
}

// jaegerProcess is a process entry: the service and its resource tags.
type jaegerProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        jaegerTags `json:"tags"`
}

// jaegerSpan is one span as the query API writes it. Logs are kept raw:
// they are read only when a failed span has no error type in its tags.
type jaegerSpan struct {
	TraceID       string          `json:"traceID"`
	SpanID        string          `json:"spanID"`
	ParentSpanID  string          `json:"parentSpanID"`
	OperationName string          `json:"operationName"`
	References    []jaegerRef     `json:"references"`
	StartTime     jsonMicros      `json:"startTime"`
	Duration      jsonMicros      `json:"duration"`
	Tags          jaegerTags      `json:"tags"`
	Logs          json.RawMessage `json:"logs"`
	ProcessID     string          `json:"processID"`
	Process       *jaegerProcess  `json:"process"`
}

// reset empties sp for the next span, keeping its slices' storage. The
// elements are zeroed because encoding/json decodes into reused elements
// without clearing fields the input leaves out.
func (sp *jaegerSpan) reset() {
	tags := sp.Tags[:cap(sp.Tags)]
	clear(tags)
	refs := sp.References[:cap(sp.References)]
	clear(refs)
	*sp = jaegerSpan{Tags: tags[:0], References: refs[:0], Logs: sp.Logs[:0]}
}

// jaegerProc is a resolved process: what a span takes from it.
type jaegerProc struct {
	service, instance string
}

// resolveJaegerProcess turns a process entry into the span fields it gives.
func resolveJaegerProcess(p *jaegerProcess) jaegerProc {
	return jaegerProc{service: p.ServiceName, instance: instanceFrom(p.Tags.get)}
}

// jaegerPending is a span (or a defect) held until its trace's processes
// are known; Jaeger writes "processes" after "spans".
type jaegerPending struct {
	span   cascade.Span
	procID string
	proc   jaegerProc // from the span's own "process", if any
	own    bool       // proc is set
	off    int64
	idx    int
	notes  spanNotes
	err    error
}

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

// jaegerTrace is the state of the trace object being decoded.
type jaegerTrace struct {
	path      string // "data[3]", "[3]" or "" for a top-level trace
	traceID   string // the trace-level traceID, as written
	procs     map[string]jaegerProc
	procsSeen bool
	pending   []jaegerPending
}

// spanPath is the record path of span i of the trace.
func (t *jaegerTrace) spanPath(i int) string {
	if t.path == "" {
		return "spans[" + strconv.Itoa(i) + "]"
	}
	return t.path + ".spans[" + strconv.Itoa(i) + "]"
}

// field is the record path of a field of the trace.
func (t *jaegerTrace) field(name string) string {
	if t.path == "" {
		return name
	}
	return t.path + "." + name
}

// jaegerDecoder decodes one Jaeger JSON input.
type jaegerDecoder struct {
	w       *jsonWalker
	span    jaegerSpan // reused for every span
	pending []jaegerPending
	logs    []jaegerLog
}

// document decodes one top-level value starting at off.
func (d *jaegerDecoder) document(off int64, c byte) error {
	switch c {
	case '{':
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, "", err)
		}
		return d.object(&jaegerTrace{}, true)
	case '[':
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, "", err)
		}
		return d.traces("")
	}
	return d.w.unexpected(off, "", ErrUnsupported, "want a Jaeger JSON object")
}

// traces decodes the elements of a trace array whose '[' has been read;
// prefix names the array in record paths ("data" or "").
func (d *jaegerDecoder) traces(prefix string) error {
	for i := 0; d.w.dec.More(); i++ {
		off, c := d.w.peek()
		path := prefix + "[" + strconv.Itoa(i) + "]"
		if c != '{' {
			if err := d.w.unexpected(off, path, ErrBadValue, "want a trace object"); err != nil {
				return err
			}
			continue
		}
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, path, err)
		}
		if err := d.object(&jaegerTrace{path: path}, false); err != nil {
			return err
		}
	}
	return d.w.end(prefix)
}

// object decodes the members of an object whose '{' has been read: a
// trace, or (top) the query API's answer, which may also be a bare trace.
func (d *jaegerDecoder) object(t *jaegerTrace, top bool) error {
	if !top {
		// Trace elements take turns with one buffer; a top-level trace,
		// which may enclose them, keeps its own.
		t.pending = d.pending[:0]
		defer func() { d.pending = t.pending[:0] }()
	}
	for d.w.dec.More() {
		key, off, err := d.w.key(t.path)
		if err != nil {
			return err
		}
		switch {
		case key == "spans":
			err = d.spans(t)
		case key == "processes":
			err = d.processes(t)
		case key == "traceID":
			err = d.w.decodeValue(&t.traceID, t.field(key))
		case top && key == "data":
			err = d.data()
		case top && key == "errors":
			err = d.apiErrors()
		default:
			err = d.w.skip(off, t.field(key))
		}
		if err != nil {
			return d.abandon(t, err)
		}
	}
	if err := d.w.end(t.path); err != nil {
		return d.abandon(t, err)
	}
	return d.flush(t)
}

// abandon ends a trace cut short by err. When err was fatal (the input
// cannot be read on), the trace's held spans are dropped: their processes
// never came.
func (d *jaegerDecoder) abandon(t *jaegerTrace, err error) error {
	if errors.Is(err, errWalkStop) && len(t.pending) > 0 {
		// The fatal defect has been reported; say what it cost.
		d.w.s.warn("spans of a truncated Jaeger trace dropped (processes never read)")
	}
	return err
}

// data decodes the value of the answer's "data" member.
func (d *jaegerDecoder) data() error {
	off, c := d.w.peek()
	switch c {
	case '[':
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, "data", err)
		}
		return d.traces("data")
	case 'n': // null: an answer with errors only
		return d.w.skip(off, "data")
	}
	return d.w.unexpected(off, "data", ErrBadValue, "want an array of traces")
}

// apiErrors reads the answer's "errors" member. The query service lists
// there what it could not answer (a trace id not found, a storage
// failure); each is counted as a warning, since the traces it did return
// are good.
func (d *jaegerDecoder) apiErrors() error {
	off, _ := d.w.peek()
	var errs []json.RawMessage
	if err := d.w.dec.Decode(&errs); err != nil {
		return d.w.decodeErr(off, "errors", err)
	}
	for range errs {
		d.w.s.warn("Jaeger query API answer lists an error")
	}
	return nil
}

// processes decodes a trace's process map.
func (d *jaegerDecoder) processes(t *jaegerTrace) error {
	off, _ := d.w.peek()
	var procs map[string]*jaegerProcess
	if err := d.w.dec.Decode(&procs); err != nil {
		defect, ok := d.w.recoverable(err)
		if !ok {
			return d.w.decodeErr(off, t.field("processes"), err)
		}
		// A value of the wrong type leaves the other processes usable.
		if err := d.w.report(off, t.field("processes"), defect); err != nil {
			return err
		}
	}
	t.procs = make(map[string]jaegerProc, len(procs))
	for id, p := range procs {
		if p != nil {
			t.procs[id] = resolveJaegerProcess(p)
		}
	}
	t.procsSeen = true
	return nil
}

// spans decodes a trace's span array, emitting each span at once when the
// trace's processes are known and holding it otherwise.
func (d *jaegerDecoder) spans(t *jaegerTrace) error {
	off, c := d.w.peek()
	switch c {
	case '[':
	case 'n':
		return d.w.skip(off, t.field("spans"))
	default:
		return d.w.unexpected(off, t.field("spans"), ErrBadValue, "want an array of spans")
	}
	if _, err := d.w.dec.Token(); err != nil {
		return d.w.decodeErr(off, t.field("spans"), err)
	}
	for i := 0; d.w.dec.More(); i++ {
		off, _ := d.w.peek()
		d.span.reset()
		p := jaegerPending{off: off, idx: i}
		if err := d.w.dec.Decode(&d.span); err != nil {
			defect, ok := d.w.recoverable(err)
			if !ok {
				return d.w.decodeErr(off, t.spanPath(i), err)
			}
			p.err = defect
		} else {
			p.notes, p.err = d.convert(&d.span, &p.span)
			p.procID = d.span.ProcessID
			if d.span.Process != nil && d.span.Process.ServiceName != "" {
				p.proc, p.own = resolveJaegerProcess(d.span.Process), true
			}
		}
		ready := p.err != nil || (t.procsSeen || p.own) && (p.span.TraceID != "" || t.traceID != "")
		if len(t.pending) == 0 && ready {
			if err := d.emit(t, &p); err != nil {
				return err
			}
			continue
		}
		t.pending = append(t.pending, p)
	}
	return d.w.end(t.field("spans"))
}

// flush emits the spans held until the end of the trace.
func (d *jaegerDecoder) flush(t *jaegerTrace) error {
	for i := range t.pending {
		if err := d.emit(t, &t.pending[i]); err != nil {
			return err
		}
	}
	t.pending = t.pending[:0]
	return nil
}

// emit completes a span with its process and trace id and passes it to the
// sink, or reports its defect.
func (d *jaegerDecoder) emit(t *jaegerTrace, p *jaegerPending) error {
	if p.err == nil {
		p.err = d.complete(t, p)
	}
	if p.err != nil {
		return d.w.report(p.off, t.spanPath(p.idx), p.err)
	}
	p.notes.report(d.w.s)
	return d.w.s.span(&p.span)
}

// complete fills the span fields that come from outside the span object:
// service and instance from its process, the trace id from the trace.
func (d *jaegerDecoder) complete(t *jaegerTrace, p *jaegerPending) error {
	proc, ok := p.proc, p.own
	if !ok {
		proc, ok = t.procs[p.procID]
	}
	switch {
	case !ok && p.procID == "":
		return errorf(ErrNoService, "span has neither processID nor process")
	case !ok:
		return errorf(ErrNoService, "processID %q is not in the trace's processes", p.procID)
	case proc.service == "":
		return errorf(ErrNoService, "process %q has no serviceName", p.procID)
	}
	p.span.Service, p.span.Instance = proc.service, proc.instance
	if p.span.TraceID == "" {
		if t.traceID == "" {
			return errorf(ErrBadID, "traceID missing")
		}
		id, err := traceHexID("traceID", t.traceID)
		if err != nil {
			return err
		}
		p.span.TraceID = id
	}
	return nil
}

// convert fills out from a decoded Jaeger span, except for the service,
// the instance and (when the span does not carry it) the trace id.
func (d *jaegerDecoder) convert(sp *jaegerSpan, out *cascade.Span) (spanNotes, error) {
	*out = cascade.Span{Operation: sp.OperationName}
	var notes spanNotes
	var err error
	if sp.TraceID != "" {
		if out.TraceID, err = traceHexID("traceID", sp.TraceID); err != nil {
			return 0, err
		}
	}
	if out.SpanID, err = spanHexID("spanID", sp.SpanID); err != nil {
		return 0, err
	}
	if out.ParentSpanID, err = jaegerParent(sp); err != nil {
		return 0, err
	}
	if out.Start, out.Duration, notes, err = microsSpan("startTime", sp.StartTime, "duration", sp.Duration); err != nil {
		return 0, err
	}

	tags := sp.Tags
	if v, ok := tags.get("span.kind"); ok {
		out.Kind = kindFromText(v)
	}
	out.Status = cascade.StatusUnset
	if v, ok := tags.get("otel.status_code"); ok {
		out.Status = statusFromText(v)
	}
	if out.Status == cascade.StatusUnset {
		if v, ok := tags.get("error"); ok && strings.EqualFold(v, "true") {
			out.Status = cascade.StatusError
		}
	}
	applySpanAttrs(out, tags.get)
	// Spans from old Jaeger clients carry no status but an HTTP code; a
	// span whose kind is unknown cannot say whose failure a 4xx is, so it
	// keeps what its tags say.
	if out.Status == cascade.StatusUnset && out.Kind != cascade.KindUnspecified && out.StatusCode != 0 {
		if statusFromHTTP(out.Kind, out.StatusCode) == cascade.StatusError {
			out.Status = cascade.StatusError
			notes |= noteStatusFromCode
		}
	}
	if out.Status != cascade.StatusError {
		out.ErrorType = ""
	} else if out.ErrorType == "" {
		out.ErrorType = d.exceptionType(sp.Logs)
		if out.ErrorType == "" {
			out.ErrorType, _ = tags.get("otel.status_description")
		}
	}
	return notes, nil
}

// jaegerParent picks the span's parent as Jaeger does: the first CHILD_OF
// reference within the span's trace, else the first FOLLOWS_FROM, else
// the deprecated parentSpanID field. An all-zero id means none.
func jaegerParent(sp *jaegerSpan) (string, error) {
	pick := -1
	for i := range sp.References {
		ref := &sp.References[i]
		if !sameHexID(ref.TraceID, sp.TraceID) {
			continue
		}
		if strings.EqualFold(ref.RefType, "CHILD_OF") {
			pick = i
			break
		}
		if pick < 0 && strings.EqualFold(ref.RefType, "FOLLOWS_FROM") {
			pick = i
		}
	}
	if pick >= 0 {
		return parentHexID("references.spanID", sp.References[pick].SpanID)
	}
	return parentHexID("parentSpanID", sp.ParentSpanID)
}

// exceptionType returns exception.type from the first log whose event is
// "exception"; empty when there is none or the logs do not parse.
func (d *jaegerDecoder) exceptionType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	d.logs = d.logs[:0]
	if err := json.Unmarshal(raw, &d.logs); err != nil {
		return ""
	}
	for _, l := range d.logs {
		if ev, _ := l.Fields.get("event"); ev == "exception" {
			if v, ok := l.Fields.get("exception.type"); ok && v != "" {
				return v
			}
		}
	}
	return ""
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
