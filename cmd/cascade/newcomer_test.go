package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewcomerMistakes runs what a new user tries with odd and broken
// inputs (testdata/newcomer) and checks that nothing odd goes in without a
// word and that every mistake gets an answer naming the file and the way
// out, with the exit code the README's table gives.
func TestNewcomerMistakes(t *testing.T) {
	const nc = "testdata/newcomer/"
	emptyDir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		// stderr and stdout must contain each of these.
		stderr, stdout []string
		// absent must not exist after the run (a directory it must not leave).
		absent string
	}{
		// Accepted with a counted warning, in the summary and on stderr.
		{name: "span that is its own parent", args: []string{"ingest", nc + "self-parent.json"},
			stderr: []string{"cascade: warning: span is its own parent: 1, first at testdata/newcomer/self-parent.json record 1 (parent cleared: kept as a root)\n"},
			stdout: []string{"span is its own parent (parent cleared: kept as a root)  1", "traces without root                        0"}},
		{name: "parent cycle", args: []string{"ingest", nc + "parent-cycle.json"},
			stderr: []string{"cascade: warning: parent cycle: 1, first at testdata/newcomer/parent-cycle.json trace 0102030405060708090a0b0c0d0e0f10 (cut at its earliest span, kept as a root)\n"},
			stdout: []string{"parent cycle (cut at its earliest span, kept as a root)  1", "traces without root                        0"}},
		{name: "invalid UTF-8 in a name", args: []string{"ingest", nc + "invalid-utf8-name.json"},
			stderr: []string{"cascade: warning: invalid UTF-8 in a name or attribute: 1, first at testdata/newcomer/invalid-utf8-name.json record 1 (replaced with U+FFFD)\n"},
			stdout: []string{"invalid UTF-8 in a name or attribute (replaced with U+FFFD)  1"}},
		{name: "invalid UTF-8 in an attribute", args: []string{"ingest", nc + "invalid-utf8-attr.json"},
			stderr: []string{"cascade: warning: invalid UTF-8 in a name or attribute: 1, first at testdata/newcomer/invalid-utf8-attr.json record 1 (replaced with U+FFFD)\n"}},
		{name: "unknown span kind", args: []string{"ingest", nc + "unknown-kind.json"},
			stderr: []string{"cascade: warning: unknown span kind: 1, first at testdata/newcomer/unknown-kind.json record 1 (left empty)\n"},
			stdout: []string{"unknown span kind (left empty)  1"}},
		{name: "span without service.name", args: []string{"ingest", nc + "no-service.json"},
			stderr: []string{"cascade: warning: span without a service name: 1, first at testdata/newcomer/no-service.json record 1 (kept as unknown_service)\n"},
			stdout: []string{"services                                   1  unknown_service"}},
		{name: "Prometheus values as JSON numbers", args: []string{"ingest", "--metrics", nc + "prom-numbers.json"},
			stderr: []string{"cascade: warning: Prometheus API value as a JSON number, not a string: 1, first at testdata/newcomer/prom-numbers.json record 1 (read as the number)\n"},
			stdout: []string{"samples                    1"}},
		{name: "graph repeats the warnings of the traces it ingests", args: []string{"graph", nc + "self-parent.json"},
			stderr: []string{"cascade: warning: span is its own parent: 1, first at testdata/newcomer/self-parent.json record 1 (parent cleared: kept as a root)\n"}},

		// Rejected, with the position or the file.
		{name: "saved Jaeger error answer", args: []string{"ingest", nc + "jaeger-error.json"}, code: exitInvalidData,
			stderr: []string{`cascade: testdata/newcomer/jaeger-error.json (byte 62): errors: the Jaeger query API answered with errors and no traces: code 500 "storage unavailable": an error answer, not data`}},
		{name: "directory with no trace files", args: []string{"ingest", nc + "no-traces"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/no-traces: a directory with no trace files: passed over testdata/newcomer/no-traces/notes.txt (documentation), testdata/newcomer/no-traces/stray.json (not a known format): nothing to read\n"}},
		{name: "empty directory", args: []string{"ingest", emptyDir}, code: exitInvalidData,
			stderr: []string{emptyDir + ": a directory with no trace files: it holds no files: nothing to read\n"}},

		// Natural mistakes.
		{name: "rank given traces", args: []string{"rank", nc + "trace.json"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/trace.json holds traces (otlp-json), not a model: build the model with `cascade graph testdata/newcomer/trace.json --out model.json` and give model.json\n"}},
		{name: "replay given traces", args: []string{"replay", nc + "trace.json"}, code: exitInvalidData,
			stderr: []string{"holds traces (otlp-json), not a model: build the model with `cascade graph"}},
		{name: "rank given an empty file", args: []string{"rank", nc + "empty.json"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/empty.json: empty file, want a model document (model.json, as `cascade graph --out` writes it)\n"}},
		{name: "rank given a directory", args: []string{"rank", nc + "no-traces"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/no-traces is a directory, not a model file"}},
		{name: "graph given an empty file", args: []string{"graph", nc + "empty.json"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/empty.json: no spans in this input (empty input): nothing to read\n"}},
		{name: "analyze given an empty file", args: []string{"analyze", nc + "empty.json", "--out", "OUT/r2"}, code: exitInvalidData,
			stderr: []string{"cascade: testdata/newcomer/empty.json: no spans to analyse: nothing to read\n"}, absent: "OUT/r2"},
		{name: "analyze given a missing file", args: []string{"analyze", "missing.json", "--out", "OUT/r1"}, code: exitUsage,
			stderr: []string{"cascade: missing.json: no such file or directory\n"}, absent: "OUT/r1"},
		{name: "ingest given a missing file", args: []string{"ingest", "missing.json"}, code: exitUsage,
			stderr: []string{"cascade: missing.json: no such file or directory\n"}},
		{name: "graph given a missing file", args: []string{"graph", "missing.json"}, code: exitUsage,
			stderr: []string{"cascade: missing.json: no such file or directory\n"}},
		{name: "rank given a missing file", args: []string{"rank", "missing.json"}, code: exitUsage,
			stderr: []string{"cascade: missing.json: no such file or directory\n"}},
		{name: "replay given a missing file", args: []string{"replay", "missing.json"}, code: exitUsage,
			stderr: []string{"cascade: missing.json: no such file or directory\n"}},
		{name: "completion for an unknown shell", args: []string{"completion", "tcsh"}, code: exitUsage,
			stderr: []string{`cascade: completion "tcsh": unknown shell, want one of bash, fish, powershell, zsh`}},

		// Markdown where the output is data.
		{name: "ingest as Markdown", args: []string{"ingest", nc + "trace.json", "--output", "markdown"},
			stdout: []string{"- **spans**: 2\n", "| INPUT | FORMAT | SPANS | SAMPLES | SKIPPED |\n|---|---|---|---|---|\n"}},
		{name: "graph as Markdown", args: []string{"graph", nc + "trace.json", "--output", "markdown"},
			stdout: []string{"| ENTRY | OPERATION | RATE/S | SHARE |\n|---|---|---|---|\n", "| EDGE | AMPLIFICATION |"}},
		{name: "replay as Markdown", args: []string{"replay", "../../testdata/replay/seed000.json", "--duration", "1s", "--output", "markdown"},
			stdout: []string{"- **scenario**: baseline\n", "| NODE | CALLS | FAILURES |"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.Replace(a, "OUT", tmp, 1)
			}
			if args[0] == "ingest" {
				args = append(args, "--out", filepath.Join(tmp, "ds"))
			}
			code, stdout, stderr := runCascade(t, "", args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			for _, s := range tc.stderr {
				require.Contains(t, stderr, s)
			}
			for _, s := range tc.stdout {
				require.Contains(t, stdout, s)
			}
			if tc.code != exitOK {
				require.NotContains(t, stderr, "warning: empty input")
				require.Empty(t, stdout, "a failed run prints no data")
			}
			if tc.absent != "" {
				_, err := os.Stat(strings.Replace(tc.absent, "OUT", tmp, 1))
				require.ErrorIs(t, err, os.ErrNotExist, "a failed run leaves no output directory")
			}
		})
	}
}
