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
			f, ok := acc.rateMemory(base, func(string) float64 { return per })
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
