package ingest

import (
	"bytes"
	"errors"
)

// otlpStreamAt is the size from which the spans of one OTLP JSON
// resourceSpans element are decoded in batches instead of whole. pdata
// builds about 1.5 KB of objects a span, and the element's text is held
// twice besides (read, then wrapped for pdata): a trace of a million spans
// of one service, one element of 480 MB, took 2.9 GB whole. A batch of
// 4 MB holds some 8,000 spans.
const otlpStreamAt = 4 << 20

// walk consumes resourceSpans element pos.index, whose first byte is next,
// as skipValue would, with the scanner keeping it from sc.keep on. An
// element that grows past j.streamAt before its resource has been read in
// full, or that is not laid out as exporters write it (resource, then
// scopeSpans; within a scope, spans), is left kept whole for the caller
// (streamed false). Past j.streamAt, once its resource is known, walk
// decodes the spans read so far as one document (the element cut after
// the last span read) and every further span in batches of about
// j.streamAt bytes, each a document of its own with the element's
// resource, and returns streamed true. A batch pdata rejects is one
// invalid record, placed at its first span.
func (j *otlpJSON) walk(pos recordPos) (streamed bool, err error) {
	sc := j.sc
	if c, _ := sc.peek(); c != '{' {
		return false, sc.skipValue()
	}
	w := elementWalk{j: j, pos: pos, open: []byte{'{'}}
	sc.pos++
	err = w.object(func(key string) (bool, error) {
		switch key {
		case "resource":
			return true, w.resource()
		case "scopeSpans", "scope_spans":
			if c, _ := sc.peek(); c == '[' {
				return true, w.scopes()
			}
		}
		return false, nil
	})
	if err == errSurprise {
		err = w.finish()
	}
	return w.streaming, err
}

// errSurprise is walk's signal that the element is not laid out as it
// expects; the element is then skipped to its end and decoded as before.
var errSurprise = errors.New("unexpected layout")

// walkStop carries out of walk the error of a decoded piece (the sink's
// verdict on an invalid record, or its own failure), to be returned as it
// is rather than as a syntax error of the element.
type walkStop struct{ err error }

func (e *walkStop) Error() string { return e.err.Error() }

// stop wraps a decoded piece's error in walkStop; nil stays nil.
func stop(err error) error {
	if err == nil {
		return nil
	}
	return &walkStop{err}
}

// elementWalk is the state of walk over one element.
type elementWalk struct {
	j   *otlpJSON
	pos recordPos
	// open holds the brackets open from the element's own '{' on.
	open []byte
	// resource is the element's resource member, as read; nil until it
	// has been read whole.
	resource_ []byte
	// streaming is set once the element's first spans were decoded; from
	// then on, sc.keep is set only while a batch is read.
	streaming bool
	// scope and span index the scope and span being read; batch is the
	// position of a batch's first span, its span index in batch.span.
	scope, span int
	batch       recordPos
	// end is the input offset just after the last span read.
	end int64
}

// object walks the members of the object whose '{' was consumed (and
// pushed on open), calling member with each name, the ':' consumed;
// member returns false to have the value skipped.
func (w *elementWalk) object(member func(string) (bool, error)) error {
	sc := w.j.sc
	c, ok := sc.peek()
	if !ok {
		return errUnexpectedEnd
	}
	if c == '}' {
		sc.pos++
		w.open = w.open[:len(w.open)-1]
		return nil
	}
	for {
		if c, _ := sc.peek(); c != '"' {
			return errSurprise
		}
		key, err := w.name()
		if err != nil {
			return err
		}
		c, ok := sc.peek()
		if !ok {
			return errUnexpectedEnd
		}
		if c != ':' {
			return errSurprise
		}
		sc.pos++
		if _, ok := sc.peek(); !ok {
			return errUnexpectedEnd
		}
		done, err := member(key)
		if err != nil {
			return err
		}
		if !done {
			if err := sc.skipValue(); err != nil {
				return err
			}
		}
		c, ok = sc.peek()
		switch {
		case !ok:
			return errUnexpectedEnd
		case c == ',':
			sc.pos++
		case c == '}':
			sc.pos++
			w.open = w.open[:len(w.open)-1]
			return nil
		default:
			return errSurprise
		}
	}
}

// array walks the values of the array whose '[' was consumed (and pushed
// on open), calling value before each, the scanner at its first byte.
func (w *elementWalk) array(value func() error) error {
	sc := w.j.sc
	c, ok := sc.peek()
	if !ok {
		return errUnexpectedEnd
	}
	if c == ']' {
		sc.pos++
		w.open = w.open[:len(w.open)-1]
		return nil
	}
	for {
		if err := value(); err != nil {
			return err
		}
		c, ok := sc.peek()
		switch {
		case !ok:
			return errUnexpectedEnd
		case c == ',':
			sc.pos++
			if _, ok := sc.peek(); !ok {
				return errUnexpectedEnd
			}
		case c == ']':
			sc.pos++
			w.open = w.open[:len(w.open)-1]
			return nil
		default:
			return errSurprise
		}
	}
}

