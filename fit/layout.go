package fit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"cascade/internal/mdtable"
)

// WriteMarkdown writes the report of WriteTable as Markdown: a heading
// for each section, its tables as Markdown tables and its labelled
// lines as a list, with the same numbers formatted the same way.
func WriteMarkdown(w io.Writer, r *Report) error {
	if _, err := io.WriteString(w, "# Fit report\n"); err != nil {
		return err
	}
	return writeReport(&mdLayout{w: w, started: true}, r)
}

// layout is what the section writers write to, so that one code path
// writes the report both ways: text, aligned by text/tabwriter
// (WriteTable), or Markdown (WriteMarkdown).
type layout interface {
	// heading starts a section: in text a blank line, then caption
	// when it is not empty; in Markdown a heading of the level's depth
	// reading title.
	heading(level int, title, caption string)
	// table returns the writer of one table of tab-separated cells,
	// header already written (in Markdown in upper case, which is what
	// starts a table there); flags are text/tabwriter's. A table that
	// does not start with an upper-case header line is a list of
	// labelled lines in Markdown ("label\tvalue" is "- **label**: value").
	table(flags uint, header string) tableWriter
	// para writes a line of prose: in Markdown a paragraph.
	para(line string)
	// list writes lines: in Markdown a list, one item a line.
	list(lines []string)
}

// tableWriter is a tabwriter.Writer or, for Markdown, an mdtable.Writer.
type tableWriter interface {
	io.Writer
	Flush() error
}

// textLayout lays out the report as WriteTable prints it.
type textLayout struct{ w io.Writer }

func (t textLayout) heading(_ int, _, caption string) {
	fmt.Fprintln(t.w)
	if caption != "" {
		fmt.Fprintln(t.w, caption)
	}
}

func (t textLayout) table(flags uint, header string) tableWriter {
	tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', flags)
	if header != "" {
		fmt.Fprintln(tw, header)
	}
	return tw
}

func (t textLayout) para(line string) { fmt.Fprintln(t.w, line) }

func (t textLayout) list(lines []string) {
	for _, l := range lines {
		fmt.Fprintln(t.w, l)
	}
}

// mdLayout lays out the report as Markdown: blocks (headings, tables,
// paragraphs, lists) separated by blank lines, "|" escaped throughout.
type mdLayout struct {
	w io.Writer
	// started is set once a block was written: the next is set apart
	// from it by a blank line.
	started bool
}

// block separates the block about to be written from the one before.
func (m *mdLayout) block() {
	if m.started {
		fmt.Fprintln(m.w)
	}
	m.started = true
}

func (m *mdLayout) heading(level int, title, _ string) {
	m.block()
	fmt.Fprintf(m.w, "%s %s\n", strings.Repeat("#", level), mdtable.Escape(title))
}

func (m *mdLayout) table(_ uint, header string) tableWriter {
	t := &mdTable{Writer: mdtable.NewWriter(m.w), m: m}
	if header != "" {
		fmt.Fprintln(t, strings.ToUpper(header))
	}
	return t
}

func (m *mdLayout) para(line string) {
	m.block()
	fmt.Fprintln(m.w, mdtable.Escape(line))
}

func (m *mdLayout) list(lines []string) {
	if len(lines) == 0 {
		return
	}
	m.block()
	for _, l := range lines {
		fmt.Fprintf(m.w, "- %s\n", mdtable.Escape(l))
	}
}

// mdTable is a table of the Markdown layout: an mdtable.Writer set
// apart from the block before it.
type mdTable struct {
	*mdtable.Writer
	m *mdLayout
}

func (t *mdTable) Flush() error {
	t.m.block()
	return t.Writer.Flush()
}
