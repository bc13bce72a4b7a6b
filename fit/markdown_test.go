package fit_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
	"cascade/internal/testutil"
)

// markdownReports are reports that between them have every section of
// the text output: the HotROD fit of testdata/cli-hotrod-small.golden
// with overload bases and notes added (pipes in cells among them), and
// the same fit calibrated, without plane, moves or back-tests, and with
// a regression that had nothing to fit.
func markdownReports(t *testing.T) map[string]*fit.Report {
	b, err := os.ReadFile("testdata/cli-hotrod-small.golden")
	require.NoError(t, err)
	var full, bare fit.Report
	require.NoError(t, json.Unmarshal(b, &full))
	require.NoError(t, json.Unmarshal(b, &bare))
	full.Base = []fit.BaseChange{{Node: "redis|manual", From: 0.2, To: 0.05, Share: 0.25}, {Node: "route", From: 0.1, To: 0.01, Share: 0.1}}
	full.Notes = []string{"queue depth read from queue|depth", "a second note"}
	full.Moved[0].Steps = -3

	bare.Plane, bare.Moved, bare.Holdout, bare.HoldoutNodes, bare.Warnings = nil, nil, nil, nil, nil
	bare.Calibrated.Held, bare.Calibrated.Kept = nil, ""
	bare.Logistic = &fit.Logistic{Calls: 10, Note: "no call failed"}
	return map[string]*fit.Report{"full": &full, "bare": &bare}
}

// TestWriteMarkdown: the Markdown report has a heading for each section
// of the text report, whole tables (as many unescaped pipes in every
// row as in its header), and every word and number of the text report,
// formatted the same way.
func TestWriteMarkdown(t *testing.T) {
	for name, r := range markdownReports(t) {
		t.Run(name, func(t *testing.T) {
			var text, md bytes.Buffer
			require.NoError(t, fit.WriteTable(&text, r))
			require.NoError(t, fit.WriteMarkdown(&md, r))
			out := md.String()
			tables := testutil.MarkdownTables(t, out)

			headings := []string{"# Fit report\n", "\n## Windows\n", "\n## Loss surface\n",
				"\n## In sample: the calibrated model (all windows)\n", "\n## Logistic regression of call failure: "}
			wantTables := 3 // windows, surface, in sample
			if len(r.Moved) > 0 {
				headings = append(headings, "\n## Moved from the model's values\n")
				wantTables++
			}
			if len(r.Base) > 0 {
				headings = append(headings, "\n## Overload bases\n")
			}
			if len(r.Holdout) > 0 {
				headings = append(headings, "\n## Back-test: each window held out, fitted without it\n", "\n### Back-test: the held-out windows predicted\n")
				wantTables += 2
			}
			if len(r.Logistic.Coefficients) > 0 {
				wantTables++
			}
			for _, h := range headings {
				require.Contains(t, out, h)
			}
			require.Equal(t, wantTables, tables)
			require.Contains(t, out, "| NODE | REQUESTS | SIM CALLS |")

			lower := strings.ToLower(out)
			for _, word := range strings.Fields(text.String()) {
				word = strings.ReplaceAll(strings.Trim(word, ",:;()"), "|", `\|`)
				require.Contains(t, lower, strings.ToLower(word), "the text report's %q", word)
			}
		})
	}
}
