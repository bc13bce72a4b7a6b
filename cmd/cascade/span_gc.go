package main

import (
	"os"
	"runtime/debug"
)

// spanGCPercent is the collector's target while a command holds the
// incident pass's records (analyze, rank --incident), unless GOGC is set.
// The pass keeps a record per request, call and gap until it knows each
// operation's normal range, so its peak is a large live heap that grows
// by appends; at Go's default of 100% the heap reaches twice what is
// live before a collection. At 50% a 5 M-span analyze peaked at 908 MB
// instead of 1,196 MB for about the same CPU time (the ranking's replays
// dominate it) and the same report, byte for byte (BENCHMARKS.md,
// "Memory at 1 M, 5 M and 20 M spans").
const spanGCPercent = 50

// spanGC sets the collector for a command that reads a capture's spans
// into the incident pass and returns the function that restores it.
// GOGC, when set, is left alone.
func spanGC() (restore func()) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return func() {}
	}
	old := debug.SetGCPercent(spanGCPercent)
	return func() { debug.SetGCPercent(old) }
}
