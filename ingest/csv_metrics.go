package ingest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"cascade"
)

// metricCSVLayout is the shape of a metric CSV.
type metricCSVLayout int

// The metric CSV layouts; decodeMetricCSV describes them.
const (
	metricCSVWide metricCSVLayout = iota
	metricCSVLong
	metricCSVEdge
)

// Header names (lower-cased) of the columns that are not metrics.
var (
	csvTimeNames     = []string{"time", "datetime", "date"}
	csvStampNames    = []string{"timestamp", "ts"}
	csvServiceNames  = []string{"service", "service_name", "servicename", "service.name", "job", "app", "application"}
	csvInstanceNames = []string{"instance", "host", "hostname", "host.name", "service.instance.id"}
	csvPodNames      = []string{"pod", "pod_name", "podname", "k8s.pod.name", "k8s_pod_name", "cmdb_id"}
	csvMetricNames   = []string{"metric", "metric_name", "__name__", "kpi_name", "kpi"}
	csvValueNames    = []string{"value"}
)

// metricCSVColumn is one metric column of a wide or edge layout.
type metricCSVColumn struct {
	idx    int
	metric string
	kind   cascade.MetricKind
	labels string
}

// metricCSVDecoder holds the state of one metric CSV input.
type metricCSVDecoder struct {
	name   string
	s      sink
	opts   *Options
	cr     *csv.Reader
	header []string
	offset int64 // byte offset of the current record

	layout                          metricCSVLayout
	timeCol, stampCol               int // -1 when absent
	serviceCol, instanceCol, podCol int // -1 when absent
	lowerService                    bool

	columns                        []metricCSVColumn // wide and edge
	metricCol, valueCol, labelsCol int               // long
	labelCols                      []int             // long: extra columns

	kinds      map[string]cascade.MetricKind // long: metric → kind
	labelCache map[string]string             // long: labels cell → canonical
	services   map[string]string             // pod cell → service
	lowered    map[string]string             // ServiceName cell → lower case
	timeLayout int                           // index of the last layout that parsed
	skewNoted  bool
	sample     cascade.Sample
}

// decodeMetricCSV reads a metric CSV, one sample per non-empty metric cell.
// The CSV has a header and one of three layouts, chosen from the header and
// the file name:
//
//   - wide: a time column, optional service, instance and pod columns, and
//     one numeric column per metric; each non-empty cell is one sample
//     whose metric is the column name. Nezha's per-pod files
//     (Time,TimeStamp,PodName,CpuUsage(m),...) and front_service.csv
//     (Time,TimeStamp,ServiceName,SuccessRate(%),...) are wide.
//   - long: time, metric and value columns, optional service, instance and
//     pod columns, and an optional labels column (a="x",b="y", with or
//     without braces); any other column is one more label. The metric
//     column is named metric, metric_name, __name__, kpi_name or kpi, so
//     the AIOps challenge's KPI files (timestamp,cmdb_id,kpi_name,value,
//     one sample a row, times in seconds) are long.
//   - edge: Nezha's source_<q>.csv and destination_<q>.csv, one column of
//     P<q> latency (seconds) per caller_callee pair; each cell is a sample
//     of edge_latency_p<q>_seconds labelled edge="caller_callee" and
//     reporter="source" or "destination".
//
// Time columns are named time, datetime or date (preferred) and timestamp
// or ts. A time is RFC 3339, Go's time.String format (the monotonic
// " m=+..." part is dropped), "2006-01-02 15:04:05" in UTC, or a Unix time
// whose unit follows from its magnitude (s, ms, µs or ns). When both kinds
// of time column are present the first is used and the second is read
// only when the first is empty; the summary notes, once per input, a
// second column that disagrees with the first by more than 60 s. Service columns are service, service_name,
// ServiceName (whose values are lower-cased, as Nezha capitalizes them),
// job, app and application; instance columns are instance, host and
// hostname; pod columns are pod, pod_name, PodName and cmdb_id, and give
// the instance and, without a service column, the service (the pod name
// without its Kubernetes suffix, and without the "node-N." an AIOps
// cmdb_id puts before a container's pod: serviceFromCMDB). Columns with an empty name are ignored.
//
// Nezha's dependency.csv (Source,Target,Weight) is a call graph and is
// rejected with ErrUnsupported, as are span and log CSVs.
func decodeMetricCSV(name string, r io.Reader, s sink, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	cr := newCSVReader(r)
	header, line, err := readCSVHeader(name, cr)
	if err == io.EOF {
		s.infer("empty input")
		return nil
	}
	if err != nil {
		return err
	}
	d := &metricCSVDecoder{name: name, s: s, opts: opts, cr: cr, header: header,
		services: map[string]string{}, lowered: map[string]string{}}
	if err := d.classify(); err != nil {
		return &ParseError{File: name, Line: line, Path: "header", Err: err}
	}
	return d.run()
}

