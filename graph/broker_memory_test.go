package graph

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

func TestRateMemory(t *testing.T) {
	// A broker whose memory is base + k × the publish rate (bytes/s)
	// averaged over window s (with fall > 0: the lesser of that and an
	// average over fall s), sampled each second for 90 s, under a rate
	// that steps up, down and stops (publishers blocked) for 3 s twice;
	// queue "a" (1 KB messages) is published on two channels, one of
	// which resets its counter.
	const base, k, per = 50e6, 12.0, 1000.0
	series := func(window, fall float64, memory func(rate float64) float64, alarm bool) []cascade.Sample {
		var out []cascade.Sample
		var c1, c2 float64
		slow, fast := math.NaN(), math.NaN()
		for s := range 91 {
			msgs := 100.0
			switch {
			case s >= 20 && s < 40:
				msgs = 300
			case s >= 55 && s < 58, s >= 70 && s < 73:
				msgs = 0
			}
			x := 0.0
			if s > 0 {
				c1 += msgs / 2
				c2 += msgs / 2
				if s == 30 {
					c2 = msgs / 2 // a restart of the channel
				}
				slow = ewma(slow, msgs*per, 1, window*1000)
				x = slow
				if fall > 0 {
					fast = ewma(fast, msgs*per, 1, fall*1000)
					x = min(slow, fast)
				}
			}
			ts := int64(s) * 1e9
			on := 0.0
			if alarm && msgs == 0 {
				on = 1
			}
			out = append(out,
				cascade.Sample{Time: ts, Kind: cascade.MetricBrokerMemory, Value: memory(x)},
				cascade.Sample{Time: ts, Kind: cascade.MetricMemoryAlarm, Value: on},
				cascade.Sample{Time: ts, Kind: cascade.MetricPublished, Metric: "p", Labels: `channel="1",queue="a"`, Value: c1},
				cascade.Sample{Time: ts, Kind: cascade.MetricPublished, Metric: "p", Labels: `channel="2",queue="a"`, Value: c2})
		}
		return out
	}
	follows := func(r float64) float64 { return base + k*r }
	tests := []struct {
		name         string
		samples      []cascade.Sample
		ok           bool
		window, fall float64 // ms
	}{
		{"memory follows the rate", series(2, 0, follows, false), true, 2000, 0},
		{"the alarm's samples count too", series(2, 0, follows, true), true, 2000, 0},
		{"a slow rise and a fast fall", series(8, 1, follows, true), true, 8000, 1000},
		{"memory flat at base", series(2, 0, func(float64) float64 { return base }, false), false, 0, 0},
		{"no publish counters", series(2, 0, follows, false)[:0], false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc := newMetricAcc()
			for i := range tc.samples {
				acc.add(&tc.samples[i])
			}
			f, ok := acc.rateMemory(base, func(string) float64 { return per }, 0)
			require.Equal(t, tc.ok, ok, "%+v", f)
			if tc.ok {
				require.InEpsilon(t, k, f.seconds, 0.10)
				require.Less(t, f.relRMS, 0.1)
				require.Equal(t, tc.window, f.windowMS)
				require.Equal(t, tc.fall, f.fallMS)
			}
		})
	}
}

// TestRateMemoryColdStart: a broker scraped from 2 s after its traffic
// began, its memory still rising: the counters' first points hold the
// publishes before, and the fit starts its averages from nothing at the
// traffic's start, as the broker did (and as a replay does), rather than
// at the first interval's rate.
func TestRateMemoryColdStart(t *testing.T) {
	const base, k, per, lead = 50e6, 12.0, 1000.0, 2
	var samples []cascade.Sample
	avg, c := 0.0, 0.0
	for s := -lead + 1; s <= 60; s++ {
		msgs := 100.0
		if s >= 20 && s < 40 {
			msgs = 300
		}
		c += msgs
		avg = ewma(avg, msgs*per, 1, 5000)
		if s < 0 {
			continue
		}
		ts := int64(100+s) * 1e9 // Unix ns: a start of 0 is unknown
		samples = append(samples,
			cascade.Sample{Time: ts, Kind: cascade.MetricBrokerMemory, Value: base + k*avg},
			cascade.Sample{Time: ts, Kind: cascade.MetricPublished, Metric: "p", Labels: `queue="a"`, Value: c})
	}
	acc := newMetricAcc()
	for i := range samples {
		acc.add(&samples[i])
	}
	bytesOf := func(string) float64 { return per }
	warm, ok := acc.rateMemory(base, bytesOf, 0)
	require.True(t, ok)
	cold, ok := acc.rateMemory(base, bytesOf, (100-lead)*1e9)
	require.True(t, ok)
	t.Logf("warm start: %+v; cold start at the traffic's: %+v", warm, cold)
	require.Equal(t, 5000.0, cold.windowMS)
	require.InEpsilon(t, k, cold.seconds, 0.02)
	require.Less(t, cold.relRMS, 0.01)
	require.Less(t, cold.relRMS, warm.relRMS)
	// A counter older than the traffic (publishes from before it, faster
	// than any interval scraped) is not read as the traffic's.
	old := newMetricAcc()
	for i := range samples {
		s := samples[i]
		if s.Kind == cascade.MetricPublished {
			s.Value += 1e6
		}
		old.add(&s)
	}
	f, ok := old.rateMemory(base, bytesOf, (100-lead)*1e9)
	require.True(t, ok)
	require.Equal(t, warm, f)
}
