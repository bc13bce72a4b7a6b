package ingest

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A metric file given as traces, or a trace file given as metrics, is
// told apart by signs no file of the wanted kind carries, so that the
// error names what the file is and where to pass it, rather than the
// first field the wrong decoder missed.

// misplacedError is an input of the other kind: metrics where traces
// are read, or traces where metrics are. It is an unknown format to
// the decoders (so that a directory walk skips the file), and says what
// the file looks like and how to pass it.
type misplacedError struct {
	what string // "Prometheus query JSON", "an OTLP trace file"
	fix  string // "pass it with --metrics"
}

func (e *misplacedError) Error() string { return "this looks like " + e.what + ": " + e.fix }

// Is makes the error an ErrUnknownFormat.
func (e *misplacedError) Is(target error) bool { return target == ErrUnknownFormat }

// misplaced returns the error for an input of the other kind: head
// (with its file name) read as metrics when metrics is set, else as
// traces. It returns nil when head shows no sign of the other kind.
func misplaced(name string, head []byte, metrics bool) *misplacedError {
	if f := sniffLogs(head); f != "" {
		return &misplacedError{what: describeFormat(f), fix: "pass it with --logs"}
	}
	if metrics {
		if f := sniffTraces(name, head); f != "" {
			return &misplacedError{what: describeFormat(f), fix: "pass it as PATH, not with --metrics"}
		}
		return nil
	}
	if f := sniffMetrics(name, head); f != "" {
		return &misplacedError{what: describeFormat(f), fix: "pass it with --metrics"}
	}
	return nil
}

// describeFormat names a format as the misplaced-input errors do.
func describeFormat(f Format) string {
	switch f {
	case FormatPromAPI:
		return "Prometheus query JSON"
	case FormatPromText:
		return "Prometheus text exposition"
	case FormatOTLPMetricsJSON:
		return "an OTLP metrics file"
	case FormatOTLPJSON:
		return "an OTLP trace file"
	case FormatJaegerJSON:
		return "a Jaeger trace file"
	case FormatZipkinJSON:
		return "a Zipkin trace file"
	case FormatSpanCSV:
		return "a span CSV"
	case FormatOTLPLogsJSON:
		return "an OTLP logs file"
	case FormatLogCSV:
		return "a log CSV"
	}
	return string(f)
}

// Signs of traces in a document.
var (
	otlpSpansKeys   = [][]byte{[]byte(`"resourceSpans"`), []byte(`"resource_spans"`)}
	otlpMetricsKeys = [][]byte{[]byte(`"resourceMetrics"`), []byte(`"resource_metrics"`)}
)

func containsAny(head []byte, keys [][]byte) bool {
	for _, k := range keys {
		if bytes.Contains(head, k) {
			return true
		}
	}
	return false
}

// sniffMetrics returns the metric format head unmistakably is, or ""
// when it may be traces: a Prometheus API answer (resultType, and no
// trace keys), OTLP metrics JSON (resourceMetrics without
// resourceSpans), or Prometheus text (a .prom name, a # HELP or # TYPE
// line, or a first line that is a sample: a metric name, its labels and
// a number).
func sniffMetrics(name string, head []byte) Format {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".prom" {
		return FormatPromText
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 || ext == ".csv" || ext == ".tsv" {
		return ""
	}
	if t[0] == '{' {
		if containsAny(head, otlpSpansKeys) {
			return ""
		}
		switch {
		case containsAny(head, otlpMetricsKeys):
			return FormatOTLPMetricsJSON
		case bytes.Contains(head, []byte(`"resultType"`)) && !bytes.Contains(head, []byte(`"traceID"`)):
			return FormatPromAPI
		}
		return ""
	}
	line, _, _ := bytes.Cut(t, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	if bytes.HasPrefix(line, []byte("# HELP ")) || bytes.HasPrefix(line, []byte("# TYPE ")) {
		return FormatPromText
	}
	if m := promSampleLine.FindSubmatch(line); m != nil {
		if _, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			return FormatPromText
		}
	}
	return ""
}

// promSampleLine matches a Prometheus text sample line: a metric name,
// optional labels, the value (captured) and an optional timestamp.
var promSampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?[ \t]+(\S+)(?:[ \t]+-?[0-9]+)?[ \t]*$`)

// sniffTraces returns the trace format head unmistakably is, or "" when
// it may be metrics: OTLP JSON (resourceSpans without resourceMetrics),
// a Jaeger answer (traceID and spans), a Zipkin span array (traceId), or
// a CSV whose header names trace and span id columns.
func sniffTraces(name string, head []byte) Format {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 {
		return ""
	}
	switch t[0] {
	case '{':
		switch {
		case containsAny(head, otlpSpansKeys) && !containsAny(head, otlpMetricsKeys):
			return FormatOTLPJSON
		case bytes.Contains(head, []byte(`"traceID"`)) && bytes.Contains(head, []byte(`"spans"`)):
			return FormatJaegerJSON
		}
		return ""
	case '[':
		if bytes.Contains(head, []byte(`"traceId"`)) {
			return FormatZipkinJSON
		}
		return ""
	}
	line, _, _ := bytes.Cut(t, []byte("\n"))
	var trace, span bool
	for _, col := range bytes.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '\t' || r == ';' }) {
		switch strings.ToLower(strings.Trim(strings.TrimSpace(string(col)), `"`)) {
		case "traceid", "trace_id", "trace id":
			trace = true
		case "spanid", "span_id", "span id":
			span = true
		}
	}
	if trace && span {
		return FormatSpanCSV
	}
	return ""
}

// sniffLogs returns the log format head unmistakably is, or "": OTLP
// logs JSON (resourceLogs without resourceSpans or resourceMetrics), or a
// CSV whose header holds every column of a log CSV preset (Nezha's).
func sniffLogs(head []byte) Format {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 {
		return ""
	}
	if t[0] == '{' {
		if bytes.Contains(head, []byte(`"resourceLogs"`)) && !containsAny(head, otlpSpansKeys) && !containsAny(head, otlpMetricsKeys) {
			return FormatOTLPLogsJSON
		}
		return ""
	}
	line, _, _ := bytes.Cut(t, []byte("\n"))
	header := strings.Split(strings.TrimRight(string(line), "\r"), ",")
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	if detectLogCSVPreset(header) != nil {
		return FormatLogCSV
	}
	return ""
}
