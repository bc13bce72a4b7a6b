package ingest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"cascade"
)

// LogCSVMap maps the columns of a log CSV to LogRecord fields. Each column
// field holds a header name (matched exactly, else ignoring case); an
// empty field means the CSV has no such column. Time and Body are
// required.
//
// ParseLogCSVMap reads one from text; NezhaLogCSVMap returns the preset
// for the Nezha dataset's log files, which a header holding all its
// columns selects when Options.LogCSVMap is nil.
type LogCSVMap struct {
	// Name names the layout in summary notes ("nezha" for the preset);
	// empty for a custom mapping.
	Name string
	// Time is the time column: a number in TimeUnit since the Unix epoch,
	// or an RFC 3339 time.
	Time string
	// TimeUnit is the unit of Time: time.Nanosecond, Microsecond,
	// Millisecond or Second; zero means nanoseconds.
	TimeUnit time.Duration
	// TimeFallback is a second time column (RFC 3339, with or without a
	// zone, read as UTC without one; or nanoseconds), read where Time is
	// empty or outside the years 2000-2100, with a notice. Empty means
	// none.
	TimeFallback string
	// Service is the service column; with StripPodSuffix it may name a
	// pod column. Empty leaves Service empty.
	Service string
	// Instance is the instance column. Empty means none, except that with
	// StripPodSuffix the pod name is the instance.
	Instance string
	// Severity is the level column. Empty, or an empty cell, means the
	// severity is read from the line.
	Severity string
	// TraceID and SpanID are the id columns; where they are absent or
	// empty, ids written into the line are used.
	TraceID, SpanID string
	// Body is the log line column.
	Body string
	// StripPodSuffix strips a Kubernetes pod suffix from the Service cell,
	// as CSVMap.StripPodSuffix does.
	StripPodSuffix bool
}

// NezhaLogCSVMap returns the preset for the Nezha dataset's log files,
// whose header is Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log:
// the time in nanoseconds (TimeUnixNano; where that holds garbage, as it
// does on the files' exception lines, Timestamp), the service from PodName without its
// Kubernetes suffix and the pod as the instance, and the line in Log (a
// Docker json-file line, which the decoder unwraps).
func NezhaLogCSVMap() *LogCSVMap {
	return &LogCSVMap{
		Name: "nezha", Time: "TimeUnixNano", TimeUnit: time.Nanosecond, TimeFallback: "Timestamp",
		Service: "PodName", TraceID: "TraceID", SpanID: "SpanID", Body: "Log",
		StripPodSuffix: true,
	}
}

// logCSVField ties a mapping key to the field it sets.
type logCSVField struct {
	key string
	col *string
}

func (m *LogCSVMap) fields() []logCSVField {
	return []logCSVField{
		{"time", &m.Time}, {"time_fallback", &m.TimeFallback}, {"service", &m.Service}, {"instance", &m.Instance},
		{"severity", &m.Severity}, {"trace_id", &m.TraceID}, {"span_id", &m.SpanID},
		{"body", &m.Body},
	}
}

// Validate reports every problem with m: a missing time or body column,
// or a time unit other than ns, us, ms or s.
func (m *LogCSVMap) Validate() error {
	var errs []error
	if m.Time == "" {
		errs = append(errs, errors.New(`missing key "time"`))
	}
	if m.Body == "" {
		errs = append(errs, errors.New(`missing key "body"`))
	}
	if m.TimeUnit != 0 && csvUnitName(m.TimeUnit) == "" {
		errs = append(errs, fmt.Errorf("key \"time\": unit %v is not ns, us, ms or s", m.TimeUnit))
	}
	return errors.Join(errs...)
}

