package graph_test

import (
	"container/heap"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// pooled returns the traces of n requests of service "a", one every
// everyMS, each making the calls of stages to service "b": stages[i]
// calls submitted together once stage i−1's calls all ended, each 20 ms
// (+0–1.9 ms, so that no two end together). The calls wait for one of p
// slots, a pool shared by all requests (shared) or one per request.
func pooled(n int, everyMS float64, stages []int, p int, shared bool) []cascade.Span {
	var out []cascade.Span
	var sharedFree msHeap
	for range p {
		heap.Push(&sharedFree, 0.0)
	}
	k := 0
	for r := range n {
		tr := fmt.Sprintf("%032x", r+1)
		at := float64(r) * everyMS
		free := &sharedFree
		if !shared {
			free = &msHeap{}
			for range p {
				heap.Push(free, 0.0)
			}
		}
		var calls []cascade.Span
		t := at
		for _, c := range stages {
			end := t
			for range c {
				k++
				start := max(t, heap.Pop(free).(float64))
				d := 20 + float64(k%20)/10
				heap.Push(free, start+d+0.01) // the slot is free 10 µs after the call
				id := fmt.Sprintf("%x", 16+len(calls))
				calls = append(calls,
					span(tr, id, "1", "a", "get", client, start, d),
					span(tr, fmt.Sprintf("%x", 17+len(calls)), id, "b", "/get", server, start+0.5, d-1))
				end = max(end, start+d)
			}
			t = end
		}
		out = append(out, span(tr, "1", "", "a", "/a", server, at, t-at+1))
		out = append(out, calls...)
	}
	return out
}

// msHeap is a min-heap of times in ms: when each slot is next free.
type msHeap []float64

func (h msHeap) Len() int           { return len(h) }
func (h msHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h msHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *msHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *msHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestPoolSharing holds the shared-pool rule to requests whose calls wait
// for a pool of 3, shared or one per request: the edge's pool is shared
// when requests held each other back, per request when their calls went
// past 3 together, and unknown (replayed shared, the default) when the
// requests never met on the edge, or met only with room to spare, which
// either kind of pool allows. HotROD's live baseline of 2026-12-05
// (docs/validation.md) is the "apart" case: its database lock spaced the
// requests so that their route calls never met.
func TestPoolSharing(t *testing.T) {
	ten := []int{10}
	tests := []struct {
		name    string
		every   float64 // ms between requests
		stages  []int
		shared  bool
		want    string
		wantSP  bool
		wantPrv cascade.Provenance
	}{
		{"shared, requests meet", 40, ten, true, cascade.PoolShared, true, cascade.Inferred},
		{"per request, requests meet", 40, ten, false, cascade.PoolPerRequest, false, cascade.Inferred},
		{"shared, requests apart", 300, ten, true, cascade.PoolSharingUnknown, graph.DefaultSharedPool, cascade.Default},
		{"per request, requests apart", 300, ten, false, cascade.PoolSharingUnknown, graph.DefaultSharedPool, cascade.Default},
		// One call, then three at once, then one: the next request's
		// first call meets this one's last, 2 in flight of 3, so neither
		// pool held anyone back (the rule before counted it as sharing).
		{"tails meet with room to spare", 50, []int{1, 3, 1}, false, cascade.PoolSharingUnknown, graph.DefaultSharedPool, cascade.Default},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := buildSpans(t, graph.DefaultConfig(), pooled(60, tc.every, tc.stages, 3, tc.shared))
			var e *cascade.Edge
			for i := range res.Model.Edges {
				if x := &res.Model.Edges[i]; x.From == "a" && x.To == "b" {
					e = x
				}
			}
			require.NotNil(t, e)
			require.Equal(t, 3, e.Parallelism)
			require.Equal(t, tc.want, e.Observed.PoolSharing)
			require.Equal(t, tc.wantSP, e.SharedPool)
			require.Equal(t, tc.wantPrv, e.Provenance["shared_pool"])
		})
	}
}
