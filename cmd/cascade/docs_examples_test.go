package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"cascade/internal/testutil"
)

// docSkips are the documented commands the docs test checks (their
// command and flags exist) but does not run, each with why: a live system
// it needs, a file only the reader has, a tool not installed. Reviewed:
// an entry no document holds any more fails the test. Keys are matched
// as substrings of the command as written (continuations joined).
var docSkips = map[string]string{
	// Live systems.
	"cascade collect --out ds --from prometheus=":           "a live Prometheus",
	"cascade collect --out ds --from jaeger=":               "a live Jaeger",
	"cascade collect --out ds\n":                            "listens for OTLP until interrupted",
	"cascade graph --from prometheus=http://127.0.0.1:9090": "a live Prometheus",
	"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318":     "an instrumented service of the reader's",
	"--dataset /tmp/hotrod":                                 "replays the dataset's arrivals: minutes of replay",
	// Files only the reader has.
	"/data/incident":                                    "the reader's capture",
	"/data/day":                                         "the reader's capture",
	"cascade ingest nezha/trace":                        "Nezha's full data set, not bundled (testdata holds a subset, read by TestIngestCommand)",
	"cascade ingest trace_span.csv":                     "the AIOps challenge's data, not bundled (TestAIOpsCSV reads a sample)",
	"cascade ingest export.csv":                         "the reader's export and mapping",
	"sampled-traces.json":                               "the reader's sampled traces and series",
	"zcat traces.jsonl.gz":                              "the reader's export",
	"--scenario retries1.yaml":                          "the reader's scenario file (docs/scenario.md's blocks are replayed apart)",
	"cascade analyze /tmp/fixout/":                      "a live HotROD run's capture (docs/validation.md: TestE2EHotRODFix writes it)",
	"cascade graph /tmp/fixout/":                        "a live HotROD run's capture (docs/validation.md: TestE2EHotRODFix writes it)",
	"$R/rca_data":                                       "Nezha's full TrainTicket day, not bundled",
	"cascade fit /tmp/tt-day":                           "Nezha's full TrainTicket day, not bundled",
	"| dot -Tsvg":                                       "Graphviz's dot (the DOT itself is TestGolden's)",
	"./my-service":                                      "an instrumented service of the reader's",
	".ci/fuzz":                                          "fuzzes for minutes (CI's step)",
	"--metrics servicegraph.prom":                       "the reader's series (graph/testdata/connectors-hotrod.prom.gz is such a file: the graph tests read it)",
	"cascade collect --out ds --finalize":               "folds what a crashed collect left in ds: there is none here (TestCollectAddsAndFinalizes makes one)",
	"cascade fit /tmp/hotrod --model model.json --grid": "a grid search of minutes",
	// Sharding: shell loops in the background and partials on other
	// machines; TestShardMergeIsUnsharded runs the shards and the merge
	// at 1, 2 and 4 and compares them with the unsharded run.
	"--shard $i/":                "a shell loop of shards in the background (TestShardMergeIsUnsharded)",
	"cascade merge /tmp/parts/":  "the partials of the loop above (TestShardMergeIsUnsharded)",
	"--model model.json --shard": "partials written on the reader's machines (TestShardMergeIsUnsharded)",
	"cascade merge parts/":       "partials written on the reader's machines (TestShardMergeIsUnsharded)",
}

// docLong are the commands that run only with CASCADE_LONG=1: each runs
// for more than a few seconds on two busy cores.
var docLong = []string{
	"cascade fit testdata/hotrod-baseline/traces-otlp.json.gz --window 30s",
	"cascade analyze testdata/nezha-onlineboutique/trace",
	// The README's main command runs in the default run; this is it
	// again, into another directory.
	"--out hotrod-report",
}

// docCommand is one command of the docs, where it is written.
type docCommand struct {
	at, text string
	// quoted is the block of its output the docs quote, if any: each
	// of its lines must be a line the command prints.
	quoted *docBlock
}

// docFiles are the documents whose examples run: the README and docs/.
func docFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

// docBlock is a code block: fenced (with its language) or indented.
type docBlock struct {
	at, lang, text string
	// outputOf is the command whose output the block quotes, named by
	// an HTML comment on the line before it, <!-- output of: CMD -->:
	// each of the block's lines must be a line that CMD prints.
	outputOf string
}

