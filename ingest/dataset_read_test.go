package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// readGeneric reads a Parquet file with parquet-go's GenericReader, as
// dataset.ReadSpans and dataset.ReadSamples did before they read rows: the reference the
// row reader is checked and measured against.
func readGeneric[T any](path string, fn func(*T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		return err
	}
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	batch := make([]T, 1024)
	for {
		n, err := r.Read(batch)
		for i := range n {
			if err := fn(&batch[i]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func genericRows[T any](t testing.TB, path string) []T {
	t.Helper()
	var rows []T
	require.NoError(t, readGeneric(path, func(v *T) error { rows = append(rows, *v); return nil }))
	return rows
}

// genericSpans is genericRows for spans, with no links as nil, as
// dataset.ReadSpans returns them. GenericReader makes an empty list an empty
// slice, and a file without the links column a list of one empty link.
func genericSpans(t testing.TB, path string) []cascade.Span {
	t.Helper()
	spans := genericRows[cascade.Span](t, path)
	for i := range spans {
		if l := spans[i].Links; len(l) == 0 || len(l) == 1 && l[0] == (cascade.SpanLink{}) {
			spans[i].Links = nil
		}
	}
	return spans
}

func readAllSpans(t testing.TB, dir string) []cascade.Span {
	t.Helper()
	var spans []cascade.Span
	require.NoError(t, dataset.ReadSpans(dir, func(s *cascade.Span) error { spans = append(spans, s.Clone()); return nil }))
	return spans
}

func readAllSamples(t testing.TB, dir string) []cascade.Sample {
	t.Helper()
	var samples []cascade.Sample
	require.NoError(t, dataset.ReadSamples(dir, func(s *cascade.Sample) error { samples = append(samples, cloneSample(s)); return nil }))
	return samples
}

// requireSamplesEqual compares samples with their values bit for bit, so
// that NaN equals NaN.
func requireSamplesEqual(t testing.TB, want, got []cascade.Sample) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, math.Float64bits(w.Value), math.Float64bits(g.Value), "sample %d: value %v, want %v", i, g.Value, w.Value)
		w.Value, g.Value = 0, 0
		require.Equal(t, w, g, "sample %d", i)
	}
}

// The datasets the reader is tested and measured on, built once per test
// binary under readFixtures.root and removed by TestMain.
var readFixtures struct {
	mu     sync.Mutex
	root   string
	hotrod string // the HotROD capture ingested: 11,850 spans, 20,591 points
	tiled  string // the HotROD spans tiled to ≥ 1M spans
}

// readFixtureRoot returns the fixtures' directory; readFixtures.mu is held.
func readFixtureRoot(tb testing.TB) string {
	if readFixtures.root == "" {
		dir, err := os.MkdirTemp("", "cascade-ingest-read-")
		require.NoError(tb, err)
		readFixtures.root = dir
	}
	return readFixtures.root
}

// removeReadFixtures removes the fixtures' directory, if any was made.
func removeReadFixtures() {
	if readFixtures.root != "" {
		os.RemoveAll(readFixtures.root)
	}
}

// hotrodDataset returns the HotROD capture (traces and Prometheus
// metrics) ingested by Run.
func hotrodDataset(tb testing.TB) string {
	tb.Helper()
	readFixtures.mu.Lock()
	defer readFixtures.mu.Unlock()
	if readFixtures.hotrod == "" {
		cfg := DefaultConfig()
		cfg.Traces = []string{hotrodOTLPPath}
		cfg.Metrics = []string{repoTestdata("hotrod-baseline", "prometheus")}
		cfg.Out = filepath.Join(readFixtureRoot(tb), "hotrod")
		sum, err := Run(context.Background(), cfg)
		require.NoError(tb, err)
		require.EqualValues(tb, 11850, sum.Spans)
		readFixtures.hotrod = cfg.Out
	}
	return readFixtures.hotrod
}

// tiledSpans is the least size of the tiled fixture.
const tiledSpans = 1_000_000

// tiledDataset returns the HotROD spans tiled until there are at least
// tiledSpans: copy k of the capture has trace ids whose first four hex
// digits are k and starts shifted k times the capture's time range (plus
// a second) later, so the copies neither collide nor overlap. It is
// written by a Writer, as Run writes a dataset: 2^18-row runs sorted,
// spilled and merged, row groups of 2^18 rows.
func tiledDataset(tb testing.TB) string {
	tb.Helper()
	hotrod := hotrodDataset(tb)
	readFixtures.mu.Lock()
	defer readFixtures.mu.Unlock()
	if readFixtures.tiled != "" {
		return readFixtures.tiled
	}
	base := genericSpans(tb, filepath.Join(hotrod, dataset.SpansFile))
	lo, hi := base[0].Start, base[0].End()
	for i := range base {
		lo, hi = min(lo, base[i].Start), max(hi, base[i].End())
	}
	shift := hi - lo + 1e9
	tiles := (tiledSpans + len(base) - 1) / len(base)
	out := filepath.Join(readFixtureRoot(tb), "tiled")
	w, err := NewWriter(out, 0)
	require.NoError(tb, err)
	ids := map[string]string{}
	for k := range tiles {
		clear(ids)
		prefix := fmt.Sprintf("%04x", k)
		for i := range base {
			s := base[i]
			id, ok := ids[s.TraceID]
			if !ok {
				require.GreaterOrEqual(tb, len(s.TraceID), 4)
				id = prefix + s.TraceID[4:]
				ids[s.TraceID] = id
			}
			s.TraceID = id
			s.Start += int64(k) * shift
			require.NoError(tb, w.Span(&s))
		}
	}
	sum, err := w.Commit()
	require.NoError(tb, err)
	require.EqualValues(tb, tiles*len(base), sum.Spans, "tiles collide")
	readFixtures.tiled = out
	return out
}

// rewrite writes rows as a Parquet file at dir/name with the given writer
// options, returning dir.
func rewrite[T any](t testing.TB, dir, name string, rows []T, opts ...parquet.WriterOption) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(t, err)
	defer f.Close()
	w := parquet.NewGenericWriter[T](f, opts...)
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return dir
}

