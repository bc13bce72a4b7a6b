package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorsPointToTheFix makes the mistakes of issue 25 and checks that
// each error says the fix: the flag a misplaced file goes with, the names
// near a misspelt one, the type a --set wants, the --out path as given
// (not a temporary one), the example to start from, and the line a map
// file wants split, with the exit code the README's table gives.
func TestErrorsPointToTheFix(t *testing.T) {
	const (
		td    = "../../testdata/"
		model = td + "replay/seed000.json"
	)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	file := write("a-file", "x")
	mapLine := write("spans.map", "# from the docs\ntrace_id=trace,span_id=span,service=svc,start=begin_us:us,duration=took_us:us\n")
	misspelt := write("misspelt.yaml", "nodes:\n  servr: {concurrency: 8}\n")
	tests := []struct {
		name string
		args []string // OUT is replaced by a fresh directory's path
		code int
		// stderr is the whole of it; "(...)" stands for a part that
		// differs between systems.
		stderr string
		linux  bool // needs /proc
	}{
		// Metrics given as traces, and traces as metrics.
		{name: "Prometheus query JSON as PATH", code: exitInvalidData,
			args:   []string{"ingest", td + "hotrod-baseline/prometheus/request_rate_by_endpoint.json", "--out", "OUT/ds"},
			stderr: "cascade: " + td + "hotrod-baseline/prometheus/request_rate_by_endpoint.json: this looks like Prometheus query JSON: pass it with --metrics\n"},
		{name: "Prometheus text as PATH", code: exitInvalidData,
			args:   []string{"analyze", td + "hotrod-baseline/hotrod-metrics.prom", "--out", "OUT/r"},
			stderr: "cascade: " + td + "hotrod-baseline/hotrod-metrics.prom: this looks like Prometheus text exposition: pass it with --metrics\n"},
		{name: "OTLP metrics as PATH", code: exitInvalidData,
			args:   []string{"graph", td + "otlp-metrics/sdk-runtime-http.jsonl"},
			stderr: "cascade: " + td + "otlp-metrics/sdk-runtime-http.jsonl: this looks like an OTLP metrics file: pass it with --metrics\n"},
		{name: "a directory of metrics as PATH", code: exitInvalidData,
			args:   []string{"ingest", td + "hotrod-baseline/prometheus", "--out", "OUT/ds"},
			stderr: "cascade: " + td + "hotrod-baseline/prometheus: a directory with no trace files: passed over " + td + "hotrod-baseline/prometheus/mean_latency_by_endpoint.json (Prometheus query JSON), " + td + "hotrod-baseline/prometheus/raw_hotrod_series.json.gz (Prometheus query JSON), " + td + "hotrod-baseline/prometheus/request_rate_by_endpoint.json (Prometheus query JSON): pass the directory with --metrics: nothing to read\n"},
		{name: "OTLP traces to --metrics", code: exitInvalidData,
			args:   []string{"analyze", td + "hotrod-baseline/sample-trace-otlp.json", "--metrics", td + "hotrod-baseline/traces-otlp.json.gz", "--out", "OUT/r"},
			stderr: "cascade: " + td + "hotrod-baseline/traces-otlp.json.gz: this looks like an OTLP trace file: pass it as PATH, not with --metrics\n"},
		{name: "Jaeger traces to --metrics", code: exitInvalidData,
			args:   []string{"ingest", "--metrics", td + "hotrod-baseline/sample-trace-jaeger-legacy.json", "--out", "OUT/ds"},
			stderr: "cascade: " + td + "hotrod-baseline/sample-trace-jaeger-legacy.json: this looks like a Jaeger trace file: pass it as PATH, not with --metrics\n"},
		{name: "Zipkin traces to --metrics", code: exitInvalidData,
			args:   []string{"ingest", "--metrics", td + "zipkin/hotrod-traces.json", "--out", "OUT/ds"},
			stderr: "cascade: " + td + "zipkin/hotrod-traces.json: this looks like a Zipkin trace file: pass it as PATH, not with --metrics\n"},

		// --set and scenario typos, and values of the wrong type.
		{name: "misspelt node in --set", code: exitUsage,
			args:   []string{"replay", model, "--set", "node.servr.replicas=2"},
			stderr: "cascade: --set node.servr.replicas=2: no node servr; did you mean server?\n"},
		{name: "misspelt field in --set", code: exitUsage,
			args:   []string{"replay", model, "--set", "edge.server->downlink.retry.max_attemps=2"},
			stderr: "cascade: --set edge.server->downlink.retry.max_attemps=2: no field max_attemps in retry; did you mean max_attempts?\n"},
		{name: "--set of the wrong type", code: exitUsage,
			args:   []string{"replay", model, "--set", "edge.server->downlink.retry.max_attempts=two"},
			stderr: "cascade: --set edge.server->downlink.retry.max_attempts=two: want an integer\n"},
		{name: "misspelt node in a rank scenario", code: exitUsage,
			args:   []string{"rank", model, "--scenario", misspelt, "--derive=false", "--seeds", "2", "--duration", "1s", "--capacity=false"},
			stderr: "cascade: --scenario " + misspelt + `: nodes["servr"]: no such node, edge or entry in the model; did you mean server?` + "\n"},

		// An --out that cannot be written names the flag and the path given.
		{name: "ingest --out under /proc", code: exitUsage, linux: true,
			args:   []string{"ingest", td + "hotrod-baseline/sample-trace-otlp.json", "--out", "/proc/cascade-x"},
			stderr: "cascade: --out /proc/cascade-x: cannot create anything in /proc (...)\n"},
		{name: "analyze --out under /proc", code: exitUsage, linux: true,
			args:   []string{"analyze", td + "hotrod-baseline/sample-trace-otlp.json", "--out", "/proc/cascade-x"},
			stderr: "cascade: --out /proc/cascade-x: cannot create anything in /proc (...)\n"},
		{name: "ingest --out is a file", code: exitUsage,
			args:   []string{"ingest", td + "hotrod-baseline/sample-trace-otlp.json", "--out", file},
			stderr: "cascade: --out " + file + ": a file is in the way: give a directory path\n"},
		{name: "analyze --out under a file", code: exitUsage,
			args:   []string{"analyze", td + "hotrod-baseline/sample-trace-otlp.json", "--out", file + "/report"},
			stderr: "cascade: --out " + file + "/report: " + file + " is a file, not a directory\n"},
		{name: "graph --out is a directory", code: exitUsage,
			args:   []string{"graph", td + "hotrod-baseline/sample-trace-otlp.json", "--out", dir},
			stderr: "cascade: --out " + dir + ": a directory is in the way: give a file path\n"},
		{name: "fit --out under a file", code: exitUsage,
			args:   []string{"fit", td + "hotrod-baseline/sample-trace-otlp.json", "--out", file + "/m.json"},
			stderr: "cascade: --out " + file + "/m.json: " + file + " is a file, not a directory\n"},

		// The example to start from.
		{name: "analyze without arguments", code: exitUsage, args: []string{"analyze"},
			stderr: "cascade: give trace files, directories or a dataset directory; to try the bundled example, from the repository's root:\n  " + exampleCommand + "\n"},

		// Column maps.
		{name: "map file in the inline syntax", code: exitUsage,
			args:   []string{"ingest", td + "hotrod-baseline/sample-trace-otlp.json", "--csv-map", "@" + mapLine, "--out", "OUT/ds"},
			stderr: "cascade: --csv-map: " + mapLine + ":2: 5 entries on one line, separated by commas: a map file takes one key=column entry per line (a comma there belongs to the column name)\n"},
		{name: "analyze takes --csv-map", code: exitUsage,
			args:   []string{"analyze", td + "hotrod-baseline/sample-trace-otlp.json", "--csv-map", "trace_id=trace", "--out", "OUT/r"},
			stderr: "cascade: --csv-map: missing key \"span_id\"\nmissing key \"service\"\nmissing key \"start\"\nmissing key \"end\" or \"duration\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.linux && runtime.GOOS != "linux" {
				t.Skip("needs /proc")
			}
			tmp := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.Replace(a, "OUT", tmp, 1)
			}
			code, stdout, stderr := runCascade(t, "", args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			if before, after, ok := strings.Cut(tc.stderr, "(...)"); ok {
				require.True(t, strings.HasPrefix(stderr, before) && strings.HasSuffix(stderr, after), "stderr: %s", stderr)
			} else {
				require.Equal(t, tc.stderr, stderr)
			}
			require.NotContains(t, stderr, ".tmp-", "no temporary path")
			require.NotContains(t, stderr, "cascade-probe", "no temporary path")
		})
	}
}

