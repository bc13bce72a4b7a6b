package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Terminal widths of the compact text rendering, in columns (runes).
const (
	// DefaultWidth is the width used when none is given: the width of
	// output that is not a terminal, so that it is the same everywhere.
	DefaultWidth = 100
	// MinWidth is the narrowest width rendered: a narrower one is
	// widened to it.
	MinWidth = 60
)

// minWrapColumn is the narrowest last column a compact table wraps its
// text into; below it the table is written as one record per row.
const minWrapColumn = 20

// TextOptions shape the table (text) rendering of a rank document.
type TextOptions struct {
	// Width is the number of columns the compact rendering fits in;
	// zero means DefaultWidth, and below MinWidth it is MinWidth.
	Width int
	// Wide writes the full tables (every regime's effect, the cost and
	// mechanism of every change, the capacity sweep, every node) as they
	// come, however wide; Width is then ignored.
	Wide bool
}

func (o TextOptions) width() int {
	switch {
	case o.Width == 0:
		return DefaultWidth
	case o.Width < MinWidth:
		return MinWidth
	}
	return o.Width
}

// runes is the width of s in columns: one per rune.
func runes(s string) int { return utf8.RuneCountInString(s) }

// Wrap breaks s at spaces into lines of at most width runes. A word
// longer than width stands alone on its line, unbroken: numbers and names
// are never cut, a number keeps its unit ("200 s"), and an interval or
// a short parenthesis stays whole ("[+2.10/s, +2.12/s]", "(seed 1)").
// Runs of spaces inside a line are kept.
func Wrap(s string, width int) []string {
	var (
		lines []string
		line  strings.Builder
		n     int // runes in line
	)
	var words []string
	breakAfter := map[int]bool{} // a piece of a word too wide, ending its line
	for _, word := range wrapWords(s) {
		if runes(word) <= width {
			words = append(words, word)
			continue
		}
		for _, w := range strings.Split(word, " ") { // a group too wide: its words
			// A word still too wide (a long edge label, "a→b:") breaks
			// after its arrows.
			for runes(w) > width && strings.Contains(w, "→") {
				i := strings.Index(w, "→") + len("→")
				breakAfter[len(words)] = true
				words = append(words, w[:i])
				w = w[i:]
			}
			words = append(words, w)
		}
	}
	for i, word := range words {
		if i > 0 && breakAfter[i-1] && n > 0 {
			lines = append(lines, strings.TrimRight(line.String(), " "))
			line.Reset()
			n = 0
		}
		wn := runes(word)
		switch {
		case n == 0 && wn == 0:
			continue // no leading spaces on a line
		case n == 0:
			line.WriteString(word)
			n = wn
		case n+1+wn <= width:
			line.WriteByte(' ')
			line.WriteString(word)
			n += 1 + wn
		case wn == 0:
			continue // a space at the break is dropped
		default:
			lines = append(lines, strings.TrimRight(line.String(), " "))
			line.Reset()
			line.WriteString(word)
			n = wn
		}
	}
	if n > 0 || len(lines) == 0 {
		lines = append(lines, strings.TrimRight(line.String(), " "))
	}
	return lines
}

// maxGroup is the longest interval or parenthesis, in runes, that Wrap
// keeps whole.
const maxGroup = 40

// units are the words Wrap keeps on the line of the number before them.
var units = map[string]bool{"s": true, "ms": true, "µs": true, "pp": true, "%": true, "nodes": true}

