package graph

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteTableWidth writes the tables of WriteTable fitted to width
// columns, as analyze fits its own: a table wider than that is split
// into several, each led by its first column (the node or edge it
// describes), and a labelled line's text wraps beside its label. A width
// of 0 or less fits nothing: WriteTable.
func WriteTableWidth(w io.Writer, res *Result, width int) error {
	if width <= 0 {
		return WriteTable(w, res)
	}
	return writeTable(&fitWriter{w: w, width: width}, res)
}

// fitWriter is a tableWriter that lays out tab-separated cells as
// tabwriter does (columns two spaces apart, a line's last cell unpadded),
// fitted to width.
type fitWriter struct {
	w     io.Writer
	width int
	buf   bytes.Buffer
}

func (f *fitWriter) Write(p []byte) (int, error) { return f.buf.Write(p) }

// Flush lays out what was written: each run of lines with cells is a
// table of its own, as in tabwriter.
func (f *fitWriter) Flush() error {
	text := strings.TrimSuffix(f.buf.String(), "\n")
	f.buf.Reset()
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		if !strings.Contains(lines[i], "\t") {
			out.WriteString(lines[i] + "\n")
			i++
			continue
		}
		j := i
		var rows [][]string
		for ; j < len(lines) && strings.Contains(lines[j], "\t"); j++ {
			rows = append(rows, strings.Split(lines[j], "\t"))
		}
		fitBlock(&out, rows, f.width)
		i = j
	}
	_, err := io.WriteString(f.w, out.String())
	return err
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// fitBlock writes rows within width: whole when they fit; a two-column
// block with its second column wrapped beside the first; else as several
// tables of the columns that fit side by side, each with the first.
func fitBlock(out *strings.Builder, rows [][]string, width int) {
	ncol := 0
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	widths := make([]int, ncol)
	for _, r := range rows {
		for k, c := range r {
			widths[k] = max(widths[k], runeLen(c))
		}
	}
	total := 0
	for _, n := range widths {
		total += n + 2
	}
	switch {
	case total-2 <= width || ncol < 2:
		writeColumns(out, rows, widths, allColumns(ncol), width, false)
	case ncol == 2:
		writeColumns(out, rows, widths, allColumns(ncol), width, true)
	default:
		groups := [][]int{}
		cur, used := []int{0}, widths[0]
		for k := 1; k < ncol; k++ {
			if len(cur) > 1 && used+2+widths[k] > width {
				groups = append(groups, cur)
				cur, used = []int{0}, widths[0]
			}
			cur = append(cur, k)
			used += 2 + widths[k]
		}
		groups = append(groups, cur)
		for i, g := range groups {
			if i > 0 {
				out.WriteString("\n")
			}
			writeColumns(out, rows, widths, g, width, len(g) == 2)
		}
	}
}

func allColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// writeColumns writes the columns cols of rows, padded to widths but the
// last; with wrap, the last wraps at spaces beside the others.
func writeColumns(out *strings.Builder, rows [][]string, widths []int, cols []int, width int, wrap bool) {
	lead := 0
	for _, k := range cols[:len(cols)-1] {
		lead += widths[k] + 2
	}
	for _, r := range rows {
		var b strings.Builder
		for _, k := range cols[:len(cols)-1] {
			c := cell(r, k)
			b.WriteString(c + strings.Repeat(" ", widths[k]+2-runeLen(c)))
		}
		last := cell(r, cols[len(cols)-1])
		if !wrap {
			out.WriteString(strings.TrimRight(b.String()+last, " ") + "\n")
			continue
		}
		for j, line := range wrapWords(last, max(width-lead, 20)) {
			if j == 0 {
				out.WriteString(strings.TrimRight(b.String()+line, " ") + "\n")
			} else {
				out.WriteString(strings.Repeat(" ", lead) + line + "\n")
			}
		}
	}
}

func cell(r []string, k int) string {
	if k < len(r) {
		return r[k]
	}
	return ""
}

// wrapWords breaks s at spaces into lines of at most width runes; a word
// longer than width has a line of its own.
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case runeLen(line)+1+runeLen(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}
