package graph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailureBurst holds failureBurst to requests 10 ms apart, each 10
// ms long: the longest stretch in which most of them failed, read in
// runs of burstRun requests, so to within half a run (100 ms) each side.
func TestFailureBurst(t *testing.T) {
	tests := []struct {
		name string
		n    int
		fail func(i int) bool
		want int64 // ms
	}{
		{"no failure", 1000, func(int) bool { return false }, 0},
		{"every 5th: 20%, never most", 1000, func(i int) bool { return i%5 == 0 }, 0},
		{"every other: half of every run", 1000, func(i int) bool { return i%2 == 0 }, 10000},
		{"requests 400-499 fail: a 1 s burst", 1000, func(i int) bool { return i >= 400 && i < 500 }, 1200},
		{"the longer of two bursts", 1000, func(i int) bool { return i >= 100 && i < 150 || i >= 600 && i < 900 }, 3200},
		{"fewer requests than a run", burstRun - 1, func(int) bool { return true }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := make([]seqReq, tt.n)
			for i := range seq {
				// Shuffled: failureBurst orders them by start.
				j := (i * 7919) % tt.n
				start := int64(j) * 10e6
				seq[i] = seqReq{start: start, end: start + 10e6, failed: tt.fail(j)}
			}
			require.Equal(t, tt.want*1e6, failureBurst(seq))
		})
	}
}
