package incident

// The measures the analysis's phases score, date and order changes
// with: onset groups, persistence, metric rises and silence, the
// evidence of a change, the confidence of the first origin, and the
// tests of whether a change is the node's own.

import (
	"math"
	"sort"
	"strings"

	"cascade/internal/numfmt"
)

// onsetGroups gives each changed node the change window of its onset
// group: walking each class (unexplained, explained) in change order, a
// node within slack windows of the group's first joins it; a later one
// starts the next group.
func onsetGroups(states []*nodeState, changes []NodeChange, slack int) []int {
	groups := make([]int, len(states))
	for _, explained := range []bool{false, true} {
		var idx []int
		for i, st := range states {
			if st.change >= 0 && (len(changes[i].ExplainedBy) > 0) == explained {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return states[idx[a]].change < states[idx[b]].change })
		lead := -1
		for _, i := range idx {
			if lead < 0 || states[i].change > lead+slack {
				lead = states[i].change
			}
			groups[i] = lead
		}
	}
	return groups
}

// persistence is the share of the judged windows from c on that are out
// of range: a fault lasts, a blip does not.
func persistence(js []judgement, c int) float64 {
	var judged, out int
	for _, j := range js[c:] {
		if j.judged {
			judged++
			if j.out {
				out++
			}
		}
	}
	if judged == 0 {
		return 0
	}
	return float64(out) / float64(judged)
}

// lasting says whether a node's change lasts: more than half of its
// judged windows from the onset on are out of range (persistence). A
// change out in exactly half came back and stayed back as long as it
// was out: no majority says it lasts (issue 38, 2023-01-29 10:12:48).
func lasting(st *nodeState) bool {
	return persistence(st.js, st.change) > 0.5
}

// metricRise is the largest log ratio of a saturation metric to its
// normal median among the metric's out points from window c on.
func metricRise(js []judgement, c int) float64 {
	var r float64
	for k := c; k < len(js); k++ {
		if j := js[k]; j.out && j.base > 0 && j.value > j.base {
			r = math.Max(r, math.Log(j.value/j.base))
		}
	}
	return r
}

// silence is the largest log ratio of the requests a node should have
// served to those it served (each plus one) among its windows from c on
// that fell silent.
func silence(js []judgement, c int) float64 {
	var r float64
	for _, j := range js[c:] {
		for _, o := range append([]judgement{j}, j.others...) {
			if o.out && o.metric == "throughput" {
				r = math.Max(r, math.Log((o.base+1)/(o.value+1)))
			}
		}
	}
	return r
}

// evidenceOf lists each metric out of range in a window from c on, at
// its first such window, with its largest z from then on.
func evidenceOf(js []judgement, c int, lo, width int64, threshold float64) []ChangeEvidence {
	var ev []ChangeEvidence
	at := map[string]int{}
	for k := c; k < len(js); k++ {
		if !js[k].out {
			continue
		}
		for _, j := range append([]judgement{js[k]}, js[k].others...) {
			if !j.out {
				continue
			}
			if i, ok := at[j.metric]; ok {
				if j.z > ev[i].Z {
					ev[i].Z = numfmt.Round3(j.z)
				}
				continue
			}
			spread := 0.0
			if j.z > 0 {
				spread = (j.value - j.base) / j.z
			}
			at[j.metric] = len(ev)
			ev = append(ev, ChangeEvidence{Metric: j.metric, Normal: numfmt.Round3(j.base),
				NormalHigh: numfmt.Round3(j.base + threshold*spread), Value: numfmt.Round3(j.value),
				AtNS: (lo + int64(k)) * width, Z: numfmt.Round3(j.z)})
		}
	}
	return ev
}

