package ingest

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
// shares them.
//
// Columns are looked up by name. trace_id, span_id and start must be
// present; any other column the file lacks, and any null value, reads as
// the field's zero value. start may be stored in any timestamp unit; it is
// returned in nanoseconds.
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
	fieldString fieldType = iota // BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
	fieldInt                     // INT32 or INT64
	fieldTime                    // INT32 or INT64, scaled to nanoseconds by its timestamp unit
	fieldFloat                   // DOUBLE, FLOAT, INT32 or INT64

	// fieldRepeated marks a leaf of a list: a row holds zero or more of
	// its values (and one null for an empty list). It is or-ed with the
	// value's type.
	fieldRepeated fieldType = 0x80
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
		{"messaging_system", fieldString, false},
		{"messaging_operation", fieldString, false},
		{"messaging_destination", fieldString, false},
		{"messaging_consumer_group", fieldString, false},
		{"messaging_message_id", fieldString, false},
		{"messaging_batch_count", fieldInt, false},
		{"messaging_message_bytes", fieldInt, false},
		{"messaging_redelivery", fieldInt, false},
		{"links.list.element.trace_id", fieldString | fieldRepeated, false},
		{"links.list.element.span_id", fieldString | fieldRepeated, false},
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
	colSpanMessagingSystem
	colSpanMessagingOperation
	colSpanDestination
	colSpanConsumerGroup
	colSpanMessageID
	colSpanBatchCount
	colSpanMessageBytes
	colSpanRedelivery
	colSpanLinkTraceID
	colSpanLinkSpanID
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

func decodeSpan(c []column, row, full parquet.Row, s *cascade.Span) {
	links := s.Links[:0]
	*s = cascade.Span{
		TraceID:      c[colSpanTraceID].str(row),
		SpanID:       c[colSpanSpanID].str(row),
		ParentSpanID: c[colSpanParentSpanID].str(row),
		Service:      c[colSpanService].str(row),
		Instance:     c[colSpanInstance].str(row),
		Operation:    c[colSpanOperation].str(row),
		Kind:         cascade.SpanKind(c[colSpanKind].str(row)),
		Start:        c[colSpanStart].time(row),
		Duration:     c[colSpanDuration].int64(row),
		Status:       cascade.Status(c[colSpanStatus].str(row)),
		ErrorType:    c[colSpanErrorType].str(row),
		StatusCode:   int32(c[colSpanStatusCode].int64(row)),
		Peer:         c[colSpanPeer].str(row),
		ResendCount:  int32(c[colSpanResendCount].int64(row)),

		MessagingSystem:    c[colSpanMessagingSystem].str(row),
		MessagingOperation: c[colSpanMessagingOperation].str(row),
		Destination:        c[colSpanDestination].str(row),
		ConsumerGroup:      c[colSpanConsumerGroup].str(row),
		MessageID:          c[colSpanMessageID].str(row),
		BatchCount:         int32(c[colSpanBatchCount].int64(row)),
		MessageBytes:       c[colSpanMessageBytes].int64(row),
		Redelivery:         int32(c[colSpanRedelivery].int64(row)),
	}
	// A list's values follow each other in the row, in list order; an
	// empty list is one null value.
	ti, si := c[colSpanLinkTraceID].index, c[colSpanLinkSpanID].index
	if ti < 0 || si < 0 || len(full) == len(row) && full[ti].IsNull() {
		return
	}
	n := 0
	for _, v := range full {
		if v.Column() != ti || v.IsNull() {
			continue
		}
		b := v.ByteArray()
		links = append(links, cascade.SpanLink{TraceID: unsafe.String(unsafe.SliceData(b), len(b))})
	}
	for _, v := range full {
		if v.Column() != si || v.IsNull() || n >= len(links) {
			continue
		}
		b := v.ByteArray()
		links[n].SpanID = unsafe.String(unsafe.SliceData(b), len(b))
		n++
	}
	if len(links) > 0 {
		s.Links = links
	}
}