// TestReadMatchesGenericReader checks that dataset.ReadSpans and dataset.ReadSamples
// return exactly the rows parquet-go's GenericReader returns: on the
// HotROD dataset as Run writes it, on the same rows in row groups of 1,000
// rows and pages of 2 KiB (batches that cross pages and dictionaries
// that change), and on rows whose optional fields are empty.
func TestReadMatchesGenericReader(t *testing.T) {
	hotrod := hotrodDataset(t)
	spans := genericSpans(t, filepath.Join(hotrod, dataset.SpansFile))
	samples := genericRows[cascade.Sample](t, filepath.Join(hotrod, dataset.MetricsFile))
	require.Len(t, spans, 11850)
	require.Len(t, samples, 20591)

	small := t.TempDir()
	opts := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(1000), parquet.PageBufferSize(2048), parquet.Compression(&parquet.Zstd)}
	rewrite(t, small, dataset.SpansFile, spans, opts...)
	rewrite(t, small, dataset.MetricsFile, samples, opts...)

	empty := filepath.Join(t.TempDir(), "empty")
	w, err := NewWriter(empty, 0)
	require.NoError(t, err)
	for i, s := range []cascade.Span{
		{TraceID: "t1", SpanID: "a", Service: "svc", Start: 1},
		{TraceID: "t1", SpanID: "b", ParentSpanID: "a", Service: "svc", Start: 2, Status: cascade.StatusError, StatusCode: -1, ResendCount: math.MaxInt32},
		{TraceID: "t2", SpanID: "c", Service: "ünïcode ✓", Operation: strings.Repeat("long ", 1000), Start: math.MinInt64 / 2, Kind: cascade.KindClient, Peer: "db"},
		{TraceID: "t3", SpanID: "d", Start: 0},
	} {
		require.NoError(t, w.Span(&s), "span %d", i)
	}
	for _, s := range []cascade.Sample{
		{Metric: "m"},
		{Time: 1, Metric: "m", Value: math.NaN()},
		{Time: 2, Metric: "m", Value: math.Inf(1)},
		{Time: 3, Metric: "m", Value: math.Inf(-1), Service: "s", Kind: cascade.MetricOther, Labels: `a="b"`},
		{Time: 4, Metric: "n", Value: -0.5, Instance: "i"},
	} {
		require.NoError(t, w.Sample(&s))
	}
	_, err = w.Commit()
	require.NoError(t, err)

	for _, tc := range []struct{ name, dir string }{
		{"hotrod", hotrod},
		{"small row groups and pages", small},
		{"empty values", empty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := genericSpans(t, filepath.Join(tc.dir, dataset.SpansFile))
			require.NotEmpty(t, want)
			for i := range want {
				if len(want[i].Links) == 0 {
					want[i].Links = nil // the generic reader's empty list
				}
			}
			require.Equal(t, want, readAllSpans(t, tc.dir))
			requireSamplesEqual(t, genericRows[cascade.Sample](t, filepath.Join(tc.dir, dataset.MetricsFile)), readAllSamples(t, tc.dir))
		})
	}
}

// optionalSpan is a spans.parquet row as another writer might lay it out:
// columns in another order, every string nullable (an empty string is
// written as null), an extra column, and no peer or resend_count.
type optionalSpan struct {
	Start        int64  `parquet:"start,timestamp(nanosecond)"`
	Service      string `parquet:"service,optional,dict"`
	Extra        string `parquet:"extra"`
	TraceID      string `parquet:"trace_id,optional"`
	SpanID       string `parquet:"span_id,optional"`
	ParentSpanID string `parquet:"parent_span_id,optional"`
	Instance     string `parquet:"instance,optional,dict"`
	Operation    string `parquet:"operation,optional,dict"`
	Kind         string `parquet:"kind,optional,dict"`
	Duration     int64  `parquet:"duration_ns,optional"`
	Status       string `parquet:"status,optional,dict"`
	ErrorType    string `parquet:"error_type,optional"`
	StatusCode   int32  `parquet:"status_code,optional"`
}

