package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
)

const seed000Model = "../../testdata/replay/seed000.json"

// runReplay runs `cascade replay ARGS…` in process.
func runReplay(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"replay"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestReplayGolden(t *testing.T) {
	// The golden file lives with the replay test data:
	// testdata/replay/cli-seed000-seed1.golden at the repository root.
	code, out, stderr := runReplay(t, seed000Model, "--seed", "1", "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	testutil.Golden(t, filepath.Join("..", "..", "..", "testdata", "replay", "cli-seed000-seed1"), []byte(out))
	require.Contains(t, out, `"seed": 1,`)
}

func TestReplayByteIdentical(t *testing.T) {
	for _, args := range [][]string{
		{seed000Model, "--seed", "7"},
		{seed000Model, "--seeds", "3", "--duration", "5s", "--output", "json"},
		{seed000Model, "--seeds", "3", "--duration", "5s", "--parallel", "1"},
	} {
		_, a, _ := runReplay(t, args...)
		_, b, _ := runReplay(t, args...)
		require.Equal(t, a, b, "%v", args)
	}
	_, par1, _ := runReplay(t, seed000Model, "--seeds", "4", "--duration", "5s", "--parallel", "1", "-o", "json")
	_, par4, _ := runReplay(t, seed000Model, "--seeds", "4", "--duration", "5s", "--parallel", "4", "-o", "json")
	require.Equal(t, par1, par4)
}

func TestReplayTable(t *testing.T) {
	code, out, stderr := runReplay(t, seed000Model, "--seed", "3", "--duration", "10s", "--arrivals", "0.12/ms")
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"seed            3", "goodput", "zombie share", "server", "collapse"} {
		require.Contains(t, out, want)
	}
	code, out, _ = runReplay(t, seed000Model, "--seeds", "3", "--duration", "5s")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "seeds       1 to 3 (3)")
	require.Contains(t, out, "success_rate")
}

func TestReplayScenarioAndFlags(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "cancel.yaml")
	require.NoError(t, os.WriteFile(scen, []byte("name: cancel\nnodes:\n  server: {deadline_propagation: true}\n"), 0o644))
	code, out, stderr := runReplay(t, seed000Model, "--scenario", scen, "--set", "entry.uplink.retry=null",
		"--arrivals", "120", "--duration", "20s", "--surge", "1.5,5s,5s", "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"scenario": "cancel + entry.uplink.retry=null"`)
	require.Contains(t, out, `"cancelled": `)

	code, _, stderr = runReplay(t, seed000Model, "--arrivals", "closed:20,50ms", "--duration", "5s")
	require.Equal(t, exitOK, code, stderr)
}

func TestReplayUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", nil, "exactly one MODEL"},
		{"bad output", []string{seed000Model, "-o", "xml"}, "--output"},
		{"bad set", []string{seed000Model, "--set", "node.nosuch.replicas=2"}, "--set node.nosuch.replicas=2: no node nosuch (nodes: downlink, server, uplink)"},
		{"misspelt set", []string{seed000Model, "--set", "node.servr.replicas=2"}, "--set node.servr.replicas=2: no node servr; did you mean server?"},
		{"set of the wrong type", []string{seed000Model, "--set", "edge.server->downlink.retry.max_attempts=two"}, "--set edge.server->downlink.retry.max_attempts=two: want an integer"},
		{"bad arrivals", []string{seed000Model, "--arrivals", "lots"}, "--arrivals"},
		{"observed without data", []string{seed000Model, "--arrivals", "observed"}, "--dataset"},
		{"bad surge", []string{seed000Model, "--surge", "2,10s"}, "--surge"},
		{"bad tick", []string{seed000Model, "--tick", "0s"}, "tick"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runReplay(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
	code, _, stderr := runReplay(t, "/nonexistent/model.json")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "model.json")
}

func TestReplayObservedArrivals(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	var out, errb bytes.Buffer
	code := run([]string{"ingest", "../../testdata/hotrod-baseline/sample-trace-otlp.json", "--out", ds}, strings.NewReader(""), &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	model := filepath.Join(dir, "model.json")
	require.NoError(t, os.WriteFile(model, []byte(`{"version": 1,
  "entries": [{"node": "frontend", "rate_per_sec": 1, "share": 1}],
  "nodes": [{"name": "frontend", "replicas": 1, "concurrency": 0,
             "service_ms": {"kind": "const", "value": 5}, "overload": {"base": 0, "slope": 0, "threshold": 0}}],
  "edges": []}`), 0o644))
	code, stdout, stderr := runReplay(t, model, "--arrivals", "observed", "--dataset", ds, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, `"roots": 1,`, "the sample holds one trace, so one root request")
}