// ParseLogCSVMap reads a log column mapping: comma-separated key=value
// entries, for example
//
//	time=ts:ms,service=pod,severity=level,trace_id=trace,body=message,strip_pod_suffix=true
//
// The keys time (with a unit after a colon: ns, the default, us, ms or
// s), time_fallback, service, instance, severity, trace_id, span_id and body name the
// column of that LogRecord field; strip_pod_suffix=true strips Kubernetes
// pod suffixes from the service column. The whole value "nezha" selects
// NezhaLogCSVMap. The error lists every problem, each naming its key.
func ParseLogCSVMap(text string) (*LogCSVMap, error) {
	if strings.EqualFold(strings.TrimSpace(text), "nezha") {
		return NezhaLogCSVMap(), nil
	}
	m := &LogCSVMap{}
	seen := map[string]bool{}
	var errs []error
	for _, e := range strings.Split(text, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want key=value", e))
			continue
		}
		key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
		v = strings.TrimSpace(v)
		if seen[key] {
			errs = append(errs, fmt.Errorf("key %q given twice", key))
			continue
		}
		seen[key] = true
		if key == "strip_pod_suffix" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("key %q: %q is not true or false", key, v))
			}
			m.StripPodSuffix = b
			continue
		}
		if key == "time" {
			m.TimeUnit = time.Nanosecond
			if i := strings.LastIndexByte(v, ':'); i >= 0 {
				u, err := parseCSVUnit(strings.TrimSpace(v[i+1:]))
				if err != nil {
					errs = append(errs, fmt.Errorf("key %q: %w", key, err))
					continue
				}
				m.TimeUnit, v = u, strings.TrimSpace(v[:i])
			}
		}
		i := slices.IndexFunc(m.fields(), func(f logCSVField) bool { return f.key == key })
		if i < 0 {
			errs = append(errs, fmt.Errorf("unknown key %q (want time, time_fallback, service, instance, severity, trace_id, span_id, body or strip_pod_suffix)", key))
			continue
		}
		if v == "" {
			errs = append(errs, fmt.Errorf("key %q: empty column name", key))
			continue
		}
		*m.fields()[i].col = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// detectLogCSVPreset returns the preset whose columns the header has (all
// of them, spelled exactly), or nil.
func detectLogCSVPreset(header []string) *LogCSVMap {
	m := NezhaLogCSVMap()
	for _, f := range m.fields() {
		if *f.col != "" && !slices.Contains(header, *f.col) {
			return nil
		}
	}
	return m
}

// logCSVDecoder holds the state of one log CSV input.
type logCSVDecoder struct {
	name   string
	s      logSink
	cr     *csv.Reader
	header []string
	m      *LogCSVMap
	offset int64

	time, fallback, service, instance, severity, trace, span, body int

	services map[string]string
	toks     []logToken
	rec      cascade.LogRecord
}

// decodeLogCSV reads a log CSV through opts.LogCSVMap, or through the
// preset its header matches when that is nil, one record per row.
func decodeLogCSV(name string, r io.Reader, s logSink, opts *Options) error {
	cr := newCSVReader(r)
	header, line, err := readCSVHeader(name, cr)
	if err == io.EOF {
		s.infer(noticeEmpty)
		return nil
	}
	if err != nil {
		return err
	}
	var m *LogCSVMap
	if opts != nil {
		m = opts.LogCSVMap
	}
	if m == nil {
		if m = detectLogCSVPreset(header); m == nil {
			return &ParseError{File: name, Line: line, Path: "header",
				Err: errorf(ErrUnsupported, "unknown log CSV layout %s: give a log column map", csvHeaderText(header))}
		}
	} else if err := m.Validate(); err != nil {
		return fmt.Errorf("log csv map: %w", err)
	}
	d := &logCSVDecoder{name: name, s: s, cr: cr, header: header, m: m, services: map[string]string{}}
	var missing []string
	for _, c := range []struct {
		col string
		idx *int
		key string
	}{
		{m.Time, &d.time, "time"}, {m.TimeFallback, &d.fallback, "time_fallback"}, {m.Service, &d.service, "service"}, {m.Instance, &d.instance, "instance"},
		{m.Severity, &d.severity, "severity"}, {m.TraceID, &d.trace, "trace_id"}, {m.SpanID, &d.span, "span_id"},
		{m.Body, &d.body, "body"},
	} {
		*c.idx = -1
		if c.col == "" {
			continue
		}
		if *c.idx = csvColumn(header, c.col); *c.idx < 0 {
			missing = append(missing, fmt.Sprintf("%q for %s", c.col, c.key))
		}
	}
	if len(missing) > 0 {
		return &ParseError{File: name, Line: line, Path: "header",
			Err: errorf(ErrMissingField, "no column %s in %s", strings.Join(missing, ", "), csvHeaderText(header))}
	}
	return csvRecords(d.cr, name, header, s, &d.offset, func(rec []string) error {
		if pe := d.record(rec); pe != nil {
			return s.invalid(pe)
		}
		return s.log(&d.rec)
	})
}

