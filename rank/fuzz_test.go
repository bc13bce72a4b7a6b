package rank_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade/rank"
	"cascade/replay"
)

// FuzzDecodePartial: any file either fails to decode with an error or
// decodes to a partial that encodes again, and a partial as RunShard
// writes it reads back to the same bytes.
func FuzzDecodePartial(f *testing.F) {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.Derive, cfg.SurgeFactor = 2, time.Second, false, true, 0
	cfg.Shard = replay.Shard{Index: 1, Count: 8}
	p, err := rank.RunShard(context.Background(), exampleModel(), cfg)
	require.NoError(f, err)
	seed, err := p.Encode()
	require.NoError(f, err)
	again, err := rank.DecodePartial(seed)
	require.NoError(f, err)
	b, err := again.Encode()
	require.NoError(f, err)
	require.Equal(f, string(seed), string(b), "a partial reads back to its bytes")
	if len(seed) <= 64<<10 {
		f.Add(seed)
	}
	f.Add([]byte(`{"format":"cascade-partial","version":1,"kind":"rank","shard":{"index":0,"count":1},"replays":[{"candidate":0,"regime":0,"seed":1,"error":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip()
		}
		p, err := rank.DecodePartial(data)
		if err != nil {
			return
		}
		b, err := p.Encode()
		require.NoError(t, err)
		if q, err := rank.DecodePartial(b); err == nil {
			c, err := q.Encode()
			require.NoError(t, err)
			require.Equal(t, string(b), string(c))
		}
	})
}

// FuzzDecodePrepared: any file either fails to decode with an error or
// decodes to a prefix that encodes again to bytes that read back the
// same, and a prefix as Prepare writes it reads back to its bytes.
func FuzzDecodePrepared(f *testing.F) {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Derive, cfg.SurgeFactor = 2, time.Second, true, 0
	p, err := rank.Prepare(context.Background(), exampleModel(), cfg)
	require.NoError(f, err)
	seed, err := p.Encode()
	require.NoError(f, err)
	again, err := rank.DecodePrepared(seed)
	require.NoError(f, err)
	b, err := again.Encode()
	require.NoError(f, err)
	require.Equal(f, string(seed), string(b), "a prefix reads back to its bytes")
	if len(seed) <= 64<<10 {
		f.Add(seed)
	}
	f.Add([]byte(`{"format":"cascade-partial","version":1,"kind":"rank-prefix","prefix":{"baseline":[]}}`))
	f.Add([]byte(`{"format":"cascade-partial","version":1,"kind":"rank","shard":{"index":0,"count":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip()
		}
		p, err := rank.DecodePrepared(data)
		if err != nil {
			return
		}
		b, err := p.Encode()
		require.NoError(t, err)
		q, err := rank.DecodePrepared(b)
		require.NoError(t, err, "a decoded prefix encodes to a file that decodes")
		c, err := q.Encode()
		require.NoError(t, err)
		require.Equal(t, string(b), string(c))
	})
}
