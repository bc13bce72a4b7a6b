package ingest

import (
	"strings"
	"unicode/utf8"

	"cascade"
)

// UnknownService is the service a span is stored under when its source
// names none (an OTLP resource without service.name, a Jaeger process
// without serviceName, a Zipkin span without localEndpoint.serviceName),
// as the OpenTelemetry SDKs and Collector name it.
const UnknownService = "unknown_service"

// Warnings the summary counts (Summary.Warnings keys) for anomalies that
// are kept, each saying what was done about it.
const (
	warnNoService   = "span without a service name (kept as " + UnknownService + ")"
	warnSelfParent  = "span is its own parent (parent cleared: kept as a root)"
	warnParentCycle = "parent cycle (cut at its earliest span, kept as a root)"
	warnInvalidUTF8 = "invalid UTF-8 in a name or attribute (replaced with U+FFFD)"
	warnUnknownKind = "unknown span kind (left empty)"
	warnPromNumber  = "Prometheus API value as a JSON number, not a string (read as the number)"
	warnFileSkipped = "file skipped, not a known format: "
)

// checkSpan repairs what a decoder passed through and the dataset cannot
// hold as it is, and warns once per repair: a missing service, a span that
// names itself as its parent, strings that are not UTF-8.
func checkSpan(s *cascade.Span, warn func(string)) {
	if s.Service == "" {
		s.Service = UnknownService
		warn(warnNoService)
	}
	if s.ParentSpanID != "" && s.ParentSpanID == s.SpanID {
		s.ParentSpanID = ""
		warn(warnSelfParent)
	}
	bad := false
	for _, p := range []*string{&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.Service, &s.Instance, &s.Operation, &s.ErrorType, &s.Peer} {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
			bad = true
		}
	}
	if bad {
		warn(warnInvalidUTF8)
	}
}

// checkSample replaces strings of a metric point that are not UTF-8.
func checkSample(s *cascade.Sample, warn func(string)) {
	bad := false
	for _, p := range []*string{&s.Service, &s.Instance, &s.Metric, &s.Labels} {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
			bad = true
		}
	}
	if bad {
		warn(warnInvalidUTF8)
	}
}

// cutCycles finds parent cycles among one trace's spans (index maps span id
// to position) and cuts each at its earliest span (lowest start, then span
// id), which becomes a root. It returns the number of cycles cut.
func cutCycles(spans []cascade.Span, index map[string]int) int {
	// state: 0 unvisited, 1 on the current walk, 2 done.
	state := make([]uint8, len(spans))
	cut := 0
	var walk []int
	for i := range spans {
		if state[i] != 0 {
			continue
		}
		walk = walk[:0]
		j := i
		for {
			if state[j] == 2 {
				break
			}
			if state[j] == 1 {
				// The walk from where j first appears is a cycle.
				k := len(walk) - 1
				for walk[k] != j {
					k--
				}
				first := walk[k]
				for _, m := range walk[k:] {
					a, b := &spans[m], &spans[first]
					if a.Start < b.Start || a.Start == b.Start && a.SpanID < b.SpanID {
						first = m
					}
				}
				spans[first].ParentSpanID = ""
				cut++
				break
			}
			state[j] = 1
			walk = append(walk, j)
			p, ok := index[spans[j].ParentSpanID]
			if spans[j].ParentSpanID == "" || !ok {
				break
			}
			j = p
		}
		for _, m := range walk {
			state[m] = 2
		}
	}
	return cut
}
