package ingest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CSVMap maps the columns of a span CSV to Span fields. Each column field
// holds a header name (matched exactly, else ignoring case); an empty
// field means the CSV has no such column. TraceID, SpanID, Service and
// Start are required, and so is End or Duration.
//
// ParseCSVMap reads one from the --csv-map flag, LoadCSVMap from a file,
// and NezhaCSVMap returns the preset for the Nezha dataset's trace files.
type CSVMap struct {
	// Name names the layout in summary notes ("nezha" for the preset);
	// empty for a custom mapping. String does not render it.
	Name string

	// TraceID is the trace id column. Hexadecimal ids are lower-cased;
	// other text is kept as it is.
	TraceID string
	// SpanID is the span id column, treated like TraceID.
	SpanID string
	// ParentID is the parent span id column; a value in RootParents (or
	// an empty cell) marks a root span. Empty means every span is a root.
	ParentID string
	// Service is the service name column. With StripPodSuffix it may
	// name a Kubernetes pod column instead.
	Service string
	// Instance is the instance column. Empty means none, except that with
	// StripPodSuffix the Service cell before stripping (the pod name) is
	// the instance.
	Instance string
	// Operation is the span name column; empty leaves Operation empty.
	Operation string
	// Kind is the span kind column (server, client, producer, consumer,
	// internal, in any case, with or without a SPAN_KIND_ prefix, or the
	// OTLP numbers 1 to 5). Empty means the format records no kind.
	Kind string
	// Start is the start time column: a number in StartUnit since the Unix
	// epoch, or an RFC 3339 time.
	Start string
	// End is the end time column, read like Start in EndUnit. When both
	// Start and End are present the duration is End minus Start.
	End string
	// Duration is the duration column: a number in DurationUnit or a Go
	// duration such as "1.5ms". It is used when End is absent or empty.
	Duration string
	// Status is the span status column: ok, error or unset (in any case,
	// with or without a STATUS_CODE_ prefix), the OTLP numbers 0 to 2,
	// true or false (an error flag, or a success flag when the column's
	// name says "success"), or an HTTP or gRPC code or gRPC code name,
	// read as StatusCode is. Empty means the status comes from StatusCode,
	// else stays unset.
	Status string
	// StatusCode is the HTTP or gRPC status code column: an integer, 100
	// or more for HTTP and 0 to 16 for gRPC, or a gRPC code name
	// (UNAVAILABLE, DeadlineExceeded). Without a Status column (or where
	// its cell is empty) the code sets the status by its meaning: HTTP 5xx
	// fails any span and 4xx a client span; gRPC UNKNOWN,
	// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNIMPLEMENTED, INTERNAL,
	// UNAVAILABLE and DATA_LOSS fail any span and every other non-zero
	// code a client span; any other code leaves the span ok.
	StatusCode string
	// Peer is the column naming the callee as a client span sees it.
	Peer string

	// Links is the column of a span's links to spans of other traces:
	// "traceid:spanid" pairs separated by spaces, semicolons or both;
	// ids are treated like TraceID. Empty means no links.
	Links string
	// MessagingSystem, MessagingOperation, Destination, ConsumerGroup and
	// MessageID are the columns of the messaging fields of cascade.Span,
	// kept as written except that the system and the operation are
	// lower-cased and the operation "deliver" is "process". Without an
	// operation column (or where its cell is empty) a producer span is a
	// publish and a consumer span a receive, as for the other formats.
	MessagingSystem    string
	MessagingOperation string
	Destination        string
	ConsumerGroup      string
	MessageID          string
	// BatchCount, MessageBytes and Redelivery are the columns of the
	// messaging counts: whole numbers, 0 or more; an empty cell is 0.
	BatchCount   string
	MessageBytes string
	Redelivery   string

	// StartUnit is the unit of Start: time.Nanosecond, Microsecond,
	// Millisecond or Second; zero means nanoseconds.
	StartUnit time.Duration
	// EndUnit is the unit of End, like StartUnit; zero means nanoseconds.
	EndUnit time.Duration
	// DurationUnit is the unit of Duration, like StartUnit; zero means
	// nanoseconds.
	DurationUnit time.Duration

	// RootParents lists the ParentID values that mark a root span, besides
	// the empty cell. Nil means the defaults "root", "0", "null" and
	// "0000000000000000".
	RootParents []string
	// StripPodSuffix strips a Kubernetes pod name suffix from the Service
	// cell: a Deployment's "-<hash>-<5 chars>", a DaemonSet's or Job's
	// "-<5 chars>", or a StatefulSet's "-<ordinal>", so that
	// "frontend-579b9bff58-t2dbm" becomes "frontend".
	StripPodSuffix bool
}

