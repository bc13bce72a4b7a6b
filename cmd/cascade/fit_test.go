package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/internal/testutil"
)

// fitSmall are the arguments of a small, fast fit of the HotROD capture:
// three 30-second windows, eight grid points, every one replayed.
var fitSmall = []string{"fit", hotrodOTLP, "--window", "30s", "--grid", "tier=p50|empirical,p=0.01|0.5,k=0|1", "--search", "exhaustive"}

func TestFitGolden(t *testing.T) {
	// The golden file lives with the fit package's test data:
	// fit/testdata/cli-hotrod-small.golden at the repository root.
	code, out, stderr := runCLI(t, append(fitSmall, "--output", "json")...)
	require.Equal(t, exitOK, code, stderr)
	testutil.Golden(t, filepath.Join("..", "..", "..", "fit", "testdata", "cli-hotrod-small"), []byte(out))
	var rep struct {
		Seed   uint64 `json:"seed"`
		Points int    `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, uint64(1), rep.Seed)
	require.Equal(t, 8, rep.Points)
}

// TestFitMarkdownGolden holds the Markdown report of the same fit,
// fit/testdata/cli-hotrod-small-markdown.golden: a heading a section, and
// every table whole (a row's cells as many as its header's).
func TestFitMarkdownGolden(t *testing.T) {
	code, out, stderr := runCLI(t, append(fitSmall, "--output", "markdown")...)
	require.Equal(t, exitOK, code, stderr)
	testutil.Golden(t, filepath.Join("..", "..", "..", "fit", "testdata", "cli-hotrod-small-markdown"), []byte(out))
	require.True(t, strings.HasPrefix(out, "# Fit report\n\n- **seed**: 1 (1 seed(s) per point)\n"), out)
	// windows, surface, moved, in sample, back-test and its nodes, regression
	require.Equal(t, 7, testutil.MarkdownTables(t, out))
	require.Contains(t, out, "\n## Loss surface\n\n| AXIS | BEST | -1 STEP | +1 STEP | FLAT RANGE | CURVATURE | IDENTIFIABLE | VERDICT |\n|---|")
}

// TestFitTableGolden holds fit's text report, which shares its code
// path with the Markdown one, to a golden.
func TestFitTableGolden(t *testing.T) {
	code, out, stderr := runCLI(t, fitSmall...)
	require.Equal(t, exitOK, code, stderr)
	testutil.Golden(t, filepath.Join("..", "..", "..", "fit", "testdata", "cli-hotrod-small-table"), []byte(out))
}

// TestFitParallelByteIdentical: the report and the calibrated model are
// the same bytes at --parallel 1 and 2.
func TestFitParallelByteIdentical(t *testing.T) {
	dir := t.TempDir()
	var outs, models []string
	for _, par := range []string{"1", "2"} {
		model := filepath.Join(dir, "calibrated-"+par+".json")
		code, out, stderr := runCLI(t, append(fitSmall, "--parallel", par, "--output", "json", "--out", model)...)
		require.Equal(t, exitOK, code, stderr)
		b, err := os.ReadFile(model)
		require.NoError(t, err)
		outs, models = append(outs, out), append(models, string(b))
	}
	require.Equal(t, outs[0], outs[1])
	require.Equal(t, models[0], models[1])
}

func TestFitCommand(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "hotrod")
	code, _, stderr := runCLI(t, "ingest", hotrodOTLP, "--out", ds)
	require.Equal(t, exitOK, code, stderr)
	model := filepath.Join(dir, "model.json")
	code, _, stderr = runCLI(t, "graph", ds, "--out", model)
	require.Equal(t, exitOK, code, stderr)

	// A dataset and a model; the table.
	cal := filepath.Join(dir, "calibrated.json")
	code, out, stderr := runCLI(t, "fit", ds, "--model", model, "--window", "30s", "--grid", "p=0.01|0.5,tier=empirical",
		"--holdout", "2", "--out", cal)
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"seed              1", "search            exhaustive: 2 of 2 points replayed",
		"best              tier=empirical p=0.5", "back-test, held-out windows predicted:", "redis-manual",
		"logistic regression of call failure: 7950 calls, 750 failed"} {
		require.Contains(t, out, want)
	}
	b, err := os.ReadFile(cal)
	require.NoError(t, err)
	m, err := cascade.DecodeModel(b)
	require.NoError(t, err)
	// p is flat on HotROD (the failure process explains why no dispatch
	// failed): the calibrated model keeps graph's value and provenance.
	// The empirical tier does not beat graph's own service distributions,
	// so the fit keeps the model as it came and says so.
	require.Contains(t, out, "kept              uncalibrated: no point beat the uncalibrated model in sample")
	require.NotEqual(t, cascade.Fitted, m.Edges[0].Provenance["propagation"])
	require.NotEqual(t, cascade.Fitted, m.Nodes[0].Provenance["service_ms"])
	require.NotEmpty(t, m.Fit)

	// The calibrated model replays.
	code, out, stderr = runCLI(t, "replay", cal, "--arrivals", "observed", "--dataset", ds, "--duration", "100s")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "300 offered (3.00/s)")
}

func TestFitUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no dataset", []string{"fit"}, exitUsage, "give a DATASET"},
		{"bad output", []string{"fit", hotrodOTLP, "--output", "xml"}, exitUsage, "--output"},
		{"bad tier", []string{"fit", hotrodOTLP, "--tier", "p42"}, exitUsage, "tier"},
		{"bad windows", []string{"fit", hotrodOTLP, "--windows", "last"}, exitUsage, "windows"},
		{"bad search", []string{"fit", hotrodOTLP, "--search", "random"}, exitUsage, "search"},
		{"bad grid", []string{"fit", hotrodOTLP, "--grid", "q=1"}, exitFailure, `parameter "q"`},
		{"missing window", []string{"fit", hotrodOTLP, "--windows", "7"}, exitFailure, "window 7 does not exist"},
		{"missing model", []string{"fit", hotrodOTLP, "--model", "/nonexistent/model.json"}, exitUsage, "model.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
