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
	// The prefix prepared once, written to its file and read back: the
	// shards given it must write the partials they write without it.
	pre, err := rank.Prepare(context.Background(), exampleModel(), cfg)
	require.NoError(t, err)
	pb, err := pre.Encode()
	require.NoError(t, err)
	pre, err = rank.DecodePrepared(pb)
	require.NoError(t, err)
	for _, tc := range []struct {
		n        int
		prepared bool
	}{{1, false}, {2, false}, {4, false}, {1, true}, {2, true}, {4, true}} {
		n := tc.n
		name := fmt.Sprint(n)
		if tc.prepared {
			name += " prepared"
		}
		t.Run(name, func(t *testing.T) {
			var parts []*rank.Partial
			for i := n - 1; i >= 0; i-- { // any order
				c := cfg
				c.Shard = replay.Shard{Index: i, Count: n}
				if tc.prepared {
					c.Prefix = pre
				}
				p, err := rank.RunShard(context.Background(), exampleModel(), c)
				require.NoError(t, err)
				b, err := p.Encode()
				require.NoError(t, err)
				if tc.prepared {
					// The same file as the shard's without the prefix.
					c.Prefix = nil
					q, err := rank.RunShard(context.Background(), exampleModel(), c)
					require.NoError(t, err)
					qb, err := q.Encode()
					require.NoError(t, err)
					require.Equal(t, string(qb), string(b), "shard %d/%d", i, n)
				}
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

// TestPreparedRefused: a prefix prepared for another model or config
// is refused by a shard, and Run and Prepare take none.
func TestPreparedRefused(t *testing.T) {
	ctx := context.Background()
	cfg := shardConfig()
	cfg.Capacity, cfg.SurgeFactor = false, 0
	pre, err := rank.Prepare(ctx, exampleModel(), cfg)
	require.NoError(t, err)
	shard := func(m *cascade.Model, c rank.Config) error {
		c.Shard, c.Prefix = replay.Shard{Index: 0, Count: 2}, pre
		_, err := rank.RunShard(ctx, m, c)
		return err
	}
	other := cfg
	other.Seeds = 3
	require.ErrorContains(t, shard(exampleModel(), other), "prepared with other settings")
	m := exampleModel()
	m.Nodes[0].Replicas++
	require.ErrorContains(t, shard(m, cfg), "prepared for another model")
	require.NoError(t, shard(exampleModel(), cfg))
	c := cfg
	c.Prefix = pre
	_, err = rank.Run(ctx, exampleModel(), c)
	require.ErrorContains(t, err, "prefix")
	_, err = rank.Prepare(ctx, exampleModel(), c)
	require.ErrorContains(t, err, "prefix")
	_, err = rank.DecodePrepared([]byte(`{"format":"cascade-partial","version":1,"kind":"rank"}`))
	require.Error(t, err)
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