// defaultRootParents are the ParentID values that mark a root span when
// CSVMap.RootParents is nil.
var defaultRootParents = []string{"root", "0", "null", "0000000000000000"}

// NezhaCSVMap returns the preset for the Nezha dataset's trace files,
// whose header is
// TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration:
// times in nanoseconds, Duration in microseconds, ParentID "root" for
// roots, the service from PodName without its Kubernetes suffix and the
// pod name as the instance. It records no kind and no status.
func NezhaCSVMap() *CSVMap {
	return &CSVMap{
		Name:           "nezha",
		TraceID:        "TraceID",
		SpanID:         "SpanID",
		ParentID:       "ParentID",
		Service:        "PodName",
		Instance:       "PodName",
		Operation:      "OperationName",
		Start:          "StartTimeUnixNano",
		End:            "EndTimeUnixNano",
		Duration:       "Duration",
		StartUnit:      time.Nanosecond,
		EndUnit:        time.Nanosecond,
		DurationUnit:   time.Microsecond,
		RootParents:    []string{"root"},
		StripPodSuffix: true,
	}
}

// csvMapField ties a --csv-map key to the CSVMap field it sets.
type csvMapField struct {
	key  string
	col  *string
	unit *time.Duration // nil for columns that are not times
}

// fields lists m's column fields in the order String writes them.
func (m *CSVMap) fields() []csvMapField {
	return []csvMapField{
		{"trace_id", &m.TraceID, nil},
		{"span_id", &m.SpanID, nil},
		{"parent_span_id", &m.ParentID, nil},
		{"service", &m.Service, nil},
		{"instance", &m.Instance, nil},
		{"operation", &m.Operation, nil},
		{"kind", &m.Kind, nil},
		{"start", &m.Start, &m.StartUnit},
		{"end", &m.End, &m.EndUnit},
		{"duration", &m.Duration, &m.DurationUnit},
		{"status", &m.Status, nil},
		{"status_code", &m.StatusCode, nil},
		{"peer", &m.Peer, nil},
		{"links", &m.Links, nil},
		{"messaging_system", &m.MessagingSystem, nil},
		{"messaging_operation", &m.MessagingOperation, nil},
		{"messaging_destination", &m.Destination, nil},
		{"messaging_consumer_group", &m.ConsumerGroup, nil},
		{"messaging_message_id", &m.MessageID, nil},
		{"messaging_batch_count", &m.BatchCount, nil},
		{"messaging_message_bytes", &m.MessageBytes, nil},
		{"messaging_redelivery", &m.Redelivery, nil},
	}
}

// csvMapAliases maps accepted spellings of --csv-map keys to their names.
var csvMapAliases = map[string]string{
	"parent_id":      "parent_span_id",
	"parent":         "parent_span_id",
	"parent_span":    "parent_span_id",
	"name":           "operation",
	"operation_name": "operation",
	"span_name":      "operation",
	"service_name":   "service",
	"start_time":     "start",
	"end_time":       "end",
	"destination":    "messaging_destination",
	"consumer_group": "messaging_consumer_group",
	"message_id":     "messaging_message_id",
	"batch_count":    "messaging_batch_count",
	"message_bytes":  "messaging_message_bytes",
	"redelivery":     "messaging_redelivery",
}

// csvMapKeys lists the --csv-map keys, as the unknown-key error names
// them: the column keys in String's order, then root and
// strip_pod_suffix.
func csvMapKeys() string {
	var keys []string
	for _, f := range (&CSVMap{}).fields() {
		keys = append(keys, f.key)
	}
	return strings.Join(keys, ", ") + ", root or strip_pod_suffix"
}

// Validate reports every problem with m: a missing required column or a
// time unit other than nanoseconds, microseconds, milliseconds or seconds.
func (m *CSVMap) Validate() error {
	var errs []error
	for _, f := range m.fields() {
		switch f.key {
		case "trace_id", "span_id", "service", "start":
			if *f.col == "" {
				errs = append(errs, fmt.Errorf("missing key %q", f.key))
			}
		}
		if f.unit != nil && *f.unit != 0 && csvUnitName(*f.unit) == "" {
			errs = append(errs, fmt.Errorf("key %q: unit %v is not ns, us, ms or s", f.key, *f.unit))
		}
	}
	if m.End == "" && m.Duration == "" {
		errs = append(errs, errors.New(`missing key "end" or "duration"`))
	}
	return errors.Join(errs...)
}