// name reads a member name without disturbing what the scanner keeps:
// the element from its start, or a batch.
func (w *elementWalk) name() (string, error) {
	sc := w.j.sc
	if sc.keep < 0 {
		over := sc.oversize
		name, err := sc.readString()
		sc.oversize = over
		return name, err
	}
	start := sc.base + int64(sc.pos)
	if err := sc.skipValue(); err != nil {
		return "", err
	}
	if sc.keep < 0 {
		return "", nil // the element went over the limit: it is reported so
	}
	return sc.unquote(sc.buf[start-sc.base : sc.pos])
}

// resource reads the element's resource member, keeping a copy of it
// while the element is kept whole.
func (w *elementWalk) resource() error {
	sc := w.j.sc
	start := sc.base + int64(sc.pos)
	if err := sc.skipValue(); err != nil {
		return err
	}
	if sc.keep >= 0 && !w.streaming {
		w.resource_ = bytes.Clone(sc.buf[start-sc.base : sc.pos])
	}
	return nil
}

// scopes walks the scopeSpans array, whose '[' is next.
func (w *elementWalk) scopes() error {
	sc := w.j.sc
	sc.pos++
	w.open = append(w.open, '[')
	return w.array(func() error {
		defer func() { w.scope++ }()
		if c, _ := sc.peek(); c != '{' {
			return sc.skipValue()
		}
		sc.pos++
		w.open = append(w.open, '{')
		return w.object(func(key string) (bool, error) {
			if c, _ := sc.peek(); key != "spans" || c != '[' {
				return false, nil
			}
			return true, w.spans()
		})
	})
}

// spans walks a scope's spans array, whose '[' is next, decoding its spans
// in batches once the element is streamed.
func (w *elementWalk) spans() error {
	sc := w.j.sc
	sc.pos++
	w.open = append(w.open, '[')
	w.span = 0
	err := w.array(func() error {
		if w.streaming && sc.keep < 0 {
			sc.keep, sc.oversize = sc.pos, false
			w.batch = sc.here()
			w.batch.index, w.batch.scope, w.batch.span = w.pos.index, w.scope, w.span
		}
		if err := sc.skipValue(); err != nil {
			return err
		}
		w.span++
		w.end = sc.base + int64(sc.pos)
		if w.streaming && sc.oversize {
			// One span past the limit: the batch is lost.
			return w.flush()
		}
		if sc.keep < 0 || sc.pos-sc.keep < w.j.streamAt {
			return nil
		}
		if w.streaming {
			return w.flush()
		}
		if w.resource_ == nil || sc.oversize {
			return nil
		}
		// The element so far, cut after this span: its spans array, its
		// scope, its scopeSpans array and itself closed.
		w.streaming = true
		elem := append(sc.buf[sc.keep:sc.pos:sc.pos], "]}]}"...)
		sc.keep = -1
		return stop(w.j.element(elem, w.pos))
	})
	if err == nil && w.streaming {
		err = w.flush()
	}
	return err
}

// flush decodes the batch of spans being kept, if any, as a document with
// the element's resource.
func (w *elementWalk) flush() error {
	sc := w.j.sc
	if sc.oversize {
		sc.keep, sc.oversize = -1, false
		return stop(w.j.d.invalid(w.batch, w.j.d.spanPath(w.pos.index, w.batch.scope, w.batch.span),
			errorf(ErrSyntax, "spans larger than %s", byteSize(sc.limit))))
	}
	if sc.keep < 0 {
		return nil
	}
	defer func() { sc.keep = -1 }()
	j := w.j
	j.wrap = append(j.wrap[:0], `{"resourceSpans":[{"resource":`...)
	j.wrap = append(j.wrap, w.resource_...)
	j.wrap = append(j.wrap, `,"scopeSpans":[{"spans":[`...)
	j.wrap = append(j.wrap, sc.buf[sc.keep:w.end-sc.base]...)
	j.wrap = append(j.wrap, `]}]}]}`...)
	td, err := j.un.UnmarshalTraces(j.wrap)
	if err != nil {
		return stop(j.d.invalid(w.batch, j.d.spanPath(w.pos.index, w.batch.scope, w.batch.span),
			errorf(ErrSyntax, "%s (in the %d spans from here)", pdataJSONError(err), w.span-w.batch.span)))
	}
	rss := td.ResourceSpans()
	for k := range rss.Len() {
		if err := j.d.resourceSpans(rss.At(k), w.batch); err != nil {
			return stop(err)
		}
	}
	return nil
}

// finish skips the rest of an element walk found laid out otherwise. An
// element not yet streamed is then kept whole, for pdata to read or
// reject as before; the rest of one streamed is one invalid record.
func (w *elementWalk) finish() error {
	sc := w.j.sc
	at := sc.here()
	at.index = w.pos.index
	if err := sc.skipIn(w.open); err != nil {
		return err
	}
	if !w.streaming {
		return nil
	}
	sc.keep = -1
	return stop(w.j.d.invalid(at, w.j.d.elementPath(w.pos.index),
		errorf(ErrSyntax, "element malformed after its first spans were read")))
}
