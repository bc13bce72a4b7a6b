package dataset

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"cascade"
)

// Dataset file names inside a dataset directory.
const (
	SpansFile   = "spans.parquet"
	MetricsFile = "metrics.parquet"
	LogsFile    = "logs.parquet"
)

// rowGroupRows bounds a row group of the dataset files, so writers and
// readers hold a bounded slice of a file in memory.
const rowGroupRows = 1 << 18

// compareSpans orders spans.parquet: by trace, then start, then span id.
func compareSpans(a, b *cascade.Span) int {
	if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.SpanID, b.SpanID)
}

// CompareSeries orders the series of metrics.parquet: by service, then
// instance, metric and labels.
func CompareSeries(a, b *cascade.Sample) int {
	if c := cmp.Compare(a.Service, b.Service); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Instance, b.Instance); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Metric, b.Metric); c != 0 {
		return c
	}
	return cmp.Compare(a.Labels, b.Labels)
}

// CompareSamples orders metrics.parquet: by series (CompareSeries), then
// time. Equal samples are the same point stored twice.
func CompareSamples(a, b *cascade.Sample) int {
	if c := CompareSeries(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.Time, b.Time)
}

// Writer builds a dataset: rows are added in any order, sorted with
// bounded memory (a run of runRows rows is sorted in memory and spilled,
// and the runs merged), and written in stored order, each file through a
// keep function that may drop or change rows. Everything is written into
// a temporary directory beside the dataset and moved into place only by
// Publish, so a failed or interrupted run never leaves a half-written
// dataset; Abort (or a crash) leaves the dataset's directory as it was.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	final, tmp string
	spans      *sorter[cascade.Span]
	samples    *sorter[cascade.Sample]
	logs       *sorter[cascade.LogRecord]
	// bigTraces counts, by trace id, the rows of the traces that fill at
	// least bigTrace rows of a sorted run (summed over the runs), so that
	// WriteSpans holds such a trace in one allocation of its size.
	bigTraces map[string]int
}

// bigTrace is the number of rows of one trace in one sorted run from
// which the trace is counted in Writer.bigTraces, and from which
// WriteSpans shares the strings its rows repeat.
const bigTrace = 4096

// NewWriter starts a dataset at out: a temporary directory beside it, named
// for this process (see CleanStale). runRows is how many rows are sorted
// in memory before a run is spilled, zero meaning the default. It fails
// when out exists and is neither a dataset nor an empty directory.
func NewWriter(out string, runRows int) (*Writer, error) {
	if info, err := os.Stat(out); err == nil {
		if !info.IsDir() {
			return nil, fmt.Errorf("dataset %s: exists and is not a directory", out)
		}
		entries, err := os.ReadDir(out)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			if _, err := os.Stat(filepath.Join(out, SpansFile)); err != nil {
				return nil, fmt.Errorf("dataset %s: directory is not empty and holds no %s; refusing to replace it", out, SpansFile)
			}
		}
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		// Named for the dataset asked for, not the temporary directory.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "create dataset", Path: out, Err: err}
	}
	// MkdirTemp makes it private (0700); a dataset is shared like the
	// files in it (0644).
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// Named for this process, so that a later run removes the directory
	// if this one is killed before it finishes (CleanStale).
	if err := writeOwner(tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	w := &Writer{
		final:     out,
		tmp:       tmp,
		spans:     newSorter(tmp, "spans", runRows, compareSpans),
		samples:   newSorter(tmp, "metrics", runRows, CompareSamples),
		logs:      newSorter(tmp, "logs", runRows, CompareLogs),
		bigTraces: map[string]int{},
	}
	w.spans.sorted = w.countBigTraces
	return w, nil
}

// countBigTraces adds the traces of one sorted run that fill at least
// bigTrace of its rows to w.bigTraces.
func (w *Writer) countBigTraces(run []cascade.Span) {
	for i := 0; i < len(run); {
		j := i + 1
		for j < len(run) && run[j].TraceID == run[i].TraceID {
			j++
		}
		if j-i >= bigTrace {
			w.bigTraces[run[i].TraceID] += j - i
		}
		i = j
	}
}

// AddSpan queues one span for spans.parquet, copying it.
func (w *Writer) AddSpan(s *cascade.Span) error { return w.spans.add(s) }

// AddSample queues one metric point for metrics.parquet, copying it.
func (w *Writer) AddSample(s *cascade.Sample) error { return w.samples.add(s) }

// AddLog queues one log record for logs.parquet, copying it.
func (w *Writer) AddLog(r *cascade.LogRecord) error { return w.logs.add(r) }

// Abort removes the temporary directory and everything added.
func (w *Writer) Abort() { os.RemoveAll(w.tmp) }

