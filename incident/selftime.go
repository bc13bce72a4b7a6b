package incident

import (
	"math"
	"sort"
)

// Self time counted in calls (see docs/incident.md, Method): its constants,
// chosen on the fixture generator and the development day (Nezha
// TrainTicket 2023-01-30) only.
const (
	// selfRunM is the run of requests the count test looks at, selfAlpha
	// the false-alarm probability of one run under the normal: k of the
	// run high, k the least with P(Binomial(selfRunM, p) ≥ k) < selfAlpha,
	// p the normal share of high requests: 5% (above the normal p95), or
	// 1/(n+1) with n normal requests when that is more (the chance that
	// a normal request exceeds the largest of n).
	selfRunM  = 8
	selfAlpha = 1e-3
	// selfFloorMS is the least a request's self time must exceed its
	// node's normal median by to be high (with the normal p95); and the
	// least the median after an onset must rise by.
	selfFloorMS = 1.0
	// selfMinRatio is the least ratio of the median self time from the
	// onset on to the normal median (floored at selfMinMS) that counts:
	// a doubling, well past what the mix of a node's work moves it by.
	selfMinRatio = 2.0
	selfMinMS    = 1.0
	// selfMinNormal is the fewest normal requests a node needs.
	selfMinNormal = 5
)

// selfRec is one request's self time (ms), scaled for the mix of
// operations, by its node's operation and start.
type selfRec struct {
	op   int32 // in spanAcc.ops
	at   int64 // ns
	self float64
}

// selfOwners runs the count test on each node's requests' self time:
// the normal is the reference's requests (when ref is not nil) or
// those of the first baseline windows, the judged requests those from
// window lo+scan on; a step must hold against the normal and against
// the capture's requests of the node before the step's first high one
// (at least one). A node's self time leaves out the time of its
// calls, so a step of it is the node's own (a starved CPU, its own
// code) and is not explained by its callees — unless the node re-sent
// calls from the onset's window to Slack windows later (its retries'
// backoff is its callee's failures), or a callee of it owns a rise of
// the gap into it from no later than that (see wired). A serialised
// node's self time is
// judged by its windows (the time it held its slot), not here.
func selfOwners(acc, ref *spanAcc, lo int64, scan int, cfg Config, callees map[string][]string, gapOwned map[string]*stepChange) map[string]*stepChange {
	normal, judged := map[string][]float64{}, map[string][]selfRec{}
	early := map[string][]float64{} // the capture's requests before the judged ones
	if ref != nil {
		for _, r := range ref.selfs {
			n := ref.ops[r.op].service
			normal[n] = append(normal[n], r.self)
		}
	}
	for _, r := range acc.selfs {
		n := acc.ops[r.op].service
		w := floorDiv(r.at, acc.width)
		if ref == nil && w < lo+int64(cfg.BaselineWindows) {
			normal[n] = append(normal[n], r.self)
		}
		if w < lo+int64(scan) {
			early[n] = append(early[n], r.self)
		}
		if w >= lo+int64(scan) {
			judged[n] = append(judged[n], r)
		}
	}
	owned := map[string]*stepChange{}
	for _, n := range sortedKeys(judged) {
		norm := normal[n]
		if acc.serial[n] || len(norm) < selfMinNormal {
			continue
		}
		sort.Float64s(norm)
		med := quantile(norm, 0.5)
		high := math.Max(quantile(norm, 0.95), med+selfFloorMS)
		rs := judged[n]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].at < rs[j].at })
		items := make([]runItem, len(rs))
		for i, r := range rs {
			items[i] = runItem{at: r.at, v: r.self, high: r.self > high}
		}
		t := medianTest{m: selfRunM, p: math.Max(0.05, 1/float64(len(norm)+1)), alpha: selfAlpha,
			ratio: selfMinRatio, min: selfMinMS, floor: selfFloorMS}
		// The step must hold against the capture's own requests before
		// it too: a difference from the reference that is there before
		// the onset, or from the capture's first request on, is a
		// baseline mismatch, not this incident.
		t.also = func(first int, med float64) bool {
			pre := append([]float64(nil), early[n]...)
			for _, it := range items[:first] {
				pre = append(pre, it.v)
			}
			return len(pre) > 0 && t.stepFrom(pre, med)
		}
		if ch := medianStep(items, med, t); ch != nil {
			if retried(acc, n, floorDiv(ch.onset, acc.width), cfg.Slack) ||
				wired(n, floorDiv(ch.onset, acc.width), acc.width, cfg.Slack, callees, gapOwned) {
				continue
			}
			ch.node, ch.metric = n, "self_time_calls"
			owned[n] = ch
			continue
		}
		// A fall, the same test mirrored: requests low below
		// min(normal p5, normal median − selfFloorMS), the median from
		// the onset on at most half the normal and selfFloorMS below it.
		// Work a node no longer does (an injected early return, a
		// skipped step) is its own; a fall that follows a callee's
		// failures is explained by the callee (analyse). Only against
		// a reference: a capture's own first windows may be the tail of
		// an earlier disturbance, and a recovery from it is a fall.
		if ref == nil {
			continue
		}
		low := math.Min(quantile(norm, 0.05), med-selfFloorMS)
		for i, r := range rs {
			items[i].high = r.self < low
		}
		t.down = true
		if ch := medianStep(items, med, t); ch != nil {
			ch.node, ch.metric = n, "self_time_drop"
			owned[n] = ch
		}
	}
	return owned
}

// wired reports whether a callee of node owns a rise of the gap into
// it (its network) from no later than slack windows after window w:
// where the caller's spans do not time its calls (a span in the
// caller's service around several calls, as in Nezha's CSV), the time
// on the wire is counted in the caller's self time.
func wired(node string, w, width int64, slack int, callees map[string][]string, gapOwned map[string]*stepChange) bool {
	for _, c := range callees[node] {
		if ch := gapOwned[c]; ch != nil && ch.metric == "gap_in" && floorDiv(ch.onset, width) <= w+int64(slack) {
			return true
		}
	}
	return false
}

// retried reports whether node re-sent a call to any callee from window
// w to slack windows later.
func retried(acc *spanAcc, node string, w int64, slack int) bool {
	for k, ws := range acc.edges {
		if k[0] != node {
			continue
		}
		for d := int64(0); d <= int64(slack); d++ {
			if e := ws[w+d]; e != nil && e.retries > 0 {
				return true
			}
		}
	}
	return false
}

// selfJudgements turns a step of self time into one judgement per
// window from the onset's on: a window's requests from the onset on are
// out when most of them are high and their median is selfFloorMS above
// the normal median, with the binomial z of their high share against
// its normal.
func selfJudgements(ch *stepChange, width, lo int64, nw int) []judgement {
	return runWindows(ch.items, ch.normMed, selfFloorMS, ch.p, ch.down, ch.metric, width, lo, nw)
}
