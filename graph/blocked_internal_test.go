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

// TestAlarmEpisodes: the alarms are the runs of refusals an ordinary
// success ends, and a held request waited one out when a refusal came
// while it waited.
func TestAlarmEpisodes(t *testing.T) {
	const ms = int64(1e6)
	ok := func(at, dur int64) seqReq { return seqReq{start: at * ms, end: (at + dur) * ms} }
	refused := func(at int64) seqReq { return seqReq{start: at * ms, end: at*ms + ms/10, own: true, failed: true} }
	slowFail := func(at int64) seqReq { return seqReq{start: at * ms, end: (at + 120) * ms, own: true, failed: true} }
	tests := []struct {
		name             string
		seq              []seqReq
		held             []int64 // starts, ms
		episodes, waited int
	}{{
		name: "two alarms, one held request each",
		seq: []seqReq{ok(0, 5), ok(100, 980), refused(110), refused(140), ok(1200, 5),
			ok(2000, 990), refused(2010), ok(3100, 5)},
		held:     []int64{100, 2000},
		episodes: 2, waited: 2,
	}, {
		name:     "a slow failure inside an alarm does not end it",
		seq:      []seqReq{refused(10), slowFail(20), refused(40), ok(900, 5), refused(1000)},
		episodes: 2,
	}, {
		name:     "a held request does not end its alarm",
		seq:      []seqReq{refused(10), ok(15, 990), refused(40)},
		held:     []int64{15},
		episodes: 1, waited: 1,
	}, {
		name:     "a held publish with no refusal while it waited did not wait an alarm out",
		seq:      []seqReq{ok(0, 60), refused(100), ok(200, 5)},
		held:     []int64{0},
		episodes: 1,
	}, {
		name:     "reading is by start, whatever the order given",
		seq:      []seqReq{refused(300), ok(200, 5), refused(100)},
		episodes: 2,
	}, {
		name: "no refusals",
		seq:  []seqReq{ok(0, 5), ok(10, 5)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			held := map[int64]bool{}
			for _, at := range tc.held {
				held[at*ms] = true
			}
			episodes, waited := alarmEpisodes(tc.seq, ms/10, held)
			require.Equal(t, tc.episodes, episodes, "alarms")
			require.Equal(t, tc.waited, waited, "held requests that waited an alarm out")
		})
	}
}

func TestHeldPerAlarm(t *testing.T) {
	tests := []struct{ held, episodes, want int }{
		{12, 14, 1}, // notify-load setting g's before
		{7, 15, 1},  // under half an alarm each: still one, the wait was seen
		{29, 10, 3},
		{3, 0, 1},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, heldPerAlarm(tc.held, tc.episodes), "%d held in %d alarms", tc.held, tc.episodes)
	}
}
