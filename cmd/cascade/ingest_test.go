package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
)

// runCascade runs the command tree in process with the given stdin.
func runCascade(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestIngestCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"data":[{"traceID":"01","spans":[{"traceID":"01","spanID":"02","operationName":"x","startTime":5,"duration":1,"processID":"p9"}],"processes":{}}]}`), 0o644))
	badLog := filepath.Join(dir, "bad_log.csv")
	require.NoError(t, os.WriteFile(badLog, []byte("Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\nsoon,later,n,p,c,,,x\n"), 0o644))
	const td = "../../testdata/"
	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		golden   string // compare stdout with testdata/<golden>.golden
		inStderr string
	}{
		{name: "hotrod table", args: []string{"ingest", td + "hotrod-baseline/sample-trace-jaeger-legacy.json", "--metrics", td + "hotrod-baseline/prometheus/request_rate_by_endpoint.json"}, golden: "ingest-hotrod-table"},
		{name: "nezha json", args: []string{"ingest", td + "nezha-trainticket/trace", "--metrics", td + "nezha-trainticket/metric", "-o", "json"}, golden: "ingest-nezha-json"},
		{name: "stdin zipkin", args: []string{"ingest", "-"}, stdin: mustRead(t, td+"zipkin/hotrod-traces.json"), golden: "ingest-stdin-zipkin"},
		{name: "bad record", args: []string{"ingest", bad}, code: exitInvalidData, inStderr: "bad.json (byte 34): data[0].spans[0]: processID \"p9\" is not in the trace's processes"},
		{name: "nezha logs table", args: []string{"ingest", "--logs", td + "nezha-trainticket/log"}, golden: "ingest-nezha-logs-table"},
		{name: "bad log record", args: []string{"ingest", "--logs", badLog}, code: exitInvalidData, inStderr: `bad_log.csv:2 (byte 65): column "Timestamp": "soon" is neither a number nor an RFC 3339 time: bad timestamp`},
		{name: "no inputs", args: []string{"ingest"}, code: exitUsage, inStderr: "give at least one PATH"},
		{name: "no out", args: []string{"ingest", td + "hotrod-baseline/sample-trace-otlp.json"}, code: exitUsage, inStderr: "--out DATASET is required"},
		{name: "bad format", args: []string{"ingest", "x", "--format", "xml"}, code: exitUsage, inStderr: `"xml": unknown format`},
		{name: "bad output", args: []string{"ingest", "x", "-o", "yaml"}, code: exitUsage, inStderr: `--output "yaml"`},
		{name: "missing file", args: []string{"ingest", filepath.Join(dir, "nope.json")}, code: exitUsage, inStderr: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.code != exitUsage || !strings.Contains(tc.inStderr, "--out") {
				args = append(args, "--out", filepath.Join(t.TempDir(), "ds"))
			}
			code, stdout, stderr := runCascade(t, tc.stdin, args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			if tc.inStderr != "" {
				require.Contains(t, stderr, tc.inStderr)
			}
			if tc.golden != "" {
				testutil.Golden(t, tc.golden, []byte(stableOutput(t, stdout)))
			}
		})
	}
}

// stableOutput removes what depends on the test's temporary directory.
func stableOutput(t *testing.T, s string) string {
	t.Helper()
	if strings.HasPrefix(s, "{") {
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&v))
		v["dataset"] = "DATASET"
		b, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		return string(b) + "\n"
	}
	lines := strings.Split(s, "\n")
	if strings.HasPrefix(lines[0], "dataset") {
		lines[0] = "dataset  DATASET"
	}
	return strings.Join(lines, "\n")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestIngestEmptyInput: an empty input (no bytes, or only whitespace) is
// an error naming it, exit 3, when no input of the run held data, and
// leaves what --out held; beside inputs that held data it is a warning
// naming it (issue 39, item 9).
func TestIngestEmptyInput(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"EMPTY": nil,
		"BLANK": []byte("\ufeff \n\t\r\n"),
	}
	paths := map[string]string{}
	for name, b := range files {
		paths[name] = filepath.Join(dir, strings.ToLower(name)+".json")
		require.NoError(t, os.WriteFile(paths[name], b, 0o644))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	require.NoError(t, zw.Close())
	paths["GZ"] = filepath.Join(dir, "empty.json.gz")
	require.NoError(t, os.WriteFile(paths["GZ"], gz.Bytes(), 0o644))
	mixed := filepath.Join(dir, "mixed")
	require.NoError(t, os.MkdirAll(mixed, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mixed, "a-empty.json"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mixed, "b-trace.json"), []byte(mustRead(t, "testdata/newcomer/trace.json")), 0o644))
	paths["MIXED"] = mixed
	const (
		trace = "testdata/newcomer/trace.json"
		rate  = "../../testdata/hotrod-baseline/prometheus/request_rate_by_endpoint.json"
	)
	tests := []struct {
		name   string
		args   []string
		stdin  string
		over   bool // --out already holds a dataset, which must stay
		code   int
		stderr string
	}{
		{name: "an empty file", args: []string{"EMPTY"}, code: exitInvalidData,
			stderr: "cascade: EMPTY: the input is empty (empty input): nothing to read\n"},
		{name: "only whitespace after a byte order mark", args: []string{"BLANK"}, code: exitInvalidData,
			stderr: "cascade: BLANK: the input is empty (empty input): nothing to read\n"},
		{name: "two empty files", args: []string{"EMPTY", "BLANK"}, code: exitInvalidData,
			stderr: "cascade: EMPTY, BLANK: the inputs are empty (empty input): nothing to read\n"},
		{name: "an empty gzip file", args: []string{"GZ"}, code: exitInvalidData,
			stderr: "cascade: GZ: the input is empty (empty input): nothing to read\n"},
		{name: "empty stdin", args: []string{"-"}, code: exitInvalidData,
			stderr: "cascade: -: the input is empty (empty input): nothing to read\n"},
		{name: "an empty metrics file", args: []string{"--metrics", "EMPTY"}, code: exitInvalidData,
			stderr: "cascade: EMPTY: the input is empty (empty input): nothing to read\n"},
		{name: "an empty log file", args: []string{"--logs", "EMPTY"}, code: exitInvalidData,
			stderr: "cascade: EMPTY: the input is empty (empty input): nothing to read\n"},
		{name: "an empty file over a dataset", args: []string{"EMPTY"}, over: true, code: exitInvalidData,
			stderr: "cascade: EMPTY: the input is empty (empty input): nothing to read\n"},
		{name: "an empty file beside a trace", args: []string{"EMPTY", trace},
			stderr: "cascade: warning: empty input: 1, first at EMPTY byte 0 (nothing read)\n"},
		{name: "an empty trace file beside metrics", args: []string{"EMPTY", "--metrics", rate},
			stderr: "cascade: warning: empty input: 1, first at EMPTY byte 0 (nothing read)\n"},
		{name: "an empty file in a directory with a trace", args: []string{"MIXED"},
			stderr: "cascade: warning: empty input: 1, first at MIXED/a-empty.json byte 0 (nothing read)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ds")
			var before []byte
			if tc.over {
				code, _, stderr := runCascade(t, "", "ingest", trace, "--out", out)
				require.Equal(t, exitOK, code, stderr)
				var err error
				before, err = os.ReadFile(filepath.Join(out, "spans.parquet"))
				require.NoError(t, err)
			}
			args := []string{"ingest"}
			for _, a := range tc.args {
				if p, ok := paths[a]; ok {
					a = p
				}
				args = append(args, a)
			}
			code, stdout, stderr := runCascade(t, tc.stdin, append(args, "--out", out)...)
			want := tc.stderr
			for name, p := range paths {
				want = strings.ReplaceAll(want, name, p)
			}
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			require.Equal(t, want, stderr)
			if tc.code == exitOK {
				require.NotEmpty(t, stdout)
				return
			}
			require.Empty(t, stdout)
			after, err := os.ReadFile(filepath.Join(out, "spans.parquet"))
			if before == nil {
				require.ErrorIs(t, err, os.ErrNotExist, "a failed run writes no dataset")
			} else {
				require.NoError(t, err)
				require.Equal(t, before, after, "a failed run leaves the dataset that was there")
			}
		})
	}
}
