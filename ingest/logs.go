package ingest

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"cascade"
)

// Log formats.
const (
	// FormatOTLPLogsJSON is OTLP logs JSON: one LogsData or
	// ExportLogsServiceRequest object per file, or JSON Lines of them as
	// the OpenTelemetry Collector's file exporter writes them.
	FormatOTLPLogsJSON Format = "otlp-logs-json"
	// FormatOTLPLogsProto is a binary ExportLogsServiceRequest, or the
	// file exporter's proto format (each message preceded by its length
	// as a 4-byte big-endian integer).
	FormatOTLPLogsProto Format = "otlp-logs-proto"
	// FormatLogCSV is a log CSV read through a log column mapping (the
	// Nezha preset, detected from the header, or Options.LogCSVMap).
	FormatLogCSV Format = "logs-csv"
)

// LogFormats lists the formats --logs accepts, in the order --help shows
// them.
var LogFormats = []Format{FormatOTLPLogsJSON, FormatOTLPLogsProto, FormatLogCSV}

// logSink receives what a log decoder produces from one input, as sink
// does for spans and samples. A record passed to log may be reused by the
// decoder after the call returns: the sink copies what it keeps. The sink
// gives the record its template.
type logSink interface {
	// log receives one record, Service, Severity and ids normalized.
	log(r *cascade.LogRecord) error
	// invalid, infer and warnAt are as on sink.
	invalid(err *ParseError) error
	infer(note string)
	warnAt(kind string, at *ParseError)
}

// logDecodeFunc decodes one whole log input; see decodeFunc.
type logDecodeFunc func(name string, r io.Reader, s logSink, opts *Options) error

// logDecoders maps each log format to its decoder.
var logDecoders = map[Format]logDecodeFunc{
	FormatOTLPLogsJSON:  decodeOTLPLogsJSON,
	FormatOTLPLogsProto: decodeOTLPLogsProto,
	FormatLogCSV:        decodeLogCSV,
}

// detectLogs guesses a log format like detectTrace.
func detectLogs(name string, head []byte) (Format, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".pb", ".proto", ".binpb", ".protobuf":
		return FormatOTLPLogsProto, nil
	case ".csv", ".tsv":
		return FormatLogCSV, nil
	}
	if len(head) > 0 && (isProtoStart(head) || head[0] == 0) {
		return FormatOTLPLogsProto, nil
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	switch {
	case len(t) == 0:
		return FormatOTLPLogsJSON, nil // empty: the JSON decoder says so
	case t[0] == '{':
		if bytes.Contains(head, []byte(`"resourceLogs"`)) || bytes.Contains(head, []byte(`"resource_logs"`)) {
			return FormatOTLPLogsJSON, nil
		}
		return "", fmt.Errorf("JSON object with no resourceLogs: %w", ErrUnknownFormat)
	}
	if line, _, _ := bytes.Cut(t, []byte("\n")); bytes.Count(line, []byte(",")) >= 2 {
		return FormatLogCSV, nil
	}
	return "", fmt.Errorf("not OTLP logs or a log CSV: %w", ErrUnknownFormat)
}
