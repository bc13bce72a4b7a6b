package collect

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"cascade"
	"cascade/rank"
	"cascade/replay"
)

// TestHotRODFixCoverage holds rank's 95% intervals to real before/after
// changes: HotROD captured with and without its --fix-* flags (the kept
// captures in testdata/hotrod-fix), each change predicted from the
// baseline's model alone as rank replays a candidate: paired with the
// baseline seed by seed, each seed over its own draw of what the capture
// measured (Config.Resample). The measured effect is the change's capture
// against the baseline's; it carries its own sampling noise (150 roots a
// capture), so it counts as covered when it lies within the predicted
// interval widened by the measurement's 95% half-width (a bootstrap over
// each capture's roots), the two added in quadrature. The table goes to
// the log (docs/validation.md has it); the test fails below 2 of 3
// covered per measure or 90% in all (9 of 9 since graph reads a closed
// loop's think time free of the capture's edges), and says the coverage.
func TestHotRODFixCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the HotROD models for about half a minute")
	}
	ctx := context.Background()
	caps := keptFixCaptures(t)
	require.Contains(t, caps, "baseline")
	bm, err := fixModel(ctx, "baseline", caps["baseline"], nil)
	require.NoError(t, err)

	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Parallel = 8, 2
	cfg.Duration = 300 * time.Second
	traffic := bm.ObservedTraffic()
	var jobs []replay.BatchJob
	var names []string
	jobs = append(jobs, replay.BatchJob{Model: bm, Traffic: traffic})
	for _, c := range fixChanges() {
		if c.scen == nil || caps[c.name] == nil {
			continue
		}
		pm, _, err := replay.Apply(bm, c.scen)
		require.NoError(t, err)
		jobs = append(jobs, replay.BatchJob{Model: pm, Traffic: traffic})
		names = append(names, c.name)
	}
	out, errs, err := replay.NewBatch(cfg.Batch()).Run(ctx, jobs)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
	measures := []struct {
		name  string
		get   func(*replay.Result) float64
		meas  func([]cascade.Span) float64
		scale float64 // printed as
		unit  string
	}{
		{"p50", func(r *replay.Result) float64 { return r.LatencyP50MS }, func(s []cascade.Span) float64 { return measureRoots(s).P50 }, 1, "ms"},
		{"success", func(r *replay.Result) float64 { return r.SuccessRate }, func(s []cascade.Span) float64 { return measureRoots(s).Success }, 100, "pp"},
		{"throughput", func(r *replay.Result) float64 { return r.Goodput }, func(s []cascade.Span) float64 { return measureRoots(s).Throughput }, 1, "/s"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| change | measure | predicted effect [95%% interval] | measured effect [±95%%] | covered |\n|---|---|---|---|---|\n")
	covered := map[string]int{}
	for ci, name := range names {
		for _, m := range measures {
			d := make([]float64, len(out[0]))
			for s := range d {
				d[s] = m.get(out[ci+1][s]) - m.get(out[0][s])
			}
			mean, sd := stat.MeanStdDev(d, nil)
			tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile(0.975)
			h := tq * sd / math.Sqrt(float64(len(d)))
			effect := m.meas(caps[name]) - m.meas(caps["baseline"])
			hm := bootstrapHalfWidth(caps[name], caps["baseline"], m.meas)
			ok := math.Abs(effect-mean) <= math.Hypot(h, hm)
			if ok {
				covered[m.name]++
			}
			fmt.Fprintf(&b, "| %s | %s | %+.3g %s [%+.3g, %+.3g] | %+.3g %s [±%.2g] | %v |\n", name, m.name,
				m.scale*mean, m.unit, m.scale*(mean-h), m.scale*(mean+h), m.scale*effect, m.unit, m.scale*hm, ok)
		}
	}
	n := len(names)
	fmt.Fprintf(&b, "\ncovered: p50 %d of %d, success %d of %d, throughput %d of %d\n", covered["p50"], n, covered["success"], n, covered["throughput"], n)
	t.Logf("HotROD changes: predicted effect (rank's paired interval, seeds 1 to 8, resampled) against measured:\n%s", b.String())
	total := 0
	for _, m := range measures {
		require.GreaterOrEqual(t, 3*covered[m.name], 2*n, "%s covered %d of %d", m.name, covered[m.name], n)
		total += covered[m.name]
	}
	// Issue 37's target: the measured effect inside the interval in at
	// least 90% of the rows.
	require.GreaterOrEqual(t, 10*total, 9*n*len(measures), "covered %d of %d", total, n*len(measures))
}

// bootstrapHalfWidth is the 95% half-width of f(after) − f(before) over
// 400 resamplings of each capture's root requests (with their traces).
func bootstrapHalfWidth(after, before []cascade.Span, f func([]cascade.Span) float64) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	ta, tb := byTrace(after), byTrace(before)
	var xs []float64
	for range 400 {
		xs = append(xs, f(resampleTraces(ta, rng))-f(resampleTraces(tb, rng)))
	}
	slices.Sort(xs)
	lo, hi := xs[int(0.025*float64(len(xs)))], xs[int(0.975*float64(len(xs)))-1]
	return (hi - lo) / 2
}

// byTrace groups root spans' traces: only the roots matter to
// measureRoots, so each trace is kept as its root spans.
func byTrace(spans []cascade.Span) [][]cascade.Span {
	var out [][]cascade.Span
	for i := range spans {
		if spans[i].IsRoot() {
			out = append(out, []cascade.Span{spans[i]})
		}
	}
	return out
}

// resampleTraces draws as many traces as there are, with replacement,
// keeping their times so throughput's span of time holds.
func resampleTraces(ts [][]cascade.Span, rng *rand.Rand) []cascade.Span {
	out := make([]cascade.Span, 0, len(ts))
	for range ts {
		out = append(out, ts[rng.IntN(len(ts))]...)
	}
	return out
}
