package fit_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/graph"
	"cascade/replay"
)

// benchFixture is the bundled HotROD capture (300 dispatches in 90 s):
// its model as cascade graph builds it, and its observations as one
// window.
var benchFixture struct {
	once sync.Once
	m    *cascade.Model
	obs  *fit.Observations
}

func hotrodFixture(tb testing.TB) (*cascade.Model, *fit.Observations) {
	benchFixture.once.Do(func() {
		dir := hotrodDataset(tb)
		benchFixture.m = buildModel(tb, dir, graph.LevelService).Model
		obs, err := fit.Observe(context.Background(), fit.DefaultConfig(), benchFixture.m, spansOf(dir), nil)
		require.NoError(tb, err)
		benchFixture.obs = obs
	})
	return benchFixture.m, benchFixture.obs
}

// tile repeats a window's arrivals n times back to back (and its counts n
// times), so the 90-second capture stands for a longer window with the
// same traffic.
func tile(w fit.Window, n int) fit.Window {
	span := w.LengthMS
	out := fit.Window{Index: w.Index, StartNS: w.StartNS, LengthMS: span * float64(n), Roots: w.Roots * n}
	for k := 0; k < n; k++ {
		for _, a := range w.Arrivals {
			out.Arrivals = append(out.Arrivals, replay.Arrival{AtMS: a.AtMS + float64(k)*span, Entry: a.Entry})
		}
	}
	for _, nd := range w.Nodes {
		nd.Requests *= int64(n)
		nd.Failures *= int64(n)
		out.Nodes = append(out.Nodes, nd)
	}
	return out
}

// cpuSeconds returns the process's CPU time (user + system, all
// threads).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkFitDefaultGrid fits the HotROD model with the default grid
// (12,000 points) and reports grid points replayed per second (wall and
// CPU) and per op:
//
//	exhaustive   every point, the 90 s capture as one window
//	refine       coarse-to-fine, the 90 s capture
//	refine-hour  coarse-to-fine, the capture's arrivals tiled to one hour
func BenchmarkFitDefaultGrid(b *testing.B) {
	m, obs := hotrodFixture(b)
	hour := &fit.Observations{Windows: []fit.Window{tile(obs.Windows[0], 40)}}
	for _, bc := range []struct {
		name   string
		search string
		obs    *fit.Observations
	}{
		{"exhaustive", fit.SearchExhaustive, obs},
		{"refine", fit.SearchRefine, obs},
		{"refine-hour", fit.SearchRefine, hour},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := fit.DefaultConfig()
			cfg.Search = bc.search
			cfg.Holdout = 0
			b.ReportAllocs()
			var points int
			cpu0 := cpuSeconds()
			for b.Loop() {
				res, err := fit.Run(context.Background(), cfg, m, bc.obs)
				require.NoError(b, err)
				points += res.Report.Evaluated
			}
			cpu := cpuSeconds() - cpu0
			b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
			b.ReportMetric(float64(points)/cpu, "points/cpu-s")
			b.ReportMetric(float64(points)/float64(b.N), "points/op")
		})
	}
}
