package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShardMergeIsUnsharded holds the contract of --shard and merge: N
// shards, each run as its own command writing its partial, merge into
// the bytes the unsharded command prints (and, for fit, writes), at N =
// 1, 2 and 4, in every output format.
func TestShardMergeIsUnsharded(t *testing.T) {
	dir := t.TempDir()
	ds, model := filepath.Join(dir, "hotrod"), filepath.Join(dir, "model.json")
	code, _, stderr := runCLI(t, "ingest", hotrodOTLP, "--out", ds)
	require.Equal(t, exitOK, code, stderr)
	code, _, stderr = runCLI(t, "graph", ds, "--out", model)
	require.Equal(t, exitOK, code, stderr)

	tests := []struct {
		name    string
		command []string // the unsharded command
		formats [][]string
		out     bool // the command writes --out (fit's calibrated model)
		// prepare runs the command with --prepare first and gives each
		// shard the prefix (rank).
		prepare bool
	}{
		{name: "fit exhaustive", out: true,
			command: []string{"fit", ds, "--model", model, "--window", "30s", "--grid", "tier=model|p50,p=0.01|0.25|0.5,k=0|1", "--search", "exhaustive"},
			formats: [][]string{{"-o", "json"}, {"-o", "table"}, {"-o", "markdown"}}},
		{name: "fit refine", out: true,
			command: []string{"fit", ds, "--model", model, "--grid", "tier=model|p50,p=0.01:0.5:0.07,k=0:2:0.5", "--search", "refine"},
			formats: [][]string{{"-o", "json"}}},
		{name: "rank",
			command: append([]string{"rank", seed000Model, "--surge", "1.5"}, quickRank...),
			formats: [][]string{{"-o", "json"}, {"-o", "table"}, {"-o", "markdown", "--wide"}}},
		{name: "rank prepared", prepare: true,
			command: append([]string{"rank", seed000Model, "--surge", "1.5"}, quickRank...),
			formats: [][]string{{"-o", "json"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]string{}
			for _, f := range tc.formats {
				args := append(append([]string{}, tc.command...), f...)
				if tc.out {
					args = append(args, "--out", filepath.Join(dir, "single.json"))
				}
				code, stdout, stderr := runCLI(t, args...)
				require.Equal(t, exitOK, code, stderr)
				require.NotEmpty(t, stdout)
				want[fmt.Sprint(f)] = stdout
			}
			var wantOut []byte
			if tc.out {
				var err error
				wantOut, err = os.ReadFile(filepath.Join(dir, "single.json"))
				require.NoError(t, err)
			}
			for _, n := range []int{1, 2, 4} {
				parts := filepath.Join(t.TempDir(), "parts")
				var prefix []string
				if tc.prepare {
					p := filepath.Join(parts, "..", "prefix.json")
					code, stdout, stderr := runCLI(t, append(append([]string{}, tc.command...), "--prepare", "--out", p)...)
					require.Equal(t, exitOK, code, stderr)
					require.Contains(t, stdout, "rank prefix: ")
					prefix = []string{"--prefix", p}
				}
				for i := range n {
					args := append(append([]string{}, tc.command...), "--shard", fmt.Sprintf("%d/%d", i, n), "--out", filepath.Join(parts, fmt.Sprintf("part-%d.json", i)))
					args = append(args, prefix...)
					code, stdout, stderr := runCLI(t, args...)
					require.Equal(t, exitOK, code, stderr)
					require.Contains(t, stdout, fmt.Sprintf("shard %d/%d: ", i, n))
				}
				for _, f := range tc.formats {
					args := append([]string{"merge", parts}, f...)
					merged := filepath.Join(parts, "..", "calibrated.json")
					if tc.out {
						args = append(args, "--out", merged)
					}
					code, stdout, stderr := runCLI(t, args...)
					require.Equal(t, exitOK, code, stderr)
					require.Equal(t, want[fmt.Sprint(f)], stdout, "%d shards, %v (seed 1)", n, f)
					if tc.out {
						got, err := os.ReadFile(merged)
						require.NoError(t, err)
						require.Equal(t, string(wantOut), string(got), "%d shards: the calibrated model", n)
					}
				}
			}
		})
	}
}