// confidence is how far the first origin is ahead of the second: the
// first's share of their two scores (1 with no rival, 0.5 a tie).
func confidence(nodes []NodeChange) float64 {
	var s []float64
	for _, n := range nodes {
		if n.Changed && len(n.ExplainedBy) == 0 && len(s) < 2 {
			s = append(s, n.Score)
		}
	}
	switch {
	case len(s) == 0:
		return 0
	case len(s) == 1 || s[0]+s[1] <= 0:
		return 1
	}
	return numfmt.Round3(s[0] / (s[0] + s[1]))
}

// ownChangeAt returns the first change point from c on (changeAt) whose
// window, where a windowed metric put it out against the reference, is
// out against the capture's own windows before it too: a difference
// from the reference there before the onset is a baseline mismatch.
// A change at the first window has nothing before it and stands.
func ownChangeAt(js []judgement, wins map[int64]*winAcc, lo int64, c int, cfg Config) int {
	for c > 0 {
		switch js[c].metric {
		case "latency", "self_time", "slow_share", "error_rate":
		default:
			return c
		}
		var pre []*winAcc
		for w := lo; w < lo+int64(c); w++ {
			if x := wins[w]; x != nil {
				pre = append(pre, x)
			}
		}
		nb := normalOf(pre)
		if nb.n < int64(cfg.MinCount) {
			return c
		}
		if nb.judge(wins[lo+int64(c)], cfg.Threshold, cfg.MinChange, cfg.MinCount).out || ownOther(js[c]) {
			return c
		}
		next := changeAt(js[c+1:], cfg.Persist)
		if next < 0 {
			return -1
		}
		c += 1 + next
	}
	return c
}

// ownOther reports whether a window's judgement holds, beside its
// loudest metric, one out of range that is not windowed (a count test,
// the logs, a saturation metric): each of those is judged against its
// own normal, and the window's change stands on it even when the louder
// windowed metric was there before the onset (issue 38, 2023-01-29
// 10:20:10: ts-travel-service's errors, already in a few requests
// before, hid its error records new from that window on).
func ownOther(j judgement) bool {
	for _, o := range j.others {
		if o.out && !windowed(o.metric) {
			return true
		}
	}
	return false
}

// logErrorsBy reports whether a node's log changes hold a rise of
// error records or of a template (new or risen) with its onset no
// later than window c.
func logErrorsBy(chs []*logChange, c int) bool {
	for _, ch := range chs {
		if ch.metric != "log_stopped" && ch.onset <= c {
			return true
		}
	}
	return false
}

// errorLed reports whether a change's first signal is an error: the
// spans' error rate, or a log rise (error records, a template new or
// risen).
func errorLed(metric string) bool {
	switch metric {
	case "error_rate", "log_errors", "log_new", "log_risen":
		return true
	}
	return false
}

// errorsBy reports whether a node's judgements put its error rate out
// of range in a window no later than c.
func errorsBy(js []judgement, c int) bool {
	for k := 0; k <= c && k < len(js); k++ {
		for _, o := range append([]judgement{js[k]}, js[k].others...) {
			if o.out && o.metric == "error_rate" {
				return true
			}
		}
	}
	return false
}

// datedFirst puts first the first unexplained change dated inside the
// capture when the order's first is a difference from the reference
// present from the start (startDiff) that does not outscore it: a small
// early difference is not this incident's onset, and the injected
// service changes later and more. A from-start difference that is
// larger stays first (an incident begun before the capture).
func datedFirst(order []int, changes []NodeChange, startDiff []bool) []int {
	head := -1
	for k, i := range order {
		if changes[i].Changed && len(changes[i].ExplainedBy) == 0 {
			head = k
			break
		}
	}
	if head < 0 || !startDiff[order[head]] {
		return order
	}
	for k := head + 1; k < len(order); k++ {
		i := order[k]
		if !changes[i].Changed || len(changes[i].ExplainedBy) > 0 || startDiff[i] {
			continue
		}
		if changes[i].Score < changes[order[head]].Score && !templateLed(changes[order[head]].Metric) {
			return order
		}
		out := append([]int(nil), order[:head]...)
		out = append(out, i)
		out = append(out, order[head:k]...)
		return append(out, order[k+1:]...)
	}
	return order
}

