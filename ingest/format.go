package ingest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Format names an input format. The zero value means "detect it".
type Format string

// Trace formats.
const (
	FormatAuto Format = ""
	// FormatOTLPJSON is OTLP JSON: one TracesData or
	// ExportTraceServiceRequest object per file, JSON Lines of them as the
	// OpenTelemetry Collector's file exporter writes, or Jaeger's api_v3
	// answer ({"result": {"resourceSpans": ...}}).
	FormatOTLPJSON Format = "otlp-json"
	// FormatOTLPProto is a binary ExportTraceServiceRequest.
	FormatOTLPProto Format = "otlp-proto"
	// FormatOTLPProtoFramed is the file exporter's proto format: each
	// message preceded by its length as a 4-byte big-endian integer.
	FormatOTLPProtoFramed Format = "otlp-proto-framed"
	// FormatJaegerJSON is the Jaeger query API/UI JSON ({"data": [...]}).
	FormatJaegerJSON Format = "jaeger-json"
	// FormatZipkinJSON is Zipkin v2 JSON (an array of spans).
	FormatZipkinJSON Format = "zipkin-json"
	// FormatSpanCSV is a span CSV read through a column mapping (the Nezha
	// preset, or --csv-map).
	FormatSpanCSV Format = "csv"
)

// Metric formats.
const (
	// FormatPromText is the Prometheus text exposition format, one scrape
	// or many concatenated, with or without timestamps.
	FormatPromText Format = "prom-text"
	// FormatPromAPI is a Prometheus HTTP API query or query_range answer.
	FormatPromAPI Format = "prom-api"
	// FormatOTLPMetricsJSON is OTLP metrics JSON (MetricsData or
	// ExportMetricsServiceRequest, one per file or one per line).
	FormatOTLPMetricsJSON Format = "otlp-metrics-json"
	// FormatOTLPMetricsProto is a binary ExportMetricsServiceRequest.
	FormatOTLPMetricsProto Format = "otlp-metrics-proto"
	// FormatMetricCSV is a metric CSV: a time column, optional service
	// and instance columns, and one column per metric (Nezha's per-pod
	// files are one layout of it).
	FormatMetricCSV Format = "metrics-csv"
)

// TraceFormats and MetricFormats list the formats each input kind accepts,
// in the order --help shows them.
var (
	TraceFormats  = []Format{FormatOTLPJSON, FormatOTLPProto, FormatOTLPProtoFramed, FormatJaegerJSON, FormatZipkinJSON, FormatSpanCSV}
	MetricFormats = []Format{FormatPromText, FormatPromAPI, FormatOTLPMetricsJSON, FormatOTLPMetricsProto, FormatMetricCSV}
)

// ParseFormat checks a --format value.
func ParseFormat(s string, allowed []Format) (Format, error) {
	if s == "" || s == "auto" {
		return FormatAuto, nil
	}
	for _, f := range allowed {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = string(f)
	}
	sort.Strings(names)
	return "", fmt.Errorf("%q: %w (want auto or one of %s)", s, ErrUnknownFormat, strings.Join(names, ", "))
}

// sniffLen is how many leading bytes detection looks at.
const sniffLen = 64 << 10

// detectTrace guesses a trace format from a file name (without compression
// suffix) and the first bytes of its decompressed content.
func detectTrace(name string, head []byte) (Format, error) {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".pb", ".proto", ".binpb", ".protobuf":
		return detectProto(head), nil
	case ".csv", ".tsv":
		return FormatSpanCSV, nil
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 {
		return FormatOTLPJSON, nil // empty: any JSON decoder reports it empty
	}
	switch t[0] {
	case '[':
		return FormatZipkinJSON, nil
	case '{':
		switch {
		case bytes.Contains(head, []byte(`"resourceSpans"`)) || bytes.Contains(head, []byte(`"resource_spans"`)):
			return FormatOTLPJSON, nil
		case bytes.Contains(head, []byte(`"traceID"`)) || bytes.Contains(head, []byte(`"processes"`)):
			return FormatJaegerJSON, nil
		case bytes.Contains(head, []byte(`"data"`)):
			return FormatJaegerJSON, nil
		}
		return "", fmt.Errorf("JSON object with neither resourceSpans nor data: %w", ErrUnknownFormat)
	}
	if isProtoStart(t) || head[0] == 0 {
		return detectProto(head), nil
	}
	if line, _, _ := bytes.Cut(t, []byte("\n")); bytes.Count(line, []byte(",")) >= 3 {
		return FormatSpanCSV, nil
	}
	return "", fmt.Errorf("not OTLP, Jaeger, Zipkin or CSV: %w", ErrUnknownFormat)
}