// String renders m in the --csv-map syntax that ParseCSVMap reads, with
// every time unit spelled out. Column names holding a comma, and root
// markers holding a comma or "|", do not survive the round trip.
func (m *CSVMap) String() string {
	var parts []string
	for _, f := range m.fields() {
		if *f.col == "" {
			continue
		}
		p := f.key + "=" + *f.col
		if f.unit != nil {
			u := csvUnitName(*f.unit)
			if *f.unit == 0 {
				u = "ns"
			}
			p += ":" + u
		}
		parts = append(parts, p)
	}
	if m.RootParents != nil {
		parts = append(parts, "root="+strings.Join(m.RootParents, "|"))
	}
	if m.StripPodSuffix {
		parts = append(parts, "strip_pod_suffix=true")
	}
	return strings.Join(parts, ",")
}

// ParseCSVMap reads a --csv-map value: comma-separated key=value entries,
// for example
//
//	trace_id=TraceID,span_id=SpanID,parent_span_id=ParentID,service=PodName,
//	operation=OperationName,start=StartTimeUnixNano:ns,end=EndTimeUnixNano:ns,
//	duration=Duration:us,root=root,strip_pod_suffix=true
//
// The keys trace_id, span_id, parent_span_id, service, instance,
// operation, kind, start, end, duration, status, status_code, peer, links
// and the messaging_ keys (messaging_system, messaging_operation,
// messaging_destination, messaging_consumer_group, messaging_message_id,
// messaging_batch_count, messaging_message_bytes, messaging_redelivery)
// name the column that fills that Span field (see CSVMap); csvMapAliases lists
// other spellings (parent_id, operation_name, start_time, ...). The time
// keys start, end and duration take a unit after a colon: ns (the
// default), us, ms or s. root lists the parent values that mark a root
// span, separated by "|" ("root=root|0"); strip_pod_suffix=true strips
// Kubernetes pod suffixes from the service column. Keys are
// case-insensitive, spaces around keys and values are ignored, and the
// whole value "nezha" selects NezhaCSVMap.
//
// trace_id, span_id, service and start are required, and so is end or
// duration. The error lists every problem, each naming its key; an
// unknown key's lists the valid ones. docs/csv.md describes the syntax
// for users, with a mapping for each common layout.
func ParseCSVMap(text string) (*CSVMap, error) {
	if strings.EqualFold(strings.TrimSpace(text), "nezha") {
		return NezhaCSVMap(), nil
	}
	p := newCSVMapParser()
	for _, entry := range strings.Split(text, ",") {
		if err := p.entry(entry); err != nil {
			p.errs = append(p.errs, err)
		}
	}
	return p.finish()
}

// LoadCSVMap reads a column mapping from a file in the ParseCSVMap syntax,
// one key=value entry per line; blank lines and lines starting with "#"
// are ignored, and column names may hold commas. A file whose only entry
// is "nezha" selects NezhaCSVMap.
func LoadCSVMap(path string) (*CSVMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read csv map: %w", err)
	}
	p := newCSVMapParser()
	entries := 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		entries++
		if strings.EqualFold(line, "nezha") && entries == 1 {
			p.preset = true
			continue
		}
		if n := inlineEntries(line); n > 1 {
			p.errs = append(p.errs, fmt.Errorf("%s:%d: %d entries on one line, separated by commas: a map file takes one key=column entry per line (a comma there belongs to the column name)", path, i+1, n))
			continue
		}
		if err := p.entry(line); err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s:%d: %w", path, i+1, err))
		}
	}
	if p.preset {
		if entries > 1 {
			return nil, fmt.Errorf("%s: preset \"nezha\" takes no other entries", path)
		}
		return NezhaCSVMap(), nil
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	if err := p.m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p.m, nil
}

// inlineEntries counts the entries of a map file's line written as the
// inline syntax, "trace_id=TraceID,span_id=SpanID": the comma-separated
// parts that begin with a known key and "=". A line of one entry, even
// with commas in its column name, counts 1 or 0.
func inlineEntries(line string) int {
	n := 0
	for _, part := range strings.Split(line, ",") {
		k, _, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
		if a, ok := csvMapAliases[key]; ok {
			key = a
		}
		if isCSVMapKey(key) {
			n++
		}
	}
	return n
}

// isCSVMapKey reports whether key (lower case, aliases resolved) is a
// --csv-map key.
func isCSVMapKey(key string) bool {
	if key == "root" || key == "strip_pod_suffix" {
		return true
	}
	for _, f := range (&CSVMap{}).fields() {
		if f.key == key {
			return true
		}
	}
	return false
}

