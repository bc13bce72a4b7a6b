package graph

// This file counts each queue's messages and deliveries once
// finishQueues has joined them: the waits, the redeliveries and how each
// came back, and the delay queues' TTLs.

import (
	"cmp"
	"slices"
)

// countMessages groups the deliveries by queue and message, in time
// order, and counts each message at its queue (countMessage).
func (j *queueJoin) countMessages() {
	order := j.messageOrder()
	for lo := 0; lo < len(order); {
		hi := j.messageEnd(order, lo)
		j.countMessage(order[lo:hi])
		lo = hi
	}
}

// messageOrder returns the deliveries' indices sorted by queue, message
// and time (then index, for a stable order).
func (j *queueJoin) messageOrder() []int32 {
	mq := &j.b.mq
	order := make([]int32, len(mq.delivs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, c := &mq.delivs[x], &mq.delivs[y]
		if v := cmp.Compare(a.queue, c.queue); v != 0 {
			return v
		}
		if v := cmp.Compare(j.ident[x], j.ident[y]); v != 0 {
			return v
		}
		if v := cmp.Compare(a.at, c.at); v != 0 {
			return v
		}
		return cmp.Compare(x, y)
	})
	return order
}

// messageEnd returns the end of the message whose deliveries start at
// order[lo]: the first later one of another queue or message. A
// delivery whose message has no identity is a message of its own.
func (j *queueJoin) messageEnd(order []int32, lo int) int {
	mq := &j.b.mq
	hi := lo + 1
	first := &mq.delivs[order[lo]]
	if j.ident[order[lo]] != 0 {
		for hi < len(order) && mq.delivs[order[hi]].queue == first.queue && j.ident[order[hi]] == j.ident[order[lo]] {
			hi++
		}
	}
	return hi
}

// countMessage counts one message at its queue from its deliveries ds
// (in time order): its wait from publish to first delivery, each
// delivery at its consumer, each redelivery's way back into the queue,
// and whether every delivery failed.
func (j *queueJoin) countMessage(ds []int32) {
	b, mq := j.b, &j.b.mq
	first := &mq.delivs[ds[0]]
	qn := b.nodes[first.queue]
	q := qn.queue
	q.messages++
	start := first.at
	if p := j.pubOf[ds[0]]; p >= 0 {
		start = min(mq.pubs[p].start, first.at)
	}
	qn.addRequest(b, start, first.at, false, false, -1, 0)
	if p := j.pubOf[ds[0]]; p >= 0 && mq.pubs[p].queue == first.queue {
		j.waits[first.queue] = append(j.waits[first.queue], [2]int64{first.at, max(0, first.at-mq.pubs[p].end)})
	}
	ok := false
	n := int64(len(ds))
	for i, di := range ds {
		d := &mq.delivs[di]
		out := j.countDelivery(q, d, i, di)
		if i > 0 {
			j.countRedelivery(qn, first.queue, &mq.delivs[ds[i-1]], d, di, i)
		}
		if d.failed {
			q.failed++
			out.failed++
		} else {
			ok = true
		}
		n = max(n, int64(i)+1)
		if !j.moved[di] {
			n = max(n, int64(d.redel)+1)
		}
	}
	q.maxDeliveries = max(q.maxDeliveries, n)
	if !ok {
		q.exhausted++
		q.exhaustedMax = max(q.exhaustedMax, n)
	}
}

// countDelivery counts delivery d (index di, the message's i-th) at
// queue q: its consumer group and instance, its size, and the call at
// its consumer, a redelivery when it is not the message's first (or the
// span's redelivery count says so, unless the broker moved the
// message). It returns the consumer's deliveries.
func (j *queueJoin) countDelivery(q *queueAcc, d *delivRec, i int, di int32) *deliveryAcc {
	b := j.b
	q.deliveries++
	if d.group >= 0 {
		if q.groups == nil {
			q.groups = map[int32]struct{}{}
		}
		q.groups[d.group] = struct{}{}
	}
	if q.consumers == nil {
		q.consumers = map[[2]int32]struct{}{}
	}
	q.consumers[[2]int32{d.consumer, d.inst}] = struct{}{}
	if d.bytes > 0 && q.bytesN == 0 {
		q.bytes += float64(d.bytes)
	}
	out := q.to(d.consumer)
	out.calls++
	out.latency.add(b.rng, b.cfg.Reservoir, nsToMS(float64(d.end-d.start)))
	if i == 0 {
		out.first++
	}
	if i > 0 || d.redel > 0 && !j.moved[di] {
		q.redelivered++
		out.redelivered++
	}
	return out
}