// detectMetrics guesses a metric format like detectTrace.
func detectMetrics(name string, head []byte) (Format, error) {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".pb", ".proto", ".binpb", ".protobuf":
		return FormatOTLPMetricsProto, nil
	case ".csv", ".tsv":
		return FormatMetricCSV, nil
	case ".prom":
		return FormatPromText, nil
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) == 0 {
		return FormatPromText, nil
	}
	if t[0] == '{' {
		switch {
		case bytes.Contains(head, []byte(`"resourceMetrics"`)) || bytes.Contains(head, []byte(`"resource_metrics"`)):
			return FormatOTLPMetricsJSON, nil
		case bytes.Contains(head, []byte(`"resultType"`)) || bytes.Contains(head, []byte(`"status"`)):
			return FormatPromAPI, nil
		}
		return "", fmt.Errorf("JSON object with neither resourceMetrics nor a Prometheus API result: %w", ErrUnknownFormat)
	}
	if t[0] == '#' {
		return FormatPromText, nil
	}
	if isProtoStart(t) {
		return FormatOTLPMetricsProto, nil
	}
	line, _, _ := bytes.Cut(t, []byte("\n"))
	if bytes.Count(line, []byte(",")) >= 2 && !bytes.ContainsAny(line, "{ ") {
		return FormatMetricCSV, nil
	}
	if bytes.Count(line, []byte(",")) >= 2 && !bytes.Contains(line, []byte("{")) {
		return FormatMetricCSV, nil
	}
	return FormatPromText, nil
}

// isProtoStart reports whether b starts like a protobuf message whose first
// field is field 1, length-delimited (resourceSpans / resourceMetrics).
func isProtoStart(b []byte) bool { return len(b) > 0 && b[0] == 0x0a }

// detectProto tells a raw ExportTraceServiceRequest (first byte 0x0a, the
// tag of field 1) from the file exporter's framing (a 4-byte big-endian
// length, whose first byte is 0 for any message under 16 MiB).
func detectProto(head []byte) Format {
	if len(head) >= 5 && head[0] == 0 && head[4] == 0x0a {
		return FormatOTLPProtoFramed
	}
	return FormatOTLPProto
}

// formatSkipped is the Format an InputSummary shows for a file found in a
// directory and skipped, its content being no format the decoders read.
const formatSkipped Format = "skipped"

// SniffTraces reports whether the file at path holds traces in a format
// ingest reads, judged from its (decompressed) first bytes, and which. It
// is for telling a user who gave traces where another document was
// expected (a model) what they gave; it claims only what is unmistakable
// (OTLP resourceSpans, a Jaeger answer's traceID and spans, a Zipkin span
// array, a span CSV by name or by its id columns), and reports false on
// any read error.
func SniffTraces(path string) (Format, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	rd, base, done, err := decompressed(path, f)
	if err != nil {
		return "", false
	}
	defer done()
	head := make([]byte, sniffLen)
	n, _ := io.ReadFull(rd, head)
	head = head[:n]
	if f := sniffTraces(base, head); f != "" {
		return f, true
	}
	if ext := strings.ToLower(filepath.Ext(base)); ext == ".csv" || ext == ".tsv" {
		return FormatSpanCSV, true
	}
	return "", false
}
