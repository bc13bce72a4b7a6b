package fit_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
)

// TestScalingModel models the fit's speed-up on many cores from the
// shape of its search (CASCADE_SCALING=1; BENCHMARKS.md, Fit). It fits
// the HotROD capture with the default grid at Parallel 1, records the
// batches the search evaluates (Config.Progress reports each chunk of
// at most 64 points), and logs, for P workers, the speed-up the batches
// allow when every point costs the same: a batch of n points takes
// ceil(n/P) point-times, chunk by chunk (search.eval cuts batches into
// chunks of max(16P, 64) points and waits for each), and the serial
// fraction that speed-up implies under Amdahl's law.
func TestScalingModel(t *testing.T) {
	if os.Getenv("CASCADE_SCALING") == "" {
		t.Skip("set CASCADE_SCALING=1")
	}
	m, obs := hotrodFixture(t)
	for _, search := range []string{fit.SearchExhaustive, fit.SearchRefine} {
		cfg := fit.DefaultConfig()
		cfg.Search = search
		cfg.Holdout = 0
		cfg.Parallel = 1
		var batches []int
		var last int64
		acc := 0
		cfg.Progress = func(done, _ int64) {
			n := int(done - last)
			last = done
			acc += n
			if n < 64 { // the last chunk of a batch
				batches = append(batches, acc)
				acc = 0
			}
		}
		res, err := fit.Run(context.Background(), cfg, m, obs)
		require.NoError(t, err)
		if acc > 0 {
			batches = append(batches, acc)
		}
		singles := 0
		for _, n := range batches {
			if n == 1 {
				singles++
			}
		}
		t.Logf("%s: %d points in %d batches, %d of one point", search, res.Report.Evaluated, len(batches), singles)
		for _, p := range []int{2, 16, 64} {
			span := 0
			chunk := max(16*p, 64)
			for _, n := range batches {
				for ; n > 0; n -= min(n, chunk) {
					span += (min(n, chunk) + p - 1) / p
				}
			}
			s := float64(res.Report.Evaluated) / float64(span)
			t.Logf("  %2d workers: speed-up %.2f, serial fraction %.3f", p, s, (float64(p)/s-1)/float64(p-1))
		}
	}
}