// csvFind returns the first column whose lower-cased name is in names,
// or -1.
func csvFind(lower []string, names []string) int {
	for i, h := range lower {
		if slices.Contains(names, h) {
			return i
		}
	}
	return -1
}

// csvEdgeFile returns the quantile and the reporting side of a Nezha
// per-edge latency file name, in any directory and with or without a
// compression suffix (metric/source_50.csv.gz → "50", "source"), or ok
// false for any other name.
func csvEdgeFile(name string) (q string, reporter string, ok bool) {
	base := strings.ToLower(filepath.Base(name))
	for _, ext := range []string{".gz", ".zst", ".zstd", ".csv", ".tsv"} {
		base = strings.TrimSuffix(base, ext)
	}
	for _, side := range []string{"source", "destination"} {
		if rest, found := strings.CutPrefix(base, side+"_"); found && isDecimal(rest, 1, 3) {
			return rest, side, true
		}
	}
	return "", "", false
}

// classify picks the layout from the header and file name.
func (d *metricCSVDecoder) classify() error {
	lower := make([]string, len(d.header))
	for i, h := range d.header {
		lower[i] = strings.ToLower(h)
	}
	switch {
	case slices.Equal(lower, []string{"source", "target"}) || slices.Equal(lower, []string{"source", "target", "weight"}):
		return errorf(ErrUnsupported, "call-graph CSV, not metrics")
	case csvFind(lower, []string{"traceid", "trace_id"}) >= 0 && csvFind(lower, []string{"spanid", "span_id"}) >= 0:
		return errorf(ErrUnsupported, "span or log CSV, not metrics")
	}
	d.timeCol = csvFind(lower, csvTimeNames)
	d.stampCol = csvFind(lower, csvStampNames)
	if d.timeCol < 0 {
		d.timeCol, d.stampCol = d.stampCol, -1
	}
	if d.timeCol < 0 {
		return errorf(ErrUnsupported, "no time column (time or timestamp) in %s", csvHeaderText(d.header))
	}
	d.serviceCol = csvFind(lower, csvServiceNames)
	d.instanceCol = csvFind(lower, csvInstanceNames)
	d.podCol = csvFind(lower, csvPodNames)
	d.lowerService = d.serviceCol >= 0 && d.header[d.serviceCol] == "ServiceName"
	reserved := func(i int) bool {
		return i == d.timeCol || i == d.stampCol || i == d.serviceCol || i == d.instanceCol || i == d.podCol || d.header[i] == ""
	}

	if q, reporter, ok := csvEdgeFile(d.name); ok {
		d.layout = metricCSVEdge
		metric := "edge_latency_p" + q + "_seconds"
		for i, h := range d.header {
			if !reserved(i) {
				d.columns = append(d.columns, metricCSVColumn{idx: i, metric: metric, kind: cascade.MetricLatency,
					labels: "edge=" + quoteLabelValue(h) + ",reporter=" + quoteLabelValue(reporter)})
			}
		}
	} else if mc, vc := csvFind(lower, csvMetricNames), csvFind(lower, csvValueNames); mc >= 0 && vc >= 0 {
		d.layout = metricCSVLong
		d.metricCol, d.valueCol = mc, vc
		d.labelsCol = csvFind(lower, []string{"labels"})
		for i := range d.header {
			if !reserved(i) && i != mc && i != vc && i != d.labelsCol {
				d.labelCols = append(d.labelCols, i)
			}
		}
		d.kinds = map[string]cascade.MetricKind{}
		d.labelCache = map[string]string{}
		return nil
	} else {
		d.layout = metricCSVWide
		for i, h := range d.header {
			if !reserved(i) {
				d.columns = append(d.columns, metricCSVColumn{idx: i, metric: h, kind: metricKindOf(d.opts, h)})
			}
		}
	}
	if len(d.columns) == 0 {
		return errorf(ErrUnsupported, "no metric columns in %s", csvHeaderText(d.header))
	}
	return nil
}