// outputOf matches the comment that names the command a block quotes.
var outputOf = regexp.MustCompile(`^<!-- output of: (.+) -->$`)

// docBlocks returns the code blocks of a Markdown file.
func docBlocks(t *testing.T, path string) []docBlock {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var (
		blocks           []docBlock
		cur              *docBlock
		fenced, indented bool
		prevBlank        = true
		quotes           string // the command the next block quotes
		lines            = strings.Split(string(data), "\n")
		name             = strings.TrimPrefix(path, "../../")
		flush            = func() { blocks = append(blocks, *cur); cur = nil }
	)
	for i, l := range lines {
		switch {
		case fenced:
			if strings.HasPrefix(l, "```") {
				fenced = false
				flush()
			} else {
				cur.text += l + "\n"
			}
		case strings.HasPrefix(l, "```"):
			if indented {
				indented = false
				flush()
			}
			fenced, cur = true, &docBlock{at: fmt.Sprintf("%s:%d", name, i+1), lang: strings.TrimSpace(l[3:]), outputOf: quotes}
		case strings.HasPrefix(l, "    ") && (indented || prevBlank):
			if !indented {
				indented, cur = true, &docBlock{at: fmt.Sprintf("%s:%d", name, i+1), outputOf: quotes}
			}
			cur.text += l[4:] + "\n"
		case strings.TrimSpace(l) == "" && indented:
			cur.text += "\n"
		case indented:
			indented = false
			flush()
		}
		prevBlank = strings.TrimSpace(l) == ""
		if m := outputOf.FindStringSubmatch(l); m != nil {
			quotes = m[1]
		} else if !prevBlank {
			quotes = ""
		}
	}
	if cur != nil {
		flush()
	}
	return blocks
}

var commandStart = regexp.MustCompile(`^(cascade |go |[A-Z_]+=\S*\s|zcat |\./)`)

// docCommands returns the shell commands of the blocks: the lines that
// start a command, with continuations joined and comments dropped.
func docCommands(blocks []docBlock) []docCommand {
	var out []docCommand
	for _, b := range blocks {
		if b.outputOf != "" {
			// Run where it stands: a later command may remove what it
			// reads.
			out = append(out, docCommand{at: b.at, text: b.outputOf, quoted: &b})
			continue
		}
		if b.lang != "" && b.lang != "sh" && b.lang != "console" {
			continue
		}
		text := strings.ReplaceAll(b.text, "\\\n", " ")
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(stripComment(l))
			if commandStart.MatchString(l) {
				out = append(out, docCommand{at: b.at, text: strings.Join(strings.Fields(l), " ")})
			}
		}
	}
	return out
}

// stripComment drops a shell comment: a # after a space, outside quotes.
func stripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' '):
			return l[:i]
		}
	}
	return l
}

// shellWords splits a command line as sh does for the words this docs
// use: spaces outside quotes, quotes removed.
func shellWords(s string) []string {
	var (
		words []string
		b     strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, b.String())
	}
	return words
}

// placeholder is a word a synopsis stands in with: PATH, DATASET, URL.
var placeholder = regexp.MustCompile(`(^|[^A-Za-z])(PATH|DATASET|MODEL|FILE|DIR|URL|ADDR|REFERENCE|Q|S|T|D|N|F)(\.\.\.|[^A-Za-z]|$)|\[`)

