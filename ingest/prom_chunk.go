package ingest

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/prometheus/common/expfmt"
)

// promChunkMax is the size past which a Prometheus text chunk is cut at
// the next sample line, so that memory stays bounded by it even for one
// huge metric family.
const promChunkMax = 1 << 20

// promChunk is the part of the input parsed at once: one metric family
// (or a run of uncommented samples), as text.
type promChunk struct {
	buf       []byte   // the chunk's lines, each ending in '\n'
	firstLine int      // input line of the first line after the synthetic ones
	offset    int64    // input offset of that line
	synthetic int      // leading lines copied from an earlier chunk (a TYPE line)
	samples   bool     // a sample line has been added
	family    string   // family named by the chunk's HELP/TYPE lines
	help, typ bool     // the chunk has a HELP / TYPE line for family
	typeLine  []byte   // the TYPE line of family, to carry over on a cut
	typeAt    int      // 1-based line of buf holding typeLine, 0 for none
	order     []string // names in order of first appearance (consecutive duplicates dropped)
	lineOffs  []int64  // input offset of each line of buf (synthetic ones: the chunk's)
	keys      map[string]bool
	lastKey   []byte // family key of the last line (see promFamilyKey)

	scratch     []byte  // spare buffer for rest
	offsScratch []int64 // spare buffer for rest
}

// line1 takes one input line (with its '\n', if any) and adds it to the
// current chunk, first sending the chunk when the line starts a new one.
func (d *promTextDecoder) line1(raw []byte) error {
	lineNo, off := d.line, d.offset
	d.line++
	d.offset += int64(len(raw))
	text := bytes.TrimRight(raw, "\r\n")
	t := bytes.TrimLeft(text, " \t")
	c := &d.chunk
	if len(t) > 0 && t[0] == '#' {
		kw, name := promCommentFields(t[1:])
		switch kw {
		case "EOF":
			if err := d.flush(); err != nil {
				return err
			}
			d.startChunk(lineNo+1, off+int64(len(raw)), false)
			return nil
		case "HELP", "TYPE":
			if name == "" {
				break
			}
			again := (kw == "HELP" && c.help) || (kw == "TYPE" && c.typ)
			if len(c.buf) > c.syntheticLen() && (name != c.family || again) {
				if err := d.flush(); err != nil {
					return err
				}
				d.startChunk(lineNo, off, false)
			}
			if name != c.family {
				c.family, c.help, c.typ, c.typeLine, c.typeAt = name, false, false, c.typeLine[:0], 0
			}
			if kw == "HELP" {
				c.help = true
			} else {
				c.typ = true
				c.typeLine = append(append(c.typeLine[:0], text...), '\n')
				c.typeAt = len(c.lineOffs) + 1 // the line is appended below
			}
			c.note([]byte(name))
			c.noteKey([]byte(name))
		}
	} else if len(t) > 0 {
		name := promSampleName(t)
		key := promFamilyKey(name)
		switch {
		case len(c.buf) >= promChunkMax:
			if err := d.flush(); err != nil {
				return err
			}
			d.startChunk(lineNo, off, true)
		case len(key) > 0 && !bytes.Equal(key, c.lastKey) && c.keys[string(key)]:
			// A family seen earlier in the chunk comes again: the next
			// scrape of a stream without HELP and TYPE lines.
			if err := d.flush(); err != nil {
				return err
			}
			d.startChunk(lineNo, off, false)
		}
		c.samples = true
		if len(name) > 0 {
			c.note(name)
			c.noteKey(key)
		}
	}
	if len(c.buf) == 0 && c.synthetic == 0 {
		c.firstLine, c.offset = lineNo, off
	}
	c.buf = append(append(c.buf, text...), '\n')
	c.lineOffs = append(c.lineOffs, off)
	return nil
}

// syntheticLen is the length of the chunk's leading synthetic lines.
func (c *promChunk) syntheticLen() int {
	if c.synthetic == 0 {
		return 0
	}
	return len(c.typeLine)
}

// note records a name in order of appearance.
func (c *promChunk) note(name []byte) {
	if n := len(c.order); n > 0 && c.order[n-1] == string(name) {
		return
	}
	c.order = append(c.order, string(name))
}

// noteKey records the family key of a line (see promFamilyKey).
func (c *promChunk) noteKey(key []byte) {
	if bytes.Equal(key, c.lastKey) {
		return
	}
	c.lastKey = append(c.lastKey[:0], key...)
	if c.keys == nil {
		c.keys = make(map[string]bool)
	}
	c.keys[string(key)] = true
}

// promSampleName returns the metric name a sample line starts with; nil
// for a name in braces ({"my.metric"} 1).
func promSampleName(t []byte) []byte {
	if i := bytes.IndexAny(t, "{ \t"); i >= 0 {
		return t[:i]
	}
	return t
}

// promFamilyKey is a sample name without a _bucket, _sum, _count or
// _total suffix: the lines of one histogram, summary or counter family
// share it.
func promFamilyKey(name []byte) []byte {
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total"} {
		if len(name) > len(suf) && bytes.HasSuffix(name, []byte(suf)) {
			return name[:len(name)-len(suf)]
		}
	}
	return name
}

// startChunk empties the chunk for one starting at the given input line.
// With carry, the family's TYPE line (and HELP/TYPE state) is kept and
// the TYPE line becomes a synthetic first line.
func (d *promTextDecoder) startChunk(line int, off int64, carry bool) {
	c := &d.chunk
	c.buf = c.buf[:0]
	c.order = c.order[:0]
	c.lineOffs = c.lineOffs[:0]
	c.firstLine, c.offset = line, off
	c.synthetic = 0
	c.samples = false
	clear(c.keys)
	c.lastKey = c.lastKey[:0]
	c.typeAt = 0
	if carry && len(c.typeLine) > 0 {
		c.buf = append(c.buf, c.typeLine...)
		c.lineOffs = append(c.lineOffs, off)
		c.synthetic, c.typeAt = 1, 1
		c.note([]byte(c.family))
		c.noteKey([]byte(c.family))
		return
	}
	if !carry {
		c.family, c.help, c.typ = "", false, false
		c.typeLine = c.typeLine[:0]
	}
}

