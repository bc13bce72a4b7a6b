package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cascade/ingest"
)

// minJaegerWindow is the smallest time window a Jaeger read is split to.
const minJaegerWindow = time.Second

// jaegerReader reads traces from a Jaeger query service: api_v3 (OTLP JSON
// inside), or the legacy /api/traces when the service has no api_v3.
type jaegerReader struct {
	f      *fetcher
	opts   *ingest.Options
	base   string
	legacy bool // api_v3 answered a plain 404: use /api/traces
}

// pullJaeger reads the traces of every service over [Start, End] into st.
// A window that returns Limit traces may hold more: it is split in two and
// each half read again, down to minJaegerWindow.
func pullJaeger(ctx context.Context, f *fetcher, opts *ingest.Options, st *store) error {
	cfg := f.cfg
	j := &jaegerReader{f: f, opts: opts, base: strings.TrimSuffix(cfg.Jaeger, "/")}
	type window struct{ start, end time.Time }
	for _, svc := range cfg.Services {
		var spans, traces int64
		todo := []window{{cfg.Start, cfg.End}}
		for len(todo) > 0 {
			w := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			s, n, err := j.window(ctx, svc, w.start, w.end)
			if err != nil {
				return err
			}
			if n >= cfg.Limit {
				if w.end.Sub(w.start) > minJaegerWindow {
					mid := w.start.Add(w.end.Sub(w.start) / 2)
					todo = append(todo, window{mid, w.end}, window{w.start, mid})
					continue
				}
				f.stats.Truncated++
				f.log("jaeger: service %q: %d traces between %s and %s, the --limit: some may be missing; raise --limit",
					svc, n, w.start.Format(time.RFC3339Nano), w.end.Format(time.RFC3339Nano))
			}
			f.stats.Spans += int64(len(s.b.spans))
			f.stats.Skipped += s.skipped
			spans += int64(len(s.b.spans))
			traces += int64(n)
			if err := storeBatch(st, &s.b); err != nil {
				return err
			}
		}
		f.log("jaeger: service %q: %d spans in %d traces", svc, spans, traces)
	}
	return nil
}

// window reads one service's traces starting in [start, end], returning
// the rows and how many distinct traces they belong to.
func (j *jaegerReader) window(ctx context.Context, svc string, start, end time.Time) (*pullSink, int, error) {
	limit := strconv.Itoa(j.f.cfg.Limit)
	what := fmt.Sprintf("service %q", svc)
	if !j.legacy {
		endpoint := j.base + "/api/v3/traces"
		v := url.Values{
			"query.service_name":   {svc},
			"query.start_time_min": {start.UTC().Format(time.RFC3339Nano)},
			"query.start_time_max": {end.UTC().Format(time.RFC3339Nano)},
			"query.num_traces":     {limit},
		}
		a, err := j.f.get(ctx, "jaeger", endpoint+"?"+v.Encode())
		if err != nil {
			return nil, 0, err
		}
		switch {
		case a.status == http.StatusNotFound && isAPIv3Error(a.body):
			// api_v3 answers "No traces found" as a 404.
			return &pullSink{}, 0, nil
		case a.status == http.StatusNotFound:
			j.f.log("jaeger: %s answers 404: no api_v3; using %s/api/traces", endpoint, j.base)
			j.legacy = true
		default:
			return j.decode(endpoint, what, a, ingest.FormatOTLPJSON, "an api_v3 answer")
		}
	}
	endpoint := j.base + "/api/traces"
	v := url.Values{
		"service": {svc},
		"start":   {strconv.FormatInt(start.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(end.UnixMicro(), 10)},
		"limit":   {limit},
	}
	a, err := j.f.get(ctx, "jaeger", endpoint+"?"+v.Encode())
	if err != nil {
		return nil, 0, err
	}
	if a.status == http.StatusNotFound {
		return nil, 0, fmt.Errorf("jaeger %s: 404 Not Found on both /api/v3/traces and /api/traces: is this a Jaeger query service?%s", j.base, snippet(a.body))
	}
	return j.decode(endpoint, what, a, ingest.FormatJaegerJSON, "a Jaeger /api/traces answer")
}

// decode decodes one answer and counts its traces.
func (j *jaegerReader) decode(endpoint, what string, a *answer, format ingest.Format, want string) (*pullSink, int, error) {
	s := &pullSink{}
	derr := ingest.Decode("answer", bytes.NewReader(a.body), format, j.opts, s)
	if err := answerError("jaeger", endpoint, what, a, s, derr, want); err != nil {
		return nil, 0, err
	}
	ids := map[string]struct{}{}
	for i := range s.b.spans {
		ids[s.b.spans[i].TraceID] = struct{}{}
	}
	return s, len(ids), nil
}

// isAPIv3Error reports whether a body is api_v3's error document,
// {"error": {"httpCode": 404, "message": ...}}, rather than a router's
// plain 404 page.
func isAPIv3Error(body []byte) bool {
	var doc struct {
		Error *struct {
			HTTPCode int `json:"httpCode"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &doc) == nil && doc.Error != nil && doc.Error.HTTPCode != 0
}
