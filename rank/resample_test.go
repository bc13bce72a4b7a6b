package rank

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// TestResample: a draw is the same for the same seed and differs between
// seeds; a model with no observations is replayed as it is; and the
// spread of the draws narrows as the requests behind them grow, as a
// mean's standard error does (1/√n).
func TestResample(t *testing.T) {
	m := hotrodModel(t)
	a, b := resample(m, 7), resample(m, 7)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	require.JSONEq(t, string(ja), string(jb), "same seed, same draw")
	require.NotEqual(t, resample(m, 8).Node("mysql").Service.ScaleValue(), a.Node("mysql").Service.ScaleValue())
	require.Nil(t, m.Node("mysql").Service.Scale, "the model itself is left alone")

	bare := &cascade.Model{Version: cascade.ModelVersion, Entries: []cascade.Entry{{Node: "api", RatePerSec: 10, Share: 1}},
		Nodes: []cascade.Node{{Name: "api", Replicas: 1, Service: cascade.Const(5), Overload: cascade.Overload{Base: 0.1}}}}
	jb0, _ := json.Marshal(bare)
	jb1, _ := json.Marshal(resample(bare, 3))
	require.JSONEq(t, string(jb0), string(jb1), "nothing observed, nothing drawn")

	spread := func(requests int64) float64 {
		c := *m
		c.Nodes = append([]cascade.Node(nil), m.Nodes...)
		n := c.Node("mysql")
		ob := *n.Observed
		ob.Requests = requests
		n.Observed = &ob
		var lo, hi float64 = 1e9, -1e9
		for s := uint64(1); s <= 200; s++ {
			v := resample(&c, s).Node("mysql").Service.ScaleValue()
			lo, hi = min(lo, v), max(hi, v)
		}
		return hi - lo
	}
	thin, thick := spread(30), spread(3000)
	require.InDelta(t, 10, thin/thick, 3, "100 times the requests, a tenth of the spread")
}

// TestResampleWidensIntervals: on HotROD's model the best change's
// interval is wider with the capture's uncertainty than with the
// replay's noise alone, and the same seeds give the same report.
func TestResampleWidensIntervals(t *testing.T) {
	m := hotrodModel(t)
	width := map[bool]float64{}
	for _, on := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Seeds, cfg.Capacity, cfg.SurgeFactor = 4, false, 0
		cfg.Resample = on
		rep, err := Run(context.Background(), m, cfg)
		require.NoError(t, err)
		require.Equal(t, on, rep.Resampled)
		require.NotEmpty(t, rep.Rows)
		best := rep.Rows[0]
		require.Equal(t, Win, best.Verdict, best.Candidate.Description)
		width[on] = best.Objective.High - best.Objective.Low
		t.Logf("resample %v: %s %+.3f [%+.3f, %+.3f]", on, best.Candidate.Name, best.Objective.Mean, best.Objective.Low, best.Objective.High)
	}
	require.Greater(t, width[true], width[false])
}
