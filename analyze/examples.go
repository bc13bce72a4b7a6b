package analyze

import (
	"cmp"
	"slices"
	"strings"

	"cascade"
	"cascade/incident"
	"cascade/report"
)

// traceAcc is what one pass over the spans keeps of a trace.
type traceAcc struct {
	id          string
	root        *cascade.Span // the earliest root span, a copy
	first, last int64         // the spans' earliest start and latest end
	errors      int
	through     bool  // a span of the origin, or a call to it
	originNS    int64 // the longest such span
}

// examples reads the spans once and picks the traces a reader should
// open (see report.Examples): the slowest, the failed and, when inc has
// an origin, the slowest and failed of those through it since its
// change. The order is fixed by duration and trace id, whatever the
// order of the spans.
func examples(spans cascade.SpanSource, inc *incident.Incident) (*report.Examples, error) {
	origin, since := "", int64(0)
	if inc != nil && len(inc.Origins) > 0 {
		origin = inc.Origins[0]
		for i := range inc.Nodes {
			if n := &inc.Nodes[i]; n.Node == origin && n.Changed {
				since = n.AtNS
			}
		}
	}
	traces := map[string]*traceAcc{}
	err := spans(func(s *cascade.Span) error {
		t := traces[s.TraceID]
		if t == nil {
			t = &traceAcc{id: strings.Clone(s.TraceID), first: s.Start, last: s.End()}
			traces[t.id] = t
		}
		t.first, t.last = min(t.first, s.Start), max(t.last, s.End())
		if s.Status == cascade.StatusError {
			t.errors++
		}
		if s.IsRoot() && (t.root == nil || earlierRoot(s, t.root)) {
			r := *s
			r.Service, r.Operation, r.SpanID = strings.Clone(s.Service), strings.Clone(s.Operation), strings.Clone(s.SpanID)
			t.root = &r
		}
		if origin != "" && (s.Service == origin || s.Peer == origin) {
			t.through = true
			t.originNS = max(t.originNS, s.Duration)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	all := make([]report.TraceExample, 0, len(traces))
	var failed, viaOrigin, viaFailed []report.TraceExample
	for _, t := range traces {
		x := report.TraceExample{TraceID: t.id, StartNS: t.first, DurationMS: float64(t.last-t.first) / 1e6, ErrorSpans: t.errors}
		if r := t.root; r != nil {
			x.Root = r.Service + " " + r.Operation
			x.StartNS, x.DurationMS = r.Start, float64(r.Duration)/1e6
			x.RootFailed = r.Status == cascade.StatusError
		}
		all = append(all, x)
		if x.ErrorSpans > 0 {
			failed = append(failed, x)
		}
		if t.through && x.StartNS >= since {
			x.OriginMS = float64(t.originNS) / 1e6
			viaOrigin = append(viaOrigin, x)
			if x.ErrorSpans > 0 {
				viaFailed = append(viaFailed, x)
			}
		}
	}
	ex := &report.Examples{
		Slowest: firstBy(all, bySlowest),
		Failed:  firstBy(failed, byFailed),
		Origin:  origin,
	}
	if origin != "" {
		ex.OriginSlowest = firstBy(viaOrigin, func(a, b report.TraceExample) int {
			return cmp.Or(cmp.Compare(b.OriginMS, a.OriginMS), bySlowest(a, b))
		})
		ex.OriginFailed = firstBy(viaFailed, byFailed)
	}
	return ex, nil
}

// earlierRoot reports whether root span a goes before b as a trace's
// root: the earlier, then the longer, then the lower span id.
func earlierRoot(a, b *cascade.Span) bool {
	return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.Duration, a.Duration), strings.Compare(a.SpanID, b.SpanID)) < 0
}

// bySlowest orders traces by duration, longest first, then by trace id.
func bySlowest(a, b report.TraceExample) int {
	return cmp.Or(cmp.Compare(b.DurationMS, a.DurationMS), strings.Compare(a.TraceID, b.TraceID))
}

// byFailed puts the failed requests first, then the traces with more
// error spans (a request its retries saved shows its errors; in a
// capture where most requests meet one, the most are the rarest), then
// orders by bySlowest.
func byFailed(a, b report.TraceExample) int {
	if a.RootFailed != b.RootFailed {
		if a.RootFailed {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(b.ErrorSpans, a.ErrorSpans), bySlowest(a, b))
}

// firstBy returns the first report.ExampleTraces of xs in the order of
// by; never nil.
func firstBy(xs []report.TraceExample, by func(a, b report.TraceExample) int) []report.TraceExample {
	slices.SortFunc(xs, by)
	return append([]report.TraceExample{}, xs[:min(len(xs), report.ExampleTraces)]...)
}
