package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutputFormatsEverywhere holds the house standard: every command
// with --output prints table, json and markdown, says so in its help and
// completes them (graph adds dot and mermaid).
func TestOutputFormatsEverywhere(t *testing.T) {
	commands := 0
	for _, c := range newRootCmd(nil).Commands() {
		f := c.Flags().Lookup("output")
		if f == nil {
			continue
		}
		commands++
		require.Equal(t, "o", f.Shorthand, c.Name())
		for _, format := range []string{"table", "json", "markdown"} {
			require.Contains(t, f.Usage, format, c.Name())
		}
		code, stdout, stderr := runCLI(t, "__complete", c.Name(), "--output", "")
		require.Equal(t, exitOK, code, stderr)
		require.True(t, strings.HasPrefix(stdout, "table\njson\nmarkdown\n"), "%s completes --output with %q", c.Name(), stdout)
	}
	require.Equal(t, 8, commands, "analyze, collect, fit, graph, ingest, merge, rank, replay")
}

// TestOutputFlags: -o is the output format in every command, as
// --output is, and --out the path; the old spellings of the path (-o
// FILE on graph and fit, -O DIR on ingest and collect) still work and
// warn. A value of -o that names a format is the format, so -o json on
// graph prints JSON and writes no file called json (issue 39).
func TestOutputFlags(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		require.NoError(t, err)
		return a
	}
	sample := abs("../../testdata/hotrod-baseline/sample-trace-otlp.json")
	hotrod := abs(hotrodOTLP)
	fit := append([]string{"fit", hotrod}, fitSmall[2:]...)
	const (
		warnO = "cascade: warning: -o model.json is deprecated, use --out model.json (-o now names the output format)\n"
		warnD = "cascade: warning: -O ds is deprecated, use --out ds\n"
	)
	tests := []struct {
		name   string
		setup  []string // a command run first (ingest: a dataset to add to)
		args   []string
		code   int
		stdout string   // what stdout starts with
		stderr string   // the whole of it
		files  []string // made in the working directory, in order
	}{
		{name: "graph -o json", args: []string{"graph", sample, "-o", "json"}, stdout: "{\n", files: []string{}},
		{name: "graph -o markdown", args: []string{"graph", sample, "-o", "markdown"}, stdout: "- **model**:", files: []string{}},
		{name: "graph --out", args: []string{"graph", sample, "--out", "model.json", "-o", "json"}, stdout: "{\n", files: []string{"model.json"}},
		{name: "graph -o FILE, old", args: []string{"graph", sample, "-o", "model.json"}, stdout: "model ", stderr: warnO, files: []string{"model.json"}},
		{name: "graph -oFILE, old", args: []string{"graph", sample, "-omodel.json", "-o", "dot"}, stdout: "digraph", stderr: warnO, files: []string{"model.json"}},
		{name: "graph -o=FILE, old", args: []string{"graph", sample, "-o=model.json", "--output", "json"}, stdout: "{\n", stderr: warnO, files: []string{"model.json"}},
		{name: "graph --output FILE", args: []string{"graph", sample, "--output", "model.json"}, code: exitUsage,
			stderr: "cascade: --output \"model.json\": want one of [table json markdown dot mermaid]\n", files: []string{}},
		{name: "fit -o json", args: append(fit, "-o", "json"), stdout: "{\n", files: []string{}},
		{name: "fit -o FILE, old", args: append(fit, "-o", "model.json", "--output", "json"), stdout: "{\n", stderr: warnO, files: []string{"model.json"}},
		{name: "ingest -o json --out", args: []string{"ingest", sample, "-o", "json", "--out", "ds"}, stdout: "{\n", files: []string{"ds"}},
		{name: "ingest -O DIR, old", args: []string{"ingest", sample, "-O", "ds"}, stdout: "dataset  ds", stderr: warnD, files: []string{"ds"}},
		{name: "collect -O DIR, old", setup: []string{"ingest", sample, "--out", "ds"}, args: []string{"collect", "-O", "ds", "--finalize", "-o", "json"},
			stdout: "{\n", stderr: warnD + "collect: nothing to add: no segments in ds.collect; ds is unchanged\n", files: []string{"ds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tc.setup != nil {
				code, _, stderr := runCLI(t, tc.setup...)
				require.Equal(t, exitOK, code, stderr)
			}
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			require.True(t, strings.HasPrefix(stdout, tc.stdout), "stdout: %.200s", stdout)
			require.Equal(t, tc.stderr, stderr)
			entries, err := os.ReadDir(".")
			require.NoError(t, err)
			files := []string{}
			for _, e := range entries {
				files = append(files, e.Name())
			}
			require.Equal(t, tc.files, files)
		})
	}
}