// templateLed reports a change whose first signal is a log template new,
// risen or stopped. Each capture's templates are mined apart, so such a
// difference from the reference in the capture's first windows is
// how the two were mined as much as an incident: it never leads
// (issue 38, 2023-01-29 09:03:53: ts-seat-service's "Create seat"
// line, templated with one word more than the reference's, new from
// the first window).
func templateLed(metric string) bool {
	switch metric {
	case "log_new", "log_risen", "log_stopped":
		return true
	}
	return false
}

// fromStartWindows is how many of a capture's first windows a change
// against the reference may start in and be a baseline difference
// rather than an onset: 20 s at the default window, where issue 38
// found the small early changes that outranked the injected service.
const fromStartWindows = 2

// ownStep judges a node's windows against the capture's own first
// BaselineWindows windows and returns its first change point after
// them, with the judgement there; −1 when there is none, or too few
// requests in those windows to judge.
func ownStep(wins map[int64]*winAcc, lo int64, nw int, cfg Config) (int, judgement) {
	var pre []*winAcc
	for w := lo; w < lo+int64(cfg.BaselineWindows); w++ {
		if x := wins[w]; x != nil {
			pre = append(pre, x)
		}
	}
	nb := normalOf(pre)
	if nb.n < int64(cfg.MinCount) || nw <= cfg.BaselineWindows {
		return -1, judgement{}
	}
	js := make([]judgement, nw)
	for k := cfg.BaselineWindows; k < nw; k++ {
		js[k] = nb.judge(wins[lo+int64(k)], cfg.Threshold, cfg.MinChange, cfg.MinCount)
	}
	c := changeAt(js, cfg.Persist)
	if c < 0 {
		return -1, judgement{}
	}
	return c, js[c]
}

// windowed reports that a metric is judged by windows against the
// normal range (a node's or, call_…, an edge's), not by a count test or
// a saturation metric.
func windowed(metric string) bool {
	switch strings.TrimPrefix(metric, "call_") {
	case "latency", "self_time", "slow_share", "error_rate":
		return true
	}
	return false
}

// requestsBefore counts a node's requests in its windows before window
// c (from lo).
func requestsBefore(wins map[int64]*winAcc, lo int64, c int) int64 {
	var n int64
	for w := lo; w < lo+int64(c); w++ {
		if x := wins[w]; x != nil {
			n += x.n
		}
	}
	return n
}

// commonCausePeers is how many other unexplained latency changes must
// share a change's onset group for it to be a common cause's: more
// than a pair, which a caller and its callee can make. Set from issue
// 38's day A, where ts-order-, ts-basic- and ts-station-service slowed
// together in five TrainTicket captures whatever the fault; not
// searched.
const commonCausePeers = 2

// commonCause marks the unexplained changes led by latency (latency,
// self time, slow share, as a node or as a caller) whose onset group
// holds commonCausePeers or more other such changes: several services
// that slowed at once, none explained along the call graph, point to
// a cause they share outside it (a host, a database). A change led by
// errors, the logs, a saturation metric or a count test is never one.
func commonCause(states []*nodeState, changes []NodeChange, groups []int) []bool {
	slowLed := func(i int) bool {
		st := states[i]
		if st.change < 0 || len(changes[i].ExplainedBy) > 0 {
			return false
		}
		m := st.js[st.change].metric
		return windowed(m) && strings.TrimPrefix(m, "call_") != "error_rate"
	}
	common := make([]bool, len(states))
	for i := range states {
		if !slowLed(i) {
			continue
		}
		peers := 0
		for k := range states {
			if k != i && groups[k] == groups[i] && slowLed(k) {
				peers++
			}
		}
		common[i] = peers >= commonCausePeers
	}
	return common
}
