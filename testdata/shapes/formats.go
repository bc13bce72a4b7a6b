package shapes

// The writers: one capture's spans in each format Config.Format names.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// marshal writes the spans as one ExportTraceServiceRequest, a resource
// per service, spans in the order they were recorded.
func (g *gen) marshal() ([]byte, error) {
	td := ptrace.NewTraces()
	scopes := map[string]ptrace.SpanSlice{}
	for _, svc := range Services {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		rs.Resource().Attributes().PutStr("service.instance.id", svc+"-0")
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("cascade/testdata/shapes")
		scopes[svc] = ss.Spans()
	}
	sorted := slices.Clone(g.spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for _, s := range sorted {
		sp := scopes[s.svc].AppendEmpty()
		sp.SetTraceID(pcommon.TraceID(s.trace))
		sp.SetSpanID(pcommon.SpanID(s.id))
		if s.parent != ([8]byte{}) {
			sp.SetParentSpanID(pcommon.SpanID(s.parent))
		}
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.Timestamp(s.start))
		sp.SetEndTimestamp(pcommon.Timestamp(s.end))
		if s.kind == ptrace.SpanKindClient {
			sp.Attributes().PutStr("http.request.method", "GET")
		}
		if s.code != 0 {
			sp.Attributes().PutInt("http.response.status_code", s.code)
		}
		if s.errType != "" {
			sp.Attributes().PutStr("error.type", s.errType)
		}
		if s.status == "error" {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	var m ptrace.JSONMarshaler
	return m.MarshalTraces(td)
}

// marshalZipkin writes the spans as Brave reports them to Zipkin (see
// ZipkinBrave).
func (g *gen) marshalZipkin() ([]byte, error) {
	byID := map[[8]byte]*span{}
	for i := range g.spans {
		byID[g.spans[i].id] = &g.spans[i]
	}
	// A server span whose parent is its client's span shares that span's
	// id and parent; its children name the shared id.
	shared := map[[8]byte][8]byte{} // server id -> client id
	for _, s := range g.spans {
		if p := byID[s.parent]; s.kind == ptrace.SpanKindServer && p != nil && p.kind == ptrace.SpanKindClient {
			shared[s.id] = p.id
		}
	}
	type endpoint struct {
		ServiceName string `json:"serviceName,omitempty"`
		IPv4        string `json:"ipv4,omitempty"`
		Port        int    `json:"port,omitempty"`
	}
	type zspan struct {
		TraceID        string            `json:"traceId"`
		ParentID       string            `json:"parentId,omitempty"`
		ID             string            `json:"id"`
		Kind           string            `json:"kind,omitempty"`
		Name           string            `json:"name"`
		Timestamp      int64             `json:"timestamp"`
		Duration       int64             `json:"duration"`
		LocalEndpoint  endpoint          `json:"localEndpoint"`
		RemoteEndpoint *endpoint         `json:"remoteEndpoint,omitempty"`
		Tags           map[string]string `json:"tags,omitempty"`
		Shared         bool              `json:"shared,omitempty"`
	}
	ip := func(svc string) string { return fmt.Sprintf("10.0.0.%d", slices.Index(Services, svc)+2) }
	sorted := slices.Clone(g.spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	out := make([]zspan, 0, len(sorted))
	for _, s := range sorted {
		id, parent := s.id, s.parent
		z := zspan{TraceID: fmt.Sprintf("%x", s.trace), LocalEndpoint: endpoint{ServiceName: s.svc, IPv4: ip(s.svc)}}
		if c, ok := shared[id]; ok {
			id, parent, z.Shared = c, byID[c].parent, true
		}
		if c, ok := shared[parent]; ok {
			parent = c
		}
		z.ID = fmt.Sprintf("%x", id)
		if parent != ([8]byte{}) {
			z.ParentID = fmt.Sprintf("%x", parent)
		}
		// Brave's HTTP spans are named by method (client) or method and
		// route (server), lower case.
		path := strings.TrimPrefix(s.name, "GET ")
		z.Tags = map[string]string{"http.method": "GET", "http.path": path}
		switch s.kind {
		case ptrace.SpanKindClient:
			z.Kind, z.Name = "CLIENT", "get"
		case ptrace.SpanKindServer:
			z.Kind, z.Name = "SERVER", "get "+strings.ToLower(path)
		}
		// µs, as Brave's clock gives them: the start truncated, the
		// duration at least 1.
		z.Timestamp = s.start / 1000
		z.Duration = max(1, s.end/1000-z.Timestamp)
		if s.code != 0 {
			z.Tags["http.status_code"] = strconv.FormatInt(s.code, 10)
		}
		if s.status == "error" {
			// Brave tags a failed HTTP exchange's error with its status,
			// and one that ended without an answer (a deadline) with the
			// exception's message.
			z.Tags["error"] = "Read timed out"
			switch {
			case s.errType != "":
				z.Tags["error"] = s.errType
			case s.code != 0:
				z.Tags["error"] = strconv.FormatInt(s.code, 10)
			}
		}
		out = append(out, z)
	}
	return json.Marshal(out)
}

// marshalJaeger writes the spans as Jaeger's query API answers for them
// (see Jaeger): traces in order of their first span, spans by start.
func (g *gen) marshalJaeger() ([]byte, error) {
	type tag struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	type ref struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	type jspan struct {
		TraceID       string   `json:"traceID"`
		SpanID        string   `json:"spanID"`
		OperationName string   `json:"operationName"`
		References    []ref    `json:"references"`
		StartTime     int64    `json:"startTime"`
		Duration      int64    `json:"duration"`
		Tags          []tag    `json:"tags"`
		Logs          []any    `json:"logs"`
		ProcessID     string   `json:"processID"`
		Warnings      []string `json:"warnings"`
	}
	type process struct {
		ServiceName string `json:"serviceName"`
		Tags        []tag  `json:"tags"`
	}
	type jtrace struct {
		TraceID   string             `json:"traceID"`
		Spans     []jspan            `json:"spans"`
		Processes map[string]process `json:"processes"`
		Warnings  []string           `json:"warnings"`
	}
	sorted := slices.Clone(g.spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var traces []*jtrace
	byTrace := map[[16]byte]*jtrace{}
	for _, s := range sorted {
		tr := byTrace[s.trace]
		if tr == nil {
			tr = &jtrace{TraceID: fmt.Sprintf("%x", s.trace), Processes: map[string]process{}, Spans: []jspan{}}
			byTrace[s.trace] = tr
			traces = append(traces, tr)
		}
		pid := fmt.Sprintf("p%d", slices.Index(Services, s.svc)+1)
		if _, ok := tr.Processes[pid]; !ok {
			tr.Processes[pid] = process{ServiceName: s.svc, Tags: []tag{
				{"service.instance.id", "string", s.svc + "-0"},
				{"telemetry.sdk.language", "string", "go"},
			}}
		}
		js := jspan{TraceID: tr.TraceID, SpanID: fmt.Sprintf("%x", s.id), OperationName: s.name,
			References: []ref{}, StartTime: s.start / 1000, Logs: []any{}, ProcessID: pid}
		js.Duration = max(1, s.end/1000-js.StartTime)
		if s.parent != ([8]byte{}) {
			js.References = append(js.References, ref{"CHILD_OF", tr.TraceID, fmt.Sprintf("%x", s.parent)})
		}
		// Jaeger sorts a span's tags by key.
		if s.status == "error" {
			js.Tags = append(js.Tags, tag{"error", "bool", true})
		}
		if s.errType != "" {
			js.Tags = append(js.Tags, tag{"error.type", "string", s.errType})
		}
		if s.kind == ptrace.SpanKindClient {
			js.Tags = append(js.Tags, tag{"http.request.method", "string", "GET"})
		}
		if s.code != 0 {
			js.Tags = append(js.Tags, tag{"http.response.status_code", "int64", s.code})
		}
		js.Tags = append(js.Tags, tag{"otel.scope.name", "string", "cascade/testdata/shapes"})
		if s.status == "error" {
			js.Tags = append(js.Tags, tag{"otel.status_code", "string", "ERROR"})
		}
		kind := "server"
		if s.kind == ptrace.SpanKindClient {
			kind = "client"
		}
		js.Tags = append(js.Tags, tag{"span.kind", "string", kind})
		tr.Spans = append(tr.Spans, js)
	}
	out := struct {
		Data   []*jtrace `json:"data"`
		Total  int       `json:"total"`
		Limit  int       `json:"limit"`
		Offset int       `json:"offset"`
		Errors any       `json:"errors"`
	}{Data: traces}
	if out.Data == nil {
		out.Data = []*jtrace{}
	}
	return json.Marshal(out)
}

// marshalNezha writes the spans as Nezha's CSV (see NezhaCSV).
func (g *gen) marshalNezha() ([]byte, error) {
	if g.sh.style != Pairs {
		return nil, fmt.Errorf("shapes: %s records %s, which the Nezha CSV cannot", g.cfg.Shape, g.sh.style)
	}
	for _, e := range g.sh.edges {
		if e.timeoutMS > 0 {
			return nil, fmt.Errorf("shapes: %s cuts calls at a deadline, which the Nezha CSV cannot record", g.cfg.Shape)
		}
	}
	// Deployment pods, as TrainTicket's: "-<pod-template-hash>-<5>" in
	// Kubernetes' suffix alphabet.
	pod := func(svc string) string { return nezhaPods[svc] }
	type row struct {
		trace, id, parent [8]byte
		root              bool
		traceHex          string
		svc, op           string
		start, end        int64
	}
	byID := map[[8]byte]*span{}
	for i := range g.spans {
		byID[g.spans[i].id] = &g.spans[i]
	}
	var rows []row
	for _, s := range g.spans {
		th := fmt.Sprintf("%x", s.trace)
		switch s.kind {
		case ptrace.SpanKindServer:
			r := row{id: s.id, parent: s.parent, root: s.parent == ([8]byte{}), traceHex: th, svc: s.svc,
				op: "/api/v1/" + s.svc + "service/" + strings.TrimPrefix(s.name, "GET /"), start: s.start, end: s.end}
			rows = append(rows, r)
			// The controller span does the request's work and makes its
			// calls (the calls' parent is the controller: see below).
			ctl := s.id
			ctl[0] ^= 0xff
			rows = append(rows, row{id: ctl, parent: s.id, traceHex: th, svc: s.svc,
				op: strings.ToUpper(s.svc[:1]) + s.svc[1:] + "Controller.handle", start: s.start + 20_000, end: s.end - 60_000})
			if s.status == "error" {
				disp := s.id
				disp[1] ^= 0xff
				rows = append(rows, row{id: disp, parent: s.id, traceHex: th, svc: s.svc,
					op: "BasicErrorController.error", start: s.end - 50_000, end: s.end - 20_000})
			}
		case ptrace.SpanKindClient:
			parent := s.parent
			if p := byID[parent]; p != nil && p.kind == ptrace.SpanKindServer {
				parent[0] ^= 0xff // the caller's controller span
			}
			rows = append(rows, row{id: s.id, parent: parent, traceHex: th, svc: s.svc, op: "HTTP GET", start: s.start, end: s.end})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.start, b.start) })
	var b strings.Builder
	b.WriteString("TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n")
	for _, r := range rows {
		parent := "root"
		if !r.root {
			parent = fmt.Sprintf("%x", r.parent)
		}
		fmt.Fprintf(&b, "%s,%x,%s,%s,%s,%d,%d,%d\n", r.traceHex, r.id, parent, pod(r.svc), r.op, r.start, r.end, (r.end-r.start)/1000)
	}
	return []byte(b.String()), nil
}
