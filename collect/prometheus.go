package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cascade/ingest"
)

// maxPromPoints is how many steps one query_range asks for: Prometheus
// refuses more than 11,000 points per series, so longer ranges are read in
// windows of this many steps.
const maxPromPoints = 10000

// pullPrometheus reads every query over [Start, End] with query_range,
// window by window, into st.
func pullPrometheus(ctx context.Context, f *fetcher, opts *ingest.Options, st *store) error {
	cfg := f.cfg
	endpoint := strings.TrimSuffix(cfg.Prometheus, "/") + "/api/v1/query_range"
	window := cfg.Step * maxPromPoints
	for _, q := range cfg.Queries {
		name, expr := splitQuery(q)
		var samples int64
		for start := cfg.Start; !start.After(cfg.End); start = start.Add(window) {
			end := start.Add(window - cfg.Step)
			if end.After(cfg.End) {
				end = cfg.End
			}
			v := url.Values{
				"query": {expr},
				"start": {promTime(start)},
				"end":   {promTime(end)},
				"step":  {strconv.FormatFloat(cfg.Step.Seconds(), 'f', -1, 64)},
			}
			a, err := f.get(ctx, "prometheus", endpoint+"?"+v.Encode())
			if err != nil {
				return err
			}
			s := &pullSink{}
			derr := ingest.Decode(name, bytes.NewReader(a.body), ingest.FormatPromAPI, opts, s)
			if err := answerError("prometheus", endpoint, fmt.Sprintf("query %q", expr), a, s, derr, "a Prometheus API answer"); err != nil {
				return err
			}
			f.stats.Samples += int64(len(s.b.samples))
			f.stats.Skipped += s.skipped
			samples += int64(len(s.b.samples))
			if err := storeBatch(st, &s.b); err != nil {
				return err
			}
		}
		f.log("prometheus: query %q: %d samples", expr, samples)
	}
	return nil
}

// answerError judges a decoded answer: nil when it was a 2xx that
// decoded, else an error naming the source, the endpoint and what was
// asked. A 2xx answer that does not decode is garbage: the error wraps the
// *ingest.ParseError that says where. An error answer carrying the API's
// own error document (Prometheus answers 400 {"status": "error", ...})
// gives that document's message; any other error answer its status and
// the start of its body.
func answerError(source, endpoint, what string, a *answer, s *pullSink, derr error, want string) error {
	var pe *ingest.ParseError
	switch {
	case s.syntax != nil:
		pe = s.syntax
	case errors.As(derr, &pe):
	case derr != nil:
		return fmt.Errorf("%s %s: %s: %w", source, endpoint, what, derr)
	}
	ok := a.status/100 == 2
	status := fmt.Sprintf("%d %s", a.status, http.StatusText(a.status))
	switch {
	case pe == nil && ok:
		return nil
	case pe == nil:
		return fmt.Errorf("%s %s: %s: %s%s", source, endpoint, what, status, snippet(a.body))
	}
	located := *pe
	located.File = "answer"
	switch {
	case ok:
		return fmt.Errorf("%s %s: %s: not %s: %w", source, endpoint, what, want, &located)
	case errors.Is(pe, ingest.ErrUnsupported):
		return fmt.Errorf("%s %s: %s: %s: %w", source, endpoint, what, status, pe.Err)
	}
	return fmt.Errorf("%s %s: %s: %s%s", source, endpoint, what, status, snippet(a.body))
}

// promTime formats a time as Prometheus API seconds, to the millisecond.
func promTime(t time.Time) string {
	ms := t.UnixMilli()
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

// splitQuery splits a --query value "NAME=EXPR" into its name and
// expression. Without a name (the text before the first '=' is not a
// metric name, or '=' starts "==", "=~"), the whole value is the
// expression and the name is the expression reduced to a metric-name-like
// identifier.
func splitQuery(q string) (name, expr string) {
	if i := strings.IndexByte(q, '='); i > 0 && isMetricName(q[:i]) && (i+1 >= len(q) || (q[i+1] != '=' && q[i+1] != '~')) {
		return q[:i], strings.TrimSpace(q[i+1:])
	}
	expr = strings.TrimSpace(q)
	return identifier(expr), expr
}

// isMetricName reports whether s is a Prometheus metric name.
func isMetricName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return s != ""
}

// identifier reduces an expression to letters, digits and single
// underscores, at most 100 bytes: "rate(x[1m])" becomes "rate_x_1m".
func identifier(expr string) string {
	var b strings.Builder
	under := false
	for _, c := range expr {
		ok := c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		switch {
		case ok:
			b.WriteRune(c)
			under = false
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= 100 {
			break
		}
	}
	s := strings.TrimRight(b.String(), "_")
	if s == "" {
		return "query_result"
	}
	return s
}
