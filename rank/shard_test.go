package rank_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/rank"
	"cascade/replay"
)

// shardConfig is a small ranking of the example model: derived
// candidates and a scenario of the user's, both regimes, the capacity
// sweep.
func shardConfig() rank.Config {
	cfg := rank.DefaultConfig()
	cfg.Seeds, cfg.Duration, cfg.CapacityPoints, cfg.CapacitySeeds = 2, 5*time.Second, 3, 2
	cfg.Scenarios = []*cascade.Scenario{
		{Name: "pool×2", Nodes: map[string]json.RawMessage{"db": json.RawMessage(`{"concurrency": 8}`)}},
	}
	return cfg
}

// TestMergeIsRun holds the sharding contract: the partials of N shards,
// written to their files and read back, merge into the report Run
// gives, byte for byte, at any N.
func TestMergeIsRun(t *testing.T) {
	m, cfg := exampleModel(), shardConfig()
	rep, err := rank.Run(context.Background(), m, cfg)
	require.NoError(t, err)
	want, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Greater(t, len(rep.Rows), 4, "enough candidates to share out")
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var parts []*rank.Partial
			for i := n - 1; i >= 0; i-- { // any order
				c := cfg
				c.Shard = replay.Shard{Index: i, Count: n}
				p, err := rank.RunShard(context.Background(), exampleModel(), c)
				require.NoError(t, err)
				b, err := p.Encode()
				require.NoError(t, err)
				p, err = rank.DecodePartial(b)
				require.NoError(t, err)
				p.File = fmt.Sprintf("rank-%d.json", i)
				parts = append(parts, p)
			}
			got, err := rank.Merge(context.Background(), parts, rank.MergeOptions{})
			require.NoError(t, err)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			require.Equal(t, string(want), string(b), "seed %d", cfg.Seed)
		})
	}
}

// TestMergeErrors: partials that do not make one whole are refused, with
// the file named.
func TestMergeErrors(t *testing.T) {
	cfg := shardConfig()
	cfg.Capacity, cfg.SurgeFactor = false, 0
	shard := func(c rank.Config, i, n int) *rank.Partial {
		c.Shard = replay.Shard{Index: i, Count: n}
		p, err := rank.RunShard(context.Background(), exampleModel(), c)
		require.NoError(t, err)
		p.File = fmt.Sprintf("rank-%d-of-%d.json", i, n)
		return p
	}
	other := cfg
	other.Seeds = 3
	tests := []struct {
		name  string
		parts func() []*rank.Partial
		want  string
	}{
		{"missing", func() []*rank.Partial { return []*rank.Partial{shard(cfg, 1, 2)} },
			"shard 0/2 missing: 1 partials given, 2 expected"},
		{"other config", func() []*rank.Partial { return []*rank.Partial{shard(cfg, 0, 2), shard(other, 1, 2)} },
			"rank-1-of-2.json: config sha256:"},
		{"replay of another shard", func() []*rank.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			b.Replays = append(b.Replays, a.Replays[0])
			return []*rank.Partial{a, b}
		}, "rank-1-of-2.json: the replay of candidate 0 under regime 0 with seed 1 is not shard 1/2's"},
		{"replay missing", func() []*rank.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			b.Replays = b.Replays[1:]
			return []*rank.Partial{a, b}
		}, "rank-1-of-2.json: the replay of candidate 0 under regime 0 with seed 2 (shard 1/2's) missing"},
		{"neither result nor error", func() []*rank.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			a.Replays[0].Result = nil
			return []*rank.Partial{a, b}
		}, "rank-0-of-2.json: the replay of candidate 0 under regime 0 with seed 1 has neither a result nor an error"},
		{"a fit's partial", func() []*rank.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			a.Kind, b.Kind = "fit", "fit"
			return []*rank.Partial{a, b}
		}, "rank-0-of-2.json: a fit partial, not a ranking's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rank.Merge(context.Background(), tc.parts(), rank.MergeOptions{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestPartialModel: shard 0's file carries the model and the others its
// hash alone; a file that breaks that is refused.
func TestPartialModel(t *testing.T) {
	cfg := shardConfig()
	cfg.Capacity, cfg.SurgeFactor, cfg.Derive = false, 0, false
	file := func(i int) []byte {
		c := cfg
		c.Shard = replay.Shard{Index: i, Count: 2}
		p, err := rank.RunShard(context.Background(), exampleModel(), c)
		require.NoError(t, err)
		b, err := p.Encode()
		require.NoError(t, err)
		return b
	}
	zero, one := file(0), file(1)
	require.Contains(t, string(zero), `"model":`)
	require.NotContains(t, string(one), `"model":`)
	as := func(b []byte, from, to string) []byte {
		return bytes.Replace(b, []byte(from), []byte(to), 1)
	}
	_, err := rank.DecodePartial(as(one, `"shard":{"index":1`, `"shard":{"index":0`))
	require.ErrorContains(t, err, "shard 0's partial carries no model or prefix")
	_, err = rank.DecodePartial(as(zero, `"shard":{"index":0`, `"shard":{"index":1`))
	require.ErrorContains(t, err, "shard 1/2 carries a model or prefix: only shard 0's partial does")
}
