package cascade

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTraceTreeLink links small traces (parents found by scanning) and the
// same traces padded past smallTrace (found through the map): both ways
// give the same tree.
func TestTraceTreeLink(t *testing.T) {
	type span struct{ id, parent string }
	tests := []struct {
		name           string
		spans          []span
		parent         []int32
		children       []int32
		order          []int32
		roots, orphans int
	}{
		{name: "chain and fan-out", spans: []span{{"a", ""}, {"b", "a"}, {"c", "a"}, {"d", "b"}},
			parent: []int32{-1, 0, 0, 1}, children: []int32{2, 1, 0, 0}, order: []int32{0, 1, 2, 3}, roots: 1},
		{name: "child before its parent", spans: []span{{"b", "a"}, {"a", ""}},
			parent: []int32{1, -1}, children: []int32{0, 1}, order: []int32{1, 0}, roots: 1},
		{name: "orphan and self-parent", spans: []span{{"a", "x"}, {"b", "b"}, {"c", "a"}},
			parent: []int32{-1, -1, 0}, children: []int32{1, 0, 0}, order: []int32{0, 1, 2}, orphans: 2},
		{name: "cycle left out of the order", spans: []span{{"r", ""}, {"a", "b"}, {"b", "a"}},
			parent: []int32{-1, 2, 1}, children: []int32{0, 1, 1}, order: []int32{0}, roots: 1},
	}
	for _, tc := range tests {
		for _, pad := range []int{0, smallTrace} {
			t.Run(fmt.Sprintf("%s/pad=%d", tc.name, pad), func(t *testing.T) {
				spans := append([]span(nil), tc.spans...)
				for i := range pad {
					spans = append(spans, span{id: fmt.Sprint("pad", i)})
				}
				var tr TraceTree[string]
				// Linked twice: the second Link reuses the first's slices.
				for range 2 {
					tr.Link(len(spans), func(i int) (string, string, bool) {
						return spans[i].id, spans[i].parent, spans[i].parent != ""
					})
				}
				n := len(tc.spans)
				require.Equal(t, tc.parent, tr.Parent[:n])
				require.Equal(t, tc.children, tr.Children[:n])
				if pad == 0 {
					require.Equal(t, tc.order, tr.Order)
				} else {
					require.Len(t, tr.Order, len(tc.order)+pad)
				}
				require.Equal(t, tc.roots+pad, tr.Roots)
				require.Equal(t, tc.orphans, tr.Orphans)
				for c := range n {
					if p := tr.Parent[c]; p >= 0 {
						found := false
						for k := tr.First[p]; k >= 0; k = tr.Next[k] {
							found = found || k == int32(c)
						}
						require.True(t, found, "span %d is not among its parent's children", c)
					}
				}
			})
		}
	}
}
