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
	fuzzRoundTrip(f, p, rank.DecodePartial, false,
		[]byte(`{"format":"cascade-partial","version":1,"kind":"rank","shard":{"index":0,"count":1},"replays":[{"candidate":0,"regime":0,"seed":1,"error":"x"}]}`))
}

// FuzzDecodePrepared: any file either fails to decode with an error or
// decodes to a prefix that encodes again to bytes that read back the
// same, and a prefix as Prepare writes it reads back to its bytes.
func FuzzDecodePrepared(f *testing.F) {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.Derive, cfg.SurgeFactor = 2, time.Second, true, 0
	p, err := rank.Prepare(context.Background(), exampleModel(), cfg)
	require.NoError(f, err)
	fuzzRoundTrip(f, p, rank.DecodePrepared, true,
		[]byte(`{"format":"cascade-partial","version":1,"kind":"rank-prefix","prefix":{"baseline":[]}}`),
		[]byte(`{"format":"cascade-partial","version":1,"kind":"rank","shard":{"index":0,"count":1}}`))
}

// encoder is a ranking file's value: a partial or a prefix.
type encoder interface{ Encode() ([]byte, error) }

// fuzzRoundTrip seeds f with written (which must read back to its own
// bytes) and extra, then holds decode to its contract: an error, or a
// value whose encoding, when it decodes again (always, when strict),
// encodes to the same bytes.
func fuzzRoundTrip[T encoder](f *testing.F, written T, decode func([]byte) (T, error), strict bool, extra ...[]byte) {
	seed, err := written.Encode()
	require.NoError(f, err)
	again, err := decode(seed)
	require.NoError(f, err)
	b, err := again.Encode()
	require.NoError(f, err)
	require.Equal(f, string(seed), string(b), "a file reads back to its bytes")
	if len(seed) <= 64<<10 {
		f.Add(seed)
	}
	for _, x := range extra {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip()
		}
		v, err := decode(data)
		if err != nil {
			return
		}
		b, err := v.Encode()
		require.NoError(t, err)
		q, err := decode(b)
		if !strict && err != nil {
			return
		}
		require.NoError(t, err, "a decoded file encodes to one that decodes")
		c, err := q.Encode()
		require.NoError(t, err)
		require.Equal(t, string(b), string(c))
	})
}