// TestDocExamples runs every command of README.md and docs/*.md, in the
// order written, in a sandbox holding the bundled testdata/ (a /tmp/ path
// moves into it): each names a command and flags that exist, and each
// that can run here runs and succeeds; docSkips says why the others
// cannot, docLong which run only with CASCADE_LONG=1. A synopsis (PATH,
// DATASET, [--flag]) is checked, not run. The go commands name packages,
// tests and fuzz targets that exist. Every YAML block parses; a scenario
// block is replayed over the bundled HotROD model, and a block of --set
// lines too; the OpenTelemetry Collector's configuration points at
// collect's default address (issue 39: docs/scenario.md named redis where
// the model has redis-manual).
func TestDocExamples(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	sandbox := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(sandbox, "testdata")))
	require.NoError(t, os.MkdirAll(filepath.Join(sandbox, "tmp"), 0o755))
	var blocks []docBlock
	for _, f := range docFiles(t) {
		blocks = append(blocks, docBlocks(t, f)...)
	}
	t.Chdir(sandbox)
	cascadeRun := func(t *testing.T, args ...string) string {
		t.Helper()
		for i, a := range args {
			if strings.HasPrefix(a, "/tmp/") && !strings.HasPrefix(a, sandbox) {
				args[i] = filepath.Join(sandbox, a)
			}
		}
		var out, errb bytes.Buffer
		start := time.Now()
		code := run(args, strings.NewReader(""), &out, &errb)
		t.Logf("%.1fs: cascade %s", time.Since(start).Seconds(), strings.Join(args, " "))
		require.Equal(t, exitOK, code, "cascade %s: %s", strings.Join(args, " "), errb.String())
		return out.String()
	}

	used := map[string]bool{}
	for _, c := range docCommands(blocks) {
		skip := ""
		for k, why := range docSkips {
			if strings.Contains(c.text+"\n", k) {
				skip, used[k] = why, true
			}
		}
		words := shellWords(c.text)
		for len(words) > 0 && strings.Contains(words[0], "=") {
			words = words[1:] // environment
		}
		if len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/cascade" {
			words = append([]string{"cascade"}, words[3:]...)
		}
		if i := slices.IndexFunc(words, func(w string) bool { return w == "|" || w == ">" }); i >= 0 {
			words = words[:i]
		}
		if i := slices.Index(words, "cascade"); i > 0 {
			words = words[i:] // zcat … | cascade …
		}
		t.Run(c.at+" "+c.text, func(t *testing.T) {
			switch {
			case len(words) == 0:
				t.Fatalf("no command in %q", c.text)
			case words[0] == "go":
				checkGoCommand(t, repo, words)
				return
			case words[0] != "cascade":
				if skip == "" {
					t.Fatalf("%q: neither cascade nor go: add it to docSkips with why", c.text)
				}
				t.Skip(skip)
			}
			checkFlags(t, words[1:])
			switch {
			case placeholder.MatchString(strings.Join(words[1:], " ")):
				t.Skip("a synopsis: its command and flags are checked")
			case skip != "":
				t.Skip(skip)
			case slices.ContainsFunc(docLong, func(k string) bool { return strings.Contains(c.text, k) }) && !testutil.LongRun():
				t.Skip("runs for more than a few seconds: " + testutil.LongEnv + "=1 runs it")
			}
			printed := cascadeRun(t, words[1:]...)
			if c.quoted != nil {
				checkQuoted(t, c.text, printed, c.quoted.text)
			}
		})
	}
	for k := range docSkips {
		require.True(t, used[k], "docSkips: %q is in no document any more", k)
	}

	// The YAML blocks, and the blocks of --set lines.
	model := filepath.Join(sandbox, "tmp", "docs-hotrod-model.json")
	cascadeRun(t, "graph", "testdata/hotrod-baseline/traces-otlp.json.gz", "--out", model)
	for i, b := range blocks {
		switch {
		case b.lang == "yaml":
			t.Run(b.at+" yaml", func(t *testing.T) {
				var doc map[string]any
				require.NoError(t, yaml.Unmarshal([]byte(b.text), &doc), b.text)
				switch {
				case doc["exporters"] != nil:
					// An OpenTelemetry Collector configuration.
					require.Contains(t, b.text, "endpoint: http://127.0.0.1:4318", "collect's default --listen")
				default:
					path := filepath.Join(sandbox, fmt.Sprintf("scenario-%d.yaml", i))
					require.NoError(t, os.WriteFile(path, []byte(b.text), 0o644))
					cascadeRun(t, "replay", model, "--scenario", path, "--duration", "2s")
				}
			})
		case strings.HasPrefix(b.text, "--set "):
			t.Run(b.at+" --set", func(t *testing.T) {
				for _, l := range strings.Split(strings.TrimSpace(b.text), "\n") {
					cascadeRun(t, append([]string{"replay", model, "--duration", "2s"}, shellWords(l)...)...)
				}
			})
		}
	}
}