// csvMapParser accumulates --csv-map entries.
type csvMapParser struct {
	m      *CSVMap
	seen   map[string]bool
	errs   []error
	preset bool
}

// newCSVMapParser returns a parser with an empty mapping.
func newCSVMapParser() *csvMapParser {
	return &csvMapParser{m: &CSVMap{}, seen: map[string]bool{}}
}

// entry applies one key=value entry; empty entries are ignored.
func (p *csvMapParser) entry(e string) error {
	e = strings.TrimSpace(e)
	if e == "" {
		return nil
	}
	k, v, ok := strings.Cut(e, "=")
	if !ok {
		return fmt.Errorf("%q: want key=value", e)
	}
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
	if a, ok := csvMapAliases[key]; ok {
		key = a
	}
	v = strings.TrimSpace(v)
	if p.seen[key] {
		return fmt.Errorf("key %q given twice", key)
	}
	switch key {
	case "root":
		p.seen[key] = true
		roots := strings.Split(v, "|")
		for i := range roots {
			roots[i] = strings.TrimSpace(roots[i])
		}
		p.m.RootParents = roots
		return nil
	case "strip_pod_suffix":
		p.seen[key] = true
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("key %q: %q is not true or false", key, v)
		}
		p.m.StripPodSuffix = b
		return nil
	}
	for _, f := range p.m.fields() {
		if f.key != key {
			continue
		}
		p.seen[key] = true
		if f.unit != nil {
			if i := strings.LastIndexByte(v, ':'); i >= 0 {
				u, err := parseCSVUnit(strings.TrimSpace(v[i+1:]))
				if err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
				*f.unit = u
				v = strings.TrimSpace(v[:i])
			} else {
				*f.unit = time.Nanosecond
			}
		}
		if v == "" {
			return fmt.Errorf("key %q: empty column name", key)
		}
		*f.col = v
		return nil
	}
	return fmt.Errorf("unknown key %q (want %s)", key, csvMapKeys())
}

// finish validates the mapping and returns it with every problem found.
func (p *csvMapParser) finish() (*CSVMap, error) {
	if len(p.errs) == 0 {
		if err := p.m.Validate(); err != nil {
			return nil, err
		}
		return p.m, nil
	}
	return nil, errors.Join(p.errs...)
}

// parseCSVUnit reads a time unit name.
func parseCSVUnit(s string) (time.Duration, error) {
	switch s {
	case "ns":
		return time.Nanosecond, nil
	case "us", "µs", "μs":
		return time.Microsecond, nil
	case "ms":
		return time.Millisecond, nil
	case "s":
		return time.Second, nil
	}
	return 0, fmt.Errorf("unknown time unit %q (want ns, us, ms or s)", s)
}

// csvUnitName names a time unit, or returns "" for any other duration.
func csvUnitName(u time.Duration) string {
	switch u {
	case time.Nanosecond:
		return "ns"
	case time.Microsecond:
		return "us"
	case time.Millisecond:
		return "ms"
	case time.Second:
		return "s"
	}
	return ""
}

// podSuffixChars are the characters Kubernetes uses in generated name
// suffixes and pod-template hashes (k8s.io/apimachinery's rand alphabet).
const podSuffixChars = "bcdfghjklmnpqrstvwxz2456789"

// isPodSuffix reports whether s is n to m characters of podSuffixChars.
func isPodSuffix(s string, n, m int) bool {
	if len(s) < n || len(s) > m {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(podSuffixChars, s[i]) < 0 {
			return false
		}
	}
	return true
}

// isDecimal reports whether s is n to m decimal digits.
func isDecimal(s string, n, m int) bool {
	if len(s) < n || len(s) > m {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// serviceFromPod strips the suffix Kubernetes adds to a workload's name to
// name its pods: "-<pod-template-hash>-<5 chars>" for a Deployment
// (frontend-579b9bff58-t2dbm → frontend; the hash may also be the decimal
// one of old ReplicaSets or a CronJob's schedule time), "-<5 chars>" for a
// DaemonSet or Job, "-<ordinal>" for a StatefulSet (redis-0 → redis). A
// name with no such suffix is returned as it is.
func serviceFromPod(pod string) string {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 {
		return pod
	}
	base, last := pod[:i], pod[i+1:]
	switch {
	case isPodSuffix(last, 5, 5):
		if j := strings.LastIndexByte(base, '-'); j > 0 {
			if h := base[j+1:]; isPodSuffix(h, 6, 10) || isDecimal(h, 6, 10) {
				return base[:j]
			}
		}
		return base
	case isDecimal(last, 1, 5):
		return base
	}
	return pod
}
