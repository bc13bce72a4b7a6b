package incident

import (
	"cascade/internal/numfmt"
	"math"
	"sort"
)

// climb follows the degradation from the origin up its callers: at each
// step the changed caller (not yet on the path) that changed earliest,
// no sooner than Slack windows before the node, stronger first on ties.
func climb(origin string, byName map[string]*nodeState, callees map[string][]string, acc *spanAcc,
	lo int64, scan int, ref *spanAcc, cfg Config) []PathStep {
	callers := map[string][]string{}
	for from, tos := range callees {
		for _, to := range tos {
			callers[to] = append(callers[to], from)
		}
	}
	for k := range callers {
		sort.Strings(callers[k])
	}
	width := acc.width
	start := lo + int64(byName[origin].change)
	var path []PathStep
	on := map[string]bool{origin: true}
	cur := byName[origin]
	for {
		var next *nodeState
		for _, c := range callers[cur.name] {
			st := byName[c]
			if st == nil || on[c] || st.change < 0 || st.change < cur.change-cfg.Slack {
				continue
			}
			if next == nil || st.change < next.change ||
				st.change == next.change && st.js[st.change].z > next.js[next.change].z {
				next = st
			}
		}
		if next == nil {
			return path
		}
		step := PathStep{Caller: next.name, Callee: cur.name,
			CalleeAtNS: (lo + int64(cur.change)) * width, CallerAtNS: (lo + int64(next.change)) * width}
		before := acc
		bLo, bHi := lo, lo+int64(scan)-1
		if ref != nil {
			before = ref
			bLo, bHi = math.MinInt64, math.MaxInt64
		}
		step.CallsPerParentBefore, step.AttemptsPerCallBefore = amplification(before, next.name, cur.name, bLo, bHi)
		step.CallsPerParentDuring, step.AttemptsPerCallDuring = amplification(acc, next.name, cur.name, start, math.MaxInt64)
		path = append(path, step)
		on[next.name] = true
		cur = next
	}
}

// amplification returns calls per caller request and attempts per
// logical call on the edge, over windows [lo, hi].
func amplification(a *spanAcc, from, to string, lo, hi int64) (perParent, attempts float64) {
	var calls, retries, parents int64
	for w, e := range a.edges[[2]string{from, to}] {
		if w >= lo && w <= hi {
			calls += e.calls
			retries += e.retries
		}
	}
	for w, x := range a.nodes[from] {
		if w >= lo && w <= hi {
			parents += x.n
		}
	}
	if parents > 0 {
		perParent = numfmt.Round3(float64(calls) / float64(parents))
	}
	if calls > retries {
		attempts = numfmt.Round3(float64(calls) / float64(calls-retries))
	}
	return perParent, attempts
}

// reach returns the nodes reachable from n through calls.
func reach(n string, callees map[string][]string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), callees[n]...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] || x == n {
			continue
		}
		seen[x] = true
		stack = append(stack, callees[x]...)
	}
	return seen
}

func sortedWindows(m map[int64]*winAcc) []int64 {
	out := make([]int64, 0, len(m))
	for w := range m {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