// wrapWords splits s at spaces into the words Wrap places: a unit joins
// the number before it, and an interval in brackets or a short
// parenthesis is one word.
func wrapWords(s string) []string {
	var out []string
	open := -1 // index in out of an unclosed "[", or -1
	for _, w := range strings.Split(s, " ") {
		last := len(out) - 1
		switch {
		case open >= 0 && runes(out[open])+1+runes(w) <= maxGroup:
			out[open] += " " + w
			if strings.ContainsAny(w, "])") {
				open = -1
			}
			continue
		case open >= 0:
			// Too long to be an interval: let it wrap as words.
			out = append(out[:open], strings.Split(out[open], " ")...)
			open = -1
			last = len(out) - 1
		}
		if last >= 0 && units[w] && out[last] != "" && isDigit(out[last][len(out[last])-1]) {
			out[last] += " " + w
			continue
		}
		out = append(out, w)
		if strings.HasPrefix(w, "[") && !strings.Contains(w, "]") || strings.HasPrefix(w, "(") && !strings.Contains(w, ")") {
			open = len(out) - 1
		}
	}
	if open >= 0 {
		out = append(out[:open], strings.Split(out[open], " ")...)
	}
	return out
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// pad right-pads s with spaces to n runes.
func pad(s string, n int) string {
	if k := n - runes(s); k > 0 {
		return s + strings.Repeat(" ", k)
	}
	return s
}

// kvBlock is a section of labelled lines: the labels in a column, each
// value wrapped beside its label with a hanging indent.
type kvBlock struct {
	keys, vals []string
}

// add appends a line; an empty key continues the label above.
func (b *kvBlock) add(key, format string, args ...any) {
	b.keys = append(b.keys, key)
	b.vals = append(b.vals, fmt.Sprintf(format, args...))
}

func (b *kvBlock) write(w io.Writer, width int) {
	kw := 0
	for _, k := range b.keys {
		kw = max(kw, runes(k))
	}
	kw += 2
	indent := strings.Repeat(" ", kw)
	for i, k := range b.keys {
		for j, line := range Wrap(b.vals[i], max(width-kw, minWrapColumn)) {
			if j == 0 {
				fmt.Fprintln(w, strings.TrimRight(pad(k, kw)+line, " "))
			} else {
				fmt.Fprintf(w, "%s%s\n", indent, line)
			}
		}
	}
}

// textTable is a compact table: its columns are as wide as their widest
// cell, but the last, whose text wraps into the columns the others leave.
// When they leave fewer than minWrapColumn, the last column's text goes
// on the lines below its row, indented by the first column; when the
// other columns do not fit at all, each row is written as a record of
// labelled lines.
type textTable struct {
	head []string
	rows [][]string
}

func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *textTable) write(w io.Writer, width int) {
	last := len(t.head) - 1
	widths := make([]int, last)
	lastNat := runes(t.head[last])
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i := range last {
			widths[i] = max(widths[i], runes(r[i]))
		}
		lastNat = max(lastNat, runes(r[last]))
	}
	fixed := 0
	for _, n := range widths {
		fixed += n + 2
	}
	avail := width - fixed
	stacked := lastNat > avail && avail < minWrapColumn
	if stacked && (fixed-2 > width || width-widths[0]-2 < minWrapColumn) {
		t.writeRecords(w, width)
		return
	}
	indent := strings.Repeat(" ", fixed)
	if stacked {
		indent = strings.Repeat(" ", widths[0]+2)
		avail = width - widths[0] - 2
	}
	for _, r := range append([][]string{t.head}, t.rows...) {
		var b strings.Builder
		for i := range last {
			b.WriteString(pad(r[i], widths[i]+2))
		}
		for j, line := range Wrap(r[last], avail) {
			switch {
			case stacked && j == 0:
				fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
				fallthrough
			case stacked || j > 0:
				if line != "" {
					fmt.Fprintf(w, "%s%s\n", indent, line)
				}
			default:
				fmt.Fprintln(w, strings.TrimRight(b.String()+line, " "))
			}
		}
	}
}

// writeRecords writes each row as labelled lines, rows apart.
func (t *textTable) writeRecords(w io.Writer, width int) {
	for i, r := range t.rows {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var b kvBlock
		for j, h := range t.head {
			if r[j] != "" {
				b.add(h, "%s", r[j])
			}
		}
		b.write(w, width)
	}
}
