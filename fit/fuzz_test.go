package fit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
)

// FuzzParseGrid: any specification either fails to parse or round-trips
// through its canonical form, and its points map to coordinates and back.
func FuzzParseGrid(f *testing.F) {
	for _, s := range []string{
		"p=0.01:0.5:0.01,r=0:1:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,tier=p50|p95|p99|empirical,fanout=1",
		"p.async=0.1|0.5,p.sync=0:1:0.25,k=0|1,theta.db=1",
		"tier=mean|tiers,fanout=0.5:2:0.5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 1<<10 {
			t.Skip()
		}
		g, err := fit.ParseGrid(spec, nil)
		if err != nil {
			return
		}
		again, err := fit.ParseGrid(g.String(), nil)
		require.NoError(t, err, "canonical form %q of %q", g.String(), spec)
		require.Equal(t, g.String(), again.String())
		require.Equal(t, g.Size(), again.Size())
		for _, i := range []int{0, g.Size() - 1} {
			require.Equal(t, i, g.Index(g.Coords(i)))
		}
	})
}
