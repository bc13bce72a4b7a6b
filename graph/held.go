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
	}
}
