package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcPercent reads the collector's target without setting it. Probing
// with debug.SetGCPercent(-1) and putting the answer back races with
// the watch's finalizer: a fall-back to replayGCPercent between the two
// calls is overwritten, and the watch, having fallen back, never sets
// it again.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// TestHeapGC: the collector is off below the limit, goes back to
// replayGCPercent after a collection that leaves more than half of the
// limit live, and restore puts back what was set before.
func TestHeapGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(123)
	prevLimit := debug.SetMemoryLimit(-1)
	defer func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	}()
	// Far below a limit no heap here reaches, the collector is off and
	// the limit is set. (Under a limit the test's own heap exceeds, the
	// runtime collects at once and the watch may fall back before the
	// settings can be read.)
	restore := heapGC(1 << 40)
	p := gcPercent()
	l := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(l)
	restore()
	if p != -1 {
		t.Errorf("GC percent in a replay: %d, want -1 (off)", p)
	}
	if l != 1<<40 {
		t.Errorf("memory limit in a replay: %d, want %d", l, int64(1)<<40)
	}
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GC percent after a replay that never collected: %d, want 123", p)
	}

	restore = heapGC(1 << 20)
	live := make([]*int, 1<<20) // 8 MiB live, past half the limit
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		if gcPercent() == replayGCPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the collector's target did not go back to replayGCPercent")
		}
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(live)
	restore()
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GC percent after the replay: %d, want 123", p)
	}
	if l := debug.SetMemoryLimit(-1); l != prevLimit {
		t.Errorf("memory limit after the replay: %d, want %d", l, prevLimit)
	}
}
