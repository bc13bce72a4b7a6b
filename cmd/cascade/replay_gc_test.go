package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

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
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
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
		if p := debug.SetGCPercent(-1); p == replayGCPercent {
			debug.SetGCPercent(p)
			break
		} else {
			debug.SetGCPercent(p)
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
