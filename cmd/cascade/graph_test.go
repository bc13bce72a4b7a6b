package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

const hotrodOTLP = "../../testdata/hotrod-baseline/traces-otlp.json.gz"

// runCLI runs the cascade command tree in process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCascade(t, "", args...)
}

func TestGraphCommand(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.json")

	// Raw files are ingested on the fly; --out writes the model while
	// --output prints it.
	code, stdout, stderr := runCLI(t, "graph", hotrodOTLP, "--out", model, "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	written, err := os.ReadFile(model)
	require.NoError(t, err)
	require.Equal(t, stdout, string(written))
	m, err := cascade.DecodeModel(written)
	require.NoError(t, err)
	require.Equal(t, "frontend", m.Entries[0].Node)
	require.Equal(t, hotrodOTLP, m.Source.Dataset)
	leftovers, err := filepath.Glob(filepath.Join(dir, ".model.json.tmp-*"))
	require.NoError(t, err)
	require.Empty(t, leftovers)

	// A dataset directory is read as is.
	ds := filepath.Join(dir, "hotrod")
	code, _, stderr = runCLI(t, "ingest", hotrodOTLP, "--out", ds)
	require.Equal(t, exitOK, code, stderr)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"table", []string{"graph", ds}, []string{"EDGE", "frontend → route", "3 shared", "serialised"}},
		{"dot", []string{"graph", ds, "--output", "dot"}, []string{"digraph cascade {", `"frontend" -> "route"`}},
		{"mermaid", []string{"graph", ds, "--output", "mermaid", "--level", "operation"}, []string{"flowchart LR", "frontend:/dispatch"}},
		{"json", []string{"graph", ds, "--output", "json", "--window", "5s", "--resolution", "5ms"}, []string{`"version": 1`, `"level": "service"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, exitOK, code, stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
		})
	}
}

func TestGraphCommandErrors(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	code, _, stderr := runCLI(t, "ingest", hotrodOTLP, "--out", ds)
	require.Equal(t, exitOK, code, stderr)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no input", []string{"graph"}, exitUsage, "cascade: give a DATASET directory, trace or metric files, or --from prometheus=URL\n"},
		{"bad from", []string{"graph", "--from", "jaeger=http://127.0.0.1:1"}, exitUsage, "cascade: --from \"jaeger=http://127.0.0.1:1\": want prometheus=URL\n"},
		{"end without from", []string{"graph", ds, "--end", "now-5m"}, exitUsage, "cascade: --end, --step, --timeout and --attempts apply to --from only\n"},
		{"bad start", []string{"graph", ds, "--start", "yesterday"}, exitUsage, "cascade: --start: \"yesterday\": want RFC 3339, Unix seconds, now or now-DURATION\n"},
		{"no spans, no series", []string{"graph", "--metrics", "../../testdata/hotrod-baseline/hotrod-metrics.prom"}, exitFailure, "cascade: no spans and no service-graph or span-metrics series\n"},
		{"series at operation level", []string{"graph", "--metrics", "../../graph/testdata/connectors-hotrod.prom.gz", "--level", "operation"}, exitUsage, "cascade: --level operation: without spans the model comes from service-graph series, which name services only\n"},
		{"bad output", []string{"graph", ds, "--output", "yaml"}, exitUsage, "cascade: --output \"yaml\": want one of [table json markdown dot mermaid]\n"},
		{"bad level", []string{"graph", ds, "--level", "pod"}, exitUsage, "cascade: level \"pod\": want service or operation\n"},
		{"bad window", []string{"graph", ds, "--window", "1ms"}, exitUsage, "cascade: window: 1ms is shorter than the resolution 10ms\n"},
		{"dataset and files", []string{"graph", ds, hotrodOTLP}, exitUsage, "cascade: give one dataset directory or raw source files, not both\n"},
		{"metrics with a dataset", []string{"graph", ds, "--metrics", "x.prom"}, exitUsage, "cascade: --metrics: a dataset holds its metrics; ingest them into it\n"},
		{"missing file", []string{"graph", filepath.Join(dir, "nope.json")}, exitUsage, "cascade: " + filepath.Join(dir, "nope.json") + ": no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.stderr, stderr)
			require.Empty(t, stdout)
		})
	}
}
