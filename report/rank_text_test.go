package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"cascade/internal/numfmt"
	"cascade/internal/testutil"
	"cascade/rank"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		want  []string
	}{
		{"empty", "", 10, []string{""}},
		{"fits", "a b c", 10, []string{"a b c"}},
		{"exactly", "abc def", 7, []string{"abc def"}},
		{"breaks at the space", "abc def", 6, []string{"abc", "def"}},
		{"several lines", "one two three four five", 9, []string{"one two", "three", "four five"}},
		{"a long word stays whole", "see +2.11/s[+2.10/s,+2.12/s] here", 8, []string{"see", "+2.11/s[+2.10/s,+2.12/s]", "here"}},
		{"runes, not bytes", "→→→ ××× ΔΔΔ", 7, []string{"→→→ ×××", "ΔΔΔ"}},
		{"inner double spaces kept", "1. a  2. b", 20, []string{"1. a  2. b"}},
		{"no leading space after a break", "aaaa  bbbb", 5, []string{"aaaa", "bbbb"}},
		{"leading and trailing spaces dropped", "  a  ", 10, []string{"a"}},
		{"a number keeps its unit", "from 200 s for 200 s", 9, []string{"from", "200 s for", "200 s"}},
		{"a unit after a word may break", "a s b", 1, []string{"a", "s", "b"}},
		{"an interval stays whole", "effect +2.11/s, interval [+2.10/s, +2.12/s] ok", 30, []string{"effect +2.11/s, interval", "[+2.10/s, +2.12/s] ok"}},
		{"a long bracket wraps as words", "see [" + strings.Repeat("a ", 30) + "]", 20, []string{"see [a a a a a a a a", "a a a a a a a a a a", "a a a a a a a a a a", "a a ]"}},
		{"an unclosed bracket wraps as words", "x [a b c", 3, []string{"x", "[a", "b c"}},
		{"a short parenthesis stays whole", "report.json (seed 1)", 15, []string{"report.json", "(seed 1)"}},
		{"a group wider than the line wraps as words", "x (a default answer)", 12, []string{"x (a default", "answer)"}},
		{"an edge label wider than the line breaks after its arrow", "- checkoutservice→cartservice: cap", 20,
			[]string{"- checkoutservice→", "cartservice: cap"}},
		{"an edge label that fits stays whole", "x a→b: cap", 6, []string{"x a→b:", "cap"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Wrap(tc.s, tc.width))
		})
	}
}

func TestShortDescription(t *testing.T) {
	tests := []struct{ in, want string }{
		{"frontend→route: batch 10 calls into 1 (batches of 10, route service ×5.5)", "frontend→route: batch 10 calls into 1"},
		{"mysql (bottleneck, 100% busy): 1→2 slots (pool 1→2; a second replica is the same capacity)", "mysql (bottleneck, 100% busy): 1→2 slots"},
		{"mysql: bounded queue of 8 per replica (Little: 3.33/s × 2.48 s (2× p99) = 9 in system − 1 slots)", "mysql: bounded queue of 8 per replica"},
		{"server pool 4→8", "server pool 4→8"},
		{"(all of it in parentheses)", "(all of it in parentheses)"},
		{"db: (patch)", "db: (patch)"},
		{"unbalanced)", "unbalanced)"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, shortDescription(tc.in))
		})
	}
}

