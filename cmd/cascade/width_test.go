package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"cascade/report"
)

// TestTextWidth picks the width from $COLUMNS and the terminal, and
// renders the bundled HotROD analysis (the report package's fixture) at
// it: every line fits, and the widest comes near the width, so the width
// given is the width used.
func TestTextWidth(t *testing.T) {
	data, err := os.ReadFile("../../report/testdata/analysis-hotrod.json")
	require.NoError(t, err)
	var a report.Analysis
	require.NoError(t, json.Unmarshal(data, &a))
	doc := &report.RankDocument{Model: "OUT/calibrated.json", Rank: a.Rank, Incident: a.Incident}
	size := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	tests := []struct {
		name     string
		terminal bool
		columns  string
		size     func() (int, error)
		want     int
	}{
		{name: "not a terminal: COLUMNS is ignored", columns: "150", size: size(150, nil), want: 100},
		{name: "not a terminal, no COLUMNS", want: 100},
		{name: "COLUMNS on a terminal", terminal: true, columns: "150", size: size(90, nil), want: 150},
		{name: "COLUMNS 80", terminal: true, columns: "80", want: 80},
		{name: "COLUMNS with spaces", terminal: true, columns: " 120 ", want: 120},
		{name: "COLUMNS below the minimum", terminal: true, columns: "40", want: 60},
		{name: "no COLUMNS: the terminal's size", terminal: true, size: size(132, nil), want: 132},
		{name: "a narrow terminal", terminal: true, size: size(20, nil), want: 60},
		{name: "COLUMNS not a number: the terminal's size", terminal: true, columns: "wide", size: size(90, nil), want: 90},
		{name: "COLUMNS zero, no size", terminal: true, columns: "0", size: size(0, errors.New("not a tty")), want: 100},
		{name: "no COLUMNS, no size", terminal: true, want: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := textWidth(tc.terminal, tc.columns, tc.size)
			require.Equal(t, tc.want, w)
			var buf bytes.Buffer
			require.NoError(t, report.RankText(&buf, doc, report.TextOptions{Width: w}))
			widest := 0
			for i, l := range strings.Split(buf.String(), "\n") {
				n := utf8.RuneCountInString(l)
				require.LessOrEqual(t, n, w, "line %d: %q", i+1, l)
				widest = max(widest, n)
			}
			require.Greater(t, widest, w-10, "the width is used")
		})
	}
}

func TestOutputWidthOffTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "150")
	var buf bytes.Buffer
	require.Equal(t, report.DefaultWidth, outputWidth(&buf))
	f, err := os.Create(t.TempDir() + "/out.txt")
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, report.DefaultWidth, outputWidth(f), "a file is no terminal")
}

// TestGraphTableWidth: cascade graph's table fits report.DefaultWidth
// off a terminal, as analyze's does (issue 39: 294 columns), and its
// Markdown keeps whole rows.
func TestGraphTableWidth(t *testing.T) {
	code, stdout, stderr := runCLI(t, "graph", hotrodOTLP)
	require.Equal(t, exitOK, code, stderr)
	for i, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(l), report.DefaultWidth, "line %d: %q", i+1, l)
	}
	require.Contains(t, stdout, "\nNODE ")
	require.Contains(t, stdout, "\nEDGE ")
	code, stdout, stderr = runCLI(t, "graph", hotrodOTLP, "-o", "markdown")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "| NODE | REQUESTS |")
}
