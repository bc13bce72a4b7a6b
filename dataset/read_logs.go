package dataset

import (
	"path/filepath"

	"cascade"
)

// ReadLogs calls fn for every record of a dataset's logs.parquet, in the
// file's order (by service, then time). dir is the dataset directory. A
// dataset ingested without logs has no logs.parquet: the error then
// satisfies errors.Is(err, fs.ErrNotExist).
//
// The record and its strings are only valid during the call; copy what
// you keep (strings.Clone), as for ReadSpans. time and body must be
// present; any other column the file lacks, and any null value, reads as
// the field's zero value.
func ReadLogs(dir string, fn func(*cascade.LogRecord) error) error {
	return readDatasetFile(filepath.Join(dir, LogsFile), logColumns, decodeLog, fn)
}

// logColumns are the columns of logs.parquet, in the order of the col
// indexes below.
var logColumns = []columnSpec{
	{"time", fieldTime, true},
	{"service", fieldString, false},
	{"instance", fieldString, false},
	{"severity", fieldString, false},
	{"trace_id", fieldString, false},
	{"span_id", fieldString, false},
	{"body", fieldString, true},
	{"template_id", fieldInt, false},
	{"template", fieldString, false},
}

const (
	colLogTime = iota
	colLogService
	colLogInstance
	colLogSeverity
	colLogTraceID
	colLogSpanID
	colLogBody
	colLogTemplateID
	colLogTemplate
)

func decodeLog(c []column, rv rowValues, r *cascade.LogRecord) {
	row := rv.flat
	*r = cascade.LogRecord{
		Time:       c[colLogTime].time(row),
		Service:    c[colLogService].str(row),
		Instance:   c[colLogInstance].str(row),
		Severity:   c[colLogSeverity].str(row),
		TraceID:    c[colLogTraceID].str(row),
		SpanID:     c[colLogSpanID].str(row),
		Body:       c[colLogBody].str(row),
		TemplateID: int32(c[colLogTemplateID].int64(row)),
		Template:   c[colLogTemplate].str(row),
	}
}