// TestRankTextWidth renders the bundled captures' analyses at several
// widths: every line fits, the answer comes first, and every effect's
// interval is printed whole.
func TestRankTextWidth(t *testing.T) {
	for _, name := range []string{"hotrod", "boutique"} {
		a := fixture(t, name)
		doc := &RankDocument{Model: "OUT/calibrated.json", Rank: a.Rank, Incident: a.Incident}
		for _, tc := range []struct{ width, fits int }{{0, DefaultWidth}, {1, MinWidth}, {MinWidth, MinWidth}, {80, 80}, {100, 100}, {160, 160}} {
			t.Run(name+"/"+strconv.Itoa(tc.width), func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, RankText(&buf, doc, TextOptions{Width: tc.width}))
				out := buf.String()
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				for i, l := range lines {
					require.LessOrEqual(t, utf8.RuneCountInString(l), tc.fits, "line %d: %q", i+1, l)
					require.Equal(t, strings.TrimRight(l, " "), l, "line %d ends in spaces", i+1)
				}
				// The answer first: the best change, or where the
				// incident began, and then the best change.
				first, within := "BEST CHANGE", 0
				if incidentLeads(doc) {
					first, within = "INCIDENT", 25
					origin := strings.Index(out, "\norigin        1. ")
					require.Positive(t, origin)
					require.Less(t, strings.Count(out[:origin], "\n"), 5, "the origin within the first 5 lines")
				}
				require.True(t, strings.HasPrefix(lines[0], first), lines[0])
				best := strings.Index(out, "BEST CHANGE")
				require.LessOrEqual(t, strings.Count(out[:best], "\n"), within, "the best change within the first lines")
				for i := range a.Rank.Rows {
					r := &a.Rank.Rows[i]
					if r.Verdict != rank.Failed {
						require.Contains(t, out, objectiveInterval(a.Rank.Objective, r.Objective))
					}
				}
				require.NotContains(t, out, "LOAD", "the capacity sweep is wide only")
			})
		}
	}
}

// TestRankTextGolden pins the compact rendering of the HotROD analysis at
// the default width and the narrowest, and the wide one.
func TestRankTextGolden(t *testing.T) {
	a := fixture(t, "hotrod")
	doc := &RankDocument{Model: "OUT/calibrated.json", Rank: a.Rank, Incident: a.Incident}
	for _, tc := range []struct {
		name string
		o    TextOptions
	}{
		{"text-hotrod-100", TextOptions{}},
		{"text-hotrod-60", TextOptions{Width: MinWidth}},
		{"text-hotrod-wide", TextOptions{Width: MinWidth, Wide: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, RankText(&buf, doc, tc.o))
			testutil.Golden(t, tc.name, buf.Bytes())
		})
	}
	var wide bytes.Buffer
	require.NoError(t, RankText(&wide, doc, TextOptions{Wide: true}))
	require.Contains(t, wide.String(), "Δ1")
	require.Contains(t, wide.String(), "LOAD")
}

func TestTextTableLayouts(t *testing.T) {
	x := strings.Repeat("x", 30)
	tab := &textTable{head: []string{"#", "EFFECT", "TEXT"}}
	tab.add("1", x, "a few words of text, wrapped")
	tab.add("2", x, "")
	tests := []struct {
		name  string
		width int
		want  []string
	}{
		{"tabular", 70, []string{
			"#  EFFECT" + strings.Repeat(" ", 26) + "TEXT",
			"1  " + x + "  a few words of text, wrapped",
			"2  " + x}},
		{"the last column wrapped", 56, []string{
			"#  EFFECT" + strings.Repeat(" ", 26) + "TEXT",
			"1  " + x + "  a few words of text,",
			strings.Repeat(" ", 35) + "wrapped",
			"2  " + x}},
		{"the last column below", 50, []string{
			"#  EFFECT",
			"   TEXT",
			"1  " + x,
			"   a few words of text, wrapped",
			"2  " + x}},
		{"records", 32, []string{
			"#       1",
			"EFFECT  " + x,
			"TEXT    a few words of text,",
			"        wrapped",
			"",
			"#       2",
			"EFFECT  " + x}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tab.write(&buf, tc.width)
			require.Equal(t, strings.Join(tc.want, "\n")+"\n", buf.String())
		})
	}
}

