package graph

// This file takes out of a publisher's service time the time its broker
// held its publishes. Waiting is not work: a publisher whose publish
// waits on a blocked connection (RabbitMQ's connection.blocked, the
// broker's memory alarm) spends that time inside its publish span, and
// a publish its request does not subtract (a producer span, fire and
// forget in graph's reading: the request goes on after it) leaves that
// time in the request's exclusive time. Read as the node's own work it
// becomes a tail of its service distribution (notify-before's gateway:
// service P99 684 ms, two publishes of the log task held 0.65 and 0.95 s
// by the alarm) that every what-if replays, the alarm gone or not, while
// replay models the wait itself: a broker in alarm holds a publish until
// its memory falls, or refuses it at once for a publisher that honours
// the block (fail_blocked).
//
// The spans carry no sign of the block (no event, no attribute: the
// client library blocks in its write), so the broker's memory alarm
// series says when: a publish is held when it overlaps the alarm (the
// intervals findBlocked reads, moved back by the lag it found for a
// blocked publisher, else as sampled) and took longer than 99% of the
// same edge's publishes outside the alarm (20 of them at least, else the
// edge is not judged); its time beyond their median is the wait, taken
// out of its request's exclusive time (at most all of it). The edge's
// observed latency keeps the whole publish: that is what the call took.

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// pubCall is one publish of a request into a queue node that the
// request's exclusive time holds, clipped to the request.
type pubCall struct {
	edge       int32
	start, end int64
}

// pubReq is a request that made such publishes.
type pubReq struct {
	start int64
	own   bool    // failed on its own (its exclusive time is in ownExcl)
	excl  float64 // exclusive time as recorded, ms
	calls []pubCall
}

// heldFacts are what releaseHeld found at a node.
type heldFacts struct {
	publishes int64   // publishes held
	requests  int64   // requests whose exclusive time lost the wait
	waitMS    float64 // the time taken out
	// episodes is how many memory alarms a blocked publisher went
	// through (alarmEpisodes), perAlarm the publishes each held
	// (heldPerAlarm): its edges' HeldAtAlarm. Zero for a publisher that
	// does not honour the block, or that none waited.
	episodes, perAlarm int
}

// minHeldBaseline is the fewest publishes outside the alarm on an edge
// that tell how long its publishes take when not held.
const minHeldBaseline = minShape

// addPublishes records a request's publishes that its exclusive time
// holds.
func (n *nodeAcc) addPublishes(start int64, own bool, exclMS float64, calls []pubCall) {
	if len(n.pubs) >= maxSequence {
		n.pubsFull = true
		return
	}
	n.pubs = append(n.pubs, pubReq{start: start, own: own, excl: exclMS, calls: slices.Clone(calls)})
}

// overlaps reports whether [a, z) meets one of the sorted, disjoint
// intervals iv.
func overlaps(iv [][2]int64, a, z int64) bool {
	i, _ := slices.BinarySearchFunc(iv, a, func(x [2]int64, t int64) int {
		if x[1] <= t {
			return -1
		}
		return 1
	})
	return i < len(iv) && iv[i][0] < max(z, a+1)
}

