package fit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/fit"
	"cascade/replay"
)

// TestMergeIsRun holds the sharding contract: the partials of N shards,
// written to their files and read back, merge into the report and
// calibrated model Run gives, byte for byte, for both searches and any N.
func TestMergeIsRun(t *testing.T) {
	m, obs := chainFit(t)
	encode := func(res *fit.Result) string {
		rep, err := json.Marshal(res.Report)
		require.NoError(t, err)
		doc, err := cascade.EncodeModel(res.Model)
		require.NoError(t, err)
		return string(rep) + string(doc)
	}
	for _, search := range []string{fit.SearchExhaustive, fit.SearchRefine} {
		cfg := fit.DefaultConfig()
		cfg.Grid = "tier=p50|p95,p=0.1:0.5:0.2,r=0.2:1:0.4,k=0:2:1,theta=0.8|1"
		cfg.Search = search
		res, err := fit.Run(context.Background(), cfg, m, obs)
		require.NoError(t, err)
		want := encode(res)
		for _, n := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/%d", search, n), func(t *testing.T) {
				parts := make([]*fit.Partial, n)
				for i := n - 1; i >= 0; i-- { // any order
					c := cfg
					c.Shard = replay.Shard{Index: i, Count: n}
					p, err := fit.RunShard(context.Background(), c, m, obs)
					require.NoError(t, err)
					b, err := p.Encode()
					require.NoError(t, err)
					if parts[n-1-i], err = fit.DecodePartial(b); err != nil {
						t.Fatal(err)
					}
					parts[n-1-i].File = fmt.Sprintf("fit-%d.json", i)
				}
				got, err := fit.Merge(context.Background(), parts, fit.MergeOptions{})
				require.NoError(t, err)
				require.Equal(t, want, encode(got), "seed %d", cfg.Seed)
			})
		}
	}
}

// TestMergeErrors: partials that do not make one whole are refused, with
// the file named.
func TestMergeErrors(t *testing.T) {
	m, obs := chainFit(t)
	cfg := fit.DefaultConfig()
	cfg.Grid = "tier=p50|p95,p=0.1:0.5:0.2,k=0:2:1,theta=0.8"
	shard := func(c fit.Config, i, n int) *fit.Partial {
		c.Shard = replay.Shard{Index: i, Count: n}
		p, err := fit.RunShard(context.Background(), c, m, obs)
		require.NoError(t, err)
		p.File = fmt.Sprintf("fit-%d-of-%d.json", i, n)
		return p
	}
	other := cfg
	other.Seed = 7
	tests := []struct {
		name  string
		parts func() []*fit.Partial
		want  string
	}{
		{"missing", func() []*fit.Partial { return []*fit.Partial{shard(cfg, 0, 3), shard(cfg, 2, 3)} },
			"shard 1/3 missing: 2 partials given, 3 expected"},
		{"twice", func() []*fit.Partial { return []*fit.Partial{shard(cfg, 0, 2), shard(cfg, 1, 2), shard(cfg, 1, 2)} },
			"fit-1-of-2.json: shard 1/2 is also fit-1-of-2.json"},
		{"other count", func() []*fit.Partial { return []*fit.Partial{shard(cfg, 0, 2), shard(cfg, 1, 3)} },
			"fit-1-of-3.json: shard count 3, but fit-0-of-2.json has 2"},
		{"other config", func() []*fit.Partial { return []*fit.Partial{shard(cfg, 0, 2), shard(other, 1, 2)} },
			"fit-1-of-2.json: config sha256:"},
		{"other inputs", func() []*fit.Partial {
			p := shard(cfg, 1, 2)
			p.InputsHash = "sha256:0"
			return []*fit.Partial{shard(cfg, 0, 2), p}
		}, "fit-1-of-2.json: inputs sha256:0, but fit-0-of-2.json has sha256:"},
		{"point of another shard", func() []*fit.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			a.Points = append(a.Points, b.Points[0])
			return []*fit.Partial{a, b}
		}, "fit-0-of-2.json: grid point 1 is not shard 0/2's"},
		{"point missing", func() []*fit.Partial {
			a, b := shard(cfg, 0, 2), shard(cfg, 1, 2)
			b.Points = b.Points[1:]
			return []*fit.Partial{a, b}
		}, "fit-1-of-2.json: grid point 1 (shard 1/2's) missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fit.Merge(context.Background(), tc.parts(), fit.MergeOptions{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestDecodePartialErrors: a file that is not a fit's partial, or whose
// inputs were changed, is refused.
func TestDecodePartialErrors(t *testing.T) {
	m, obs := chainFit(t)
	cfg := fit.DefaultConfig()
	cfg.Grid = "p=0.1|0.5"
	cfg.Shard = replay.Shard{Index: 0, Count: 1}
	p, err := fit.RunShard(context.Background(), cfg, m, obs)
	require.NoError(t, err)
	good, err := p.Encode()
	require.NoError(t, err)
	_, err = fit.DecodePartial(good)
	require.NoError(t, err)
	tests := []struct{ name, data, want string }{
		{"not json", "{\"format\": ", "byte 11: the document ends early"},
		{"unknown field", `{"format":"cascade-partial","version":1,"kind":"fit","extra":1}`, `unknown field "extra"`},
		{"newer version", `{"format":"cascade-partial","version":2,"kind":"fit"}`, "partial format version 2, this cascade reads version 1"},
		{"rank partial", `{"format":"cascade-partial","version":1,"kind":"rank"}`, "a rank partial, not a fit's"},
		{"changed", string(bytes.Replace(good, []byte(`"roots":`), []byte(`"roots":1`), 1)), "do not match its inputs hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fit.DecodePartial([]byte(tc.data))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestPartialInputs: shard 0's file carries the inputs and the others
// their hash alone; a file that breaks that is refused.
func TestPartialInputs(t *testing.T) {
	m, obs := chainFit(t)
	cfg := fit.DefaultConfig()
	cfg.Grid = "p=0.1|0.5"
	file := func(i int) []byte {
		c := cfg
		c.Shard = replay.Shard{Index: i, Count: 2}
		p, err := fit.RunShard(context.Background(), c, m, obs)
		require.NoError(t, err)
		b, err := p.Encode()
		require.NoError(t, err)
		return b
	}
	zero, one := file(0), file(1)
	require.Contains(t, string(zero), `"observations":`)
	require.NotContains(t, string(one), `"observations":`)
	p, err := fit.DecodePartial(one)
	require.NoError(t, err)
	require.Nil(t, p.Model)
	as := func(b []byte, from, to string) []byte {
		return bytes.Replace(b, []byte(from), []byte(to), 1)
	}
	_, err = fit.DecodePartial(as(one, `"shard":{"index":1`, `"shard":{"index":0`))
	require.ErrorContains(t, err, "shard 0's partial carries no model or observations")
	_, err = fit.DecodePartial(as(zero, `"shard":{"index":0`, `"shard":{"index":1`))
	require.ErrorContains(t, err, "shard 1/2 carries inputs: only shard 0's partial does")
}
