// Package mdtable turns the tab-separated text that commands write
// through text/tabwriter into Markdown, so that one function renders a
// table both ways: write the same cells to a Writer instead of a
// tabwriter.Writer, and Flush.
//
// The text is read in blocks separated by blank lines. A block whose first
// line is upper case ("NODE\tREQUESTS") is a table with that line as its
// header; any other block is a list of labelled lines ("spans\t12" becomes
// "- **spans**: 12"). Cells are trimmed, "|" is escaped, and a row is
// padded or cut to its header's width.
package mdtable

import (
	"bytes"
	"io"
	"strings"
)

// Writer buffers tab-separated text and writes it as Markdown on Flush.
// It is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	buf bytes.Buffer
}

// NewWriter returns a Writer that writes Markdown to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write buffers p; nothing reaches the underlying writer before Flush.
func (m *Writer) Write(p []byte) (int, error) { return m.buf.Write(p) }

// Flush writes what was buffered as Markdown and empties the buffer.
func (m *Writer) Flush() error {
	text := strings.TrimRight(m.buf.String(), "\n")
	m.buf.Reset()
	if text == "" {
		return nil
	}
	var out strings.Builder
	for i, block := range splitBlocks(text) {
		if i > 0 {
			out.WriteString("\n")
		}
		writeBlock(&out, block)
	}
	_, err := io.WriteString(m.w, out.String())
	return err
}

// splitBlocks splits text into blocks of non-blank lines.
func splitBlocks(text string) [][]string {
	var blocks [][]string
	var cur []string
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				blocks = append(blocks, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks
}

// cells splits a line at tabs, trims each cell, drops trailing empty
// cells and escapes the pipes Markdown tables split on.
func cells(line string) []string {
	cs := strings.Split(line, "\t")
	for i, c := range cs {
		cs[i] = Escape(strings.TrimSpace(c))
	}
	for len(cs) > 0 && cs[len(cs)-1] == "" {
		cs = cs[:len(cs)-1]
	}
	return cs
}

// isHeader reports whether a line's ASCII letters are all upper case, with
// at least one ("λW" stands in a header as a symbol).
func isHeader(line string) bool {
	letters := 0
	for _, r := range line {
		switch {
		case r >= 'a' && r <= 'z':
			return false
		case r >= 'A' && r <= 'Z':
			letters++
		}
	}
	return letters > 0
}

func writeBlock(out *strings.Builder, lines []string) {
	if !isHeader(lines[0]) || !strings.Contains(lines[0], "\t") {
		for _, line := range lines {
			cs := cells(line)
			switch len(cs) {
			case 0:
				continue
			case 1:
				out.WriteString("- " + cs[0] + "\n")
			default:
				out.WriteString("- **" + cs[0] + "**: " + strings.Join(nonEmpty(cs[1:]), " ") + "\n")
			}
		}
		return
	}
	head := cells(lines[0])
	row := func(cs []string) {
		out.WriteString("|")
		for i := range head {
			c := ""
			if i < len(cs) {
				c = cs[i]
			}
			out.WriteString(" " + c + " |")
		}
		out.WriteString("\n")
	}
	row(head)
	out.WriteString("|" + strings.Repeat("---|", len(head)) + "\n")
	for _, line := range lines[1:] {
		row(cells(line))
	}
}

func nonEmpty(cs []string) []string {
	out := cs[:0:0]
	for _, c := range cs {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// Escape escapes the pipes of s as a cell's are, so that text beside the
// tables (a heading, a paragraph) reads the same.
func Escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
