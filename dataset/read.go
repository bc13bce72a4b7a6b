package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"cascade"
)

// This file reads the dataset's files. Rows are read in batches as
// parquet.Rows, and each is decoded into one reused span or sample whose
// strings alias the values' bytes: reading allocates per page, not per
// row. Columns are found by name in the file's own schema, so a file with
// the columns in another order, with extra columns, with optional
// (nullable) columns or without an optional column still reads.

// ReadSpans calls fn for every span of a dataset's spans.parquet, in the
// file's order (by trace, then start). dir is the dataset directory.
//
// The span and its strings are only valid during the call; copy what you
// keep (strings.Clone). The strings alias the reader's buffers, which the
// next batch of rows replaces: a *cascade.Span copied by assignment still
// shares them. Links is a new slice for each span that has links (nil
// otherwise), but its ids alias the buffers too.
//
// Columns are looked up by name. trace_id, span_id and start must be
// present; any other column the file lacks, and any null value, reads as
// the field's zero value. Links are read from the list column links
// (links.list.element.trace_id and .span_id, Parquet's standard LIST
// layout); other repeated columns are skipped. start may be stored in any
// timestamp unit; it is returned in nanoseconds.
func ReadSpans(dir string, fn func(*cascade.Span) error) error {
	return readDatasetFile(filepath.Join(dir, SpansFile), spanColumns, decodeSpan, fn)
}

// ReadSamples calls fn for every point of a dataset's metrics.parquet, in
// the file's order (by series, then time). dir is the dataset directory.
//
// The sample and its strings are only valid during the call; copy what
// you keep (strings.Clone), as for ReadSpans. time, metric and value must
// be present; any other column the file lacks, and any null value, reads
// as the field's zero value.
func ReadSamples(dir string, fn func(*cascade.Sample) error) error {
	return readDatasetFile(filepath.Join(dir, MetricsFile), sampleColumns, decodeSample, fn)
}

// readBatchRows is how many rows are read from a row group at a time.
const readBatchRows = 256

// fieldType is what a column must hold to be read into a field.
type fieldType uint8

const (
	fieldString     fieldType = iota // BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
	fieldInt                         // INT32 or INT64
	fieldTime                        // INT32 or INT64, scaled to nanoseconds by its timestamp unit
	fieldFloat                       // DOUBLE, FLOAT, INT32 or INT64
	fieldListString                  // BYTE_ARRAY in a list: repeated, read with rowValues.list
)

// columnSpec names a column a reader decodes into one field.
type columnSpec struct {
	name     string
	typ      fieldType
	required bool
}

// The columns of each file, in the order of the field indexes below.
var (
	spanColumns = []columnSpec{
		{"trace_id", fieldString, true},
		{"span_id", fieldString, true},
		{"parent_span_id", fieldString, false},
		{"service", fieldString, false},
		{"instance", fieldString, false},
		{"operation", fieldString, false},
		{"kind", fieldString, false},
		{"start", fieldTime, true},
		{"duration_ns", fieldInt, false},
		{"status", fieldString, false},
		{"error_type", fieldString, false},
		{"status_code", fieldInt, false},
		{"peer", fieldString, false},
		{"resend_count", fieldInt, false},
		{"links.list.element.trace_id", fieldListString, false},
		{"links.list.element.span_id", fieldListString, false},
		{"messaging_system", fieldString, false},
		{"messaging_operation", fieldString, false},
		{"messaging_destination", fieldString, false},
		{"messaging_consumer_group", fieldString, false},
		{"messaging_message_id", fieldString, false},
		{"messaging_batch_count", fieldInt, false},
		{"messaging_message_bytes", fieldInt, false},
		{"messaging_redelivery", fieldInt, false},
	}
	sampleColumns = []columnSpec{
		{"time", fieldTime, true},
		{"service", fieldString, false},
		{"instance", fieldString, false},
		{"metric", fieldString, true},
		{"kind", fieldString, false},
		{"labels", fieldString, false},
		{"value", fieldFloat, true},
	}
)

// Field indexes into spanColumns and sampleColumns.
const (
	colSpanTraceID = iota
	colSpanSpanID
	colSpanParentSpanID
	colSpanService
	colSpanInstance
	colSpanOperation
	colSpanKind
	colSpanStart
	colSpanDuration
	colSpanStatus
	colSpanErrorType
	colSpanStatusCode
	colSpanPeer
	colSpanResendCount
	colSpanLinkTraceID
	colSpanLinkSpanID
	colSpanMessagingSystem
	colSpanMessagingOperation
	colSpanDestination
	colSpanConsumerGroup
	colSpanMessageID
	colSpanBatchCount
	colSpanMessageBytes
	colSpanRedelivery
)

const (
	colSampleTime = iota
	colSampleService
	colSampleInstance
	colSampleMetric
	colSampleKind
	colSampleLabels
	colSampleValue
)

