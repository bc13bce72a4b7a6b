package fit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
	"cascade/replay"
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

// FuzzDecodePartial: any file either fails to decode with an error or
// decodes to a partial that encodes again, and a partial as RunShard
// writes it reads back to the same bytes.
func FuzzDecodePartial(f *testing.F) {
	m, obs := chainFit(f)
	cfg := fit.DefaultConfig()
	cfg.Grid, cfg.Shard = "p=0.1|0.5,tier=p50|p95", replay.Shard{Index: 1, Count: 2}
	p, err := fit.RunShard(context.Background(), cfg, m, obs)
	require.NoError(f, err)
	seed, err := p.Encode()
	require.NoError(f, err)
	again, err := fit.DecodePartial(seed)
	require.NoError(f, err)
	b, err := again.Encode()
	require.NoError(f, err)
	require.Equal(f, string(seed), string(b), "a partial reads back to its bytes")
	if len(seed) <= 64<<10 {
		f.Add(seed)
	}
	f.Add([]byte(`{"format":"cascade-partial","version":1,"kind":"fit","shard":{"index":0,"count":1},"points":[{"index":0,"loss":["NaN","+Inf",1e-300]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip()
		}
		p, err := fit.DecodePartial(data)
		if err != nil {
			return
		}
		b, err := p.Encode()
		require.NoError(t, err)
		if q, err := fit.DecodePartial(b); err == nil {
			c, err := q.Encode()
			require.NoError(t, err)
			require.Equal(t, string(b), string(c))
		}
	})
}