// TestAnswerAlsoAndLoad: the answer gives the best change's other
// measurable effects (HotROD's second mysql slot: goodput, and p50 and
// p99 down by about 600 ms) and where the system runs against its knee.
func TestAnswerAlsoAndLoad(t *testing.T) {
	a := fixture(t, "hotrod")
	var b strings.Builder
	require.NoError(t, RankText(&b, &RankDocument{Rank: a.Rank}, TextOptions{Width: 100}))
	out := b.String()
	require.Regexp(t, `(?m)^also +p50 1\d{3} → 8\d{2} ms \(-6\d\d ms`, out)
	require.Regexp(t, `(?m)^load +the system runs at 3\.\d+/s offered in the baseline replay, against a capacity knee of`, out)
	require.Contains(t, out, "a closed loop")
}

// TestNoJargon: the text a responder reads says "saturated or failing",
// "where a slowdown spreads" and "calls/req", not the model's own words
// for them (issue 39: "infected", "MOST INFECTABLE", "AMPL."); and the
// incident's evidence, origin and confidence in words with units, not
// the pass's metric names, z-scores, "replay fit" or a bare confidence
// (issue 39: "gap_in: normal 2.89 … z 391", "replay fit 0.39",
// "confidence 0.614 of the top two scores; right 4 of 4 at 0 to 0.7").
// Every output is read: the terminal's, --wide, Markdown and HTML.
func TestNoJargon(t *testing.T) {
	jargon := []string{"infected", "INFECTED", "INFECTABLE", "AMPL.", "replay fit", "gap_in", "gap_out",
		"call_latency", "slow_share", "self_time", "error_rate", "z ", "(z ", " Z ", ">z<", "of the top two scores",
		"0 to 0.7", "(1 all, 0 none)", "(1: all, 0: none)", "in ms,"}
	for _, name := range []string{"hotrod", "boutique"} {
		a := fixture(t, name)
		doc := &RankDocument{Rank: a.Rank, Incident: a.Incident}
		outs := map[string]string{}
		for _, o := range []TextOptions{{Width: 100}, {Width: 100, Wide: true}} {
			var b strings.Builder
			require.NoError(t, RankText(&b, doc, o))
			outs[fmt.Sprintf("text wide=%v", o.Wide)] = b.String()
			require.Contains(t, b.String(), "CALLS/REQ")
		}
		var md, html strings.Builder
		require.NoError(t, AnalysisMarkdown(&md, a))
		require.NoError(t, AnalysisHTML(&html, a))
		outs["markdown"], outs["html"] = md.String(), html.String()
		for what, out := range outs {
			if what == "html" {
				// The page's style sheet is no prose: read its body.
				i := strings.Index(out, "<body")
				require.GreaterOrEqual(t, i, 0, name)
				out = out[i:]
			}
			for _, word := range jargon {
				require.NotContains(t, out, word, "%s, %s", name, what)
			}
		}
		if name == "boutique" {
			// The origin's evidence says which figure it gives: the
			// first window out of range, or the median from then on.
			require.Contains(t, outs["markdown"], "network into it: normal 598 ms")
			require.Contains(t, outs["markdown"], "median over")
			require.Contains(t, outs["markdown"], "first window out at")
			require.Contains(t, outs["markdown"], "the first origin holds 74% of the top two origins' scores")
		}
	}
}

// TestOneRateOneFigure: the capacity sweep's base rate reads as the
// traffic's name gives it ("observed rates (Poisson 1.62/s)", not 1.619
// in one place and 1.62 in the other; issue 39 item 4).
func TestOneRateOneFigure(t *testing.T) {
	for _, name := range []string{"hotrod", "boutique"} {
		a := fixture(t, name)
		c := a.Rank.Capacity
		require.NotNil(t, c, name)
		var b strings.Builder
		require.NoError(t, RankText(&b, &RankDocument{Rank: a.Rank}, TextOptions{Width: 100}))
		want := fmt.Sprintf("Poisson sweep of %s/s", numfmt.Brief(numfmt.Round3(c.BaseRatePerSec)))
		require.Contains(t, b.String(), want, name)
		for _, r := range a.Rank.Regimes {
			if strings.HasPrefix(r.Name, "observed rates (Poisson ") {
				require.Contains(t, r.Name, strings.TrimPrefix(want, "Poisson sweep of "), name)
			}
		}
	}
}
