package incident

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// envHotRODFix names the directory of TestE2EHotRODFix's kept captures
// (CASCADE_E2E_FIX_OUT in collect): baseline, pool, db and
// both.otlp.json.gz, HotROD live under one closed-loop load with and
// without its --fix-* flags.
const envHotRODFix = "CASCADE_HOTROD_FIX"

// TestHotRODSplice runs the root-cause pass on HotROD, a real system
// none of its constants was chosen on. Each case splices two live
// captures: the spans of run A, then those of run B shifted to start a
// second after A's last span ends, so the capture steps from A's
// configuration to B's at a known time with every span real. Where B
// is slower than A the truth is the service B's flags slowed (mysql:
// its lock and 300 ms queries; frontend: its pool of 3 route workers);
// the reverse splices (B faster) say what the pass makes of a capture
// that only got faster. Each is judged against its first 30 s and
// against A's capture as the reference; the whole captures are also
// judged B against A. It prints the table of docs/validation.md and
// asserts nothing: a measurement.
//
//	CASCADE_HOTROD_FIX=/work/hotrod-fix go test ./incident -run TestHotRODSplice -v
func TestHotRODSplice(t *testing.T) {
	dir := os.Getenv(envHotRODFix)
	if dir == "" {
		t.Skipf("set %s to the directory of TestE2EHotRODFix's kept captures to run it", envHotRODFix)
	}
	read := func(run string) []cascade.Span {
		d := nezhaIngestLogs(t, []string{filepath.Join(dir, run+".otlp.json.gz")}, nil, nil)
		var out []cascade.Span
		require.NoError(t, d.spans(func(s *cascade.Span) error { out = append(out, *s); return nil }))
		return out
	}
	runs := map[string][]cascade.Span{}
	for _, r := range []string{"baseline", "pool", "db", "both"} {
		runs[r] = read(r)
	}
	cfg := DefaultConfig()
	cfg.Slowdown = 0
	cases := []struct{ a, b, truth string }{
		{"db", "baseline", "mysql"},
		{"both", "pool", "mysql"},
		{"both", "db", "frontend"},
		{"pool", "baseline", "frontend"},
		{"baseline", "db", ""},
		{"pool", "both", ""},
		{"db", "both", ""},
		{"baseline", "pool", ""},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| A → B | truth | onset (s) | first 30 s: origins (confidence) | reference A: origins (confidence) | whole B against A |\n|---|---|---|---|---|---|\n")
	for _, c := range cases {
		a, bs := runs[c.a], runs[c.b]
		first, end, start := a[0].Start, int64(0), bs[0].Start
		for _, s := range a {
			first, end = min(first, s.Start), max(end, s.Start+s.Duration)
		}
		for _, s := range bs {
			start = min(start, s.Start)
		}
		off := end + 1e9 - start
		spliced := append([]cascade.Span(nil), a...)
		for _, s := range bs {
			s.Start += off
			spliced = append(spliced, s)
		}
		res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(spliced), nil)
		require.NoError(t, err)
		cell := func(spans []cascade.Span, ref []cascade.Span, m *cascade.Model) string {
			in := Input{Spans: graph.Spans(spans), Model: m}
			if ref != nil {
				in.Reference = graph.Spans(ref)
			}
			inc, err := Investigate(context.Background(), in, cfg)
			require.NoError(t, err)
			if len(inc.Origins) == 0 {
				return "none"
			}
			mark := ""
			if c.truth != "" {
				mark = " ✗"
				if inc.Origins[0] == c.truth {
					mark = " ✓"
				}
			}
			return fmt.Sprintf("%s (%.2f)%s", strings.Join(inc.Origins, ", "), inc.Confidence, mark)
		}
		whole, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(bs), nil)
		require.NoError(t, err)
		truth := c.truth
		if truth == "" {
			truth = "— (B faster)"
		}
		fmt.Fprintf(&b, "| %s → %s | %s | %.0f | %s | %s | %s |\n", c.a, c.b, truth, float64(end+1e9-first)/1e9,
			cell(spliced, nil, res.Model), cell(spliced, a, res.Model), cell(bs, a, whole.Model))
	}
	t.Log(b.String())
}
