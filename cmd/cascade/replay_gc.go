package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector while cascade replay runs (unless GOGC is set). A
// replay's heap is its job records, which live to the end of the run
// (they are reused, not freed), so each collection scans every record
// for nothing: at the default target of 100% a collapsing replay's
// queues trigger one each time they double the heap (about a quarter of
// the CPU time of a seed-000 replay at 0.15 requests/ms, 100 s), and at
// 400% a healthy 1,000 s replay still spent ~20% of its CPU in two
// (BENCHMARKS.md). So the replay does not collect until its heap reaches
// replayHeapLimit; after a collection that finds more than half of that
// live, it goes back to a target of replayGCPercent with no limit, so
// that a large replay never runs the collector over and over near the
// limit.
const (
	replayHeapLimit = 512 << 20
	replayGCPercent = 400
)

// replayGC sets the collector for a replay and returns the function
// that restores it. GOGC, when set, is left alone; a GOMEMLIMIT below
// replayHeapLimit is kept.
func replayGC() (restore func()) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return func() {}
	}
	return heapGC(replayHeapLimit)
}

// heapGC turns the collector off below a heap of limit bytes, and back
// to replayGCPercent after a collection that leaves more than limit/2
// live.
func heapGC(limit int64) (restore func()) {
	w := &gcWatch{limit: limit}
	w.oldPercent = debug.SetGCPercent(-1)
	w.oldLimit = debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(w.oldLimit, limit))
	w.arm()
	return w.stop
}

// gcWatch looks at the live heap after each collection (through the
// finalizer of an object that only it allocated, set anew each cycle).
type gcWatch struct {
	limit             int64
	oldPercent        int
	oldLimit          int64
	mu                sync.Mutex
	stopped, fellBack bool
	live              [1]metrics.Sample
}

// gcSentinel is the object whose finalizer runs after a collection. It
// holds a pointer so that it is not a tiny allocation, whose finalizer
// may never run.
type gcSentinel struct{ w *gcWatch }

func (w *gcWatch) arm() {
	runtime.SetFinalizer(&gcSentinel{w: w}, (*gcSentinel).collected)
}

func (s *gcSentinel) collected() {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.live[0].Name = "/gc/heap/live:bytes"
	metrics.Read(w.live[:])
	if v := w.live[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > uint64(w.limit/2) {
		debug.SetGCPercent(replayGCPercent)
		debug.SetMemoryLimit(w.oldLimit)
		w.fellBack = true
		return
	}
	w.arm()
}

func (w *gcWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	debug.SetGCPercent(w.oldPercent)
	debug.SetMemoryLimit(w.oldLimit)
}