// run decodes the records after the header.
func (d *metricCSVDecoder) run() error {
	return csvRecords(d.cr, d.name, d.header, d.s, &d.offset, d.record)
}

// fieldError reports a defect in one cell of the current record.
func (d *metricCSVDecoder) fieldError(col int, sentinel error, format string, args ...any) *ParseError {
	line, _ := d.cr.FieldPos(col)
	return &ParseError{File: d.name, Line: line, Offset: d.offset,
		Path: "column " + strconv.Quote(d.header[col]), Err: errorf(sentinel, format, args...)}
}

// record emits the samples of one record. It returns an error only to
// stop decoding.
func (d *metricCSVDecoder) record(rec []string) error {
	if len(rec) != len(d.header) {
		return d.s.invalid(csvFieldCountError(d.name, d.cr, d.offset, len(rec), len(d.header)))
	}
	t, pe := d.rowTime(rec)
	if pe != nil {
		return d.s.invalid(pe)
	}
	sm := &d.sample
	*sm = cascade.Sample{Time: t}
	sm.Service, sm.Instance = d.identity(rec)
	if d.layout == metricCSVLong {
		return d.longRecord(rec)
	}
	for _, c := range d.columns {
		v := strings.TrimSpace(rec[c.idx])
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			if err := d.s.invalid(d.fieldError(c.idx, ErrBadValue, "%q is not a number", v)); err != nil {
				return err
			}
			continue
		}
		sm.Metric, sm.Kind, sm.Labels, sm.Value = c.metric, c.kind, c.labels, f
		if err := d.s.sample(sm); err != nil {
			return err
		}
	}
	return nil
}

// longRecord emits the one sample of a long-layout record whose time and
// identity d.sample already holds.
func (d *metricCSVDecoder) longRecord(rec []string) error {
	sm := &d.sample
	v := strings.TrimSpace(rec[d.valueCol])
	if v == "" {
		return nil
	}
	metric := strings.TrimSpace(rec[d.metricCol])
	if metric == "" {
		return d.s.invalid(d.fieldError(d.metricCol, ErrMissingField, "empty metric name"))
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return d.s.invalid(d.fieldError(d.valueCol, ErrBadValue, "%q is not a number", v))
	}
	labels, col, err := d.labels(rec)
	if err != nil {
		return d.s.invalid(d.fieldError(col, ErrBadValue, "%s", err))
	}
	kind, ok := d.kinds[metric]
	if !ok {
		kind = metricKindOf(d.opts, metric)
		if len(d.kinds) < maxCSVCache {
			d.kinds[metric] = kind
		}
	}
	sm.Metric, sm.Kind, sm.Labels, sm.Value = metric, kind, labels, f
	return d.s.sample(sm)
}

// labels returns the canonical labels of a long-layout record: the labels
// column and the extra columns, sorted by name. On error it also returns
// the column at fault.
func (d *metricCSVDecoder) labels(rec []string) (string, int, error) {
	raw := ""
	if d.labelsCol >= 0 {
		raw = strings.TrimSpace(rec[d.labelsCol])
	}
	if len(d.labelCols) == 0 {
		if raw == "" {
			return "", -1, nil
		}
		if l, ok := d.labelCache[raw]; ok {
			return l, -1, nil
		}
	}
	pairs, err := parseCSVLabels(raw)
	if err != nil {
		return "", d.labelsCol, err
	}
	for _, i := range d.labelCols {
		if v := strings.TrimSpace(rec[i]); v != "" {
			pairs = append(pairs, [2]string{d.header[i], v})
		}
	}
	l, err := formatCSVLabels(pairs)
	if err != nil {
		col := d.labelsCol
		if col < 0 {
			col = d.labelCols[0]
		}
		return "", col, err
	}
	if len(d.labelCols) == 0 && len(d.labelCache) < maxCSVCache {
		d.labelCache[raw] = l
	}
	return l, -1, nil
}

