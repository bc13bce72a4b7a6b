package dataset

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// sorter orders an unbounded stream of rows with bounded memory: it keeps
// up to runRows rows, sorts them and spills them as a run file (Parquet,
// uncompressed) when full, then merges the runs at the end. Rows that
// compare equal keep their arrival order (the merge is stable), so output
// depends only on the input, never on timing.
type sorter[T any] struct {
	cmp     func(a, b *T) int
	runRows int
	dir     string // where runs are spilled
	prefix  string
	buf     []T
	runs    []string
	// sorted, when set, sees each run in order once it is sorted (before
	// it is spilled, or drained from memory): the span sorter counts the
	// rows of big traces there, so that they can be held without growing.
	sorted func([]T)
}

func newSorter[T any](dir, prefix string, runRows int, cmp func(a, b *T) int) *sorter[T] {
	if runRows <= 0 {
		runRows = 1 << 18
	}
	return &sorter[T]{cmp: cmp, runRows: runRows, dir: dir, prefix: prefix}
}

// add appends one row, spilling a run when the buffer is full.
func (s *sorter[T]) add(row *T) error {
	s.buf = append(s.buf, *row)
	if len(s.buf) >= s.runRows {
		return s.spill()
	}
	return nil
}

// sortBuf orders the buffer, keeping arrival order among equal rows. It
// sorts a permutation (moving 4-byte indices rather than whole rows, with
// the index as the tie-break so the unstable sort is stable), then applies
// it.
func (s *sorter[T]) sortBuf() {
	perm := make([]int32, len(s.buf))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := s.cmp(&s.buf[a], &s.buf[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	sorted := make([]T, len(s.buf))
	for i, p := range perm {
		sorted[i] = s.buf[p]
	}
	s.buf = sorted
	if s.sorted != nil {
		s.sorted(s.buf)
	}
}

func (s *sorter[T]) spill() error {
	s.sortBuf()
	path := filepath.Join(s.dir, fmt.Sprintf("%s-run-%04d.parquet", s.prefix, len(s.runs)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&parquet.Uncompressed))
	if _, err := w.Write(s.buf); err != nil {
		f.Close()
		return fmt.Errorf("spill %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return fmt.Errorf("spill %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	clear(s.buf)
	s.buf = s.buf[:0]
	return nil
}

// drain calls fn with every row in sorted order, then removes the runs.
// The row passed to fn is only valid during the call.
func (s *sorter[T]) drain(fn func(*T) error) (err error) {
	if len(s.runs) == 0 {
		s.sortBuf()
		for i := range s.buf {
			if err := fn(&s.buf[i]); err != nil {
				return err
			}
		}
		s.buf = nil
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.buf = nil
	defer func() {
		for _, r := range s.runs {
			os.Remove(r)
		}
	}()
	h := &mergeHeap[T]{cmp: s.cmp}
	for i, path := range s.runs {
		c, err := openCursor[T](path, i)
		if err != nil {
			return err
		}
		defer c.close()
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, c)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		c := h.items[0]
		if err := fn(c.cur()); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// cursor reads one run in batches.
type cursor[T any] struct {
	f     *os.File
	r     *parquet.GenericReader[T]
	batch []T
	n, i  int
	run   int
}

func openCursor[T any](path string, run int) (*cursor[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &cursor[T]{f: f, r: parquet.NewGenericReader[T](f), batch: make([]T, 1024), i: -1, run: run}, nil
}

func (c *cursor[T]) cur() *T { return &c.batch[c.i] }

func (c *cursor[T]) next() (bool, error) {
	c.i++
	if c.i < c.n {
		return true, nil
	}
	clear(c.batch)
	n, err := c.r.Read(c.batch)
	c.n, c.i = n, 0
	if n > 0 {
		return true, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return false, nil
	}
	return false, err
}

func (c *cursor[T]) close() { c.r.Close(); c.f.Close() }

// mergeHeap orders cursors by their current row, then by run index so that
// equal rows come out in arrival order.
type mergeHeap[T any] struct {
	items []*cursor[T]
	cmp   func(a, b *T) int
}

func (h *mergeHeap[T]) Len() int { return len(h.items) }
func (h *mergeHeap[T]) Less(i, j int) bool {
	if c := h.cmp(h.items[i].cur(), h.items[j].cur()); c != 0 {
		return c < 0
	}
	return h.items[i].run < h.items[j].run
}
func (h *mergeHeap[T]) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap[T]) Push(x any)    { h.items = append(h.items, x.(*cursor[T])) }
func (h *mergeHeap[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
