package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"cascade"
)

// newCSVReader returns a streaming csv.Reader over r whose separator
// (comma, tab or semicolon, whichever the first line holds most of) is
// sniffed from the first line. Records are reused between reads and may
// have any number of fields; callers check the count.
func newCSVReader(r io.Reader) *csv.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 4096 {
		br = bufio.NewReaderSize(r, 16<<10)
	}
	head, _ := br.Peek(4096)
	line, _, _ := bytes.Cut(head, []byte("\n"))
	cr := csv.NewReader(br)
	cr.Comma = ','
	best := bytes.Count(line, []byte(","))
	for _, c := range []byte{'\t', ';'} {
		if n := bytes.Count(line, []byte{c}); n > best {
			cr.Comma, best = rune(c), n
		}
	}
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	return cr
}

// readCSVHeader reads the header record and returns a copy of it with a
// byte-order mark and surrounding spaces removed, and its line. It returns
// io.EOF for an empty input.
func readCSVHeader(name string, cr *csv.Reader) ([]string, int, error) {
	rec, err := cr.Read()
	if err != nil {
		return nil, 0, csvReadError(name, 0, err)
	}
	line, _ := cr.FieldPos(0)
	header := slices.Clone(rec)
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	return header, line, nil
}

// csvIsHeader reports whether a record repeats the header, as it does
// where CSV files were concatenated.
func csvIsHeader(rec, header []string) bool {
	if len(rec) != len(header) || strings.TrimSpace(rec[0]) != header[0] {
		return false
	}
	for i := 1; i < len(rec); i++ {
		if strings.TrimSpace(rec[i]) != header[i] {
			return false
		}
	}
	return true
}

// csvReadError turns an error of csv.Reader.Read into a *ParseError for a
// malformed record, and wraps any other error (reading the input) with the
// input's name. io.EOF is returned as it is.
func csvReadError(name string, offset int64, err error) error {
	if err == io.EOF {
		return err
	}
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		return &ParseError{File: name, Line: ce.Line, Offset: offset,
			Err: errorf(ErrSyntax, "position %d: %v", ce.Column, ce.Err)}
	}
	return fmt.Errorf("read %s: %w", name, err)
}

// csvFieldCountError reports a record whose field count differs from the
// header's.
func csvFieldCountError(name string, cr *csv.Reader, offset int64, got, want int) *ParseError {
	line := 0
	if got > 0 {
		line, _ = cr.FieldPos(0)
	}
	return &ParseError{File: name, Line: line, Offset: offset,
		Err: errorf(ErrSyntax, "record has %d fields, header has %d", got, want)}
}