// releaseHeld takes the publishes its broker held out of each
// publisher's exclusive times (see the file's comment).
func (b *Builder) releaseHeld() {
	base := b.metrics.broker.alarmIntervals()
	if len(base) == 0 {
		return
	}
	for _, n := range b.nodes {
		if len(n.pubs) == 0 || n.queue != nil || n.dropped {
			continue
		}
		iv := base
		if n.blocked != nil {
			iv = n.blocked.iv
		}
		// Per edge, the publishes outside the alarm: how long one takes
		// when the broker does not hold it.
		outside := map[int32][]float64{}
		for _, r := range n.pubs {
			for _, c := range r.calls {
				if !overlaps(iv, c.start, c.end) {
					outside[c.edge] = append(outside[c.edge], float64(c.end-c.start))
				}
			}
		}
		type usual struct{ p50, p99 float64 }
		norm := map[int32]usual{}
		for e, d := range outside {
			if len(d) < minHeldBaseline {
				continue
			}
			slices.Sort(d)
			norm[e] = usual{quantile(d, 0.5), quantile(d, 0.99)}
		}
		if len(norm) == 0 {
			continue
		}
		heldAt := map[int64]bool{} // the starts of the requests held
		for _, r := range n.pubs {
			var wait float64 // ns
			for _, c := range r.calls {
				u, ok := norm[c.edge]
				if d := float64(c.end - c.start); ok && d > u.p99 && overlaps(iv, c.start, c.end) {
					wait += d - u.p50
					n.held.publishes++
				}
			}
			if wait <= 0 {
				continue
			}
			heldAt[r.start] = true
			w := min(nsToMS(wait), r.excl)
			to := r.excl - w
			n.exclusive.replace(r.excl, to)
			if r.own {
				n.ownExcl.replace(r.excl, to)
			} else {
				n.okExcl.replace(r.excl, to)
			}
			n.waitNS += int64(w * 1e6)
			n.held.requests++
			n.held.waitMS += w
		}
		if n.held.requests > 0 {
			b.warnf("node %s: %d of its publishes overlapped the broker's memory alarm and took longer than 99%% of the same queue's publishes outside it: the broker held them, so %s of waiting in %d requests is not its service time (replay holds or refuses a publish while the alarm is on)",
				n.name, n.held.publishes, time.Duration(n.held.waitMS*1e6).Round(time.Millisecond), n.held.requests)
		}
		if bl := n.blocked; bl != nil && len(heldAt) > 0 {
			var waited int
			n.held.episodes, waited = alarmEpisodes(n.seq, bl.fastNS, heldAt)
			if waited > 0 {
				n.held.perAlarm = heldPerAlarm(waited, n.held.episodes)
				b.warnf("node %s: %d of its requests waited out the broker's memory alarm while it refused others at once, in %d alarms (runs of refusals): replay holds the first %d of each alarm's publishes on each of its queues (held_at_alarm) and refuses the rest",
					n.name, waited, n.held.episodes, n.held.perAlarm)
			}
		}
	}
}

// alarmEpisodes counts the memory alarms a blocked publisher went
// through and the requests that waited one out. The alarms are the runs
// of its requests that the block refused at once (own failures no
// longer than fastNS), in start order, each run ended by a request that
// succeeded without being held (held, by start): while an alarm is on a
// publisher that honours the block refuses every request but those
// already on their way, so an ordinary success between two refusals
// means the alarm had cleared. A held request waited the alarm out when
// a refusal started while it waited: it was on its way when the block
// came (a publish merely slow near the alarm is not).
func alarmEpisodes(seq []seqReq, fastNS int64, held map[int64]bool) (episodes, waited int) {
	reqs := slices.Clone(seq)
	slices.SortFunc(reqs, func(x, y seqReq) int { return cmp.Compare(x.start, y.start) })
	refused := func(r seqReq) bool { return r.own && r.end-r.start <= fastNS }
	var starts []int64 // of the refusals
	in := false
	for _, r := range reqs {
		switch {
		case refused(r):
			starts = append(starts, r.start)
			if !in {
				episodes++
				in = true
			}
		case !r.failed && !held[r.start]:
			in = false
		}
	}
	for _, r := range reqs {
		if !held[r.start] || refused(r) {
			continue
		}
		if i, _ := slices.BinarySearch(starts, r.start+1); i < len(starts) && starts[i] < r.end {
			waited++
		}
	}
	return episodes, waited
}

// heldPerAlarm is how many publishes each alarm holds (Edge.HeldAtAlarm)
// when held requests waited out episodes alarms: their mean per alarm,
// rounded, and at least one, so that a wait the capture shows is
// replayed. Zero alarms counted (held requests with no refusals beside
// them) gives one.
func heldPerAlarm(held, episodes int) int {
	if episodes <= 0 {
		return 1
	}
	return max(1, int(math.Round(float64(held)/float64(episodes))))
}