// Publish swaps the finished directory in, after the Write methods: an
// existing dataset is moved aside first and removed only after the new one
// is in place.
func (w *Writer) Publish() error {
	if err := os.Remove(filepath.Join(w.tmp, ownerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	old := ""
	if _, err := os.Stat(w.final); err == nil {
		old = w.tmp + ".old"
		if err := os.Rename(w.final, old); err != nil {
			return fmt.Errorf("replace dataset %s: %w", w.final, err)
		}
	}
	if err := os.Rename(w.tmp, w.final); err != nil {
		if old != "" {
			os.Rename(old, w.final)
		}
		return fmt.Errorf("publish dataset %s: %w", w.final, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// fileWriter writes one Parquet file of the dataset, batching rows.
type fileWriter[T any] struct {
	f     *os.File
	w     *parquet.GenericWriter[T]
	batch []T
}

func newFileWriter[T any](path string, sorting ...parquet.SortingColumn) (*fileWriter[T], error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := parquet.NewGenericWriter[T](f,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.SortingWriterConfig(parquet.SortingColumns(sorting...)),
		parquet.CreatedBy("cascade", "", ""),
	)
	return &fileWriter[T]{f: f, w: w, batch: make([]T, 0, 4096)}, nil
}

func (fw *fileWriter[T]) write(row *T) error {
	fw.batch = append(fw.batch, *row)
	if len(fw.batch) == cap(fw.batch) {
		return fw.flush()
	}
	return nil
}

func (fw *fileWriter[T]) flush() error {
	if len(fw.batch) == 0 {
		return nil
	}
	_, err := fw.w.Write(fw.batch)
	clear(fw.batch)
	fw.batch = fw.batch[:0]
	return err
}

func (fw *fileWriter[T]) close() error {
	err := fw.flush()
	if e := fw.w.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = fw.f.Sync()
	}
	if e := fw.f.Close(); err == nil {
		err = e
	}
	return err
}

// WriteSpans writes spans.parquet: the spans added, in stored order (by
// trace, then start, then span id), one trace at a time through keep.
// keep is given all rows of one trace and returns the rows to store; it
// may reorder and change them in place and return a prefix of them, and
// must not keep them after it returns.
func (w *Writer) WriteSpans(keep func(trace []cascade.Span) []cascade.Span) error {
	fw, err := newFileWriter[cascade.Span](filepath.Join(w.tmp, SpansFile),
		parquet.Ascending("trace_id"), parquet.Ascending("start"))
	if err != nil {
		return err
	}
	// group holds the rows of one trace, which keep needs
	// whole (parents, repeats, cycles). A trace may be millions of spans:
	// one counted big is allocated at its size at once rather than grown
	// (growing holds the old and the new array together), and from
	// bigTrace rows on, the strings its rows repeat (the trace id, the
	// service, the operation, ...) are shared, not each row's own copy
	// as the run files give them.
	var group []cascade.Span
	strs := map[string]string{}
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		kept := keep(group)
		for i := range kept {
			if err := fw.write(&kept[i]); err != nil {
				return err
			}
		}
		clear(group)
		group = group[:0]
		if len(strs) > 1<<16 {
			clear(strs)
		}
		return nil
	}
	err = w.spans.drain(func(s *cascade.Span) error {
		if len(group) > 0 && group[0].TraceID != s.TraceID {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(group) == 0 {
			if n := w.bigTraces[s.TraceID]; n > cap(group) {
				group = nil // let the old array go before the new one is made
				group = make([]cascade.Span, 0, n)
			}
		}
		group = append(group, *s)
		if n := len(group); n > 1 {
			r := &group[n-1]
			r.TraceID = group[0].TraceID
			if n >= bigTrace {
				shareStrings(r, strs)
			}
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if e := fw.close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", SpansFile, err)
	}
	return nil
}

// shareStrings replaces the strings of r that spans repeat (service,
// instance, operation, kind, status, peer, error type, messaging fields)
// with the copy in strs, adding the ones not there yet.
func shareStrings(r *cascade.Span, strs map[string]string) {
	share := func(p *string) {
		if *p == "" {
			return
		}
		if v, ok := strs[*p]; ok {
			*p = v
			return
		}
		strs[*p] = *p
	}
	for _, p := range []*string{&r.Service, &r.Instance, &r.Operation, &r.Peer, &r.ErrorType,
		&r.MessagingSystem, &r.MessagingOperation, &r.Destination, &r.ConsumerGroup,
		(*string)(&r.Kind), (*string)(&r.Status)} {
		share(p)
	}
}

// WriteSamples writes metrics.parquet: the points added, in stored order
// (CompareSamples), those keep reports true for.
func (w *Writer) WriteSamples(keep func(*cascade.Sample) bool) error {
	return writeFile(w.tmp, MetricsFile, w.samples, keep,
		parquet.Ascending("service"), parquet.Ascending("instance"), parquet.Ascending("metric"),
		parquet.Ascending("labels"), parquet.Ascending("time"))
}

// writeFile writes the file name in dir: the rows of s in stored order,
// those keep reports true for, declared sorted by sorting.
func writeFile[T any](dir, name string, s *sorter[T], keep func(*T) bool, sorting ...parquet.SortingColumn) error {
	fw, err := newFileWriter[T](filepath.Join(dir, name), sorting...)
	if err != nil {
		return err
	}
	err = s.drain(func(row *T) error {
		if !keep(row) {
			return nil
		}
		return fw.write(row)
	})
	if e := fw.close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
