package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// writeDataset stores spans through a store with the given run size
// and returns the summary and the rows read back.
func writeDataset(t *testing.T, spans []cascade.Span, samples []cascade.Sample, runRows int) (*Summary, []cascade.Span, []cascade.Sample) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ds")
	w, err := createStore(out, runRows)
	require.NoError(t, err)
	for i := range spans {
		require.NoError(t, w.addSpan(&spans[i]))
	}
	for i := range samples {
		require.NoError(t, w.addSample(&samples[i]))
	}
	sum := &Summary{}
	require.NoError(t, w.commit(sum))
	var gotSpans []cascade.Span
	require.NoError(t, dataset.ReadSpans(out, func(s *cascade.Span) error { gotSpans = append(gotSpans, s.Clone()); return nil }))
	var gotSamples []cascade.Sample
	require.NoError(t, dataset.ReadSamples(out, func(s *cascade.Sample) error { gotSamples = append(gotSamples, cloneSample(s)); return nil }))
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the dataset remains: no temporary directory or spilled runs")
	return sum, gotSpans, gotSamples
}

func span(trace, id, parent string, start int64) cascade.Span {
	return cascade.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: "svc-" + id[:1],
		Operation: "op", Start: start, Duration: 10, Status: cascade.StatusUnset}
}

func TestDatasetSortDedupAnomalies(t *testing.T) {
	in := []cascade.Span{
		span("t2", "b1", "", 100),
		span("t1", "a2", "a1", 50), // starts before its parent: clock skew
		span("t1", "a1", "", 60),
		span("t2", "b1", "", 100),  // duplicate across files
		span("t3", "c2", "c1", 10), // orphan: c1 never arrives, no root
		span("t1", "a3", "a1", 70),
	}
	in[2].Status = cascade.StatusError
	for _, runRows := range []int{1, 2, 1000} {
		t.Run(fmt.Sprintf("runRows=%d", runRows), func(t *testing.T) {
			sum, got, _ := writeDataset(t, in, nil, runRows)
			var order []string
			for _, s := range got {
				order = append(order, s.TraceID+"/"+s.SpanID)
			}
			require.Equal(t, []string{"t1/a2", "t1/a1", "t1/a3", "t2/b1", "t3/c2"}, order)
			require.EqualValues(t, 5, sum.Spans)
			require.EqualValues(t, 3, sum.Traces)
			require.EqualValues(t, 1, sum.DuplicateSpans)
			require.EqualValues(t, 1, sum.OrphanSpans)
			require.EqualValues(t, 1, sum.TracesWithoutRoot)
			require.EqualValues(t, 1, sum.TruncatedTraces)
			require.EqualValues(t, 1, sum.ClockSkewSpans)
			require.EqualValues(t, 1, sum.ErrorSpans)
			require.EqualValues(t, 2, sum.RootSpans)
			require.Equal(t, TimeRange{Start: 10, End: 110}, sum.SpanRange)
		})
	}
}

func TestDatasetSamples(t *testing.T) {
	mk := func(svc, metric string, tm int64, v float64) cascade.Sample {
		return cascade.Sample{Time: tm, Service: svc, Metric: metric, Kind: cascade.MetricQueueDepth, Value: v}
	}
	in := []cascade.Sample{mk("b", "q", 2, 1), mk("a", "q", 2, 2), mk("a", "q", 1, 3), mk("a", "q", 2, 9), mk("a", "r", 1, 4)}
	for _, runRows := range []int{1, 1000} {
		sum, _, got := writeDataset(t, nil, in, runRows)
		require.Equal(t, []cascade.Sample{mk("a", "q", 1, 3), mk("a", "q", 2, 2), mk("a", "r", 1, 4), mk("b", "q", 2, 1)}, got)
		require.EqualValues(t, 4, sum.Samples)
		require.EqualValues(t, 3, sum.Series)
		require.EqualValues(t, 1, sum.DuplicateSamples)
	}
}

func TestDatasetRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	_, err := createStore(dir, 0)
	require.ErrorContains(t, err, "refusing to replace it")
}

func TestDatasetAbortLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	w, err := createStore(filepath.Join(parent, "ds"), 1)
	require.NoError(t, err)
	s := span("t", "a", "", 1)
	require.NoError(t, w.addSpan(&s))
	w.abort()
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestDatasetMessagingRoundTrip checks that the links and messaging
// columns survive the dataset: through the sorter's spilled runs (runRows
// 1 and 2) and in memory, written by Run's writer and read back by
// dataset.ReadSpans and by parquet-go's GenericReader; and that links are a
// standard three-level LIST (links.list.element), as DuckDB and Arrow read
// it.
func TestDatasetMessagingRoundTrip(t *testing.T) {
	producer := span("aa", "p1", "", 100)
	producer.Kind, producer.Operation = cascade.KindProducer, "notify publish"
	producer.MessagingSystem, producer.MessagingOperation = "rabbitmq", cascade.MessagingPublish
	producer.Destination, producer.MessageID, producer.MessageBytes = "notify", "m-1", 512
	consumer := span("bb", "c1", "", 200)
	consumer.Kind, consumer.Operation = cascade.KindConsumer, "rights process"
	consumer.MessagingSystem, consumer.MessagingOperation = "rabbitmq", cascade.MessagingProcess
	consumer.Destination, consumer.ConsumerGroup, consumer.MessageID = "rights", "rights", "m-1"
	consumer.BatchCount, consumer.Redelivery = 2, 3
	consumer.Links = []cascade.SpanLink{{TraceID: "aa", SpanID: "p1"}, {TraceID: "cc", SpanID: "q9"}}
	plain := span("bb", "c2", "c1", 210)
	in := []cascade.Span{consumer, plain, producer}
	want := []cascade.Span{producer, consumer, plain}
	for _, runRows := range []int{1, 2, 1000} {
		t.Run(fmt.Sprintf("runRows=%d", runRows), func(t *testing.T) {
			sum, got, _ := writeDataset(t, in, nil, runRows)
			require.Equal(t, want, got)
			require.EqualValues(t, 3, sum.Spans)
			require.EqualValues(t, 2, sum.MessagingSpans)
			require.EqualValues(t, 1, sum.LinkedSpans)
		})
	}

	out := filepath.Join(t.TempDir(), "ds")
	w, err := createStore(out, 0)
	require.NoError(t, err)
	for i := range in {
		require.NoError(t, w.addSpan(&in[i]))
	}
	require.NoError(t, w.commit(&Summary{}))
	require.Equal(t, want, genericSpans(t, filepath.Join(out, dataset.SpansFile)))
	schema := parquetSchema(t, filepath.Join(out, dataset.SpansFile))
	for _, path := range [][]string{{"links", "list", "element", "trace_id"}, {"links", "list", "element", "span_id"}} {
		leaf, ok := schema.Lookup(path...)
		require.True(t, ok, "column %v", path)
		require.Equal(t, 1, leaf.MaxRepetitionLevel, "column %v", path)
	}
	var links parquet.Field
	for _, f := range schema.Fields() {
		if f.Name() == "links" {
			links = f
		}
	}
	require.NotNil(t, links, "links column")
	lt := links.Type().LogicalType()
	require.NotNil(t, lt, "links is annotated")
	require.IsType(t, (*format.ListType)(nil), lt.Value, "links is a LIST")
}

// parquetSchema returns the schema of the Parquet file at path.
func parquetSchema(t *testing.T, path string) *parquet.Schema {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	pf, err := parquet.OpenFile(f, info.Size())
	require.NoError(t, err)
	return pf.Schema()
}

// TestReadSpansLinksForeignLayout checks that links are read from a file
// laid out by another writer: the columns in another order, a repeated
// column dataset.ReadSpans does not know before them, and rows whose lists are
// empty, one long or longer.
func TestReadSpansLinksForeignLayout(t *testing.T) {
	type foreign struct {
		Tags    []string           `parquet:"tags,list"`
		Links   []cascade.SpanLink `parquet:"links,list"`
		Start   int64              `parquet:"start"`
		SpanID  string             `parquet:"span_id"`
		TraceID string             `parquet:"trace_id"`
		Dest    string             `parquet:"messaging_destination"`
	}
	rows := []foreign{
		{Tags: []string{"a", "b"}, Start: 1, SpanID: "s1", TraceID: "t"},
		{Links: []cascade.SpanLink{{TraceID: "u", SpanID: "x"}}, Start: 2, SpanID: "s2", TraceID: "t", Dest: "q"},
		{Tags: []string{"c"}, Links: []cascade.SpanLink{{TraceID: "u", SpanID: "y"}, {TraceID: "v", SpanID: "z"}}, Start: 3, SpanID: "s3", TraceID: "t"},
	}
	dir := rewrite(t, t.TempDir(), dataset.SpansFile, rows, parquet.MaxRowsPerRowGroup(2))
	require.Equal(t, []cascade.Span{
		{TraceID: "t", SpanID: "s1", Start: 1},
		{TraceID: "t", SpanID: "s2", Start: 2, Destination: "q", Links: []cascade.SpanLink{{TraceID: "u", SpanID: "x"}}},
		{TraceID: "t", SpanID: "s3", Start: 3, Links: []cascade.SpanLink{{TraceID: "u", SpanID: "y"}, {TraceID: "v", SpanID: "z"}}},
	}, readAllSpans(t, dir))
}
