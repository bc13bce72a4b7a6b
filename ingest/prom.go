package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cascade"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Labels that name a series' service and instance, in order of preference.
// The one chosen is moved out of Sample.Labels into Sample.Service or
// Sample.Instance; the others stay labels.
var (
	promServiceLabels  = []string{"service", "service_name", "job", "application", "app"}
	promInstanceLabels = []string{"instance", "pod", "host"}
)

// Inference notes of the metric decoders, as the summary counts them.
const (
	noteNoScrapeTime   = "time: not in scrape, stored as 0 (give --scrape-time)"
	noteScrapeTime     = "time: not in scrape, taken from --scrape-time"
	noteNoServiceLabel = "service: no service, job or app label, left empty"
)

// decodePromText decodes the Prometheus text exposition format with
// Prometheus' own parser (expfmt.TextParser): one scrape or many
// concatenated, with or without timestamps.
//
// The parser takes one scrape at a time and rejects a family that appears
// twice, so the stream is cut into chunks of about one metric family each
// and each chunk is parsed alone: a chunk ends at a # HELP or # TYPE line
// naming another family or repeating a HELP or TYPE the chunk already has
// (the next scrape), at "# EOF", and, in streams without comments, where
// a family seen earlier in the chunk comes back. A chunk past
// promChunkMax is cut at a sample line and its family's TYPE line
// carried into the next one. Memory is bounded by the chunk, not the
// input. Samples are sent in input order. Lines may end in CRLF.
//
// Counters, gauges and untyped series give one sample each; a histogram
// gives one sample per bucket (metric name_bucket, label le), then
// name_sum and name_count; a summary one per quantile (label quantile),
// then name_sum and name_count. Points without a timestamp get
// opts.ScrapeTime. Service and Instance come from the labels (see
// promServiceLabels). A line the parser rejects is reported to the sink
// as a *ParseError (ErrSyntax, with its line and byte offset) and
// skipped; the lines around it are decoded.
func decodePromText(name string, r io.Reader, s sink, opts *Options) error {
	d := &promTextDecoder{
		name:    name,
		s:       s,
		opts:    opts,
		kinds:   newKindLookup(opts.MetricKinds),
		parser:  expfmt.NewTextParser(model.UTF8Validation),
		emitted: make(map[string]bool),
		line:    1,
	}
	d.chunk.firstLine = 1
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		raw, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], raw...)
			for errors.Is(err, bufio.ErrBufferFull) {
				raw, err = br.ReadSlice('\n')
				long = append(long, raw...)
			}
			raw = long
		}
		if len(raw) > 0 {
			if perr := d.line1(raw); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
	return d.flush()
}

// promTextDecoder holds the state of one decodePromText call.
type promTextDecoder struct {
	name     string
	s        sink
	opts     *Options
	kinds    *kindLookup
	parser   expfmt.TextParser
	line     int   // 1-based number of the next input line
	offset   int64 // byte offset of the next input line
	chunk    promChunk
	emitted  map[string]bool // families of the chunk already sent
	labels   []promLabel     // scratch
	sample   cascade.Sample  // scratch
	timeNote string          // inference note for the current series' time, or ""
}