// countRedelivery counts how delivery d (index di, the i-th of its
// message in queue) came back after the failed delivery prev: by ack +
// republish (back at the tail when published), through a delay queue
// (back at the failure plus the TTL, fed once the TTL is known: see
// requeueViaDelay), or by a requeue (back from the failure to the
// redelivery). Each is counted by its index as back at once or delayed.
func (j *queueJoin) countRedelivery(qn *nodeAcc, queue int32, prev, d *delivRec, di int32, i int) {
	b, mq, k := j.b, &j.b.mq, j.b.cfg.Reservoir
	q := qn.queue
	var pub *pubRec
	if p := j.pubOf[di]; p >= 0 && mq.pubs[p].retry {
		pub = &mq.pubs[p]
	}
	idx := min(i, maxRedelIndex)
	switch {
	case pub != nil && pub.queue == queue:
		// Ack + republish: back at the tail when published.
		q.republished++
		back := nsToMS(float64(max(0, pub.end-prev.end)))
		if back < redeliveryRequeueMS {
			q.byIndex[idx][0]++
		} else {
			q.byIndex[idx][1]++
		}
		q.delays.add(b.rng, k, back)
		qn.addRequest(b, min(pub.end, d.at), d.at, false, false, -1, 0)
	case pub != nil && q.delayVia[pub.queue] > 0:
		q.viaDelay++
		q.byIndex[idx][1]++
		q.delays.add(b.rng, k, nsToMS(float64(max(0, d.at-prev.end))))
		j.viaDelay = append(j.viaDelay, delayBack{queue, prev.end, d.at})
	default:
		back := nsToMS(float64(max(0, d.at-prev.end)))
		if back < redeliveryRequeueMS {
			q.byIndex[idx][0]++
		} else {
			q.byIndex[idx][1]++
		}
		q.delays.add(b.rng, k, back)
		// Back in the queue from the failure to the redelivery.
		qn.addRequest(b, min(prev.end, d.at), d.at, false, false, -1, 0)
	}
}

// requeueViaDelay sets the delay queues' TTLs (delayTTLs) and feeds each
// redelivery through one to its queue: back in the queue from the
// failure plus the TTL to the redelivery.
func (j *queueJoin) requeueViaDelay() {
	b := j.b
	b.delayTTLs(j.viaDelay, j.waits)
	for _, v := range j.viaDelay {
		ttl := int64(b.nodes[v.node].queue.ttlMS * 1e6)
		b.nodes[v.node].addRequest(b, min(v.from+ttl, v.end), v.end, false, false, -1, 0)
	}
}

// sizesFromDeliveries counts the message sizes read from the deliveries
// of each queue whose publishes told none.
func (b *Builder) sizesFromDeliveries() {
	for _, qi := range b.mq.queues {
		if q := b.nodes[qi].queue; q.bytesN == 0 && q.bytes > 0 && q.deliveries > 0 {
			q.bytesN = q.deliveries // message sizes read from the deliveries
		}
	}
}

// delayBack is a redelivery through a delay queue: the queue node, the
// failed delivery's end and the next delivery's time.
type delayBack struct {
	node      int32
	from, end int64
}

// delayTTLs sets each queue's delay-queue TTL (ttlMS) from its
// redeliveries through the delay queue: the median of each one's time
// from the failure to the next delivery, less what the message delivered
// nearest in time to it had waited in the queue (the queue is FIFO: the
// messages delivered at about the same time waited about as long).
// Without the wait, a queue that is never empty (a retry storm) reads as
// a longer TTL. waits holds per queue its first deliveries' times and
// waits (from publish to delivery).
func (b *Builder) delayTTLs(backs []delayBack, waits map[int32][][2]int64) {
	if len(backs) == 0 {
		return
	}
	for _, ws := range waits {
		slices.SortFunc(ws, func(x, y [2]int64) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	}
	per := map[int32][]float64{}
	for _, v := range backs {
		var wait int64
		if ws := waits[v.node]; len(ws) > 0 {
			i, _ := slices.BinarySearchFunc(ws, v.end, func(x [2]int64, t int64) int { return cmp.Compare(x[0], t) })
			switch {
			case i == len(ws):
				i--
			case i > 0 && v.end-ws[i-1][0] <= ws[i][0]-v.end:
				i--
			}
			wait = ws[i][1]
		}
		per[v.node] = append(per[v.node], nsToMS(float64(max(0, v.end-v.from-wait))))
	}
	for n, xs := range per {
		slices.Sort(xs)
		b.nodes[n].queue.ttlMS = quantile(xs, 0.5)
	}
}

// redeliveryRequeueMS is the longest median delay between a failed
// delivery and the next one that still reads as an immediate requeue
// (a nack with requeue, the broker's own round trip); longer delays are
// a delay queue's TTL.
const redeliveryRequeueMS = 5

// maxRedelIndex is the last redelivery index byIndex tells apart.
const maxRedelIndex = 8

// immediateFirst reads how many of a message's first failed deliveries
// come back at once before the later ones go through the delay: the
// leading redelivery indices where immediateShare of the redeliveries
// came back at once, followed by one where as many were delayed. 0 when
// the first redelivery was delayed, or the capture holds none later.
func (q *queueAcc) immediateFirst() int {
	for m := 1; m < maxRedelIndex; m++ {
		now, later := q.byIndex[m], q.byIndex[m+1]
		nNow, nLater := now[0]+now[1], later[0]+later[1]
		if nNow == 0 || float64(now[0]) < immediateShare*float64(nNow) {
			return 0
		}
		if nLater > 0 && float64(later[1]) >= immediateShare*float64(nLater) {
			return m
		}
	}
	return 0
}

// immediateShare is the share of one index's redeliveries that must
// agree (back at once, or delayed) for immediateFirst to read them.
const immediateShare = 0.8

// redeliveryTailMS is the delay of a redelivery by ack + republish into
// the same queue: the message is back at the tail at once (replay's delay
// path, with the least delay it has: one tick), where a nack with requeue
// puts it back at the head.
const redeliveryTailMS = 0.001
