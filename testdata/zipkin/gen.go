//go:build ignore

// Command gen writes this directory's Zipkin v2 JSON fixtures from the
// HotROD capture in ../hotrod-baseline/traces-otlp.json.gz, as Zipkin would
// answer for those traces had they been exported to it by the OpenTelemetry
// Collector's zipkin exporter. See README.md. Run it from this directory:
//
//	go run gen.go
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The traces written: the one of ../hotrod-baseline/sample-trace-*.json as
// GET /api/v2/trace/{id} answers it, and the one with the lowest id as
// GET /api/v2/traces answers (an array of traces; one, to keep the
// fixtures under 100 KB). Both have failed redis GetDriver calls.
const sampleTrace = "ef5aa2102862164619b50936123de89b"

// listTraces are the traces of the /api/v2/traces answer.
var listTraces = []string{"00778004de2b8221634bca02890026e2"}

// main writes the two fixture files.
func main() {
	spans, err := readOTLP("../hotrod-baseline/traces-otlp.json.gz")
	if err != nil {
		log.Fatal(err)
	}
	one := encodeTrace(spans[sampleTrace])
	if err := os.WriteFile("hotrod-trace-"+sampleTrace+".json", one, 0o644); err != nil {
		log.Fatal(err)
	}
	// /api/v2/traces lists the newest trace first.
	traces := make([][]zspan, 0, len(listTraces))
	for _, id := range listTraces {
		traces = append(traces, spans[id])
	}
	slices.SortFunc(traces, func(a, b []zspan) int { return -compareInt(a[0].timestamp, b[0].timestamp) })
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range traces {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encodeTrace(t))
	}
	b.WriteByte(']')
	if err := os.WriteFile("hotrod-traces.json", b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// OTLP JSON, as Jaeger's api_v3 writes it.
type (
	otlpAnswer struct {
		Result struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []otlpKV `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Scope struct {
						Name    string `json:"name"`
						Version string `json:"version"`
					} `json:"scope"`
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	otlpSpan struct {
		TraceID      string          `json:"traceId"`
		SpanID       string          `json:"spanId"`
		ParentSpanID string          `json:"parentSpanId"`
		Name         string          `json:"name"`
		Kind         int             `json:"kind"`
		Start        string          `json:"startTimeUnixNano"`
		End          string          `json:"endTimeUnixNano"`
		Attributes   []otlpKV        `json:"attributes"`
		Events       []otlpSpanEvent `json:"events"`
		Links        []any           `json:"links"`
		TraceState   string          `json:"traceState"`
		Status       struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	}
	otlpSpanEvent struct {
		Time       string   `json:"timeUnixNano"`
		Name       string   `json:"name"`
		Attributes []otlpKV `json:"attributes"`
	}
	otlpKV struct {
		Key   string `json:"key"`
		Value struct {
			StringValue *string  `json:"stringValue"`
			IntValue    *string  `json:"intValue"`
			BoolValue   *bool    `json:"boolValue"`
			DoubleValue *float64 `json:"doubleValue"`
		} `json:"value"`
	}
)

// asString is pcommon.Value.AsString, for the value types HotROD uses.
func (kv otlpKV) asString() string {
	v := kv.Value
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		return *v.IntValue
	case v.BoolValue != nil:
		return strconv.FormatBool(*v.BoolValue)
	case v.DoubleValue != nil:
		return strconv.FormatFloat(*v.DoubleValue, 'f', -1, 64)
	}
	log.Fatalf("attribute %s: unsupported value type", kv.Key)
	return ""
}

// asRaw is pcommon.Value.AsRaw.
func (kv otlpKV) asRaw() any {
	v := kv.Value
	switch {
	case v.IntValue != nil:
		n, err := strconv.ParseInt(*v.IntValue, 10, 64)
		if err != nil {
			log.Fatal(err)
		}
		return n
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.DoubleValue != nil:
		return *v.DoubleValue
	}
	return kv.asString()
}

// zspan is a Zipkin v2 span as Zipkin's server holds it.
type zspan struct {
	traceID, parentID, id, kind, name string
	timestamp, duration               int64
	local, remote                     *endpoint
	annotations                       []annotation
	tags                              map[string]string
}

// endpoint is a Zipkin endpoint.
type endpoint struct {
	serviceName, ipv4, ipv6 string
	port                    int
}

// annotation is a Zipkin annotation.
type annotation struct {
	timestamp int64
	value     string
}

// readOTLP converts every span of the capture, grouped by trace.
func readOTLP(path string) (map[string][]zspan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var a otlpAnswer
	if err := json.NewDecoder(zr).Decode(&a); err != nil {
		return nil, err
	}
	out := map[string][]zspan{}
	for _, rs := range a.Result.ResourceSpans {
		// resourceToZipkinEndpointServiceNameAndAttributeMap
		service := ""
		resTags := map[string]string{}
		for _, kv := range rs.Resource.Attributes {
			resTags[kv.Key] = kv.asString()
		}
		if v, ok := resTags["service.name"]; ok {
			service = v
			delete(resTags, "service.name")
		}
		for _, ss := range rs.ScopeSpans {
			// extractScopeTags: it writes into the resource's map, so a
			// scope's tags stay for the scopes after it.
			if ss.Scope.Name != "" {
				resTags["otel.library.name"] = ss.Scope.Name
			}
			if ss.Scope.Version != "" {
				resTags["otel.library.version"] = ss.Scope.Version
			}
			for _, sp := range ss.Spans {
				if !wanted(sp.TraceID) {
					continue
				}
				out[sp.TraceID] = append(out[sp.TraceID], toZipkin(sp, service, resTags))
			}
		}
	}
	for id, spans := range out {
		slices.SortFunc(spans, func(a, b zspan) int {
			if c := compareInt(a.timestamp, b.timestamp); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		out[id] = spans
	}
	return out, nil
}

// wanted reports whether a trace goes into a fixture.
func wanted(id string) bool { return id == sampleTrace || slices.Contains(listTraces, id) }

// toZipkin follows the Collector's spanToZipkinSpan, then zipkin-go's JSON
// encoding (times rounded to microseconds), then what Zipkin's server does
// to a span it stores (lower-case names, sorted tags and annotations).
func toZipkin(sp otlpSpan, service string, resTags map[string]string) zspan {
	tags := map[string]string{}
	for k, v := range resTags {
		tags[k] = v
	}
	for _, kv := range sp.Attributes {
		tags[kv.Key] = kv.asString()
	}
	if sp.TraceState != "" || len(sp.Links) > 0 {
		log.Fatalf("span %s: trace state and links are not converted", sp.SpanID)
	}
	start, end := parseInt(sp.Start), parseInt(sp.End)
	z := zspan{
		traceID:   sp.TraceID,
		id:        sp.SpanID,
		parentID:  sp.ParentSpanID,
		name:      strings.ToLower(sp.Name),
		timestamp: roundMicros(start),
		tags:      tags,
	}
	if end != 0 {
		d := end - start
		switch {
		case d > 0 && d < 1000:
			z.duration = 1
		default:
			z.duration = (d + 500) / 1000
		}
	}
	switch sp.Kind {
	case 2:
		z.kind = "SERVER"
	case 3:
		z.kind = "CLIENT"
	case 4:
		z.kind = "PRODUCER"
	case 5:
		z.kind = "CONSUMER"
	case 1:
		tags["span.kind"] = "internal"
	}
	// zipkinEndpointFromTags, local then remote; the tags used are removed.
	z.local = endpointFromTags(tags, strings.ToLower(service), "net.host.ip", "net.host.port", false)
	z.remote = endpointFromTags(tags, "", "net.peer.ip", "net.peer.port", true)
	// populateStatus
	if sp.Status.Code == 2 {
		tags["error"] = "true"
	} else {
		delete(tags, "error")
	}
	if sp.Status.Code != 0 {
		tags["otel.status_code"] = map[int]string{1: "OK", 2: "ERROR"}[sp.Status.Code]
		if sp.Status.Message != "" {
			tags["otel.status_description"] = sp.Status.Message
		}
	}
	// spanEventsToZipkinAnnotations
	for _, e := range sp.Events {
		a := annotation{timestamp: roundMicros(parseInt(e.Time)), value: e.Name}
		if len(e.Attributes) > 0 {
			attrs := map[string]any{}
			for _, kv := range e.Attributes {
				attrs[kv.Key] = kv.asRaw()
			}
			js, err := json.Marshal(attrs)
			if err != nil {
				log.Fatal(err)
			}
			a.value = fmt.Sprintf("%s|%s|%d", e.Name, js, 0)
		}
		z.annotations = append(z.annotations, a)
	}
	slices.SortFunc(z.annotations, func(a, b annotation) int {
		if c := compareInt(a.timestamp, b.timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	return z
}

// endpointFromTags is the Collector's zipkinEndpointFromTags: the endpoint
// named by the service (or, remote, by peer.service) and the address tags,
// which it removes; nil when it names nothing.
func endpointFromTags(tags map[string]string, service, ipKey, portKey string, remote bool) *endpoint {
	e := &endpoint{serviceName: service}
	if v, ok := tags["peer.service"]; ok && remote {
		e.serviceName = strings.ToLower(v)
		delete(tags, "peer.service")
	}
	if v, ok := tags[ipKey]; ok {
		if strings.Contains(v, ":") {
			e.ipv6 = v
		} else {
			e.ipv4 = v
		}
		delete(tags, ipKey)
	}
	if v, ok := tags[portKey]; ok {
		e.port, _ = strconv.Atoi(v)
		delete(tags, portKey)
	}
	if e.serviceName == "" && e.ipv4 == "" && e.ipv6 == "" {
		return nil
	}
	return e
}

// roundMicros is time.Time.Round(time.Microsecond) in Unix microseconds.
func roundMicros(ns int64) int64 { return (ns + 500) / 1000 }

// parseInt parses a decimal int64 or stops the program.
func parseInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		log.Fatal(err)
	}
	return n
}

// compareInt orders two integers.
func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// encodeTrace writes spans as Zipkin's V2SpanWriter does: fixed member
// order, empty members left out, tags in key order, no spaces.
func encodeTrace(spans []zspan) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range spans {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"traceId":"%s"`, s.traceID)
		if s.parentID != "" {
			fmt.Fprintf(&b, `,"parentId":"%s"`, s.parentID)
		}
		fmt.Fprintf(&b, `,"id":"%s"`, s.id)
		if s.kind != "" {
			fmt.Fprintf(&b, `,"kind":"%s"`, s.kind)
		}
		if s.name != "" {
			fmt.Fprintf(&b, `,"name":"%s"`, jsonEscape(s.name))
		}
		if s.timestamp != 0 {
			fmt.Fprintf(&b, `,"timestamp":%d`, s.timestamp)
		}
		if s.duration != 0 {
			fmt.Fprintf(&b, `,"duration":%d`, s.duration)
		}
		if s.local != nil {
			b.WriteString(`,"localEndpoint":`)
			writeEndpoint(&b, s.local)
		}
		if s.remote != nil {
			b.WriteString(`,"remoteEndpoint":`)
			writeEndpoint(&b, s.remote)
		}
		if len(s.annotations) > 0 {
			b.WriteString(`,"annotations":[`)
			for j, a := range s.annotations {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"timestamp":%d,"value":"%s"}`, a.timestamp, jsonEscape(a.value))
			}
			b.WriteByte(']')
		}
		if len(s.tags) > 0 {
			b.WriteString(`,"tags":{`)
			keys := make([]string, 0, len(s.tags))
			for k := range s.tags {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for j, k := range keys {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%s":"%s"`, jsonEscape(k), jsonEscape(s.tags[k]))
			}
			b.WriteByte('}')
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// writeEndpoint writes an endpoint as V2SpanWriter does.
func writeEndpoint(b *bytes.Buffer, e *endpoint) {
	var parts []string
	if e.serviceName != "" {
		parts = append(parts, fmt.Sprintf(`"serviceName":"%s"`, jsonEscape(e.serviceName)))
	}
	if e.ipv4 != "" {
		parts = append(parts, fmt.Sprintf(`"ipv4":"%s"`, e.ipv4))
	}
	if e.ipv6 != "" {
		parts = append(parts, fmt.Sprintf(`"ipv6":"%s"`, e.ipv6))
	}
	if e.port != 0 {
		parts = append(parts, fmt.Sprintf(`"port":%d`, e.port))
	}
	b.WriteString("{" + strings.Join(parts, ",") + "}")
}

// jsonEscape is Zipkin's JsonEscaper: quotes, backslashes, control
// characters and U+2028/U+2029 are escaped; HTML characters are not.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