// promCommentFields returns the keyword and the name of a comment line
// (the text after '#'): "HELP", "foo" for "# HELP foo ...".
func promCommentFields(b []byte) (kw, name string) {
	next := func() []byte {
		b = bytes.TrimLeft(b, " \t")
		i := bytes.IndexAny(b, " \t")
		if i < 0 {
			i = len(b)
		}
		tok := b[:i]
		b = b[i:]
		return tok
	}
	k := next()
	switch string(k) {
	case "HELP", "TYPE":
		return string(k), string(next())
	case "EOF":
		return "EOF", ""
	}
	return "", ""
}

// flush parses the current chunk and sends its samples. When the parser
// rejects a line, the line is reported, the lines before it are parsed and
// sent, and parsing goes on with the lines after it (behind the family's
// TYPE line, when that came before the bad line), so that each bad line
// costs one extra parse of what precedes it. The chunk is left as it was
// or as its remainder; startChunk empties it.
func (d *promTextDecoder) flush() error {
	c := &d.chunk
	for len(c.buf) > c.syntheticLen() {
		fams, err := d.parser.TextToMetricFamilies(bytes.NewReader(c.buf))
		if err == nil {
			return d.emitChunk(fams)
		}
		var pe expfmt.ParseError
		if !errors.As(err, &pe) {
			return d.s.invalid(&ParseError{Line: c.firstLine, Offset: c.offset, Err: errorf(ErrSyntax, "%v", err)})
		}
		start, end, ok := c.lineSpan(pe.Line)
		if pe.Line <= c.synthetic || pe.Line > len(c.lineOffs) || !ok {
			// The fault is not on a line of this chunk's own: give
			// the chunk up.
			return d.s.invalid(&ParseError{Line: c.firstLine, Offset: c.offset, Err: errorf(ErrSyntax, "%s", pe.Msg)})
		}
		perr := &ParseError{Line: c.firstLine + pe.Line - 1 - c.synthetic, Offset: c.lineOffs[pe.Line-1], Err: errorf(ErrSyntax, "%s", pe.Msg)}
		if err := d.s.invalid(perr); err != nil {
			return err
		}
		if start > c.syntheticLen() {
			fams, err := d.parser.TextToMetricFamilies(bytes.NewReader(c.buf[:start]))
			if err != nil {
				// The parser accepted these lines before it reached the
				// bad one; should it not now, they are lost with it.
				err = d.s.invalid(&ParseError{Line: c.firstLine, Offset: c.offset, Err: errorf(ErrSyntax, "%v", err)})
			} else {
				err = d.emitChunk(fams)
			}
			if err != nil {
				return err
			}
		}
		c.rest(pe.Line, end)
	}
	return nil
}

// rest makes the chunk the lines after its line n, which ends at byte
// end: behind the family's TYPE line when that came before line n.
func (c *promChunk) rest(n, end int) {
	carry := c.typeAt > 0 && c.typeAt < n
	firstLine := c.firstLine + n - c.synthetic
	offset := c.offset
	if n < len(c.lineOffs) {
		offset = c.lineOffs[n]
	}
	c.scratch = c.scratch[:0]
	c.offsScratch = c.offsScratch[:0]
	c.synthetic, c.typeAt = 0, 0
	if carry {
		c.scratch = append(c.scratch, c.typeLine...)
		c.offsScratch = append(c.offsScratch, offset)
		c.synthetic, c.typeAt = 1, 1
	}
	if end+1 < len(c.buf) {
		c.scratch = append(c.scratch, c.buf[end+1:]...)
		c.offsScratch = append(c.offsScratch, c.lineOffs[n:]...)
	}
	c.buf, c.scratch = c.scratch, c.buf
	c.lineOffs, c.offsScratch = c.offsScratch, c.lineOffs
	c.firstLine, c.offset = firstLine, offset
}

// lineSpan returns the bounds of the chunk's 1-based line n without its
// '\n'; ok is false when there is no such line or it is already blank.
func (c *promChunk) lineSpan(n int) (start, end int, ok bool) {
	if n < 1 {
		return 0, 0, false
	}
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(c.buf[start:], '\n')
		if j < 0 {
			return 0, 0, false
		}
		start += j + 1
	}
	j := bytes.IndexByte(c.buf[start:], '\n')
	if j < 0 {
		return 0, 0, false
	}
	end = start + j
	return start, end, end > start
}

// findTimestamp returns the input line and offset of the chunk's first
// sample line that ends in timestamp ms, or the chunk's own position.
func (c *promChunk) findTimestamp(ms int64) (int, int64) {
	start := 0
	for i := 0; start < len(c.buf); i++ {
		end := bytes.IndexByte(c.buf[start:], '\n')
		if end < 0 {
			break
		}
		l := c.buf[start : start+end]
		start += end + 1
		if i < c.synthetic || i >= len(c.lineOffs) {
			continue
		}
		f := bytes.Fields(l)
		if len(f) < 3 || f[0][0] == '#' {
			continue
		}
		if v, err := strconv.ParseInt(string(f[len(f)-1]), 10, 64); err == nil && v == ms {
			return c.firstLine + i - c.synthetic, c.lineOffs[i]
		}
	}
	return c.firstLine, c.offset
}