// TestExampleCommandInREADME keeps the command analyze suggests the one
// the README's quick start runs.
func TestExampleCommandInREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "go run ./cmd/"+exampleCommand)
}

// TestAnalyzeCSVMap analyses a span CSV of a layout no preset knows:
// without --csv-map the error says to give it, and with it the capture
// is read and ranked.
func TestAnalyzeCSVMap(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("trace,span,parent,svc,op,begin_us,took_us\n")
	const t0 = 1700000000000000
	for i := range 20 {
		s := t0 + i*250000
		fmt.Fprintf(&b, "%032x,%016x,,front,GET /,%d,20000\n", i+1, 2*i+1, s)
		fmt.Fprintf(&b, "%032x,%016x,%016x,db,query,%d,10000\n", i+1, 2*i+2, 2*i+1, s+2000)
	}
	spans := filepath.Join(dir, "spans.csv")
	require.NoError(t, os.WriteFile(spans, []byte(b.String()), 0o644))
	quick := []string{"analyze", spans, "--out", filepath.Join(dir, "r"), "--fit=false", "--incident=false", "--seeds", "2", "--duration", "2s"}

	code, _, stderr := runCascade(t, "", quick...)
	require.Equal(t, exitInvalidData, code, stderr)
	require.Contains(t, stderr, `unknown CSV layout "trace,span,parent,svc,op,begin_us,took_us": give --csv-map`)

	code, stdout, stderr := runCascade(t, "", append(quick, "--csv-map", "trace_id=trace,span_id=span,parent_span_id=parent,service=svc,operation=op,start=begin_us:us,duration=took_us:us")...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Reports in ")
}
