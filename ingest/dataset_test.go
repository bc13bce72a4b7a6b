package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// writeDataset stores spans through a datasetWriter with the given run size
// and returns the summary and the rows read back.
func writeDataset(t *testing.T, spans []cascade.Span, samples []cascade.Sample, runRows int) (*Summary, []cascade.Span, []cascade.Sample) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ds")
	w, err := createDataset(out, runRows)
	require.NoError(t, err)
	for i := range spans {
		require.NoError(t, w.spans.add(&spans[i]))
	}
	for i := range samples {
		require.NoError(t, w.samples.add(&samples[i]))
	}
	sum := &Summary{}
	require.NoError(t, w.commit(sum))
	var gotSpans []cascade.Span
	require.NoError(t, ReadSpans(out, func(s *cascade.Span) error { gotSpans = append(gotSpans, cloneSpan(s)); return nil }))
	var gotSamples []cascade.Sample
	require.NoError(t, ReadSamples(out, func(s *cascade.Sample) error { gotSamples = append(gotSamples, cloneSample(s)); return nil }))
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
	_, err := createDataset(dir, 0)
	require.ErrorContains(t, err, "refusing to replace it")
}

func TestDatasetAbortLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	w, err := createDataset(filepath.Join(parent, "ds"), 1)
	require.NoError(t, err)
	s := span("t", "a", "", 1)
	require.NoError(t, w.spans.add(&s))
	w.abort()
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, entries)
}
