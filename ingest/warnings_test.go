package ingest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// TestCutCycles checks that every parent cycle of a trace is cut once, at
// its earliest span, and that spans hanging off a cycle keep their parent.
func TestCutCycles(t *testing.T) {
	sp := func(id, parent string, start int64) cascade.Span {
		return cascade.Span{SpanID: id, ParentSpanID: parent, Start: start}
	}
	tests := []struct {
		name    string
		spans   []cascade.Span
		cut     int
		parents []string // ParentSpanID of each span after the cut
	}{
		{"tree", []cascade.Span{sp("a", "", 1), sp("b", "a", 2), sp("c", "b", 3)}, 0, []string{"", "a", "b"}},
		{"orphan", []cascade.Span{sp("b", "x", 2)}, 0, []string{"x"}},
		{"two-cycle", []cascade.Span{sp("a", "b", 5), sp("b", "a", 2)}, 1, []string{"b", ""}},
		{"three-cycle with a tail", []cascade.Span{sp("t", "c", 9), sp("a", "c", 3), sp("b", "a", 3), sp("c", "b", 4)}, 1, []string{"c", "", "a", "b"}},
		{"two cycles", []cascade.Span{sp("a", "b", 1), sp("b", "a", 1), sp("c", "d", 7), sp("d", "c", 6)}, 2, []string{"", "a", "d", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			index := map[string]int{}
			for i, s := range tc.spans {
				index[s.SpanID] = i
			}
			require.Equal(t, tc.cut, cutCycles(tc.spans, index))
			var got []string
			for _, s := range tc.spans {
				got = append(got, s.ParentSpanID)
			}
			require.Equal(t, tc.parents, got)
		})
	}
}

// TestCheckSpan checks the repairs the sinks make, each with its warning.
func TestCheckSpan(t *testing.T) {
	tests := []struct {
		name string
		in   cascade.Span
		want cascade.Span
		warn string
	}{
		{"clean", cascade.Span{SpanID: "a", Service: "s"}, cascade.Span{SpanID: "a", Service: "s"}, ""},
		{"no service", cascade.Span{SpanID: "a"}, cascade.Span{SpanID: "a", Service: UnknownService}, warnNoService},
		{"own parent", cascade.Span{SpanID: "a", ParentSpanID: "a", Service: "s"}, cascade.Span{SpanID: "a", Service: "s"}, warnSelfParent},
		{"invalid UTF-8", cascade.Span{SpanID: "a", Service: "s\xff", Peer: "p\xc3"}, cascade.Span{SpanID: "a", Service: "s\uFFFD", Peer: "p\uFFFD"}, warnInvalidUTF8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			warns := map[string]int{}
			s := tc.in
			checkSpan(&s, func(k string) { warns[k]++ })
			require.Equal(t, tc.want, s)
			if tc.warn == "" {
				require.Empty(t, warns)
			} else {
				require.Equal(t, map[string]int{tc.warn: 1}, warns)
			}
		})
	}
}

// TestPromAPINumberValues checks that values written as JSON numbers are
// read and counted, never silently.
func TestPromAPINumberValues(t *testing.T) {
	tests := []struct {
		name, in string
		samples  int
		warns    int
	}{
		{"strings", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"m"},"value":[1,"5"]}]}}`, 1, 0},
		{"vector number", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"m"},"value":[1, 5]}]}}`, 1, 1},
		{"matrix numbers", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m"},"values":[[1,5],[2,"6"],[3,-1.5e2]]}]}}`, 3, 2},
		{"scalar number", `{"status":"success","data":{"resultType":"scalar","result":[1, 2.5]}}`, 1, 1},
		{"histogram numbers", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"h"},"histogram":[1,{"count":3,"sum":"4"}]}]}}`, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodePromAPI, "q.json", strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Len(t, s.samples, tc.samples)
			require.Equal(t, tc.warns, s.warns[warnPromNumber])
		})
	}
}
