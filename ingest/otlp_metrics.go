package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"cascade"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Notes and warnings of the OTLP metrics decoders.
const (
	noteOTLPNoService = "service: resource has no service.name, left empty"
	noteOTLPNoTime    = "time: OTLP point has no time_unix_nano, stored as 0"
	warnOTLPNoValue   = "OTLP point without a recorded value skipped"
	warnOTLPNoType    = "OTLP metric without data skipped"
)

// decodeOTLPMetricsJSON decodes OTLP metrics JSON: one MetricsData or
// ExportMetricsServiceRequest object per file (pretty-printed or not,
// several may follow each other), or JSON Lines of them as the
// OpenTelemetry Collector's file exporter writes them. When the first
// non-blank line is a whole JSON value the input is read line by line, so
// a bad line is reported with its number and skipped; otherwise the input
// is read whole and split into its JSON values.
//
// Each record is unmarshalled by pdata (pmetric.JSONUnmarshaler) and its
// data points sent as otlpMetricsDecoder.metrics describes.
func decodeOTLPMetricsJSON(name string, r io.Reader, s sink, opts *Options) error {
	d := newOTLPMetricsDecoder(s, opts)
	u := &pmetric.JSONUnmarshaler{}
	return eachOTLPJSONRecord(name, r, func(rec []byte, line int, off int64) error {
		md, err := unmarshalOTLPMetrics(u, rec)
		if err != nil {
			return s.invalid(&ParseError{Line: line, Offset: off, Err: errorf(ErrSyntax, "%v", err)})
		}
		d.line, d.offset = line, off
		return d.metrics(md)
	})
}

// decodeOTLPMetricsProto decodes a binary ExportMetricsServiceRequest
// (MetricsData has the same encoding), or the file exporter's proto
// format: messages each preceded by its length as a 4-byte big-endian
// integer, told apart by the first byte (0 for a length under 16 MiB,
// 0x0a for the first field of a message).
func decodeOTLPMetricsProto(name string, r io.Reader, s sink, opts *Options) error {
	buf, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	d := newOTLPMetricsDecoder(s, opts)
	u := &pmetric.ProtoUnmarshaler{}
	one := func(rec []byte, off int64) error {
		md, err := unmarshalOTLPMetrics(u, rec)
		if err != nil {
			return s.invalid(&ParseError{Offset: off, Err: errorf(ErrSyntax, "%v", err)})
		}
		d.line, d.offset = 0, off
		return d.metrics(md)
	}
	if len(buf) == 0 {
		return nil
	}
	return eachFrame(buf, one)
}

// metricsUnmarshaler is pmetric's JSON or proto unmarshaler.
type metricsUnmarshaler interface {
	UnmarshalMetrics(buf []byte) (pmetric.Metrics, error)
}

// unmarshalOTLPMetrics runs a pdata unmarshaler and turns a panic inside
// it into an error: the input is untrusted and decoders never panic.
func unmarshalOTLPMetrics(u metricsUnmarshaler, rec []byte) (md pmetric.Metrics, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("pdata: %v", p)
		}
	}()
	return u.UnmarshalMetrics(rec)
}

// eachOTLPJSONRecord calls fn with each JSON record of r (see
// decodeOTLPMetricsJSON), its 1-based line and its byte offset.
func eachOTLPJSONRecord(name string, r io.Reader, fn func(rec []byte, line int, off int64) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		line int
		buf  []byte
	)
	// next reads one line (with its '\n') into buf.
	next := func() error {
		buf = buf[:0]
		for {
			chunk, err := br.ReadSlice('\n')
			buf = append(buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return err
		}
	}
	var err error
	var head []byte // the lines read before the mode is known
	for {
		err = next()
		if len(buf) > 0 {
			line++
			if t := trimJSONSpace(buf); len(t) > 0 {
				if json.Valid(t) {
					break // JSON Lines
				}
				head = append(head, buf...)
				rest, rerr := io.ReadAll(br)
				if rerr != nil {
					return fmt.Errorf("read %s: %w", name, rerr)
				}
				return eachJSONValue(append(head, rest...), fn)
			}
			head = append(head, buf...)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
	// JSON Lines: one record a line; blank lines are skipped.
	off := int64(len(head))
	for {
		if t := trimJSONSpace(buf); len(t) > 0 {
			if ferr := fn(t, line, off); ferr != nil {
				return ferr
			}
		}
		off += int64(len(buf))
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		err = next()
		if len(buf) > 0 {
			line++
		}
	}
}

// eachJSONValue calls fn with each JSON value in b, the whole input. A
// syntax error ends the input: its position is reported as a *ParseError.
func eachJSONValue(b []byte, fn func(rec []byte, line int, off int64) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	lineAt := func(off int64) int {
		if off > int64(len(b)) {
			off = int64(len(b))
		}
		return 1 + bytes.Count(b[:off], []byte{'\n'})
	}
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = se.Offset
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				off, err = int64(len(b)), errors.New("unexpected end of input")
			}
			return &ParseError{Line: lineAt(off), Offset: off, Err: errorf(ErrSyntax, "%v", err)}
		}
		end := dec.InputOffset()
		start := end - int64(len(raw))
		if err := fn(raw, lineAt(start), start); err != nil {
			return err
		}
	}
}