// identity returns the service and instance a record names.
func (d *metricCSVDecoder) identity(rec []string) (service, instance string) {
	if d.serviceCol >= 0 {
		service = strings.TrimSpace(rec[d.serviceCol])
		if d.lowerService && service != "" {
			service = csvCached(d.lowered, service, strings.ToLower)
		}
	}
	if d.instanceCol >= 0 {
		instance = strings.TrimSpace(rec[d.instanceCol])
	}
	if d.podCol >= 0 {
		pod := strings.TrimSpace(rec[d.podCol])
		if instance == "" {
			instance = pod
		}
		if service == "" && pod != "" {
			service = csvCached(d.services, pod, serviceFromCMDB)
		}
	}
	return service, instance
}

// serviceFromCMDB returns the service of a pod column's cell: the pod
// name without its Kubernetes suffix (serviceFromPod), after the node name
// that AIOps-challenge datasets put before a container's pod
// ("node-6.adservice2-0" → "adservice2"). A node's own name ("node-1")
// and names with no pod suffix, such as those of hosts and databases
// ("os_021", "db_003"), are kept as they are.
func serviceFromCMDB(pod string) string {
	if isNodeName(pod) {
		return pod
	}
	if i := strings.IndexByte(pod, '.'); i > 0 && isNodeName(pod[:i]) {
		pod = pod[i+1:]
	}
	return serviceFromPod(pod)
}

// isNodeName reports whether s is an AIOps node name: "node-" and a
// number.
func isNodeName(s string) bool {
	n, ok := strings.CutPrefix(s, "node-")
	return ok && isDecimal(n, 1, 5)
}

// csvCached returns f(key), remembering up to maxCSVCache answers in m.
func csvCached(m map[string]string, key string, f func(string) string) string {
	if v, ok := m[key]; ok {
		return v
	}
	v := f(key)
	if len(m) < maxCSVCache {
		m[key] = v
	}
	return v
}

// maxTimeSkew is how far a record's second time column may differ from
// its first before the summary notes it.
const maxTimeSkew = int64(60 * time.Second)

// rowTime returns a record's time from its time column, else from its
// timestamp column, and notes once per input a timestamp column that
// disagrees with the time column (Nezha's per-pod files have some).
func (d *metricCSVDecoder) rowTime(rec []string) (int64, *ParseError) {
	if v := strings.TrimSpace(rec[d.timeCol]); v != "" {
		t, err := d.parseTime(v)
		if err != nil {
			return 0, d.fieldError(d.timeCol, ErrBadTimestamp, "%s", err)
		}
		if d.stampCol >= 0 && !d.skewNoted {
			if v := strings.TrimSpace(rec[d.stampCol]); v != "" {
				if t2, err := d.parseTime(v); err == nil && (t2-t > maxTimeSkew || t-t2 > maxTimeSkew) {
					d.skewNoted = true
					d.s.infer(fmt.Sprintf("time: column %q disagrees with %q by more than 60 s (%q used)",
						d.header[d.stampCol], d.header[d.timeCol], d.header[d.timeCol]))
				}
			}
		}
		return t, nil
	}
	if d.stampCol >= 0 {
		if v := strings.TrimSpace(rec[d.stampCol]); v != "" {
			t, err := d.parseTime(v)
			if err != nil {
				return 0, d.fieldError(d.stampCol, ErrBadTimestamp, "%s", err)
			}
			return t, nil
		}
	}
	return 0, d.fieldError(d.timeCol, ErrMissingField, "empty time")
}

