package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProgress draws the bar on a buffer with a stubbed clock: nothing
// in the first second; then the rate since the work began and the time
// left at it, not the first tick's work over the instant since the bar
// appeared (issue 39: "3,082,258 points/s", the time left stuck at 0s).
func TestProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name        string
		unit        string
		ticks       []tick
		want, never []string
	}{
		{name: "first second: no bar", unit: "points", ticks: []tick{{0, 0, 100}, {900 * time.Millisecond, 50, 100}}},
		{name: "points", unit: "points",
			ticks: []tick{{0, 0, 10000}, {time.Second, 3000, 10000}, {2 * time.Second, 6000, 12000}},
			want:  []string{"fit 3,000 of 10,000 points, 3,000 points/s, about 2s left", "fit 6,000 of 12,000 points, 3,000 points/s, about 2s left"},
			never: []string{":0s]", "points/s]"}},
		{name: "bytes", unit: "",
			ticks: []tick{{0, 0, 40e6}, {2 * time.Second, 12e6, 40e6}},
			want:  []string{"fit 12.0 MB of 40.0 MB, 6.0 MB/s, about 5s left"}},
		{name: "done", unit: "replays",
			ticks: []tick{{0, 0, 10}, {1500 * time.Millisecond, 10, 10}},
			want:  []string{"fit 10 of 10 replays, 7 replays/s, under 1s left"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			var buf bytes.Buffer
			cb := newProgress(&buf, "fit", tc.unit, func() time.Time { return now }, 0)
			for _, k := range tc.ticks {
				now = t0.Add(k.at)
				cb(k.done, k.total)
			}
			if tc.want == nil {
				require.Empty(t, buf.String())
			}
			for _, w := range tc.want {
				require.Contains(t, buf.String(), w)
			}
			for _, w := range tc.never {
				require.NotContains(t, buf.String(), w)
			}
		})
	}
}

type tick struct {
	at          time.Duration
	done, total int64
}