// csvHeaderText renders a header for an error message, cut to a readable
// length.
func csvHeaderText(header []string) string {
	s := strings.Join(header, ",")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// csvColumn finds a header column by name, exactly first and then ignoring
// case; -1 when absent.
func csvColumn(header []string, name string) int {
	if i := slices.Index(header, name); i >= 0 {
		return i
	}
	for i, h := range header {
		if strings.EqualFold(h, name) {
			return i
		}
	}
	return -1
}

// detectSpanCSVPreset returns the preset whose columns the header has
// (all of them, spelled exactly), or nil.
func detectSpanCSVPreset(header []string) *CSVMap {
	m := NezhaCSVMap()
	for _, f := range m.fields() {
		if *f.col != "" && !slices.Contains(header, *f.col) {
			return nil
		}
	}
	return m
}

// spanCSVColumns holds the header index of each mapped column, -1 when
// the mapping names none.
type spanCSVColumns struct {
	trace, span, parent, service, instance, operation, kind int
	start, end, duration, status, statusCode, peer          int
	links, system, op, dest, group, msgID, batch, bytes     int
	redelivery                                              int
}

// resolveSpanCSV finds m's columns in the header, or reports every one
// that is missing.
func resolveSpanCSV(name string, line int, header []string, m *CSVMap) (spanCSVColumns, error) {
	idx := make(map[string]int, 13)
	var missing []string
	for _, f := range m.fields() {
		idx[f.key] = -1
		if *f.col == "" {
			continue
		}
		if idx[f.key] = csvColumn(header, *f.col); idx[f.key] < 0 {
			missing = append(missing, fmt.Sprintf("%q for %s", *f.col, f.key))
		}
	}
	c := spanCSVColumns{
		trace: idx["trace_id"], span: idx["span_id"], parent: idx["parent_span_id"],
		service: idx["service"], instance: idx["instance"], operation: idx["operation"],
		kind: idx["kind"], start: idx["start"], end: idx["end"], duration: idx["duration"],
		status: idx["status"], statusCode: idx["status_code"], peer: idx["peer"],
		links: idx["links"], system: idx["messaging_system"], op: idx["messaging_operation"],
		dest: idx["messaging_destination"], group: idx["messaging_consumer_group"],
		msgID: idx["messaging_message_id"], batch: idx["messaging_batch_count"],
		bytes: idx["messaging_message_bytes"], redelivery: idx["messaging_redelivery"],
	}
	if len(missing) > 0 {
		return c, &ParseError{File: name, Line: line, Path: "header",
			Err: errorf(ErrMissingField, "no column %s in %s", strings.Join(missing, ", "), csvHeaderText(header))}
	}
	return c, nil
}

// spanCSVDecoder holds the state of one span CSV input.
type spanCSVDecoder struct {
	name   string
	s      sink
	cr     *csv.Reader
	header []string
	m      *CSVMap
	c      spanCSVColumns
	roots  []string
	offset int64 // byte offset of the current record

	services    map[string]string // pod (or service) cell → service
	successFlag bool              // true in the status column means ok
	emitted     bool
	statusNote  string
	span        cascade.Span
}

// maxCSVCache bounds the per-input caches of derived names.
const maxCSVCache = 4096

// decodeSpanCSV reads a span CSV through opts.CSVMap, or through the preset
// its header matches when that is nil, one span per record.
func decodeSpanCSV(name string, r io.Reader, s sink, opts *Options) error {
	cr := newCSVReader(r)
	header, line, err := readCSVHeader(name, cr)
	if err == io.EOF {
		s.infer("empty input")
		return nil
	}
	if err != nil {
		return err
	}
	var m *CSVMap
	if opts != nil {
		m = opts.CSVMap
	}
	if m == nil {
		if m = detectSpanCSVPreset(header); m == nil {
			return &ParseError{File: name, Line: line, Path: "header",
				Err: errorf(ErrUnsupported, "unknown CSV layout %s: give --csv-map", csvHeaderText(header))}
		}
	} else if err := m.Validate(); err != nil {
		return fmt.Errorf("csv map: %w", err)
	}
	c, err := resolveSpanCSV(name, line, header, m)
	if err != nil {
		return err
	}
	d := &spanCSVDecoder{name: name, s: s, cr: cr, header: header, m: m, c: c,
		roots: m.RootParents, services: map[string]string{}}
	if d.roots == nil {
		d.roots = defaultRootParents
	}
	if c.status >= 0 {
		d.successFlag = csvSuccessColumn(header[c.status])
	}
	d.statusNote = "status: not recorded by format (CSV map)"
	if m.Name != "" {
		d.statusNote = "status: not recorded by format (" + m.Name + " CSV)"
	}
	return d.run()
}

// run decodes the records after the header.
func (d *spanCSVDecoder) run() error {
	return csvRecords(d.cr, d.name, d.header, d.s, &d.offset, func(rec []string) error {
		if pe := d.record(rec); pe != nil {
			return d.s.invalid(pe)
		}
		if !d.emitted {
			d.emitted = true
			if d.c.status < 0 {
				if d.c.statusCode >= 0 {
					d.s.infer("status: inferred from status code")
				} else {
					d.s.infer(d.statusNote)
				}
			}
			if d.c.kind < 0 {
				d.s.infer("kind: not recorded by format")
			}
		}
		return d.s.span(&d.span)
	})
}

// recordSink is the part of sink (and logSink) that csvRecords needs.
type recordSink interface {
	invalid(err *ParseError) error
	infer(note string)
}

// csvRecords reads the records after the header and hands each to fn,
// with *offset at its first byte: records the CSV reader cannot parse go
// to s as invalid, a repeated header line is skipped, and an input with
// no record says so.
func csvRecords(cr *csv.Reader, name string, header []string, s recordSink, offset *int64, fn func(rec []string) error) error {
	records := 0
	for {
		*offset = cr.InputOffset()
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		records++
		if err != nil {
			rerr := csvReadError(name, *offset, err)
			pe, ok := rerr.(*ParseError)
			if !ok {
				return rerr
			}
			if err := s.invalid(pe); err != nil {
				return err
			}
			continue
		}
		if csvIsHeader(rec, header) {
			continue
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if records == 0 {
		s.infer("empty input")
	}
	return nil
}

// fieldError reports a defect in one cell of the current record.
func (d *spanCSVDecoder) fieldError(col int, sentinel error, format string, args ...any) *ParseError {
	line, _ := d.cr.FieldPos(col)
	return &ParseError{File: d.name, Line: line, Offset: d.offset,
		Path: "column " + strconv.Quote(d.header[col]), Err: errorf(sentinel, format, args...)}
}

// at is the position of column col of the current row, for a warning.
func (d *spanCSVDecoder) at(col int) *ParseError {
	line, _ := d.cr.FieldPos(col)
	return &ParseError{Line: line, Offset: d.offset, Path: "column " + strconv.Quote(d.header[col])}
}

// csvCell returns the trimmed cell of column col, "" when there is no such
// column.
func csvCell(rec []string, col int) string {
	if col < 0 {
		return ""
	}
	return strings.TrimSpace(rec[col])
}

// record fills d.span from one record, or reports why it cannot.
func (d *spanCSVDecoder) record(rec []string) *ParseError {
	if len(rec) != len(d.header) {
		return csvFieldCountError(d.name, d.cr, d.offset, len(rec), len(d.header))
	}
	sp := &d.span
	*sp = cascade.Span{Status: cascade.StatusUnset}
	if pe := d.recordNames(rec); pe != nil {
		return pe
	}
	if pe := d.recordTimes(rec); pe != nil {
		return pe
	}
	d.recordKind(rec)
	if pe := d.recordStatus(rec); pe != nil {
		return pe
	}
	return d.messaging(rec)
}

// recordNames fills the ids, service, instance, operation and peer of
// d.span, or reports an empty id or service, which no span can do without.
func (d *spanCSVDecoder) recordNames(rec []string) *ParseError {
	c := &d.c
	sp := &d.span
	if sp.TraceID = csvID(csvCell(rec, c.trace)); sp.TraceID == "" {
		return d.fieldError(c.trace, ErrBadID, "empty trace id")
	}
	if sp.SpanID = csvID(csvCell(rec, c.span)); sp.SpanID == "" {
		return d.fieldError(c.span, ErrBadID, "empty span id")
	}
	if p := csvCell(rec, c.parent); p != "" && !slices.Contains(d.roots, p) {
		sp.ParentSpanID = csvID(p)
	}
	svc := csvCell(rec, c.service)
	if svc == "" {
		return d.fieldError(c.service, ErrNoService, "empty service")
	}
	sp.Service = svc
	if d.m.StripPodSuffix {
		sp.Service = csvCached(d.services, svc, serviceFromPod)
		sp.Instance = svc
	}
	if c.instance >= 0 {
		sp.Instance = csvCell(rec, c.instance)
	}
	sp.Operation = csvCell(rec, c.operation)
	sp.Peer = csvCell(rec, c.peer)
	return nil
}

// recordTimes fills the start and duration of d.span from the start and
// either the end or the duration column, warning where they disagree, or
// reports a time that cannot be read or does not fit.
func (d *spanCSVDecoder) recordTimes(rec []string) *ParseError {
	c := &d.c
	sp := &d.span
	v := csvCell(rec, c.start)
	if v == "" {
		return d.fieldError(c.start, ErrMissingField, "empty start time")
	}
	start, err := csvTimeValue(v, d.m.StartUnit)
	if err != nil {
		return d.fieldError(c.start, ErrBadTimestamp, "%s", err)
	}
	sp.Start = start
	if start != 0 && (start < minPlausibleNs || start > maxPlausibleNs) {
		d.s.warnAt(noticeBadYear+" ("+unitHint(start)+")", d.at(c.start))
	}
	var dur int64
	if v := csvCell(rec, c.end); v != "" {
		end, err := csvTimeValue(v, d.m.EndUnit)
		if err != nil {
			return d.fieldError(c.end, ErrBadTimestamp, "%s", err)
		}
		if (end > 0 && start < end-math.MaxInt64) || (end < 0 && start > end+math.MaxInt64) {
			return d.fieldError(c.end, ErrBadTimestamp, "end %d too far from start %d", end, start)
		}
		dur = end - start
		if v := csvCell(rec, c.duration); v != "" {
			if given, err := csvDurationValue(v, d.m.DurationUnit); err == nil {
				if hint := durationHint(dur, given); hint != "" {
					d.s.warnAt(noticeDurMismatch+" ("+hint+")", d.at(c.duration))
				}
			}
		}
	} else if v := csvCell(rec, c.duration); v != "" {
		dur, err = csvDurationValue(v, d.m.DurationUnit)
		if err != nil {
			return d.fieldError(c.duration, ErrBadTimestamp, "%s", err)
		}
		if dur > 0 && start > math.MaxInt64-dur {
			return d.fieldError(c.duration, ErrBadTimestamp, "start %d plus duration %d overflows", start, dur)
		}
	} else {
		col := c.end
		if col < 0 {
			col = c.duration
		}
		return d.fieldError(col, ErrMissingField, "no end time or duration")
	}
	if dur < 0 {
		d.s.warnAt("negative duration (clamped to 0)", d.at(c.start))
		dur = 0
	}
	sp.Duration = dur
	return nil
}

// recordKind fills the kind of d.span, which the status code's meaning
// depends on, so it comes before recordStatus.
func (d *spanCSVDecoder) recordKind(rec []string) {
	c := &d.c
	sp := &d.span
	if v := csvCell(rec, c.kind); v != "" {
		k, ok := csvSpanKind(v)
		if !ok {
			d.s.warn("unknown span kind (left empty)")
		}
		sp.Kind = k
	}
}

// recordStatus fills the status and status code of d.span, the status
// column overriding what the code implies, or reports a code that is not
// one.
func (d *spanCSVDecoder) recordStatus(rec []string) *ParseError {
	c := &d.c
	sp := &d.span
	codeStatus, hasCode := cascade.StatusUnset, false
	if v := csvCell(rec, c.statusCode); v != "" {
		hasCode = true
		code, ok := csvStatusCode(v)
		if !ok {
			return d.fieldError(c.statusCode, ErrBadValue, "%q is not a status code", v)
		}
		sp.StatusCode = code
		if codeStatus, ok = statusFromCode(sp.Kind, code); !ok {
			d.s.warnAt(noticeUnknownCode, d.at(c.statusCode))
		}
	}
	sp.Status = codeStatus
	if v := csvCell(rec, c.status); v != "" {
		st, ok := csvSpanStatus(v, sp.Kind, d.successFlag)
		if !ok {
			d.s.warnAt(noticeUnknownStatus, d.at(c.status))
		}
		if st.hasCode && !hasCode {
			sp.StatusCode = st.code
		}
		if ok && (st.status != cascade.StatusUnset || st.hasCode) {
			sp.Status = st.status
		}
	}
	return nil
}

// messaging fills the links and messaging fields of d.span from the
// columns the map names, or reports a cell that cannot be read.
func (d *spanCSVDecoder) messaging(rec []string) *ParseError {
	c := &d.c
	sp := &d.span
	if v := csvCell(rec, c.links); v != "" {
		links, err := csvLinks(v)
		if err != nil {
			return d.fieldError(c.links, ErrBadID, "%s", err)
		}
		sp.Links = links
	}
	sp.MessagingSystem = strings.ToLower(csvCell(rec, c.system))
	if v := csvCell(rec, c.op); v != "" {
		sp.MessagingOperation = operationType(v)
	}
	sp.Destination = csvCell(rec, c.dest)
	sp.ConsumerGroup = csvCell(rec, c.group)
	sp.MessageID = csvCell(rec, c.msgID)
	for _, f := range []struct {
		col int
		max int64
		set func(int64)
	}{
		{c.batch, math.MaxInt32, func(n int64) { sp.BatchCount = int32(n) }},
		{c.bytes, math.MaxInt64, func(n int64) { sp.MessageBytes = n }},
		{c.redelivery, math.MaxInt32, func(n int64) { sp.Redelivery = int32(n) }},
	} {
		v := csvCell(rec, f.col)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > f.max {
			return d.fieldError(f.col, ErrBadValue, "%q is not a count from 0 to %d", v, f.max)
		}
		f.set(n)
	}
	if sp.MessagingOperation == "" {
		switch sp.Kind {
		case cascade.KindProducer:
			sp.MessagingOperation = cascade.MessagingPublish
		case cascade.KindConsumer:
			sp.MessagingOperation = cascade.MessagingReceive
		}
	}
	return nil
}
