package cascade

// TraceTree links the spans of one trace to their parents and orders them
// parents first. It is where graph, fit and incident begin finding a
// trace's requests: a span with no parent in the trace starts one, a
// span below it belongs to it unless it starts its own, and the requests
// below a request are its calls. Spans are numbered by their index in the
// trace. The slices are reused from trace to trace by the next Link; the
// zero value is ready.
type TraceTree[K comparable] struct {
	// Parent is each span's parent, -1 for a span with none in the trace:
	// a root, or an orphan whose parent is missing (or is itself).
	Parent []int32
	// First is each span's first child and Next the child after it, -1
	// ending the list: a span's children in index order.
	First, Next []int32
	// Children counts each span's children.
	Children []int32
	// Order lists the spans parents before children, breadth first from
	// the spans with no parent. Spans on a parent cycle are not in it.
	Order []int32
	// Roots counts the spans that name no parent and Orphans those whose
	// parent is not in the trace.
	Roots, Orphans int

	ids, parents []K
	has          []bool
	idx          map[K]int32
}

// smallTrace is the size up to which Link finds parents by scanning the
// trace's ids rather than through a map: quicker for the many small traces.
const smallTrace = 48

// Link builds the tree of a trace of n spans, where span(i) gives span i's
// id and, when hasParent, its parent's id. Ids are unique within a trace;
// when one is not, a span's parent is the nearest earlier span of the id,
// else the nearest later one (the last one, in traces of more than 48
// spans).
func (t *TraceTree[K]) Link(n int, span func(i int) (id, parent K, hasParent bool)) {
	t.ids, t.parents, t.has = t.ids[:0], t.parents[:0], t.has[:0]
	for i := range n {
		id, parent, has := span(i)
		t.ids = append(t.ids, id)
		t.parents = append(t.parents, parent)
		t.has = append(t.has, has)
	}
	t.Parent, t.First, t.Next, t.Children = fill(t.Parent, n, -1), fill(t.First, n, -1), fill(t.Next, n, -1), fill(t.Children, n, 0)
	t.Roots, t.Orphans = 0, 0
	small := n <= smallTrace
	if !small {
		if t.idx == nil {
			t.idx = map[K]int32{}
		}
		clear(t.idx)
		for i, id := range t.ids {
			t.idx[id] = int32(i)
		}
	}
	for i := range n {
		if !t.has[i] {
			t.Roots++
			continue
		}
		j, ok := int32(-1), false
		if small {
			j, ok = t.scan(i)
		} else {
			j, ok = t.idx[t.parents[i]]
		}
		if ok && int(j) != i {
			t.Parent[i] = j
		} else {
			t.Orphans++
		}
	}
	// Children in index order: pushed in reverse.
	for i := n - 1; i >= 0; i-- {
		if p := t.Parent[i]; p >= 0 {
			t.Next[i] = t.First[p]
			t.First[p] = int32(i)
			t.Children[p]++
		}
	}
	t.Order = t.Order[:0]
	for i := range n {
		if t.Parent[i] < 0 {
			t.Order = append(t.Order, int32(i))
		}
	}
	for h := 0; h < len(t.Order); h++ {
		for c := t.First[t.Order[h]]; c >= 0; c = t.Next[c] {
			t.Order = append(t.Order, c)
		}
	}
}

// scan finds span i's parent among the ids. Parents mostly start before
// their children, and a trace is mostly in start order: it looks back
// first.
func (t *TraceTree[K]) scan(i int) (int32, bool) {
	p := t.parents[i]
	for k := i - 1; k >= 0; k-- {
		if t.ids[k] == p {
			return int32(k), true
		}
	}
	for k := i + 1; k < len(t.ids); k++ {
		if t.ids[k] == p {
			return int32(k), true
		}
	}
	return -1, false
}

// fill returns s resized to n, every element v.
func fill(s []int32, n int, v int32) []int32 {
	if cap(s) < n {
		s = make([]int32, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = v
	}
	return s
}
