package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
	"cascade/report"
)

func TestAnalyzeCommand(t *testing.T) {
	const td = "../../testdata/hotrod-baseline/"
	out := filepath.Join(t.TempDir(), "report")
	quick := []string{"--seeds", "2", "--duration", "10s", "--grid", "p=0.01|0.1,k=0|1,tier=p50|p99", "--out", out}

	// --wide prints the full tables: every regime's effect, the
	// capacity sweep.
	code, stdout, stderr := runCLI(t, append([]string{"analyze", td + "traces-otlp.json.gz", "--metrics", td + "prometheus", "--wide"}, quick...)...)
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"VERDICT", "Δ1", "Δ2", "RECOVERS", "WHY", "CAPACITY", "LITTLE L", "seeds      1 to 2", "(seed 1)"} {
		require.Contains(t, stdout, want)
	}
	require.NotContains(t, stdout, "--wide prints")
	// The bundled example rests on enough data to rank.
	require.Contains(t, stdout, "data       300 traces, 300 root requests, 6 services, at least 300 requests per node (customer), fitted on 1 window of the capture\n")
	require.NotContains(t, stderr, "thin data")
	for _, f := range []string{"report.html", "report.md", "report.json", "model.json", "calibrated.json", "dataset/spans.parquet"} {
		fi, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		require.Positive(t, fi.Size(), f)
	}
	// --output json prints report.json; markdown prints report.md.
	code, stdout, stderr = runCLI(t, append([]string{"analyze", filepath.Join(out, "dataset"), "--output", "json"}, quick...)...)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Seed  uint64   `json:"seed"`
		Files []string `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Equal(t, uint64(1), doc.Seed)
	require.NotContains(t, doc.Files, "dataset/spans.parquet", "a dataset input is read in place")
	code, stdout, stderr = runCLI(t, append([]string{"analyze", filepath.Join(out, "dataset"), "--output", "markdown"}, quick...)...)
	require.Equal(t, exitOK, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "# Remediation report"), stdout[:min(len(stdout), 200)])

	// Usage errors exit 2; invalid input exits 3 and leaves the last
	// good report in place.
	code, _, stderr = runCLI(t, "analyze")
	require.Equal(t, exitUsage, code, stderr)
	code, _, stderr = runCLI(t, append([]string{"analyze", td + "traces-otlp.json.gz", "--seeds", "1"}, "--out", out)...)
	require.Equal(t, exitUsage, code, stderr)
	before, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"traceId\": 7}]}]}]}\n"), 0o644))
	code, _, stderr = runCLI(t, append([]string{"analyze", bad}, quick...)...)
	require.Equal(t, exitInvalidData, code, stderr)
	require.Contains(t, stderr, "bad.json")
	after, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	require.Equal(t, before, after, "a failed run leaves the last good report")
}

// TestAnalyzeGolden pins what analyze prints on the bundled example at
// its defaults: the answer first, every line within 100 columns (runes).
// It runs in a temporary directory with --out report, so that the paths
// printed, and where their lines wrap, are the same on every machine.
func TestAnalyzeGolden(t *testing.T) {
	td, err := filepath.Abs("../../testdata/hotrod-baseline")
	require.NoError(t, err)
	var stdout string
	t.Run("run", func(t *testing.T) {
		t.Chdir(t.TempDir())
		var code int
		var stderr string
		code, stdout, stderr = runCLI(t, "analyze", filepath.Join(td, "traces-otlp.json.gz"), "--metrics", filepath.Join(td, "prometheus"), "--out", "report")
		require.Equal(t, exitOK, code, stderr)
	})
	require.NotEmpty(t, stdout)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, l := range lines {
		require.LessOrEqual(t, utf8.RuneCountInString(l), report.DefaultWidth, "line %d: %q", i+1, l)
	}
	best := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "BEST CHANGE  mysql") })
	require.True(t, best >= 0 && best < 15, "the best change within the first 15 lines, at %d", best+1)
	require.Contains(t, stdout, "\n#  Δ GOODPUT [95% CI]")
	require.NotContains(t, stdout, "Δ1", "the per-regime effects are wide only")
	require.Contains(t, stdout, "--wide prints the full tables")
	testutil.Golden(t, "analyze-hotrod", []byte(stdout))

	// The README's quick start quotes the whole answer, to the blank
	// line before the ranking.
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	end := slices.Index(lines, "")
	require.Greater(t, end, best)
	quoted := "    " + strings.Join(lines[:end], "\n    ") + "\n\n"
	require.True(t, strings.Contains(string(readme), quoted), "README.md must quote the answer analyze prints, whole:\n%s", quoted)
}
