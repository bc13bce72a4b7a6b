package analyze

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/incident"
	"cascade/report"
)

// TestExamples picks the example traces from a handful of traces, in
// every order of their spans.
func TestExamples(t *testing.T) {
	const ms = int64(1e6)
	sp := func(trace, id, parent, service string, start, dur int64, failed bool) cascade.Span {
		s := cascade.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: service, Operation: "op",
			Start: start * ms, Duration: dur * ms, Status: cascade.StatusOK}
		if failed {
			s.Status = cascade.StatusError
		}
		return s
	}
	spans := []cascade.Span{
		// a: slow, through db before the change.
		sp("a", "1", "", "web", 0, 900, false), sp("a", "2", "1", "db", 10, 800, false),
		// b: as slow as a (the id breaks the tie), failed at the root.
		sp("b", "1", "", "web", 100, 900, true), sp("b", "2", "1", "db", 110, 50, true),
		// c: fast, two error spans, answered; through db after the change.
		sp("c", "1", "", "web", 2000, 100, false), sp("c", "2", "1", "db", 2010, 60, true),
		sp("c", "3", "1", "db", 2080, 10, true),
		// d: no root; its spans span 2100 .. 2700; a call to db.
		sp("d", "2", "x", "api", 2100, 300, false),
		{TraceID: "d", SpanID: "3", ParentSpanID: "2", Service: "api", Operation: "op", Peer: "db", Start: 2200 * ms, Duration: 500 * ms},
		// e: one error, slowest of all, never near db.
		sp("e", "1", "", "web", 3000, 5000, false), sp("e", "2", "1", "cache", 3100, 10, true),
	}
	inc := &incident.Incident{Origins: []string{"db"}, Nodes: []incident.NodeChange{{Node: "db", Changed: true, AtNS: 1000 * ms}}}
	ids := func(xs []report.TraceExample) []string {
		out := []string{}
		for _, x := range xs {
			out = append(out, x.TraceID)
		}
		return out
	}
	tests := []struct {
		name string
		inc  *incident.Incident
		want map[string][]string
	}{
		{"origin", inc, map[string][]string{"slowest": {"e", "a", "b"}, "failed": {"b", "c", "e"},
			"origin_slowest": {"d", "c"}, "origin_failed": {"c"}}},
		{"no incident", nil, map[string][]string{"slowest": {"e", "a", "b"}, "failed": {"b", "c", "e"},
			"origin_slowest": {}, "origin_failed": {}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var first *report.Examples
			for round := range 8 {
				order := append([]cascade.Span(nil), spans...)
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				ex, err := examples(func(fn func(*cascade.Span) error) error {
					for i := range order {
						if err := fn(&order[i]); err != nil {
							return err
						}
					}
					return nil
				}, tc.inc)
				require.NoError(t, err)
				got := map[string][]string{"slowest": ids(ex.Slowest), "failed": ids(ex.Failed),
					"origin_slowest": ids(ex.OriginSlowest), "origin_failed": ids(ex.OriginFailed)}
				require.Equal(t, tc.want, got, "round %d", round)
				if first == nil {
					first = ex
					continue
				}
				require.Equal(t, first, ex, "round %d: the span order reached the examples", round)
			}
			if tc.inc == nil {
				require.Empty(t, first.Origin)
				return
			}
			require.Equal(t, "db", first.Origin)
			d := first.OriginSlowest[0]
			require.Equal(t, report.TraceExample{TraceID: "d", StartNS: 2100 * ms, DurationMS: 600, OriginMS: 500}, d, "a trace without a root runs from its first span to its last")
			b := first.Failed[0]
			require.Equal(t, report.TraceExample{TraceID: "b", Root: "web op", StartNS: 100 * ms, DurationMS: 900, ErrorSpans: 2, RootFailed: true}, b)
		})
	}
}
