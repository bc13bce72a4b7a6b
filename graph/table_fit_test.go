package graph_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"cascade/graph"
)

// TestWriteTableWidth: the graph's tables fit the width asked, as
// analyze's do (issue 39: a 294-column table), and lose no cell: every
// line of the unfitted table's cells is still there, each row's first
// cell leading every piece of it.
func TestWriteTableWidth(t *testing.T) {
	res := build(t, hotrodDataset(t, "otlp"), graph.LevelService)
	var full bytes.Buffer
	require.NoError(t, graph.WriteTable(&full, res))
	widest := 0
	for _, l := range strings.Split(full.String(), "\n") {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	require.Greater(t, widest, 200, "the fixture's table is wide: the test would prove nothing")
	for _, tc := range []struct {
		name  string
		width int
		fits  int
	}{
		{"no width: as wide as it comes", 0, widest},
		{"a terminal's 80", 80, 80},
		{"the default 100", 100, 100},
		{"a narrow 60", 60, 60},
		{"wide enough for all", 400, widest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, graph.WriteTableWidth(&b, res, tc.width))
			out := b.String()
			for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				require.LessOrEqual(t, utf8.RuneCountInString(l), tc.fits, "line %d: %q", i+1, l)
				require.Equal(t, strings.TrimRight(l, " "), l, "line %d ends in spaces", i+1)
			}
			for _, f := range strings.Fields(full.String()) {
				require.Contains(t, out, f)
			}
			// Each piece of the node table names its nodes.
			require.Equal(t, strings.Count(out, "\nNODE "), strings.Count(out, "\nmysql "))
		})
	}
}
