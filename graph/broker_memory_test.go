package graph

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

func TestRateMemory(t *testing.T) {
	// A broker whose memory is base + k × the publish rate (bytes/s)
	// averaged over 2 s, sampled each second for a minute, under a rate
	// that steps up and down; queue "a" (1 KB messages) is published on
	// two channels, one of which resets its counter.
	const base, k, per = 50e6, 12.0, 1000.0
	series := func(memory func(rate float64) float64, alarmFrom, alarmTo int) []cascade.Sample {
		var out []cascade.Sample
		var c1, c2 float64
		avg := 0.0
		for s := range 61 {
			msgs := 100.0
			if s >= 20 && s < 40 {
				msgs = 300
			}
			if s > 0 {
				c1 += msgs / 2
				c2 += msgs / 2
				if s == 30 {
					c2 = msgs / 2 // a restart of the channel
				}
				a := math.Exp(-1 / 2.0)
				if s == 1 {
					avg = msgs * per
				} else {
					avg = avg*a + (1-a)*msgs*per
				}
			}
			ts := int64(s) * 1e9
			alarm := 0.0
			if s >= alarmFrom && s < alarmTo {
				alarm = 1
			}
			out = append(out,
				cascade.Sample{Time: ts, Kind: cascade.MetricBrokerMemory, Value: memory(avg)},
				cascade.Sample{Time: ts, Kind: cascade.MetricMemoryAlarm, Value: alarm},
				cascade.Sample{Time: ts, Kind: cascade.MetricPublished, Metric: "p", Labels: `channel="1",queue="a"`, Value: c1},
				cascade.Sample{Time: ts, Kind: cascade.MetricPublished, Metric: "p", Labels: `channel="2",queue="a"`, Value: c2})
		}
		return out
	}
	tests := []struct {
		name    string
		samples []cascade.Sample
		ok      bool
	}{
		{"memory follows the rate", series(func(r float64) float64 { return base + k*r }, 0, 0), true},
		{"samples under the alarm left out", series(func(r float64) float64 { return base + k*r }, 45, 50), true},
		{"memory flat at base", series(func(float64) float64 { return base }, 0, 0), false},
		{"no publish counters", series(func(r float64) float64 { return base + k*r }, 0, 0)[:0], false},
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
				require.Equal(t, 2000.0, f.windowMS)
			}
		})
	}
}
