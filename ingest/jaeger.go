package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"cascade"
)

// This file holds the Jaeger query API decoder. The JSON streaming
// helpers it shares with the Zipkin decoder (zipkin.go) are in json_walk.go.

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
	// answer is what the top-level object of the current document said
	// about itself as a query API answer.
	answer struct {
		nullData bool   // "data": null
		errs     int    // entries of "errors"
		first    string // the first entry, as "code 500: msg"
		off      int64  // offset of "errors"
	}
}

// document decodes one top-level value starting at off.
func (d *jaegerDecoder) document(off int64, c byte) error {
	switch c {
	case '{':
		if _, err := d.w.dec.Token(); err != nil {
			return d.w.decodeErr(off, "", err)
		}
		d.answer.nullData, d.answer.errs, d.answer.first, d.answer.off = false, 0, "", 0
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
	if top && d.answer.errs > 0 {
		if err := d.errorAnswer(t); err != nil {
			return err
		}
	}
	return d.flush(t)
}

// errorAnswer judges an answer that lists errors. With traces beside them
// (a partial answer) each error is counted as a warning, since the traces
// it did return are good; with "data": null and no spans it is an error
// answer saved in place of data, which is reported at its "errors".
func (d *jaegerDecoder) errorAnswer(t *jaegerTrace) error {
	a := &d.answer
	if !a.nullData || len(t.pending) > 0 {
		for range a.errs {
			d.w.s.warn("Jaeger query API answer lists an error")
		}
		return nil
	}
	more := ""
	if a.errs > 1 {
		more = fmt.Sprintf(" (and %d more)", a.errs-1)
	}
	return d.w.report(a.off, "errors", errorf(ErrErrorAnswer,
		"the Jaeger query API answered with errors and no traces: %s%s", a.first, more))
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
		d.answer.nullData = true
		return d.w.skip(off, "data")
	}
	return d.w.unexpected(off, "data", ErrBadValue, "want an array of traces")
}

// apiErrors reads the answer's "errors" member. The query service lists
// there what it could not answer (a trace id not found, a storage
// failure); errorAnswer judges them once the whole answer is read.
func (d *jaegerDecoder) apiErrors() error {
	off, _ := d.w.peek()
	var errs []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if err := d.w.dec.Decode(&errs); err != nil {
		return d.w.decodeErr(off, "errors", err)
	}
	if len(errs) > 0 && d.answer.errs == 0 {
		d.answer.off = off
		d.answer.first = fmt.Sprintf("code %d %q", errs[0].Code, errs[0].Msg)
	}
	d.answer.errs += len(errs)
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
		// A reference without a traceID is to the span's own trace.
		for i := range p.span.Links {
			if p.span.Links[i].TraceID == "" {
				p.span.Links[i].TraceID = id
			}
		}
	}
	return nil
}

// links returns the span's references other than its parent, as
// OpenTelemetry's Jaeger receiver reads them: FOLLOWS_FROM references to
// another trace (the OpenTelemetry-to-Jaeger translation writes each span
// link so), and any reference that is not the one jaegerParent picked. A
// reference with a bad id is dropped with a warning. nil when none; the
// slice is new for every span.
func (d *jaegerDecoder) links(sp *jaegerSpan, out *cascade.Span) []cascade.SpanLink {
	var links []cascade.SpanLink
	for i := range sp.References {
		ref := &sp.References[i]
		sid, err := spanHexID("references.spanID", ref.SpanID)
		if err != nil {
			d.w.s.warn("span reference with a bad id (dropped)")
			continue
		}
		if sid == out.ParentSpanID && sameHexID(ref.TraceID, sp.TraceID) {
			continue // the parent
		}
		tid := out.TraceID
		if ref.TraceID != "" {
			if tid, err = traceHexID("references.traceID", ref.TraceID); err != nil {
				d.w.s.warn("span reference with a bad id (dropped)")
				continue
			}
		}
		links = append(links, cascade.SpanLink{TraceID: tid, SpanID: sid})
	}
	return links
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
	out.Links = d.links(sp, out)
	if out.Start, out.Duration, notes, err = microsSpan("startTime", sp.StartTime, "duration", sp.Duration); err != nil {
		return 0, err
	}

	tags := sp.Tags
	if v, ok := tags.get("span.kind"); ok {
		if out.Kind = kindFromText(v); out.Kind == cascade.KindUnspecified && unmappedKind(v) {
			d.w.s.warn(warnUnknownKind)
		}
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