// csvTimeLayouts are the textual time layouts of metric CSVs. Layouts
// without a zone read as UTC.
var csvTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999 -0700 MST", // Go's time.String
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseTime reads a metric CSV time as Unix nanoseconds.
func (d *metricCSVDecoder) parseTime(s string) (int64, error) {
	if csvNumeric(s) {
		if v, err := csvUnixTime(s); err == nil {
			return v, nil
		} else if err == errCSVRange {
			return 0, fmt.Errorf("%q is out of range", s)
		}
	}
	text := s
	if i := strings.Index(text, " m="); i >= 0 {
		text = text[:i] // Go's monotonic clock reading
	}
	// Go's time.String of a UTC time reads as UTC without its zone, which
	// spares time.Parse building a fixed zone for every record.
	text = strings.TrimSuffix(text, " +0000 UTC")
	n := len(csvTimeLayouts)
	for k := range n {
		i := (d.timeLayout + k) % n
		t, err := time.Parse(csvTimeLayouts[i], text)
		if err != nil {
			continue
		}
		if y := t.Year(); y < 1678 || y > 2261 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		d.timeLayout = i
		return t.UnixNano(), nil
	}
	return 0, fmt.Errorf("%q is neither a Unix time nor a date and time", s)
}

// csvNumeric reports whether s holds only the characters of a decimal
// number, so that dates skip the attempt (and its error) to read them as
// one.
func csvNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return false
		}
	}
	return true
}

// csvUnixTime reads a Unix time whose unit follows from its magnitude:
// seconds below 1e11, milliseconds below 1e14, microseconds below 1e17,
// nanoseconds above. It returns errCSVNotNumber or errCSVRange.
func csvUnixTime(s string) (int64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errCSVNotNumber
	}
	unit := time.Second
	switch a := math.Abs(f); {
	case a >= 1e17:
		unit = time.Nanosecond
	case a >= 1e14:
		unit = time.Microsecond
	case a >= 1e11:
		unit = time.Millisecond
	}
	return csvScaled(s, unit)
}

// parseCSVLabels reads a labels cell: name=value pairs separated by
// commas, values optionally double-quoted with Prometheus escapes (\\, \"
// and \n), the whole optionally in braces.
func parseCSVLabels(s string) ([][2]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	var pairs [][2]string
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return pairs, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("label %q has no value", s)
		}
		name := strings.TrimSpace(s[:eq])
		if name == "" {
			return nil, errors.New("label with no name")
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		var value string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i, closed := 1, false
			for i < len(s) {
				c := s[i]
				i++
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i < len(s) {
					switch e := s[i]; e {
					case 'n':
						c = '\n'
					default:
						c = e
					}
					i++
				}
				b.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("label %q: unterminated quoted value", name)
			}
			value, s = b.String(), strings.TrimLeft(s[i:], " \t")
			if s != "" && s[0] != ',' {
				return nil, fmt.Errorf("label %q: text after the quoted value", name)
			}
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			value, s = strings.TrimSpace(s[:end]), s[end:]
		}
		pairs = append(pairs, [2]string{name, value})
	}
}

// formatCSVLabels renders label pairs as Sample.Labels does: sorted by
// name, name="value" joined by commas. A name given twice is an error.
func formatCSVLabels(pairs [][2]string) (string, error) {
	if len(pairs) == 0 {
		return "", nil
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			if p[0] == pairs[i-1][0] {
				return "", fmt.Errorf("label %q given twice", p[0])
			}
			b.WriteByte(',')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(quoteLabelValue(p[1]))
	}
	return b.String(), nil
}

// labelValueEscaper escapes a label value as Prometheus' text format does.
var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// quoteLabelValue double-quotes a label value with Prometheus' escapes.
func quoteLabelValue(v string) string {
	return `"` + labelValueEscaper.Replace(v) + `"`
}

// metricKindOf maps a metric column to its kind through the run's KindMap
// (the defaults when none was given).
func metricKindOf(opts *Options, name string) cascade.MetricKind {
	var km *KindMap
	if opts != nil {
		km = opts.MetricKinds
	}
	return km.Kind(name)
}