// checkFlags checks that args name a cascade command and flags it has.
func checkFlags(t *testing.T, args []string) {
	t.Helper()
	root := newRootCmd(strings.NewReader(""))
	cmd, _, err := root.Find(args)
	require.NoError(t, err)
	require.NotEqual(t, root, cmd, "%q names no command", args)
	for _, a := range args {
		var f any
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			f = lookupFlag(cmd, name, "")
		case len(a) == 2 && a[0] == '-' && (a[1] >= 'a' && a[1] <= 'z' || a[1] >= 'A' && a[1] <= 'Z'):
			f = lookupFlag(cmd, "", a[1:])
		default:
			continue
		}
		require.NotNil(t, f, "cascade %s has no flag %s", cmd.Name(), a)
	}
}

func lookupFlag(cmd *cobra.Command, name, short string) any {
	if name != "" {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		if f := cmd.InheritedFlags().Lookup(name); f != nil {
			return f
		}
		if name == "help" {
			return name
		}
		return nil
	}
	if f := cmd.Flags().ShorthandLookup(short); f != nil {
		return f
	}
	if short == "h" {
		return short
	}
	return nil
}

// checkGoCommand checks a go command against the repository: the
// packages it names exist, and so do the tests, benchmarks and fuzz
// targets its -run, -bench and -fuzz select.
func checkGoCommand(t *testing.T, repo string, words []string) {
	t.Helper()
	require.GreaterOrEqual(t, len(words), 2)
	require.Contains(t, []string{"test", "build", "install", "run", "vet"}, words[1])
	var pkgs []string
	funcs := map[string]string{} // flag → pattern
	for i := 2; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "./"):
			pkgs = append(pkgs, w)
		case slices.Contains([]string{"-run", "-bench", "-fuzz"}, w) && i+1 < len(words):
			funcs[w] = words[i+1]
			i++
		case slices.Contains([]string{"-o", "-timeout", "-cpu", "-fuzztime", "-ldflags", "-count"}, w):
			i++
		}
	}
	require.NotEmpty(t, pkgs, "no package")
	var sources []string
	for _, p := range pkgs {
		dir := filepath.Join(repo, strings.TrimSuffix(p, "/..."))
		st, err := os.Stat(dir)
		require.NoError(t, err, "package %s", p)
		require.True(t, st.IsDir(), p)
		if !strings.HasSuffix(p, "/...") {
			files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
			require.NoError(t, err)
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				sources = append(sources, string(b))
			}
		}
	}
	for flag, pattern := range funcs {
		if pattern == "XXX" || pattern == "." {
			continue
		}
		prefix := map[string]string{"-run": "Test", "-bench": "Benchmark", "-fuzz": "Fuzz"}[flag]
		re, err := regexp.Compile(pattern)
		require.NoError(t, err)
		var matched []string
		for _, src := range sources {
			for _, m := range regexp.MustCompile(`(?m)^func (`+prefix+`\w*)\(`).FindAllStringSubmatch(src, -1) {
				if re.MatchString(m[1]) {
					matched = append(matched, m[1])
				}
			}
		}
		require.NotEmpty(t, matched, "%s %s matches no %s function in %v", flag, pattern, prefix, pkgs)
		if flag == "-fuzz" {
			// go test will not fuzz when the pattern matches more than one target.
			require.Len(t, matched, 1, "-fuzz %s matches %v in %v: go test fuzzes one target at a time", pattern, matched, pkgs)
		}
	}
}

// checkQuoted fails t unless every line of quoted, an excerpt of what
// cmd printed, is a line of printed (the spaces around it aside: a
// quote may shift a table to the left): figures quoted in the docs are
// today's.
func checkQuoted(t *testing.T, cmd, printed, quoted string) {
	t.Helper()
	lines := map[string]bool{}
	for _, l := range strings.Split(printed, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, l := range strings.Split(quoted, "\n") {
		if l = strings.TrimSpace(l); l != "" && !lines[l] {
			t.Errorf("the docs quote a line %s does not print:\n%s\n(it printed:\n%s)", cmd, l, printed)
		}
	}
}
