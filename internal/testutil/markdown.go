package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// MarkdownTables fails t unless every table of the Markdown text md is
// whole (see CheckMarkdownTables), and returns how many tables md holds.
func MarkdownTables(t testing.TB, md string) int {
	t.Helper()
	n, err := CheckMarkdownTables(md)
	if err != nil {
		t.Fatalf("%v\n%s", err, md)
	}
	return n
}

// CheckMarkdownTables checks every table of the Markdown text md (a run
// of lines that start with "|") and returns how many there are: a table
// is a header row, the separator row (|---|, optionally aligned) and
// rows with as many unescaped pipes as the header, so that no cell's "|"
// splits it; the line after it is blank (a line of text there would read
// as one more row).
func CheckMarkdownTables(md string) (int, error) {
	lines := strings.Split(md, "\n")
	tables := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		tables++
		head := Pipes(lines[i])
		if i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			return tables, fmt.Errorf("line %d: a table's header %q is not followed by its |---| separator", i+1, lines[i])
		}
		if p := Pipes(lines[i+1]); p != head {
			return tables, fmt.Errorf("line %d: the separator has %d pipes, its header %d", i+2, p, head)
		}
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			if p := Pipes(lines[j]); p != head {
				return tables, fmt.Errorf("line %d: %d unescaped pipes, its header %d: %q", j+1, p, head, lines[j])
			}
		}
		if j < len(lines) && lines[j] != "" {
			return tables, fmt.Errorf("line %d: %q follows a table without a blank line", j+1, lines[j])
		}
		i = j
	}
	return tables, nil
}

// Pipes counts the pipes of a Markdown table line that are not escaped
// ("\|" is a pipe in a cell).
func Pipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			n++
		}
	}
	return n
}

// isSeparator reports whether line is a table's separator row: cells of
// dashes, each optionally with a colon at either end.
func isSeparator(line string) bool {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for _, c := range cells {
		c = strings.Trim(strings.TrimSpace(c), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return strings.HasPrefix(line, "|")
}