// otlpMetricsDecoder turns pdata metrics into samples.
type otlpMetricsDecoder struct {
	s      sink
	kinds  *kindLookup
	line   int   // line of the current record, 0 when unknown
	offset int64 // offset of the current record
	labels []promLabel
	sample cascade.Sample

	// The resource and data point being read.
	service, instance string
	metric            string
	path              func() string
}

// newOTLPMetricsDecoder returns a decoder sending to s.
func newOTLPMetricsDecoder(s sink, opts *Options) *otlpMetricsDecoder {
	return &otlpMetricsDecoder{s: s, kinds: newKindLookup(opts.MetricKinds)}
}

// metrics sends every data point of one record:
//
//   - gauges and sums: one sample per point;
//   - histograms: one sample per bucket, named metric_bucket with label
//     le (the explicit bound, +Inf for the last), counts made cumulative
//     as Prometheus exposes them; then metric_sum (when recorded) and
//     metric_count;
//   - exponential histograms: metric_sum (when recorded) and
//     metric_count;
//   - summaries: one sample per quantile (label quantile), then
//     metric_sum and metric_count.
//
// Metric names are spelled as OTLP spells them (http.server.request.duration).
// Time is the point's time_unix_nano; Labels are the point's attributes;
// Service is the resource's service.name, Instance its
// service.instance.id, else host.name (as for spans). Points flagged
// no_recorded_value are skipped.
func (d *otlpMetricsDecoder) metrics(md pmetric.Metrics) error {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		attrs := rm.Resource().Attributes()
		d.service = ""
		if v, ok := attrs.Get("service.name"); ok {
			d.service = v.AsString()
		}
		d.instance = instanceFrom(func(k string) (string, bool) {
			v, ok := attrs.Get(k)
			if !ok {
				return "", false
			}
			return v.AsString(), true
		})
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				d.path = func() string {
					return fmt.Sprintf("resourceMetrics[%d].scopeMetrics[%d].metrics[%d]", i, j, k)
				}
				if err := d.metric1(ms.At(k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// metric1 sends the points of one metric.
func (d *otlpMetricsDecoder) metric1(m pmetric.Metric) error {
	d.metric = m.Name()
	if d.metric == "" {
		return d.bad(-1, errorf(ErrMissingField, "metric without a name"))
	}
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return d.numbers(m.Gauge().DataPoints())
	case pmetric.MetricTypeSum:
		return d.numbers(m.Sum().DataPoints())
	case pmetric.MetricTypeHistogram:
		pts := m.Histogram().DataPoints()
		for p := 0; p < pts.Len(); p++ {
			if err := d.histogram(p, pts.At(p)); err != nil {
				return err
			}
		}
	case pmetric.MetricTypeExponentialHistogram:
		pts := m.ExponentialHistogram().DataPoints()
		for p := 0; p < pts.Len(); p++ {
			dp := pts.At(p)
			t, ls, ok, err := d.point(p, dp.Timestamp(), dp.Attributes(), dp.Flags())
			if !ok {
				return err
			}
			if dp.HasSum() {
				if err := d.emit(t, d.metric+"_sum", &ls, "", "", dp.Sum()); err != nil {
					return err
				}
			}
			if err := d.emit(t, d.metric+"_count", &ls, "", "", float64(dp.Count())); err != nil {
				return err
			}
		}
	case pmetric.MetricTypeSummary:
		pts := m.Summary().DataPoints()
		for p := 0; p < pts.Len(); p++ {
			dp := pts.At(p)
			t, ls, ok, err := d.point(p, dp.Timestamp(), dp.Attributes(), dp.Flags())
			if !ok {
				return err
			}
			qs := dp.QuantileValues()
			for q := 0; q < qs.Len(); q++ {
				qv := qs.At(q)
				if err := d.emit(t, d.metric, &ls, "quantile", promFloat(qv.Quantile()), qv.Value()); err != nil {
					return err
				}
			}
			if err := d.emit(t, d.metric+"_sum", &ls, "", "", dp.Sum()); err != nil {
				return err
			}
			if err := d.emit(t, d.metric+"_count", &ls, "", "", float64(dp.Count())); err != nil {
				return err
			}
		}
	default:
		d.s.warn(warnOTLPNoType)
	}
	return nil
}

// numbers sends gauge or sum points.
func (d *otlpMetricsDecoder) numbers(pts pmetric.NumberDataPointSlice) error {
	for p := 0; p < pts.Len(); p++ {
		dp := pts.At(p)
		t, ls, ok, err := d.point(p, dp.Timestamp(), dp.Attributes(), dp.Flags())
		if !ok {
			return err
		}
		var v float64
		switch dp.ValueType() {
		case pmetric.NumberDataPointValueTypeInt:
			v = float64(dp.IntValue())
		case pmetric.NumberDataPointValueTypeDouble:
			v = dp.DoubleValue()
		default:
			d.s.warn(warnOTLPNoValue)
			continue
		}
		if err := d.emit(t, d.metric, &ls, "", "", v); err != nil {
			return err
		}
	}
	return nil
}

// histogram sends one explicit-bucket histogram point.
func (d *otlpMetricsDecoder) histogram(p int, dp pmetric.HistogramDataPoint) error {
	t, ls, ok, err := d.point(p, dp.Timestamp(), dp.Attributes(), dp.Flags())
	if !ok {
		return err
	}
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	switch {
	case counts.Len() == 0:
		// Count and sum only: no buckets to send.
	case counts.Len() != bounds.Len()+1:
		err := d.bad(p, errorf(ErrBadValue, "%d bucket counts for %d bounds", counts.Len(), bounds.Len()))
		if err != nil {
			return err
		}
	default:
		var cum uint64
		for b := 0; b < counts.Len(); b++ {
			cum += counts.At(b)
			le := "+Inf"
			if b < bounds.Len() {
				le = promFloat(bounds.At(b))
			}
			if err := d.emit(t, d.metric+"_bucket", &ls, "le", le, float64(cum)); err != nil {
				return err
			}
		}
	}
	if dp.HasSum() {
		if err := d.emit(t, d.metric+"_sum", &ls, "", "", dp.Sum()); err != nil {
			return err
		}
	}
	return d.emit(t, d.metric+"_count", &ls, "", "", float64(dp.Count()))
}

// point checks a data point's time and flags and collects its attributes.
// ok is false when the point is to be skipped; err is then the sink's
// verdict (nil to go on).
func (d *otlpMetricsDecoder) point(p int, ts pcommon.Timestamp, attrs pcommon.Map, flags pmetric.DataPointFlags) (t int64, ls promLabelSet, ok bool, err error) {
	if flags.NoRecordedValue() {
		d.s.warn(warnOTLPNoValue)
		return 0, ls, false, nil
	}
	if uint64(ts) > math.MaxInt64 {
		return 0, ls, false, d.bad(p, errorf(ErrBadTimestamp, "time_unix_nano %d out of range", uint64(ts)))
	}
	labels := d.labels[:0]
	for k, v := range attrs.All() {
		labels = append(labels, promLabel{k, v.AsString()})
	}
	d.labels = labels
	return int64(ts), newPromLabelSet(labels, false), true, nil
}

// emit sends one sample.
func (d *otlpMetricsDecoder) emit(t int64, metric string, ls *promLabelSet, extraName, extraValue string, v float64) error {
	if t == 0 {
		d.s.infer(noteOTLPNoTime)
	}
	if d.service == "" {
		d.s.infer(noteOTLPNoService)
	}
	d.sample = cascade.Sample{
		Time:     t,
		Service:  d.service,
		Instance: d.instance,
		Metric:   metric,
		Kind:     d.kinds.kind(metric),
		Labels:   ls.text(extraName, extraValue),
		Value:    v,
	}
	return d.s.sample(&d.sample)
}

// bad reports a defect of the current metric (p < 0) or of its point p.
func (d *otlpMetricsDecoder) bad(p int, err error) error {
	path := d.path()
	if p >= 0 {
		path = fmt.Sprintf("%s.dataPoints[%d]", path, p)
	}
	return d.s.invalid(&ParseError{Line: d.line, Offset: d.offset, Path: path, Err: err})
}

// eachFrame calls one on each message of an OTLP protobuf file: the whole
// buffer when it is one bare message (a protobuf message never starts
// with a zero byte), else each message of the Collector's file exporter's
// framing, a 4-byte big-endian length before each. off is the message's
// byte offset (its frame's, when framed).
func eachFrame(buf []byte, one func(rec []byte, off int64) error) error {
	if buf[0] != 0 {
		return one(buf, 0)
	}
	for off := 0; off < len(buf); {
		if len(buf)-off < 4 {
			return &ParseError{Offset: int64(off), Err: errorf(ErrSyntax, "truncated frame length")}
		}
		n := binary.BigEndian.Uint32(buf[off:])
		if uint64(n) > uint64(len(buf)-off-4) {
			return &ParseError{Offset: int64(off), Err: errorf(ErrSyntax, "frame of %d bytes, %d left", n, len(buf)-off-4)}
		}
		if err := one(buf[off+4:off+4+int(n)], int64(off)); err != nil {
			return err
		}
		off += 4 + int(n)
	}
	return nil
}
