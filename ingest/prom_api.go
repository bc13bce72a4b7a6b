package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"cascade"
)

// noteNoMetricName is the inference note for Prometheus API results
// without __name__ (the answers to rate(), sum() and other expressions).
const noteNoMetricName = "metric name: not in result, taken from file name"

// decodePromAPI decodes an answer of the Prometheus HTTP API to query or
// query_range: {"status": "success", "data": {"resultType": ..., "result":
// ...}}.
//
// A matrix gives one sample per [time, "value"] pair of each series, a
// vector one per series, a scalar one; native histogram points give the
// histogram's _count and _sum. A string result is ErrUnsupported, and an
// answer with status "error" a *ParseError carrying the API's message.
// The result array is read one series at a time.
//
// Times are seconds as JSON numbers and become Unix nanoseconds exactly
// (the digits are converted, not a float64). Values are strings that may
// spell NaN, +Inf or -Inf. The metric name is __name__; when a result has
// none (an expression's value), the input's file name without extensions
// stands in for it. Service and instance come from the labels as for the
// text format.
func decodePromAPI(name string, r io.Reader, s sink, opts *Options) error {
	d := &promAPIDecoder{
		name:       name,
		fileMetric: fileMetricName(name),
		s:          s,
		kinds:      newKindLookup(opts.MetricKinds),
		dec:        json.NewDecoder(r),
	}
	d.dec.UseNumber()
	return d.run()
}

// promAPIDecoder holds the state of one decodePromAPI call.
type promAPIDecoder struct {
	name       string
	s          sink
	kinds      *kindLookup
	dec        *json.Decoder
	fileMetric string // stands in for a missing __name__
	resultType string
	gotResult  bool
	labels     []promLabel    // scratch
	sample     cascade.Sample // scratch
}

// run reads the top-level object.
func (d *promAPIDecoder) run() error {
	if err := d.delim('{', ""); err != nil {
		if errors.Is(err, io.EOF) {
			return d.fatal("", errorf(ErrMissingField, "empty input"))
		}
		return err
	}
	var status, errType, errMsg string
	gotData := false
	for d.dec.More() {
		key, err := d.key("")
		if err != nil {
			return err
		}
		switch key {
		case "status":
			status, err = d.str(key)
		case "errorType":
			errType, err = d.str(key)
		case "error":
			errMsg, err = d.str(key)
		case "data":
			if status == "error" {
				err = d.skip(key)
				break
			}
			gotData = true
			err = d.data()
		default:
			err = d.skip(key)
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.syntax("", err)
	}
	switch {
	case status == "error":
		msg := errMsg
		if errType != "" {
			msg = errType + ": " + errMsg
		}
		return d.fatal("", errorf(ErrUnsupported, "query failed: %s", msg))
	case status != "" && status != "success":
		return d.fatal("status", errorf(ErrBadValue, "status %q", status))
	case !gotData:
		return d.fatal("data", errorf(ErrMissingField, "no data"))
	case !d.gotResult:
		return d.fatal("data.result", errorf(ErrMissingField, "no result"))
	}
	return nil
}

// data reads the data object. The result is streamed when resultType came
// first (as Prometheus writes it) and buffered otherwise.
func (d *promAPIDecoder) data() error {
	if err := d.delim('{', "data"); err != nil {
		return err
	}
	var pending json.RawMessage
	pendingOff := int64(0)
	for d.dec.More() {
		key, err := d.key("data")
		if err != nil {
			return err
		}
		switch key {
		case "resultType":
			d.resultType, err = d.str("data.resultType")
		case "result":
			d.gotResult = true
			if d.resultType == "" {
				pendingOff = d.dec.InputOffset()
				if err := d.dec.Decode(&pending); err != nil {
					return d.syntax("data.result", err)
				}
				break
			}
			err = d.result(d.dec, 0)
		default:
			err = d.skip("data." + key)
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return d.syntax("data", err)
	}
	if pending != nil {
		sub := json.NewDecoder(bytes.NewReader(pending))
		sub.UseNumber()
		return d.result(sub, pendingOff)
	}
	return nil
}

// result reads the result value from dec, whose offsets start at base in
// the input.
func (d *promAPIDecoder) result(dec *json.Decoder, base int64) error {
	const path = "data.result"
	switch d.resultType {
	case "matrix", "vector":
	case "scalar":
		off := base + valueOffset(dec)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return d.syntaxAt(path, off, err)
		}
		t, v, err := parsePromPoint(string(raw))
		if err != nil {
			return d.s.invalid(&ParseError{Offset: off, Path: path, Err: err})
		}
		d.bareValue(string(raw))
		return d.emit(t, d.fileMetric, false, nil, v)
	case "string":
		return d.fatal(path, errorf(ErrUnsupported, "result type string"))
	default:
		return d.fatal("data.resultType", errorf(ErrUnsupported, "result type %q", d.resultType))
	}
	tok, err := dec.Token()
	if err != nil {
		return d.syntaxAt(path, base+dec.InputOffset(), err)
	}
	if tok == nil {
		return nil // "result": null, no series
	}
	if dl, ok := tok.(json.Delim); !ok || dl != '[' {
		return d.fatal(path, errorf(ErrSyntax, "want an array, got %v", tok))
	}
	for i := 0; dec.More(); i++ {
		off := base + valueOffset(dec)
		var ser promAPISeries
		if err := dec.Decode(&ser); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				// The value was read whole; only this series is bad.
				perr := &ParseError{Offset: off, Path: fmt.Sprintf("%s[%d]", path, i), Err: errorf(ErrSyntax, "%v", err)}
				if err := d.s.invalid(perr); err != nil {
					return err
				}
				continue
			}
			return d.syntaxAt(fmt.Sprintf("%s[%d]", path, i), off, err)
		}
		if err := d.series(&ser, i, off); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return d.syntaxAt(path, base+dec.InputOffset(), err)
	}
	return nil
}

