package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"cascade/report"
	"cascade/testdata/shapes"

	"cascade/internal/shapetest"
)

// runRank runs `cascade rank ARGS…` in process.
func runRank(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"rank"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

var quickRank = []string{"--seeds", "2", "--duration", "5s", "--capacity=false"}

func TestRankTable(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		first string   // the first line's start
		want  []string // in the output
		not   []string // not in it
		fits  bool     // every line within report.DefaultWidth
	}{
		{name: "compact", first: "BEST CHANGE  server (bottleneck, 84% busy): 4→8 slots", fits: true, want: []string{
			"seeds      1 to 2 (2), the same for every candidate",
			"observed rates (Poisson 80/s)",
			"surge ×1.5 from 1.67 s for 1.67 s",
			"client→uplink: max attempts 4→1",
			"VERDICT", "METASTABILITY",
		}, not: []string{"Δ1", "RECOVERS", "regimes"}},
		{name: "wide", args: []string{"--wide"}, first: "model      ", want: []string{
			"seeds      1 to 2 (2), the same for every candidate",
			"regimes    1. observed rates (Poisson 80/s)",
			"2. surge ×1.5 from 1.67 s for 1.67 s",
			"client→uplink: max attempts 4→1 (no retries)",
			"VERDICT", "Δ1", "Δ2", "RECOVERS", "METASTABILITY",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runRank(t, append(append([]string{seed000Model, "--surge", "1.5"}, quickRank...), tc.args...)...)
			require.Equal(t, exitOK, code, stderr)
			require.True(t, strings.HasPrefix(out, tc.first), out)
			for _, want := range tc.want {
				require.Contains(t, out, want)
			}
			for _, not := range tc.not {
				require.NotContains(t, out, not)
			}
			require.NotContains(t, out, "CAPACITY")
			if tc.fits {
				for i, l := range strings.Split(out, "\n") {
					require.LessOrEqual(t, utf8.RuneCountInString(l), report.DefaultWidth, "line %d: %q", i+1, l)
				}
			}
		})
	}
}

func TestRankOutputs(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "pool.yaml")
	require.NoError(t, os.WriteFile(scen, []byte("description: server pool 4→8\nnodes:\n  server: {concurrency: 8}\n"), 0o644))
	args := append([]string{seed000Model, "--scenario", scen, "--derive=false", "--objective", "p99"}, quickRank...)
	code, out, stderr := runRank(t, append(args, "-o", "json")...)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Model string `json:"model"`
		Rank  struct {
			Objective string   `json:"objective"`
			Seeds     []uint64 `json:"seeds"`
			Rows      []struct {
				Candidate struct{ Name string } `json:"candidate"`
			} `json:"rows"`
		} `json:"rank"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, "p99", doc.Rank.Objective)
	require.Equal(t, []uint64{1, 2}, doc.Rank.Seeds)
	require.Len(t, doc.Rank.Rows, 1)
	require.Equal(t, "pool", doc.Rank.Rows[0].Candidate.Name)

	code, out, stderr = runRank(t, append(args, "-o", "markdown")...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "## What to change")
	require.Contains(t, out, "| server pool 4→8 |")
}

func TestRankByteIdentical(t *testing.T) {
	args := append([]string{seed000Model, "--capacity=true", "--capacity-seeds", "2"}, quickRank[:4]...)
	_, a, _ := runRank(t, append(args, "--parallel", "1")...)
	_, b, _ := runRank(t, append(args, "--parallel", "2")...)
	require.NotEmpty(t, a)
	require.Equal(t, a, b)
}

func TestRankIncident(t *testing.T) {
	code, out, stderr := runRank(t, "--incident", "../../testdata/nezha-onlineboutique/trace", "--slowdown", "0")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "INCIDENT      2022-08-22 05:18:10Z")
	require.Contains(t, out, "origin        1. currencyservice")
	require.NotContains(t, out, "BASELINE")
}

// TestRankIncidentLogs: --incident reads the dataset's logs.parquet: an
// exception visible only in the logs (Nezha's CSV records no status)
// names its service as the origin.
func TestRankIncidentLogs(t *testing.T) {
	dir, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 2400, Format: shapes.NezhaCSV, Logs: true, Throw: "stock"})
	code, out, stderr := runRank(t, "--incident", dir, "--slowdown", "0", "--verify", "0")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "origin        1. stock")
}

// TestRankIncidentUnjudgedLogs: logs given with a --baseline that
// carries none are not judged, and stderr says so (issue 38); with the
// baseline's logs nothing is said.
func TestRankIncidentUnjudgedLogs(t *testing.T) {
	dir, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 2400, Format: shapes.NezhaCSV, Logs: true, Throw: "stock"})
	withLogs, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 1200, Format: shapes.NezhaCSV, Logs: true, Seed: 7})
	noLogs, _ := shapetest.Dataset(t, shapes.Config{Shape: "pairs", Traces: 1200, Format: shapes.NezhaCSV, Seed: 7})
	const warn = "cascade: warning: incident pass: logs: the reference (--baseline) carries no logs"
	for _, tc := range []struct {
		name, baseline string
		warned         bool
	}{{"baseline without logs", noLogs, true}, {"baseline with its logs", withLogs, false}} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runRank(t, "--incident", dir, "--baseline", tc.baseline, "--slowdown", "0", "--verify", "0")
			require.Equal(t, exitOK, code, stderr)
			if tc.warned {
				require.Contains(t, stderr, warn)
			} else {
				require.NotContains(t, stderr, "incident pass:")
			}
		})
	}
}

func TestRankUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "give a MODEL file, --incident DATASET, or both"},
		{"two models", []string{seed000Model, seed000Model}, "at most one MODEL"},
		{"objective", []string{seed000Model, "--objective", "fast"}, `objective "fast"`},
		{"traffic", []string{seed000Model, "--traffic", "lots"}, `traffic "lots"`},
		{"surge twice", []string{seed000Model, "--traffic", "surge:3", "--surge", "2"}, "give the factor once"},
		{"one seed", []string{seed000Model, "--seeds", "1"}, "want at least 2"},
		{"output", []string{seed000Model, "-o", "html"}, `--output "html"`},
		{"scenario", []string{seed000Model, "--scenario", "/nonexistent.yaml"}, "nonexistent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runRank(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
