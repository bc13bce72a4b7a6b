package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// rowCollector is a RowSink keeping everything.
type rowCollector struct {
	spans   []cascade.Span
	samples []cascade.Sample
	errs    []*ParseError
	notes   map[string]int
}

func (c *rowCollector) Span(s *cascade.Span) error     { c.spans = append(c.spans, *s); return nil }
func (c *rowCollector) Sample(s *cascade.Sample) error { c.samples = append(c.samples, *s); return nil }
func (c *rowCollector) Invalid(e *ParseError) error    { c.errs = append(c.errs, e); return nil }
func (c *rowCollector) Infer(note string)              { c.notes["infer: "+note]++ }
func (c *rowCollector) Warn(kind string)               { c.notes["warn: "+kind]++ }

func TestDecode(t *testing.T) {
	f, err := os.Open(repoTestdata("hotrod-baseline", "sample-trace-otlp.json"))
	require.NoError(t, err)
	defer f.Close()
	c := &rowCollector{notes: map[string]int{}}
	require.NoError(t, Decode("sample.json", f, FormatOTLPJSON, nil, c))
	require.Len(t, c.spans, 40)
	require.Empty(t, c.errs)

	c = &rowCollector{notes: map[string]int{}}
	require.NoError(t, Decode("bad.json", strings.NewReader(`{"resourceSpans": [{"scopeSpans": 7}]}`), FormatOTLPJSON, nil, c))
	require.Len(t, c.errs, 1)
	require.ErrorIs(t, c.errs[0], ErrSyntax)
	require.Equal(t, "bad.json", c.errs[0].File)

	err = Decode("x", strings.NewReader("{}"), FormatAuto, nil, c)
	require.ErrorIs(t, err, ErrUnknownFormat)
}

func TestWriter(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	w, err := NewWriter(out, 2)
	require.NoError(t, err)
	spans := []cascade.Span{
		{TraceID: "b", SpanID: "1", Service: "s", Start: 2},
		{TraceID: "a", SpanID: "1", Service: "s", Start: 1, Operation: "first"},
		{TraceID: "a", SpanID: "1", Service: "s", Start: 1, Operation: "repeat"},
	}
	for i := range spans {
		require.NoError(t, w.Span(&spans[i]))
	}
	require.NoError(t, w.Sample(&cascade.Sample{Time: 1, Metric: "m", Value: 1}))
	require.NoDirExists(t, out, "nothing is in place before Commit")
	sum, err := w.Commit()
	require.NoError(t, err)
	require.Equal(t, int64(2), sum.Spans)
	require.Equal(t, int64(1), sum.DuplicateSpans)
	require.Equal(t, int64(1), sum.Samples)
	require.NotNil(t, sum.Warnings)
	var ops []string
	require.NoError(t, dataset.ReadSpans(out, func(s *cascade.Span) error {
		ops = append(ops, strings.Clone(s.TraceID)+":"+strings.Clone(s.Operation))
		return nil
	}))
	require.Equal(t, []string{"a:first", "b:"}, ops, "sorted, the first added wins")
	_, err = w.Commit()
	require.ErrorContains(t, err, "already committed")
	w.Abort() // a no-op after Commit
	require.FileExists(t, filepath.Join(out, dataset.SpansFile))

	// Abort leaves the dataset in place as it was.
	w, err = NewWriter(out, 0)
	require.NoError(t, err)
	require.NoError(t, w.Span(&cascade.Span{TraceID: "c", SpanID: "1", Service: "s"}))
	w.Abort()
	n := 0
	require.NoError(t, dataset.ReadSpans(out, func(*cascade.Span) error { n++; return nil }))
	require.Equal(t, 2, n)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary directory left")

	_, err = NewWriter(out, -1)
	require.ErrorContains(t, err, "negative")
}