// promAPISeries is one element of a matrix or vector result. The points
// stay raw and are parsed one by one, so that one bad point does not lose
// the series.
type promAPISeries struct {
	Metric     map[string]string `json:"metric"`
	Values     json.RawMessage   `json:"values"`     // matrix: [[t, "v"], ...]
	Value      json.RawMessage   `json:"value"`      // vector: [t, "v"]
	Histograms json.RawMessage   `json:"histograms"` // matrix of native histograms
	Histogram  json.RawMessage   `json:"histogram"`  // vector of a native histogram
}

// series sends the points of one series.
func (d *promAPIDecoder) series(ser *promAPISeries, i int, off int64) error {
	metric, named := ser.Metric["__name__"], true
	if metric == "" {
		metric, named = d.fileMetric, false
	}
	labels := d.labels[:0]
	for k, v := range ser.Metric {
		if k != "__name__" {
			labels = append(labels, promLabel{k, v})
		}
	}
	d.labels = labels
	ls := newPromLabelSet(labels, true)
	path := fmt.Sprintf("data.result[%d]", i)
	bad := func(sub string, j int, err error) error {
		p := path + "." + sub
		if j >= 0 {
			p = fmt.Sprintf("%s[%d]", p, j)
		}
		return d.s.invalid(&ParseError{Offset: off, Path: p, Err: err})
	}
	point := func(sub string, j int, raw string) error {
		t, v, err := parsePromPoint(raw)
		if err != nil {
			return bad(sub, j, err)
		}
		d.bareValue(raw)
		return d.emit(t, metric, named, &ls, v)
	}
	hist := func(sub string, j int, raw string) error {
		t, h, err := parsePromHistogramPoint(raw)
		if err != nil {
			return bad(sub, j, err)
		}
		if h.bare {
			d.s.warn(warnPromNumber)
		}
		if err := d.emit(t, metric+"_count", named, &ls, h.count); err != nil {
			return err
		}
		return d.emit(t, metric+"_sum", named, &ls, h.sum)
	}
	for _, f := range []struct {
		sub  string
		raw  json.RawMessage
		each bool
		fn   func(string, int, string) error
	}{
		{"values", ser.Values, true, point},
		{"value", ser.Value, false, point},
		{"histograms", ser.Histograms, true, hist},
		{"histogram", ser.Histogram, false, hist},
	} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		// One string per array: the points are substrings of it.
		raw := string(f.raw)
		if !f.each {
			if err := f.fn(f.sub, -1, raw); err != nil {
				return err
			}
			continue
		}
		var stop error
		err := eachJSONElement(raw, func(j int, elem string) error {
			stop = f.fn(f.sub, j, elem)
			return stop
		})
		if stop != nil {
			return stop
		}
		if err != nil {
			if err := bad(f.sub, -1, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// emit sends one sample; named is false when the metric name stands in
// for a missing __name__, and ls may be nil (a scalar).
func (d *promAPIDecoder) emit(t int64, metric string, named bool, ls *promLabelSet, v float64) error {
	d.sample = cascade.Sample{Time: t, Metric: metric, Kind: d.kinds.kind(metric), Value: v}
	if ls != nil {
		d.sample.Service, d.sample.Instance, d.sample.Labels = ls.service, ls.instance, ls.text("", "")
	}
	if d.sample.Service == "" {
		d.s.infer(noteNoServiceLabel)
	}
	if !named {
		d.s.infer(noteNoMetricName)
	}
	return d.s.sample(&d.sample)
}

// fileMetricName is the metric name that stands in for a missing
// __name__: the input's base name without compression and format
// extensions ("mean_latency_by_endpoint" for
// .../mean_latency_by_endpoint.json.gz), or "query_result" for stdin.
func fileMetricName(name string) string {
	base := filepath.Base(name)
	for _, ext := range []string{".gz", ".zst", ".zstd"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if base == "" || base == "-" || base == "." {
		return "query_result"
	}
	return base
}

// Helpers for the token walk. Errors name the path being read.

// valueOffset returns the input offset of the next value dec reads:
// InputOffset stops before the separator and white space that precede
// it, so they are skipped in dec's buffer.
func valueOffset(dec *json.Decoder) int64 {
	off := dec.InputOffset()
	var buf [64]byte
	n, _ := dec.Buffered().Read(buf[:])
	for _, c := range buf[:n] {
		if c != ',' && c != ':' && !isJSONSpace(c) {
			break
		}
		off++
	}
	return off
}

// delim reads the token that must be the delimiter want.
func (d *promAPIDecoder) delim(want json.Delim, path string) error {
	off := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) && path == "" {
			return io.EOF
		}
		return d.syntaxAt(path, off, err)
	}
	if dl, ok := tok.(json.Delim); !ok || dl != want {
		return &ParseError{Offset: off, Path: path, Err: errorf(ErrSyntax, "want %v, got %v", want, tok)}
	}
	return nil
}

// key reads an object key.
func (d *promAPIDecoder) key(path string) (string, error) {
	off := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.syntaxAt(path, off, err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", &ParseError{Offset: off, Path: path, Err: errorf(ErrSyntax, "want a key, got %v", tok)}
	}
	return k, nil
}

// str reads a string value (null reads as "").
func (d *promAPIDecoder) str(path string) (string, error) {
	off := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.syntaxAt(path, off, err)
	}
	switch v := tok.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	case json.Delim:
		return "", &ParseError{Offset: off, Path: path, Err: errorf(ErrSyntax, "want a string, got %v", v)}
	}
	return "", &ParseError{Offset: off, Path: path, Err: errorf(ErrSyntax, "want a string, got %v", tok)}
}

// skip reads and drops one value.
func (d *promAPIDecoder) skip(path string) error {
	off := d.dec.InputOffset()
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return d.syntaxAt(path, off, err)
	}
	return nil
}

// syntax wraps a JSON read error at the decoder's position.
func (d *promAPIDecoder) syntax(path string, err error) error {
	return d.syntaxAt(path, d.dec.InputOffset(), err)
}

// syntaxAt wraps a JSON read error. Errors of the underlying reader pass
// through; JSON errors become a *ParseError (ErrSyntax).
func (d *promAPIDecoder) syntaxAt(path string, off int64, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		err = errors.New("unexpected end of input")
	default:
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return fmt.Errorf("read %s: %w", d.name, err)
		}
	}
	return &ParseError{Offset: off, Path: path, Err: errorf(ErrSyntax, "%v", err)}
}

// fatal builds the error that ends decoding.
func (d *promAPIDecoder) fatal(path string, err error) error {
	return &ParseError{Path: path, Err: err}
}
