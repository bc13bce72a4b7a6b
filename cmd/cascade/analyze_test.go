package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnalyzeCommand(t *testing.T) {
	const td = "../../testdata/hotrod-baseline/"
	out := filepath.Join(t.TempDir(), "report")
	quick := []string{"--seeds", "2", "--duration", "10s", "--grid", "p=0.01|0.1,k=0|1,tier=p50|p99", "--out", out}

	code, stdout, stderr := runCLI(t, append([]string{"analyze", td + "traces-otlp.json.gz", "--metrics", td + "prometheus"}, quick...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "VERDICT")
	require.Contains(t, stdout, "CAPACITY")
	require.Contains(t, stdout, "seeds      1 to 2")
	require.Contains(t, stdout, "(seed 1)")
	// The bundled example rests on enough data to rank.
	require.Contains(t, stdout, "data       300 traces, 300 root requests, 6 services, at least 300 requests per node (customer), 1 fit window\n")
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