// emitChunk sends the samples of a parsed chunk, families in the order
// they appeared in it.
func (d *promTextDecoder) emitChunk(fams map[string]*dto.MetricFamily) error {
	clear(d.emitted)
	for _, name := range d.chunk.order {
		mf := fams[name]
		if mf == nil || d.emitted[name] {
			continue
		}
		d.emitted[name] = true
		if err := d.family(mf); err != nil {
			return err
		}
	}
	if len(d.emitted) == len(fams) {
		return nil
	}
	// Names the line scan could not read (quoted UTF-8 names in braces).
	rest := make([]string, 0, len(fams)-len(d.emitted))
	for name := range fams {
		if !d.emitted[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		if err := d.family(fams[name]); err != nil {
			return err
		}
	}
	return nil
}

// family sends the samples of one metric family.
func (d *promTextDecoder) family(mf *dto.MetricFamily) error {
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		base := d.labels[:0]
		for _, lp := range m.GetLabel() {
			base = append(base, promLabel{lp.GetName(), lp.GetValue()})
		}
		d.labels = base
		ls := newPromLabelSet(base, true)
		t, perr := d.time(m, name)
		if perr != nil {
			if err := d.s.invalid(perr); err != nil {
				return err
			}
			continue
		}
		var err error
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			err = d.emit(t, name, &ls, "", "", m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			err = d.emit(t, name, &ls, "", "", m.GetGauge().GetValue())
		case dto.MetricType_SUMMARY:
			err = d.summary(t, name, &ls, m.GetSummary())
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			err = d.histogram(t, name, &ls, m.GetHistogram())
		default:
			err = d.emit(t, name, &ls, "", "", m.GetUntyped().GetValue())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// time returns a point's time in Unix nanoseconds: its own timestamp, else
// the scrape time.
func (d *promTextDecoder) time(m *dto.Metric, name string) (int64, *ParseError) {
	d.timeNote = ""
	if m.TimestampMs == nil {
		d.timeNote = noteScrapeTime
		if d.opts.ScrapeTime == 0 {
			d.timeNote = noteNoScrapeTime
		}
		return d.opts.ScrapeTime, nil
	}
	ms := m.GetTimestampMs()
	if ms > math.MaxInt64/1_000_000 || ms < math.MinInt64/1_000_000 {
		line, off := d.chunk.findTimestamp(ms)
		return 0, &ParseError{Line: line, Offset: off, Path: name,
			Err: errorf(ErrBadTimestamp, "timestamp %d ms out of range", ms)}
	}
	return ms * 1e6, nil
}

// summary sends a summary's quantiles, then its _sum and _count.
func (d *promTextDecoder) summary(t int64, name string, ls *promLabelSet, sm *dto.Summary) error {
	if sm == nil {
		return nil
	}
	for _, q := range sm.GetQuantile() {
		if err := d.emit(t, name, ls, model.QuantileLabel, promFloat(q.GetQuantile()), q.GetValue()); err != nil {
			return err
		}
	}
	if sm.SampleSum != nil {
		if err := d.emit(t, name+"_sum", ls, "", "", sm.GetSampleSum()); err != nil {
			return err
		}
	}
	if sm.SampleCount != nil {
		return d.emit(t, name+"_count", ls, "", "", float64(sm.GetSampleCount()))
	}
	return nil
}

// histogram sends a histogram's buckets (cumulative, as exposed), then its
// _sum and _count.
func (d *promTextDecoder) histogram(t int64, name string, ls *promLabelSet, h *dto.Histogram) error {
	if h == nil {
		return nil
	}
	for _, b := range h.GetBucket() {
		n := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			n = b.GetCumulativeCountFloat()
		}
		if err := d.emit(t, name+"_bucket", ls, model.BucketLabel, promFloat(b.GetUpperBound()), n); err != nil {
			return err
		}
	}
	if h.SampleSum != nil {
		if err := d.emit(t, name+"_sum", ls, "", "", h.GetSampleSum()); err != nil {
			return err
		}
	}
	if h.SampleCount != nil || h.SampleCountFloat != nil {
		n := float64(h.GetSampleCount())
		if h.SampleCountFloat != nil {
			n = h.GetSampleCountFloat()
		}
		return d.emit(t, name+"_count", ls, "", "", n)
	}
	return nil
}

// emit sends one sample; extraName/extraValue is an added label (le or
// quantile), or empty.
func (d *promTextDecoder) emit(t int64, metric string, ls *promLabelSet, extraName, extraValue string, v float64) error {
	if d.timeNote != "" {
		d.s.infer(d.timeNote)
	}
	if ls.service == "" {
		d.s.infer(noteNoServiceLabel)
	}
	d.sample = cascade.Sample{
		Time:     t,
		Service:  ls.service,
		Instance: ls.instance,
		Metric:   metric,
		Kind:     d.kinds.kind(metric),
		Labels:   ls.text(extraName, extraValue),
		Value:    v,
	}
	return d.s.sample(&d.sample)
}

// promLabel is one label name and value, unescaped.
type promLabel struct{ name, value string }

// promLabelSet is a series' labels with its service and instance taken
// out, sorted by name.
type promLabelSet struct {
	service, instance string
	labels            []promLabel
	plain             string // text() without an extra label, once made
	plainDone         bool
}

// newPromLabelSet sorts labels in place and, when pick is set, moves the
// first present service label and instance label (see promServiceLabels)
// out of them. Empty values count as absent, as in Prometheus.
func newPromLabelSet(labels []promLabel, pick bool) promLabelSet {
	ls := promLabelSet{}
	if pick {
		ls.service, labels = takeLabel(labels, promServiceLabels)
		ls.instance, labels = takeLabel(labels, promInstanceLabels)
	}
	slices.SortFunc(labels, func(a, b promLabel) int { return strings.Compare(a.name, b.name) })
	ls.labels = labels
	return ls
}

// takeLabel removes the first of keys present in labels (in the order of
// keys) and returns its value.
func takeLabel(labels []promLabel, keys []string) (string, []promLabel) {
	for _, k := range keys {
		for i, l := range labels {
			if l.name == k && l.value != "" {
				return l.value, slices.Delete(labels, i, i+1)
			}
		}
	}
	return "", labels
}

// text formats the labels as Prometheus writes them inside braces, sorted
// by name and joined by commas, with extra (when extraName is set) added
// in its sorted place: a="x",le="0.5". Values are escaped (\\, \", \n);
// names that are not legacy Prometheus names (OTLP's http.route) are
// quoted as Prometheus 3 quotes UTF-8 names: "http.route"="/x".
func (ls *promLabelSet) text(extraName, extraValue string) string {
	if extraName == "" && ls.plainDone {
		return ls.plain
	}
	var b strings.Builder
	n := len(extraName) + len(extraValue) + 4
	for _, l := range ls.labels {
		n += len(l.name) + len(l.value) + 4
	}
	b.Grow(n)
	added := extraName == ""
	for _, l := range ls.labels {
		if !added && l.name >= extraName {
			writePromLabel(&b, extraName, extraValue)
			added = true
		}
		writePromLabel(&b, l.name, l.value)
	}
	if !added {
		writePromLabel(&b, extraName, extraValue)
	}
	if extraName == "" {
		ls.plain, ls.plainDone = b.String(), true
		return ls.plain
	}
	return b.String()
}

// writePromLabel appends name="value" (with a comma before all but the
// first label).
func writePromLabel(b *strings.Builder, name, value string) {
	if b.Len() > 0 {
		b.WriteByte(',')
	}
	if model.LegacyValidation.IsValidLabelName(name) {
		b.WriteString(name)
	} else {
		writePromQuoted(b, name)
	}
	b.WriteByte('=')
	writePromQuoted(b, value)
}

// writePromQuoted writes s in double quotes with the escapes of the text
// exposition format: backslash, double quote and newline.
func writePromQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// promFloat formats a bucket bound or quantile as Prometheus' client
// libraries write it: shortest form, +Inf and -Inf spelled out.
func promFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
