package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestSpanGC checks that the incident pass's commands lower the
// collector's target while they run and restore it after, and leave a
// GOGC the user set alone.
func TestSpanGC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gogc   bool
		during int
	}{
		{"GOGC unset", false, spanGCPercent},
		{"GOGC set", true, 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", "77")
			if !tc.gogc {
				os.Unsetenv("GOGC")
			}
			before := debug.SetGCPercent(77)
			defer debug.SetGCPercent(before)
			restore := spanGC()
			during := debug.SetGCPercent(-1)
			debug.SetGCPercent(during)
			restore()
			after := debug.SetGCPercent(77)
			if during != tc.during || after != 77 {
				t.Errorf("target during %d, after %d; want %d, 77", during, after, tc.during)
			}
		})
	}
}