// TestMergeCommandErrors: what merge refuses, with the file named and the
// documented exit code.
func TestMergeCommandErrors(t *testing.T) {
	dir := t.TempDir()
	shard := func(i, n int, extra ...string) string {
		p := filepath.Join(dir, fmt.Sprintf("rank-%d-of-%d%s.json", i, n, fmt.Sprint(len(extra))))
		args := append(append([]string{"rank", seed000Model}, quickRank...), "--derive=false", "--surge", "0", "--shard", fmt.Sprintf("%d/%d", i, n), "--out", p)
		code, _, stderr := runCLI(t, append(args, extra...)...)
		require.Equal(t, exitOK, code, stderr)
		return p
	}
	a0, a1, b1 := shard(0, 2), shard(1, 2), shard(1, 2, "--seed", "9")
	c1 := shard(1, 3)
	prefix := filepath.Join(dir, "prefix.json")
	code, _, stderr := runCLI(t, append(append([]string{"rank", seed000Model}, quickRank...), "--derive=false", "--surge", "0", "--prepare", "--out", prefix)...)
	require.Equal(t, exitOK, code, stderr)
	withPrefix := func(p string, extra ...string) []string {
		args := append(append([]string{"rank", seed000Model}, quickRank...), "--derive=false", "--surge", "0", "--shard", "0/2", "--out", filepath.Join(dir, "x.json"), "--prefix", p)
		return append(args, extra...)
	}
	notPartial := filepath.Join(dir, "model.json")
	require.NoError(t, os.WriteFile(notPartial, []byte(`{"version": 1}`), 0o644))
	cut := filepath.Join(dir, "cut.json")
	data, err := os.ReadFile(a1)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cut, data[:len(data)/2], 0o644))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no partials", []string{"merge"}, exitUsage, "give the partial result files"},
		{"missing file", []string{"merge", filepath.Join(dir, "nope.json")}, exitUsage, "nope.json: no such file or directory"},
		{"empty directory", []string{"merge", empty}, exitUsage, "empty: no partial result (*.json) in the directory"},
		{"a shard missing", []string{"merge", a0}, exitInvalidData, "shard 1/2 missing: 1 partials given, 2 expected"},
		{"a shard twice", []string{"merge", a0, a1, a1}, exitInvalidData, "rank-1-of-20.json: shard 1/2 is also " + a1},
		{"other config", []string{"merge", a0, b1}, exitInvalidData, "rank-1-of-22.json: config sha256:"},
		{"other count", []string{"merge", a0, c1}, exitInvalidData, "rank-1-of-30.json: shard count 3, but " + a0 + " has 2"},
		{"not a partial", []string{"merge", notPartial}, exitInvalidData, `model.json: format "", want "cascade-partial"`},
		{"cut short", []string{"merge", a0, cut}, exitInvalidData, "cut.json: byte "},
		{"rank writes no file", []string{"merge", a0, a1, "--out", filepath.Join(dir, "x.json")}, exitUsage, "--out: a ranking writes no file"},
		{"bad format", []string{"merge", a0, a1, "-o", "xml"}, exitUsage, "--output"},
		{"shard without out", []string{"rank", seed000Model, "--shard", "0/2"}, exitUsage, "--shard 0/2: give --out FILE"},
		{"bad shard", []string{"fit", hotrodOTLP, "--shard", "4/4", "--out", "x.json"}, exitUsage, `--shard "4/4": want INDEX/COUNT`},
		{"out without shard", []string{"rank", seed000Model, "--out", "x.json"}, exitUsage, "--out writes a shard's partial result"},
		{"shard with incident", []string{"rank", seed000Model, "--incident", hotrodOTLP, "--shard", "0/2", "--out", "x.json"}, exitUsage, "without --incident"},
		{"prefix of other flags", withPrefix(prefix, "--seed", "9"), exitInvalidData, "prefix.json: the prefix is not this ranking's: it was prepared with other settings"},
		{"a partial as prefix", withPrefix(a0), exitInvalidData, "rank-0-of-20.json: a rank partial, not a ranking's prefix"},
		{"prefix without shard", []string{"rank", seed000Model, "--prefix", prefix}, exitUsage, "--prefix is for a shard's run"},
		{"prepare with shard", []string{"rank", seed000Model, "--prepare", "--shard", "0/2", "--out", "x.json"}, exitUsage, "--prepare replays what every shard shares"},
		{"prepare without out", []string{"rank", seed000Model, "--prepare"}, exitUsage, "--prepare: give --out FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