// fieldError reports a defect in one cell of the current row.
func (d *logCSVDecoder) fieldError(col int, sentinel error, format string, args ...any) *ParseError {
	line, _ := d.cr.FieldPos(col)
	return &ParseError{File: d.name, Line: line, Offset: d.offset,
		Path: "column " + strconv.Quote(d.header[col]), Err: errorf(sentinel, format, args...)}
}

// record fills d.rec from one row, or reports why it cannot.
func (d *logCSVDecoder) record(rec []string) *ParseError {
	if len(rec) != len(d.header) {
		return csvFieldCountError(d.name, d.cr, d.offset, len(rec), len(d.header))
	}
	r := &d.rec
	*r = cascade.LogRecord{}
	t, pe := d.recordTime(rec)
	if pe != nil {
		return pe
	}
	r.Time = t
	if svc := csvCell(rec, d.service); svc != "" {
		r.Service = svc
		if d.m.StripPodSuffix {
			r.Service = csvCached(d.services, svc, serviceFromPod)
			r.Instance = svc
		}
	}
	if d.instance >= 0 {
		r.Instance = csvCell(rec, d.instance)
	}
	var l logLine
	l, d.toks = parseLogLine(rec[d.body], d.toks)
	r.Body = l.body
	r.Severity = normalizeSeverity(csvCell(rec, d.severity))
	if r.Severity == "" {
		r.Severity = l.severity
	}
	if r.TraceID = csvID(csvCell(rec, d.trace)); r.TraceID == "" {
		r.TraceID = l.traceID
	}
	if r.SpanID = csvID(csvCell(rec, d.span)); r.SpanID == "" {
		r.SpanID = l.spanID
	}
	return nil
}

// noticeLogTime is the notice of a log time read from the fallback column.
const noticeLogTime = "log time empty or outside the years 2000-2100"

// recordTime reads the row's time from the time column, or from the
// fallback column where that is empty or implausible.
func (d *logCSVDecoder) recordTime(rec []string) (int64, *ParseError) {
	v := csvCell(rec, d.time)
	var t int64
	if v != "" {
		var err error
		if t, err = csvTimeValue(v, d.m.TimeUnit); err != nil && d.fallback < 0 {
			return 0, d.fieldError(d.time, ErrBadTimestamp, "%s", err)
		}
		if err == nil && t >= minPlausibleNs && t <= maxPlausibleNs {
			return t, nil
		}
	}
	if d.fallback < 0 {
		if v == "" {
			return 0, d.fieldError(d.time, ErrMissingField, "empty time")
		}
		return t, nil // kept as read, as span times are
	}
	fv := csvCell(rec, d.fallback)
	if fv == "" {
		return 0, d.fieldError(d.time, ErrBadTimestamp, "time %q is unusable and column %q is empty", v, d.header[d.fallback])
	}
	ft, err := logFallbackTime(fv)
	if err != nil {
		return 0, d.fieldError(d.fallback, ErrBadTimestamp, "%s", err)
	}
	line, _ := d.cr.FieldPos(d.time)
	d.s.warnAt(noticeLogTime+" (read from column "+strconv.Quote(d.header[d.fallback])+")",
		&ParseError{Line: line, Offset: d.offset, Path: "column " + strconv.Quote(d.header[d.time])})
	return ft, nil
}

// logFallbackTime reads a fallback time cell: nanoseconds, an RFC 3339
// time, or one without a zone (read as UTC), with a "T" or a space.
func logFallbackTime(s string) (int64, error) {
	if t, err := csvTimeValue(s, time.Nanosecond); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil && t.Year() >= 1678 && t.Year() <= 2261 {
			return t.UnixNano(), nil
		}
	}
	return 0, fmt.Errorf("%q is neither a number nor an RFC 3339 time", s)
}
