package graph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFisherUpper(t *testing.T) {
	tests := []struct {
		name       string
		N, K, n, k int64
		want       float64
	}{
		// C(5,5)·C(15,5)/C(20,10) = 3003/184756.
		{"all marked in the draw", 20, 5, 10, 5, 3003.0 / 184756},
		// P(X ≥ 4) = (C(5,4)·C(15,6) + C(5,5)·C(15,5))/C(20,10).
		{"four or more", 20, 5, 10, 4, (5*5005 + 3003) / 184756.0},
		{"none asked", 20, 5, 10, 0, 1},
		{"the draw is everything", 20, 5, 20, 5, 1},
		{"more than could be drawn", 20, 5, 3, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, fisherUpper(tc.N, tc.K, tc.n, tc.k), 1e-9)
		})
	}
}

func TestAlarmIntervals(t *testing.T) {
	const s = int64(1e9)
	tests := []struct {
		name   string
		points map[int64]float64
		want   [][2]int64
	}{
		{"no point of 1", map[int64]float64{0: 0, s: 0, 2 * s: 0}, nil},
		{"a single point", map[int64]float64{0: 1}, nil},
		{"one point of 1: the points before and after", map[int64]float64{0: 0, s: 1, 2 * s: 0, 3 * s: 0}, [][2]int64{{0, 2 * s}}},
		{"two runs two seconds apart merge", map[int64]float64{0: 0, s: 1, 2 * s: 0, 3 * s: 1, 4 * s: 0, 5 * s: 0, 6 * s: 0, 7 * s: 1, 8 * s: 0},
			[][2]int64{{0, 4 * s}, {6 * s, 8 * s}}},
		{"on at both ends: one step beyond, touching runs merge", map[int64]float64{0: 1, s: 0, 2 * s: 1}, [][2]int64{{-s, 3 * s}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m brokerMetrics
			for at, v := range tc.points {
				m.alarm = max(m.alarm, v)
				m.addAlarm(at, v)
			}
			got := m.alarmIntervals()
			require.Equal(t, tc.want, got)
			for _, iv := range got {
				require.True(t, inIntervals(got, iv[0]), "start %d", iv[0])
				require.True(t, inIntervals(got, iv[1]-1), "end %d", iv[1])
				require.False(t, inIntervals(got, iv[1]), "end %d", iv[1])
				require.False(t, inIntervals(got, iv[0]-1), "start %d", iv[0])
			}
		})
	}
}