func decodeSample(c []column, row, _ parquet.Row, s *cascade.Sample) {
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

// mapColumns finds each spec's column in the schema by name (a dotted
// path for a list's leaves). Every leaf but those of a repeated spec must
// hold exactly one value a row; the reader then finds a value at its leaf
// column index in the row once the row is flattened to one value a
// column (see readRowGroup).
func mapColumns(schema *parquet.Schema, specs []columnSpec) ([]column, error) {
	lists := map[string]bool{}
	for _, spec := range specs {
		if spec.typ&fieldRepeated != 0 {
			lists[spec.name] = true
		}
	}
	for _, path := range schema.Columns() {
		leaf, _ := schema.Lookup(path...)
		if name := strings.Join(path, "."); leaf.MaxRepetitionLevel > 0 && !lists[name] {
			return nil, fmt.Errorf("column %s is repeated", name)
		}
	}
	cols := make([]column, len(specs))
	for i, spec := range specs {
		leaf, ok := schema.Lookup(strings.Split(spec.name, ".")...)
		if !ok {
			if spec.required {
				return nil, fmt.Errorf("no column %s", spec.name)
			}
			cols[i] = column{index: -1}
			continue
		}
		typ := leaf.Node.Type()
		c := column{index: leaf.ColumnIndex, kind: typ.Kind(), scale: 1}
		ok = false
		switch spec.typ &^ fieldRepeated {
		case fieldString:
			ok = c.kind == parquet.ByteArray || c.kind == parquet.FixedLenByteArray
		case fieldInt, fieldTime:
			ok = c.kind == parquet.Int32 || c.kind == parquet.Int64
		case fieldFloat:
			ok = c.kind == parquet.Double || c.kind == parquet.Float ||
				c.kind == parquet.Int32 || c.kind == parquet.Int64
		}
		if !ok {
			return nil, fmt.Errorf("column %s has type %s", spec.name, typ)
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
	return cols, nil
}

// readDatasetFile calls fn for every row of the Parquet file at path,
// decoded by decode into one reused value.
func readDatasetFile[T any](path string, specs []columnSpec, decode func(c []column, flat, full parquet.Row, v *T), fn func(*T) error) error {
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
	cols, err := mapColumns(pf.Schema(), specs)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	width := len(pf.Schema().Columns())
	rows := make([]parquet.Row, readBatchRows)
	var v T
	for i, rg := range pf.RowGroups() {
		if err := readRowGroup(rg, rows, width, cols, decode, &v, fn); err != nil {
			if re, ok := err.(rowGroupError); ok {
				return fmt.Errorf("%s: row group %d: %w", path, i, re.err)
			}
			return err
		}
	}
	return nil
}

// rowGroupError wraps an error of the reader, to tell it from fn's, which is
// returned as it is.
type rowGroupError struct{ err error }

func (e rowGroupError) Error() string { return e.err.Error() }

// readRowGroup decodes every row of rg. A row with one value a column is
// decoded as it is; a row with list values (more than one value in a
// column, or none) is flattened first to the first value of each column,
// and decode reads the lists from the full row.
func readRowGroup[T any](rg parquet.RowGroup, rows []parquet.Row, width int, cols []column, decode func(c []column, flat, full parquet.Row, v *T), v *T, fn func(*T) error) error {
	r := rg.Rows()
	defer r.Close()
	var flat parquet.Row
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			use := row
			if len(row) != width || !oneValueEach(row) {
				if flat = flatten(flat, row, width); flat == nil {
					return rowGroupError{fmt.Errorf("a row of %d values with a column missing, want %d columns", len(row), width)}
				}
				use = flat
			}
			decode(cols, use, row, v)
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

// oneValueEach reports whether the i-th value of row is of column i.
func oneValueEach(row parquet.Row) bool {
	for i := range row {
		if row[i].Column() != i {
			return false
		}
	}
	return true
}

// flatten sets flat to the first value of each of width columns in row;
// nil when a column has no value.
func flatten(flat, row parquet.Row, width int) parquet.Row {
	flat = append(flat[:0], make(parquet.Row, width)...) // zero values: Column() -1
	for i := len(row) - 1; i >= 0; i-- {                 // backwards: the first value wins
		c := row[i].Column()
		if c < 0 || c >= width {
			return nil
		}
		flat[c] = row[i]
	}
	for i := range flat {
		if flat[i].Column() != i {
			return nil
		}
	}
	return flat
}
