package ingest

import (
	"encoding/hex"
	"fmt"
	"io"

	"cascade"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// noteOTLPLogNoService says a resource named no service.
const noteOTLPLogNoService = "log service: resource has neither service.name nor k8s.pod.name, left empty"

// decodeOTLPLogsJSON decodes OTLP logs JSON: LogsData or
// ExportLogsServiceRequest objects, one per line as the Collector's file
// exporter writes them (a bad line is reported with its number and
// skipped), or one or more pretty-printed objects. pdata's
// plog.JSONUnmarshaler reads each.
func decodeOTLPLogsJSON(name string, r io.Reader, s logSink, _ *Options) error {
	d := &otlpLogsDecoder{name: name, s: s}
	u := &plog.JSONUnmarshaler{}
	return eachOTLPJSONRecord(name, r, func(rec []byte, line int, off int64) error {
		ld, err := unmarshalOTLPLogs(u, rec)
		if err != nil {
			return s.invalid(&ParseError{Line: line, Offset: off, Err: errorf(ErrSyntax, "%v", err)})
		}
		d.line, d.offset = line, off
		return d.logs(ld)
	})
}

// decodeOTLPLogsProto decodes a binary ExportLogsServiceRequest (LogsData
// has the same encoding), or the file exporter's proto format: messages
// each preceded by its length as a 4-byte big-endian integer, told apart
// by the first byte (0 for a length under 16 MiB, 0x0a for the first field
// of a message).
func decodeOTLPLogsProto(name string, r io.Reader, s logSink, _ *Options) error {
	buf, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	d := &otlpLogsDecoder{name: name, s: s}
	u := &plog.ProtoUnmarshaler{}
	one := func(rec []byte, off int64) error {
		ld, err := unmarshalOTLPLogs(u, rec)
		if err != nil {
			return s.invalid(&ParseError{Offset: off, Err: errorf(ErrSyntax, "%v", err)})
		}
		d.line, d.offset = 0, off
		return d.logs(ld)
	}
	if len(buf) == 0 {
		s.infer(noticeEmpty)
		return nil
	}
	return eachFrame(buf, one)
}

// logsUnmarshaler is plog's JSON or proto unmarshaler.
type logsUnmarshaler interface {
	UnmarshalLogs(buf []byte) (plog.Logs, error)
}

// unmarshalOTLPLogs runs a pdata unmarshaler and turns a panic inside it
// into an error: the input is untrusted and decoders never panic.
func unmarshalOTLPLogs(u logsUnmarshaler, rec []byte) (ld plog.Logs, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("pdata: %v", p)
		}
	}()
	return u.UnmarshalLogs(rec)
}

// otlpLogsDecoder turns pdata log records into cascade log records.
type otlpLogsDecoder struct {
	name   string
	s      logSink
	line   int   // line of the current message, 0 when unknown
	offset int64 // offset of the current message
	noted  bool
	toks   []logToken
	rec    cascade.LogRecord
}

// logs emits every record of one message. Records without a time go to
// the sink as ParseErrors with their record path.
func (d *otlpLogsDecoder) logs(ld plog.Logs) error {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		res := rl.Resource().Attributes()
		get := func(key string) (string, bool) {
			v, ok := res.Get(key)
			if !ok {
				return "", false
			}
			return v.AsString(), true
		}
		service, _ := get("service.name")
		instance := instanceFrom(get)
		if pod, ok := get("k8s.pod.name"); ok && pod != "" {
			if service == "" {
				service = serviceFromPod(pod)
			}
			instance = pod
		}
		if service == "" && !d.noted {
			d.noted = true
			d.s.infer(noteOTLPLogNoService)
		}
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				if err := d.record(lrs.At(k), service, instance); err != nil {
					pe := &ParseError{File: d.name, Line: d.line, Offset: d.offset,
						Path: fmt.Sprintf("resourceLogs[%d].scopeLogs[%d].logRecords[%d]", i, j, k), Err: err}
					if err := d.s.invalid(pe); err != nil {
						return err
					}
					continue
				}
				if err := d.s.log(&d.rec); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// record fills d.rec from one pdata record, or returns its defect.
func (d *otlpLogsDecoder) record(lr plog.LogRecord, service, instance string) error {
	r := &d.rec
	*r = cascade.LogRecord{Service: service, Instance: instance}
	t := lr.Timestamp()
	if t == 0 {
		t = lr.ObservedTimestamp()
	}
	if t == 0 {
		return errorf(ErrBadTimestamp, "neither timeUnixNano nor observedTimeUnixNano is set")
	}
	if uint64(t) > 1<<63-1 {
		return errorf(ErrBadTimestamp, "time %d is out of range", uint64(t))
	}
	r.Time = int64(t)
	body := ""
	if b := lr.Body(); b.Type() != pcommon.ValueTypeEmpty {
		body = b.AsString()
	}
	var l logLine
	l, d.toks = parseLogLine(body, d.toks)
	r.Body = l.body
	r.Severity = severityFromNumber(lr.SeverityNumber())
	if r.Severity == "" {
		r.Severity = normalizeSeverity(lr.SeverityText())
	}
	if r.Severity == "" {
		r.Severity = l.severity
	}
	if tid := lr.TraceID(); !tid.IsEmpty() {
		r.TraceID = hex.EncodeToString(tid[:])
	} else {
		r.TraceID = l.traceID
	}
	if sid := lr.SpanID(); !sid.IsEmpty() {
		r.SpanID = hex.EncodeToString(sid[:])
	} else {
		r.SpanID = l.spanID
	}
	return nil
}

// severityFromNumber maps an OTLP severity number to a stored severity:
// 1-4 TRACE, 5-8 DEBUG, 9-12 INFO, 13-16 WARN, 17-20 ERROR, 21-24 FATAL;
// "" for unspecified or out of range.
func severityFromNumber(n plog.SeverityNumber) string {
	if n < 1 || n > 24 {
		return ""
	}
	return [...]string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}[(n-1)/4]
}