// TestOldOutSpellings reads the arguments as pflag does: only a -o or
// -O that is a flag is rewritten, not one that is the value of another
// flag or comes after "--", and -o keeps a format as the format.
func TestOldOutSpellings(t *testing.T) {
	tests := []struct {
		args []string
		want []string
		warn int
	}{
		{args: []string{"graph", "x", "-o", "m.json"}, want: []string{"graph", "x", "--out=m.json"}, warn: 1},
		{args: []string{"graph", "-o", "mermaid", "x"}, want: []string{"graph", "-o", "mermaid", "x"}},
		{args: []string{"graph", "--level", "-o", "x"}, want: []string{"graph", "--level", "-o", "x"}},
		{args: []string{"graph", "--level=-o", "-o", "dot", "x"}, want: []string{"graph", "--level=-o", "-o", "dot", "x"}},
		{args: []string{"graph", "x", "--", "-o", "m.json"}, want: []string{"graph", "x", "--", "-o", "m.json"}},
		{args: []string{"graph", "x", "-o"}, want: []string{"graph", "x", "-o"}},
		{args: []string{"fit", "x", "-ocal.json", "-o", "table"}, want: []string{"fit", "x", "--out=cal.json", "-o", "table"}, warn: 1},
		{args: []string{"ingest", "x", "-O", "ds", "-o", "json"}, want: []string{"ingest", "x", "--out=ds", "-o", "json"}, warn: 1},
		{args: []string{"collect", "-O=ds", "--finalize"}, want: []string{"collect", "--out=ds", "--finalize"}, warn: 1},
		{args: []string{"ingest", "-", "--format", "-O", "-O", "ds"}, want: []string{"ingest", "-", "--format", "-O", "--out=ds"}, warn: 1},
		// Commands whose -o was always the format, and -O nowhere else.
		{args: []string{"replay", "m.json", "-o", "m.json"}, want: []string{"replay", "m.json", "-o", "m.json"}},
		{args: []string{"graph", "x", "-O", "ds"}, want: []string{"graph", "x", "-O", "ds"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			got := oldOutSpellings(newRootCmd(strings.NewReader("")), tc.args, &stderr)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.warn, strings.Count(stderr.String(), "is deprecated, use --out"), stderr.String())
		})
	}
}

// TestUnknownCommandsAndFlags: an unknown command or flag is a usage
// error (exit 2, as the README's table says), answered on one line with
// the names nearest to it (issue 39).
func TestUnknownCommandsAndFlags(t *testing.T) {
	const model = "../../testdata/replay/seed000.json"
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"grap"}, `unknown command "grap"; did you mean graph?`},
		{[]string{"rnak", model}, `unknown command "rnak"; did you mean rank?`},
		{[]string{"xyzzy"}, `unknown command "xyzzy" (see cascade --help)`},
		{[]string{"graph", "x", "--levl", "operation"}, "unknown flag: --levl; did you mean --level?"},
		{[]string{"graph", "x", "--met", "a"}, "unknown flag: --met; did you mean --metrics?"},
		{[]string{"ingest", "x", "--outdir", "ds"}, "unknown flag: --outdir; did you mean --out?"},
		{[]string{"ingest", "x", "--ou", "ds"}, "unknown flag: --ou; did you mean --out or --output?"},
		{[]string{"replay", model, "--sed", "3"}, "unknown flag: --sed; did you mean --seed or --set?"},
		{[]string{"replay", model, "--Seeds", "3"}, "unknown flag: --Seeds; did you mean --seeds?"},
		{[]string{"replay", model, "-seed", "3"}, "unknown shorthand flag: 's' in -seed; did you mean --seed?"},
		{[]string{"replay", model, "--zzz"}, "unknown flag: --zzz"},
		{[]string{"replay", model, "-x"}, "unknown shorthand flag: 'x' in -x"},
		{[]string{"graph", "--version"}, "unknown flag: --version"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Empty(t, stdout)
			require.Equal(t, "cascade: "+tc.stderr+"\n", stderr)
		})
	}
}