// TestReadSpansByColumnName checks that columns are found by name, that
// nulls and missing columns read as zero values (as GenericReader reads
// them), and that a start in milliseconds or microseconds, and integers
// of the other width, are converted.
func TestReadSpansByColumnName(t *testing.T) {
	rows := []optionalSpan{
		{Start: 5, TraceID: "t", SpanID: "a", Service: "svc", Extra: "x", Kind: "server", Duration: 7, Status: "ok", StatusCode: 200},
		{Start: 6, TraceID: "t", SpanID: "b", ParentSpanID: "a", Extra: "y", Operation: "GET", Status: "error", ErrorType: "boom", StatusCode: -3},
		{Start: 7, TraceID: "u", SpanID: "c"},
	}
	dir := rewrite(t, t.TempDir(), dataset.SpansFile, rows, parquet.MaxRowsPerRowGroup(2))
	want := []cascade.Span{
		{TraceID: "t", SpanID: "a", Service: "svc", Kind: cascade.KindServer, Start: 5, Duration: 7, Status: cascade.StatusOK, StatusCode: 200},
		{TraceID: "t", SpanID: "b", ParentSpanID: "a", Operation: "GET", Start: 6, Status: cascade.StatusError, ErrorType: "boom", StatusCode: -3},
		{TraceID: "u", SpanID: "c", Start: 7},
	}
	require.Equal(t, want, genericSpans(t, filepath.Join(dir, dataset.SpansFile)))
	require.Equal(t, want, readAllSpans(t, dir))

	type otherUnits struct {
		TraceID    string `parquet:"trace_id"`
		SpanID     string `parquet:"span_id"`
		StartMS    int64  `parquet:"start,timestamp(millisecond)"`
		Duration   int32  `parquet:"duration_ns"`
		StatusCode int64  `parquet:"status_code"`
	}
	dir = rewrite(t, t.TempDir(), dataset.SpansFile, []otherUnits{{"t", "a", 1_700_000_000_123, -5, 503}})
	require.Equal(t, []cascade.Span{{TraceID: "t", SpanID: "a", Start: 1_700_000_000_123_000_000, Duration: -5, StatusCode: 503}}, readAllSpans(t, dir))

	type microSamples struct {
		Value  float32 `parquet:"value"`
		Metric string  `parquet:"metric"`
		Time   int64   `parquet:"time,timestamp(microsecond)"`
	}
	dir = rewrite(t, t.TempDir(), dataset.MetricsFile, []microSamples{{1.5, "m", 2}})
	require.Equal(t, []cascade.Sample{{Time: 2000, Metric: "m", Value: 1.5}}, readAllSamples(t, dir))
}

// TestReadSpansErrors checks that files without the columns a row needs,
// or with columns of the wrong type, are refused naming the file, and that
// fn's error is returned as it is.
func TestReadSpansErrors(t *testing.T) {
	type noTrace struct {
		SpanID string `parquet:"span_id"`
		Start  int64  `parquet:"start"`
	}
	type intService struct {
		TraceID string `parquet:"trace_id"`
		SpanID  string `parquet:"span_id"`
		Start   int64  `parquet:"start"`
		Service int64  `parquet:"service"`
	}
	type repeatedService struct {
		TraceID string   `parquet:"trace_id"`
		SpanID  string   `parquet:"span_id"`
		Start   int64    `parquet:"start"`
		Service []string `parquet:"service"`
	}
	for _, tc := range []struct {
		name, want string
		dir        string
	}{
		{"missing column", "no column trace_id", rewrite(t, t.TempDir(), dataset.SpansFile, []noTrace{{"a", 1}})},
		{"wrong type", "column service has type", rewrite(t, t.TempDir(), dataset.SpansFile, []intService{{"t", "a", 1, 2}})},
		{"repeated column", "column service is repeated", rewrite(t, t.TempDir(), dataset.SpansFile, []repeatedService{{"t", "a", 1, []string{"x", "y"}}})},
		{"metrics file", "no column trace_id", rewrite(t, t.TempDir(), dataset.SpansFile, []cascade.Sample{{Metric: "m"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dataset.ReadSpans(tc.dir, func(*cascade.Span) error { return nil })
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, filepath.Join(tc.dir, dataset.SpansFile))
		})
	}

	err := dataset.ReadSpans(t.TempDir(), func(*cascade.Span) error { return nil })
	require.ErrorIs(t, err, os.ErrNotExist)

	stop := errors.New("stop")
	n := 0
	err = dataset.ReadSpans(hotrodDataset(t), func(*cascade.Span) error {
		if n++; n == 1500 {
			return stop
		}
		return nil
	})
	require.Equal(t, stop, err)
	require.Equal(t, 1500, n)
}