// column is where one field is in the file's rows.
type column struct {
	index int          // leaf column index, which is the value's index in a row; -1 if absent
	kind  parquet.Kind // the column's physical type
	scale int64        // fieldTime: nanoseconds per stored unit
}

// str returns the column's value in row as a string aliasing its bytes.
func (c *column) str(row parquet.Row) string {
	if c.index < 0 {
		return ""
	}
	b := row[c.index].ByteArray() // nil for a null value
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (c *column) int64(row parquet.Row) int64 {
	if c.index < 0 {
		return 0
	}
	v := row[c.index]
	if c.kind == parquet.Int32 {
		return int64(v.Int32())
	}
	return v.Int64() // 0 for a null value
}

func (c *column) time(row parquet.Row) int64 { return c.int64(row) * c.scale }

func (c *column) float64(row parquet.Row) float64 {
	if c.index < 0 {
		return 0
	}
	v := row[c.index]
	switch {
	case v.IsNull():
		return 0
	case c.kind == parquet.Float:
		return float64(v.Float())
	case c.kind == parquet.Int32:
		return float64(v.Int32())
	case c.kind == parquet.Int64:
		return float64(v.Int64())
	}
	return v.Double()
}

func decodeSpan(c []column, rv rowValues, s *cascade.Span) {
	row := rv.flat
	*s = cascade.Span{
		TraceID:            c[colSpanTraceID].str(row),
		SpanID:             c[colSpanSpanID].str(row),
		ParentSpanID:       c[colSpanParentSpanID].str(row),
		Service:            c[colSpanService].str(row),
		Instance:           c[colSpanInstance].str(row),
		Operation:          c[colSpanOperation].str(row),
		Kind:               cascade.SpanKind(c[colSpanKind].str(row)),
		Start:              c[colSpanStart].time(row),
		Duration:           c[colSpanDuration].int64(row),
		Status:             cascade.Status(c[colSpanStatus].str(row)),
		ErrorType:          c[colSpanErrorType].str(row),
		StatusCode:         int32(c[colSpanStatusCode].int64(row)),
		Peer:               c[colSpanPeer].str(row),
		ResendCount:        int32(c[colSpanResendCount].int64(row)),
		MessagingSystem:    c[colSpanMessagingSystem].str(row),
		MessagingOperation: c[colSpanMessagingOperation].str(row),
		Destination:        c[colSpanDestination].str(row),
		ConsumerGroup:      c[colSpanConsumerGroup].str(row),
		MessageID:          c[colSpanMessageID].str(row),
		BatchCount:         int32(c[colSpanBatchCount].int64(row)),
		MessageBytes:       c[colSpanMessageBytes].int64(row),
		Redelivery:         int32(c[colSpanRedelivery].int64(row)),
	}
	s.Links = decodeLinks(rv.list(&c[colSpanLinkTraceID]), rv.list(&c[colSpanLinkSpanID]))
}

// decodeLinks pairs the trace and span ids of a span's links, in order;
// nil when there are none. The slice is new for every span that has
// links; its strings alias the row's bytes, as the span's do.
func decodeLinks(traces, spans []parquet.Value) []cascade.SpanLink {
	n := min(len(traces), len(spans))
	if n == 0 {
		return nil
	}
	links := make([]cascade.SpanLink, n)
	for i := range links {
		t, s := traces[i].ByteArray(), spans[i].ByteArray()
		links[i] = cascade.SpanLink{
			TraceID: unsafe.String(unsafe.SliceData(t), len(t)),
			SpanID:  unsafe.String(unsafe.SliceData(s), len(s)),
		}
	}
	return links
}

func decodeSample(c []column, rv rowValues, s *cascade.Sample) {
	row := rv.flat
	*s = cascade.Sample{
		Time:     c[colSampleTime].time(row),
		Service:  c[colSampleService].str(row),
		Instance: c[colSampleInstance].str(row),
		Metric:   c[colSampleMetric].str(row),
		Kind:     cascade.MetricKind(c[colSampleKind].str(row)),
		Labels:   c[colSampleLabels].str(row),
		Value:    c[colSampleValue].float64(row),
	}
}

// mapColumns finds each spec's column in the schema by name; a name with
// dots is a path into nested groups (links.list.element.trace_id). It
// also reports whether any leaf of the schema is repeated (a list), in
// which case a row holds more values than leaves and rowView must place
// them.
func mapColumns(schema *parquet.Schema, specs []columnSpec) ([]column, bool, error) {
	repeated := false
	for _, path := range schema.Columns() {
		leaf, _ := schema.Lookup(path...)
		if leaf.MaxRepetitionLevel > 0 {
			repeated = true
		}
	}
	cols := make([]column, len(specs))
	for i, spec := range specs {
		leaf, ok := schema.Lookup(strings.Split(spec.name, ".")...)
		if !ok {
			if spec.required {
				return nil, false, fmt.Errorf("no column %s", spec.name)
			}
			cols[i] = column{index: -1}
			continue
		}
		if leaf.MaxRepetitionLevel > 0 && spec.typ != fieldListString {
			return nil, false, fmt.Errorf("column %s is repeated", spec.name)
		}
		typ := leaf.Node.Type()
		c := column{index: leaf.ColumnIndex, kind: typ.Kind(), scale: 1}
		ok = false
		switch spec.typ {
		case fieldString, fieldListString:
			ok = c.kind == parquet.ByteArray || c.kind == parquet.FixedLenByteArray
		case fieldInt, fieldTime:
			ok = c.kind == parquet.Int32 || c.kind == parquet.Int64
		case fieldFloat:
			ok = c.kind == parquet.Double || c.kind == parquet.Float ||
				c.kind == parquet.Int32 || c.kind == parquet.Int64
		}
		if !ok {
			return nil, false, fmt.Errorf("column %s has type %s", spec.name, typ)
		}
		if spec.typ == fieldTime {
			if lt := typ.LogicalType(); lt != nil {
				if ts, _ := lt.Value.(*format.TimestampType); ts != nil && ts.Unit.Value != nil {
					c.scale = int64(ts.Unit.Value.Duration())
				}
			}
		}
		cols[i] = c
	}
	return cols, repeated, nil
}

// rowView places the values of a row of a schema with repeated leaves:
// view[i] is the first value of leaf i (the only one of a leaf that is
// not repeated), so that column.str and the others read it as they read
// a flat row; a repeated leaf's values are row[start[i]:start[i+1]].
type rowView struct {
	view  parquet.Row
	start []int
}

// place fills the view from row, whose values parquet-go orders by leaf.
// It fails when a leaf has no value.
func (v *rowView) place(row parquet.Row, width int) error {
	if v.view == nil {
		v.view = make(parquet.Row, width)
		v.start = make([]int, width+1)
	}
	for i := range v.start {
		v.start[i] = -1
	}
	for i := range row {
		c := row[i].Column()
		if c < 0 || c >= width {
			return fmt.Errorf("a value of column %d, want fewer than %d", c, width)
		}
		if v.start[c] < 0 {
			v.start[c] = i
			v.view[c] = row[i]
		}
	}
	v.start[width] = len(row)
	for c := width - 1; c >= 0; c-- {
		if v.start[c] < 0 {
			return fmt.Errorf("a row without a value of column %d", c)
		}
	}
	return nil
}

// values returns the values of leaf c in the row last placed (place has
// checked that every leaf has one).
func (v *rowView) values(row parquet.Row, c int) []parquet.Value {
	return row[v.start[c]:v.start[c+1]]
}

// readDatasetFile calls fn for every row of the Parquet file at path,
// decoded by decode into one reused value.
func readDatasetFile[T any](path string, specs []columnSpec, decode func([]column, rowValues, *T), fn func(*T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cols, repeated, err := mapColumns(pf.Schema(), specs)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	width := len(pf.Schema().Columns())
	rows := make([]parquet.Row, readBatchRows)
	var v T
	for i, rg := range pf.RowGroups() {
		if err := readRowGroup(rg, rows, width, repeated, cols, decode, &v, fn); err != nil {
			if re, ok := err.(rowGroupError); ok {
				return fmt.Errorf("%s: row group %d: %w", path, i, re.err)
			}
			return err
		}
	}
	return nil
}

// rowValues is one row as a decode function reads it: flat holds one
// value a leaf (the first, for a repeated leaf); row and view are set when
// the schema has repeated leaves, to read all of a leaf's values.
type rowValues struct {
	flat parquet.Row
	row  parquet.Row
	view *rowView
}

// list returns the values of the repeated leaf c; nil when the column is
// absent or the list is empty or null.
func (r rowValues) list(c *column) []parquet.Value {
	if c.index < 0 || r.view == nil {
		return nil
	}
	vals := r.view.values(r.row, c.index)
	if len(vals) == 1 && vals[0].IsNull() {
		return nil
	}
	return vals
}

// rowGroupError wraps an error of the reader, to tell it from fn's, which is
// returned as it is.
type rowGroupError struct{ err error }

func (e rowGroupError) Error() string { return e.err.Error() }

func readRowGroup[T any](rg parquet.RowGroup, rows []parquet.Row, width int, repeated bool, cols []column, decode func([]column, rowValues, *T), v *T, fn func(*T) error) error {
	r := rg.Rows()
	defer r.Close()
	var view rowView
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			rv := rowValues{flat: row}
			if repeated {
				if err := view.place(row, width); err != nil {
					return rowGroupError{err}
				}
				rv = rowValues{flat: view.view, row: row, view: &view}
			} else if len(row) != width {
				return rowGroupError{fmt.Errorf("a row of %d values, want %d", len(row), width)}
			}
			decode(cols, rv, v)
			if e := fn(v); e != nil {
				return e
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return rowGroupError{err}
		}
		if n == 0 {
			return nil
		}
	}
}