// TestFlagValueMessages: a flag value that does not parse is a usage
// error that names the flag and says what it wants, with nothing of
// strconv's or time's wording ("strconv.ParseUint: parsing", "time:
// missing unit") (issue 39, item 7).
func TestFlagValueMessages(t *testing.T) {
	const (
		model  = "../../testdata/replay/seed000.json"
		sample = "../../testdata/hotrod-baseline/sample-trace-otlp.json"
	)
	tests := []struct {
		args   []string // OUT is replaced by a fresh directory's path
		stderr string
	}{
		{[]string{"replay", model, "--seed", "abc"}, `--seed: "abc" is not a whole number`},
		{[]string{"replay", model, "--seed", "-1"}, `--seed: "-1" is not a whole number of 0 or more`},
		{[]string{"replay", model, "--seeds", "2.5"}, `--seeds: "2.5" is not a whole number`},
		{[]string{"replay", model, "--seeds", "99999999999999999999"}, `--seeds: "99999999999999999999" is out of range`},
		{[]string{"replay", model, "--series=maybe"}, `--series: "maybe" is not true or false`},
		{[]string{"replay", model, "--duration", "5"}, `--duration: "5" has no unit: say 5s, 5ms or 5m`},
		{[]string{"replay", model, "--tick", "abc"}, `--tick: "abc" is not a duration, such as 500ms, 30s, 5m or 1h30m`},
		{[]string{"rank", model, "--surge", "abc"}, `--surge: "abc" is not a number`},
		{[]string{"fit", sample, "--holdout", "all"}, `--holdout: "all" is not a whole number`},
		{[]string{"analyze", sample, "--fit=maybe"}, `--fit: "maybe" is not true or false`},
		{[]string{"collect", "--out", "OUT/ds", "--max-request-size", "abc"}, `--max-request-size: "abc": want a positive size such as 16MiB`},
		{[]string{"collect", "--out", "OUT/ds", "--from", "prometheus=http://127.0.0.1:1", "--query", "up", "--start", "now-1x"},
			`--start: "now-1x": "1x" is not a duration, such as 500ms, 30s, 5m or 1h30m`},
		{[]string{"graph", "--from", "prometheus=http://127.0.0.1:1", "--start", "now-90"}, `--start: "now-90": "90" has no unit: say 90s, 90ms or 90m`},
		{[]string{"ingest", sample, "--out", "OUT/ds", "--scrape-time", "yesterday"},
			`--scrape-time: "yesterday" is not an RFC 3339 time, such as 2026-01-02T15:04:05Z`},
		{[]string{"ingest", sample, "--out", "OUT/ds", "--metrics", `a"b`},
			`--metrics: "a\"b" is not a list of values separated by commas (a '"' must enclose a whole value; or give --metrics once per value)`},
		// --set values were already said in the model's terms.
		{[]string{"replay", model, "--set", "node.server.replicas=abc"}, "--set node.server.replicas=abc: want an integer"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.Replace(a, "OUT", tmp, 1)
			}
			code, stdout, stderr := runCLI(t, args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Empty(t, stdout)
			require.Equal(t, "cascade: "+tc.stderr+"\n", stderr)
		})
	}
}
