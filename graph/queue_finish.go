package graph

import (
	"cmp"
	"slices"
)

// queueAcc is what Finish reads of one queue node's messages.
type queueAcc struct {
	dest, sys int32
	// published counts messages published into the queue (its in-edges'
	// calls that did not fail); messages counts messages delivered at
	// least once, deliveries every delivery, redelivered the deliveries
	// that were not a message's first.
	published, messages, deliveries, redelivered, failed int64
	// exhausted counts messages whose every delivery failed, and
	// exhaustedMax the most deliveries of one of them; maxDeliveries is
	// the most deliveries of any message.
	exhausted, exhaustedMax, maxDeliveries int64
	// delays holds, per redelivery, the ms from the failed delivery's
	// end to the message back in the queue: its next delivery for a
	// nack with requeue (no publish seen), its republish for ack +
	// republish (0 when the republish came first, inside the
	// processing), its next delivery for a retry through a delay queue
	// (the delay queue's TTL plus the wait here; ttlMS is the TTL: the
	// median of those less the wait of the first delivery seen nearest
	// in time, as the queue is FIFO).
	delays reservoir
	// republished counts redeliveries of a message the consumer
	// published again into this queue (ack + republish: back at the
	// tail); viaDelay those that came back through a delay queue
	// (delayVia, by the delay queue: published there by this queue's
	// consumer, delivered from here later).
	republished, viaDelay int64
	// byIndex counts, by a redelivery's index (1: a message's first,
	// up to maxRedelIndex), those back at once and those delayed, to
	// read a policy of immediate retries before a delay queue.
	byIndex   [maxRedelIndex + 1][2]int64
	delayVia  map[int32]int64
	ttlMS     float64
	bytes     float64
	bytesN    int64
	consumers map[[2]int32]struct{} // (node, instance)
	out       map[int32]*deliveryAcc
	groups    map[int32]struct{}
	// deadLetter counts, per other queue, messages published here and
	// delivered from there (a dead-letter route the broker took).
	deadLetter map[int32]int64
	// failedPubs counts publishes into this queue by requests that failed.
	failedPubs int64
	// passedOn counts, per queue, the publishes into it by the processing
	// of this queue's deliveries, and failedOn those of them whose
	// processing failed.
	passedOn, failedOn map[int32]int64
	// family is the queue node a Kafka topic's publishes went to, for
	// the queues split from it per consumer group; group the group.
	family, group int32
	// split lists the queues split from this one (its family's others).
	split []int32
	// routes are the queues this destination's messages were delivered
	// from while none was delivered from it: an exchange. routed lists
	// them once the exchange is replaced by them.
	routes map[int32]bool
	routed []int32
}

// deliveryAcc is one consumer's deliveries from one queue.
type deliveryAcc struct {
	calls, failed, first, redelivered int64
	latency                           reservoir // processing span durations, ms
}

func (q *queueAcc) to(consumer int32) *deliveryAcc {
	if q.out == nil {
		q.out = map[int32]*deliveryAcc{}
	}
	d := q.out[consumer]
	if d == nil {
		d = &deliveryAcc{}
		q.out[consumer] = d
	}
	return d
}

// finishQueues joins every delivery to the message it took, across
// traces (through its link to the publish span, the publish span it sits
// under, or the message id), and feeds the queue nodes: a queue node's
// requests are its messages' waits, from publish to delivery (and from a
// failed delivery to the next), so its in-flight count is the messages
// it holds over time.
func (b *Builder) finishQueues() {
	mq := &b.mq
	if len(mq.pubs) == 0 && len(mq.delivs) == 0 {
		return
	}
	b.dropCarried()
	bySpan := make(map[uint64]int32, len(mq.pubs))
	// A message id names a message of one destination: the copies of one
	// event that a publisher sends to several queues, or an exchange
	// routes to them, share their id, and are fan-out, not one message
	// moved from queue to queue. byMsg finds the first publish of an id
	// into a queue; idQueue the one queue an id was published to (-1
	// when it went to several), for the deliveries that name no queue or
	// came from another (see msgPublish).
	byMsg := map[[2]uint64]int32{}
	idQueue := map[uint64]int32{}
	for i := range mq.pubs {
		p := &mq.pubs[i]
		bySpan[p.key] = int32(i)
		if p.msgID != 0 {
			k := [2]uint64{uint64(uint32(p.queue)), p.msgID}
			if _, ok := byMsg[k]; !ok {
				byMsg[k] = int32(i)
			}
			if q, ok := idQueue[p.msgID]; !ok {
				idQueue[p.msgID] = p.queue
			} else if q != p.queue {
				idQueue[p.msgID] = -1
			}
		}
		q := b.nodes[p.queue].queue
		q.published++
		if p.bytes > 0 {
			q.bytes += float64(p.bytes)
			q.bytesN++
		}
		if p.callerFailed {
			q.failedPubs++
		}
	}
	b.splitGroups()
	for _, qi := range mq.queues {
		if q := b.nodes[qi].queue; q.family != qi {
			f := b.nodes[q.family].queue
			q.published, q.bytes, q.bytesN, q.failedPubs = f.published, f.bytes, f.bytesN, f.failedPubs
		}
	}
	// matched says which publishes some delivery took: per publish for
	// its own queue, and per (publish, queue) for the queues split from
	// it.
	matched := make([]bool, len(mq.pubs))
	matchedSplit := map[[2]int32]bool{}
	// Resolve each delivery's publish and queue.
	pubOf := make([]int32, len(mq.delivs))
	own := map[int32]bool{} // queues with deliveries of their own
	// moved marks deliveries of messages the broker moved from the queue
	// they were published to (dead-lettered): their redelivery count is
	// the earlier queue's.
	moved := make([]bool, len(mq.delivs))
	ident := make([]uint64, len(mq.delivs))
	// consumed holds the queues that name deliveries of their own: a
	// publish of a message id there is that queue's message, and no
	// delivery from another queue takes it by the id alone.
	consumed := map[int32]bool{}
	for i := range mq.delivs {
		if d := &mq.delivs[i]; d.queue >= 0 {
			consumed[b.nodes[d.queue].queue.family] = true
		}
	}
	for i := range mq.delivs {
		d := &mq.delivs[i]
		p, ok := int32(-1), false
		if d.pub != 0 {
			p, ok = bySpan[d.pub]
		}
		if !ok && d.msgID != 0 {
			p, ok = b.msgPublish(d, byMsg, idQueue, consumed)
		}
		if !ok {
			p = -1
		}
		pubOf[i] = p
		if d.queue < 0 {
			switch {
			case p >= 0:
				d.queue = mq.pubs[p].queue
			case d.group >= 0:
				d.queue = b.queueNode(d.group, d.sys)
			default:
				d.queue = b.queueNode(b.syms.id("unknown"), d.sys)
				mq.unknown++
			}
		}
		switch {
		case d.msgID != 0:
			ident[i] = d.msgID
		case p >= 0:
			ident[i] = mq.pubs[p].key
		default:
			ident[i] = d.pub
		}
		own[d.queue] = true
	}
	for i := range mq.delivs {
		d, p := &mq.delivs[i], pubOf[i]
		if p >= 0 {
			if from := mq.pubs[p].queue; from == d.queue {
				matched[p] = true
			} else if pub := &mq.pubs[p]; pub.retry && pub.deliv >= 0 && mq.delivs[pub.deliv].queue == d.queue && !own[from] {
				// A consumer's retry published to a queue nothing is
				// delivered from, and delivered from the first queue
				// again: a delay queue (a TTL, dead-lettered back). It
				// is the first queue's redelivery policy, not a queue
				// of the model.
				q := b.nodes[d.queue].queue
				if q.delayVia == nil {
					q.delayVia = map[int32]int64{}
				}
				q.delayVia[from]++
			} else if b.nodes[d.queue].queue.family == from {
				matchedSplit[[2]int32{p, d.queue}] = true
			} else if !own[from] && !isDeadLetter(b.syms.names[b.nodes[d.queue].queue.dest]) {
				// Published to a destination nothing is delivered from,
				// delivered from a queue: an exchange that routes to it.
				matchedSplit[[2]int32{p, d.queue}] = true
				q := b.nodes[from].queue
				if q.routes == nil {
					q.routes = map[int32]bool{}
				}
				q.routes[d.queue] = true
			} else {
				moved[i] = true
				// Published to one queue, delivered from another: the
				// broker moved it (dead-lettered).
				q := b.nodes[from].queue
				if q.deadLetter == nil {
					q.deadLetter = map[int32]int64{}
				}
				q.deadLetter[d.queue]++
			}
		}
	}
	for _, qi := range mq.queues {
		for via := range b.nodes[qi].queue.delayVia {
			b.nodes[via].dropped = true
		}
	}
	b.routeExchanges()
	// What the consumers of each queue publish, and to where.
	for i := range mq.pubs {
		p := &mq.pubs[i]
		if p.deliv < 0 {
			continue
		}
		d := &mq.delivs[p.deliv]
		q := b.nodes[d.queue].queue
		if q.passedOn == nil {
			q.passedOn, q.failedOn = map[int32]int64{}, map[int32]int64{}
		}
		q.passedOn[p.queue]++
		if d.failed || p.callerFailed {
			q.failedOn[p.queue]++
		}
	}
	// Group the deliveries by queue and message, in time order.
	order := make([]int32, len(mq.delivs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, c := &mq.delivs[x], &mq.delivs[y]
		if v := cmp.Compare(a.queue, c.queue); v != 0 {
			return v
		}
		if v := cmp.Compare(ident[x], ident[y]); v != 0 {
			return v
		}
		if v := cmp.Compare(a.at, c.at); v != 0 {
			return v
		}
		return cmp.Compare(x, y)
	})
	k := b.cfg.Reservoir
	// Redeliveries through a delay queue: back in the queue at the
	// failure plus the TTL, which is known once every one is seen.
	var viaDelay []delayBack
	// waits are the first deliveries' waits (from publish to delivery),
	// per queue: what a message delivered then had waited.
	waits := map[int32][][2]int64{}
	for lo := 0; lo < len(order); {
		hi := lo + 1
		first := &mq.delivs[order[lo]]
		if ident[order[lo]] != 0 {
			for hi < len(order) && mq.delivs[order[hi]].queue == first.queue && ident[order[hi]] == ident[order[lo]] {
				hi++
			}
		}
		qn := b.nodes[first.queue]
		q := qn.queue
		q.messages++
		start := first.at
		if p := pubOf[order[lo]]; p >= 0 {
			start = min(mq.pubs[p].start, first.at)
		}
		qn.addRequest(b, start, first.at, false, false, -1, 0)
		if p := pubOf[order[lo]]; p >= 0 && mq.pubs[p].queue == first.queue {
			waits[first.queue] = append(waits[first.queue], [2]int64{first.at, max(0, first.at-mq.pubs[p].end)})
		}
		ok := false
		n := int64(hi - lo)
		for j := lo; j < hi; j++ {
			d := &mq.delivs[order[j]]
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
			out.latency.add(b.rng, k, nsToMS(float64(d.end-d.start)))
			if j == lo {
				out.first++
			}
			if j > lo || d.redel > 0 && !moved[order[j]] {
				q.redelivered++
				out.redelivered++
			}
			if j > lo {
				prev := &mq.delivs[order[j-1]]
				var pub *pubRec
				if p := pubOf[order[j]]; p >= 0 && mq.pubs[p].retry {
					pub = &mq.pubs[p]
				}
				idx := min(j-lo, maxRedelIndex)
				switch {
				case pub != nil && pub.queue == first.queue:
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
					viaDelay = append(viaDelay, delayBack{first.queue, prev.end, d.at})
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
			if d.failed {
				q.failed++
				out.failed++
			} else {
				ok = true
			}
			n = max(n, int64(j-lo)+1)
			if !moved[order[j]] {
				n = max(n, int64(d.redel)+1)
			}
		}
		q.maxDeliveries = max(q.maxDeliveries, n)
		if !ok {
			q.exhausted++
			q.exhaustedMax = max(q.exhaustedMax, n)
		}
		lo = hi
	}
	b.delayTTLs(viaDelay, waits)
	for _, v := range viaDelay {
		ttl := int64(b.nodes[v.node].queue.ttlMS * 1e6)
		b.nodes[v.node].addRequest(b, min(v.from+ttl, v.end), v.end, false, false, -1, 0)
	}
	for _, qi := range mq.queues {
		if q := b.nodes[qi].queue; q.bytesN == 0 && q.bytes > 0 && q.deliveries > 0 {
			q.bytesN = q.deliveries // message sizes read from the deliveries
		}
	}
	// Messages no delivery was seen to take (the consumer untraced, or
	// its trace not sampled) wait for no one knows how long: they count
	// as the publish itself, as a virtual node's calls do.
	for i := range mq.pubs {
		p := &mq.pubs[i]
		if !matched[i] {
			b.nodes[p.queue].addRequest(b, p.start, p.end, false, false, -1, 0)
		}
		for _, qi := range b.nodes[p.queue].queue.split {
			if !matchedSplit[[2]int32{int32(i), qi}] {
				b.nodes[qi].addRequest(b, p.start, p.end, false, false, -1, 0)
			}
		}
		for _, qi := range b.nodes[p.queue].queue.routed {
			if !matchedSplit[[2]int32{int32(i), qi}] {
				b.nodes[qi].addRequest(b, p.start, p.end, false, false, -1, 0)
			}
		}
	}
	if mq.unknown > 0 {
		b.warnf("%d deliveries name no queue (no destination, no consumer group, no link or message id to a publish seen): they come from queue:unknown", mq.unknown)
	}
}

// dropCarried drops the messages of carriers (batch publish spans) whose
// creation context is a publish seen: a "create" span recorded the
// message where it was made, and the carrier only sent it. A carrier's
// message whose context is no publish span (a context the application
// made, or a create span not captured) is the carrier's own.
func (b *Builder) dropCarried() {
	mq := &b.mq
	var created map[uint64]bool
	for i := range mq.pubs {
		if p := &mq.pubs[i]; !p.carried {
			if created == nil {
				created = map[uint64]bool{}
			}
			created[p.key] = true
		}
	}
	seen := map[uint64]bool{}
	mq.pubs = slices.DeleteFunc(mq.pubs, func(p pubRec) bool {
		if !p.carried {
			return false
		}
		// A context carried twice (the batch sent again) is one message.
		dup := created[p.key] || seen[p.key]
		seen[p.key] = true
		return dup
	})
}

// msgPublish finds the publish of delivery d by its message id alone (no
// link or parent named a publish seen): the id's publish into d's queue
// (the topic, for a consumer group's queue split from it). Failing that,
// the id's publish into another destination, when the id went to one
// destination only and the move is one the broker makes: the
// destination is consumed by nobody (an exchange that routed the message
// here, a delay queue dead-lettering it back), or d's queue holds dead
// letters by its name. A message id seen on a consumed queue and on
// this one is the same event sent to both, not a message moved.
func (b *Builder) msgPublish(d *delivRec, byMsg map[[2]uint64]int32, idQueue map[uint64]int32, consumed map[int32]bool) (int32, bool) {
	if d.queue >= 0 {
		if p, ok := byMsg[[2]uint64{uint64(uint32(b.nodes[d.queue].queue.family)), d.msgID}]; ok {
			return p, true
		}
	}
	q, ok := idQueue[d.msgID]
	if !ok || q < 0 {
		return -1, false
	}
	if d.queue >= 0 && consumed[q] && !isDeadLetter(b.syms.names[b.nodes[d.queue].queue.dest]) {
		return -1, false
	}
	p, ok := byMsg[[2]uint64{uint64(uint32(q)), d.msgID}]
	return p, ok
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

// splitGroups splits each Kafka topic whose deliveries name two or more
// consumer groups into a queue per group: every group reads every
// message, so a message delivered once to each is fan-out, not
// redelivery. The topic's node becomes the first group's queue
// ("queue:orders/billing"), each other group gets a node of its own,
// and each publish edge into the topic is repeated into each.
//
// A delivery that names no group (Brave's kafka-clients tags its poll
// spans with kafka.topic alone) is of its consumer's service's group: a
// Kafka consumer group is one application's, its instances sharing the
// partitions.
func (b *Builder) splitGroups() {
	mq := &b.mq
	groups := map[int32][]int32{}
	for i := range mq.delivs {
		d := &mq.delivs[i]
		if d.queue < 0 {
			continue
		}
		q := b.nodes[d.queue].queue
		if q.sys < 0 || b.syms.names[q.sys] != "kafka" {
			continue
		}
		if d.group < 0 {
			d.group = b.syms.id(b.nodes[d.consumer].service)
		}
		if slices.Contains(groups[d.queue], d.group) {
			continue
		}
		groups[d.queue] = append(groups[d.queue], d.group)
	}
	topics := make([]int32, 0, len(groups))
	for t, gs := range groups {
		if len(gs) > 1 {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	nodeOf := map[[2]int32]int32{}
	for _, t := range topics {
		gs := groups[t]
		slices.SortFunc(gs, func(x, y int32) int { return cmp.Compare(b.syms.names[x], b.syms.names[y]) })
		acc := b.nodes[t]
		base := acc.name
		acc.name = base + "/" + b.syms.names[gs[0]]
		acc.service = acc.name
		acc.queue.group = gs[0]
		nodeOf[[2]int32{t, gs[0]}] = t
		var in []*edgeAcc
		for _, e := range b.edges {
			if e.to == t {
				in = append(in, e)
			}
		}
		for _, g := range gs[1:] {
			name := base + "/" + b.syms.names[g]
			n := int32(len(b.nodes))
			na := newNodeAcc(name, name, b)
			na.virtual = false
			na.queue = &queueAcc{dest: acc.queue.dest, sys: acc.queue.sys, family: t, group: g}
			b.nodes = append(b.nodes, na)
			mq.queues = append(mq.queues, n)
			acc.queue.split = append(acc.queue.split, n)
			nodeOf[[2]int32{t, g}] = n
			for _, e := range in {
				c := *e
				c.to = n
				b.edgeIdx[uint64(uint32(c.from))<<32|uint64(uint32(n))] = int32(len(b.edges))
				b.edges = append(b.edges, &c)
			}
		}
	}
	if len(nodeOf) == 0 {
		return
	}
	for i := range mq.delivs {
		d := &mq.delivs[i]
		if n, ok := nodeOf[[2]int32{d.queue, d.group}]; ok {
			d.queue = n
		}
	}
}

// QueueInfo is what graph read of one queue node beyond its Queue
// settings: the counts behind them and the queue's depth over time.
type QueueInfo struct {
	// Name is the queue node's name.
	Name string `json:"name"`
	// Published counts messages published into the queue (publish spans
	// that did not fail); Messages the messages delivered at least once;
	// Deliveries every delivery; Redelivered the deliveries that were
	// not a message's first (a repeated message id or link, or the
	// span's redelivery count); Failed the deliveries whose processing
	// failed; Exhausted the messages whose every delivery failed.
	Published   int64 `json:"published"`
	Messages    int64 `json:"messages"`
	Deliveries  int64 `json:"deliveries"`
	Redelivered int64 `json:"redelivered"`
	Failed      int64 `json:"failed"`
	Exhausted   int64 `json:"exhausted"`
	// Republished counts the redeliveries by ack + republish (the
	// consumer published the message again into this queue), and
	// ViaDelay those that came back through the delay queue DelayQueue
	// (the consumer published the message there, nothing was delivered
	// from it, and the message was delivered from here again).
	Republished int64  `json:"republished,omitempty"`
	ViaDelay    int64  `json:"via_delay,omitempty"`
	DelayQueue  string `json:"delay_queue,omitempty"`
	// RedeliveryShare is Redelivered over Deliveries.
	RedeliveryShare float64 `json:"redelivery_share"`
	// RedeliveryDelayMS are the 50%, 95% and 99% quantiles of the time
	// from a failed delivery's end to the message back in the queue: its
	// republish (0 when the republish came first), else its next
	// delivery (for a delay queue's, its TTL and the wait here); nil
	// when no message was seen delivered twice.
	RedeliveryDelayMS []float64 `json:"redelivery_delay_ms,omitempty"`
	// DepthSource says where Depth comes from: DepthMetric (the
	// broker's queue_depth series for the queue's label) or DepthSpans
	// (messages between their publish and their delivery, as the spans
	// show them: the mean per window of the node's series).
	DepthSource string       `json:"depth_source"`
	Depth       []DepthPoint `json:"depth"`
}

// DepthPoint is a queue's ready messages at a time.
type DepthPoint struct {
	TimeNS int64   `json:"time_ns"`
	Ready  float64 `json:"ready"`
}

// Where a queue's depth over time comes from (QueueInfo.DepthSource).
const (
	DepthMetric = "queue_depth metric"
	DepthSpans  = "publish and delivery times"
)

// routeExchanges replaces each exchange (a destination whose messages
// were delivered from other queues, none from itself: a fanout or topic
// exchange routing to bound queues) by the queues it routes to: each
// publish edge into it is repeated into each of them, as the broker puts
// every message in every bound queue, and the exchange leaves the model.
func (b *Builder) routeExchanges() {
	for _, e := range b.mq.queues {
		q := b.nodes[e].queue
		if len(q.routes) == 0 {
			continue
		}
		for to := range q.routes {
			q.routed = append(q.routed, to)
		}
		slices.SortFunc(q.routed, func(x, y int32) int { return cmp.Compare(b.nodes[x].name, b.nodes[y].name) })
		b.nodes[e].dropped = true
		var in []*edgeAcc
		for _, ea := range b.edges {
			if ea.to == e {
				in = append(in, ea)
			}
		}
		for _, to := range q.routed {
			tq := b.nodes[to].queue
			tq.published += q.published
			tq.bytes += q.bytes
			tq.bytesN += q.bytesN
			tq.failedPubs += q.failedPubs
			if tq.sys < 0 {
				tq.sys = q.sys
			}
			for _, ea := range in {
				key := uint64(uint32(ea.from))<<32 | uint64(uint32(to))
				if _, ok := b.edgeIdx[key]; ok {
					continue // published there directly too: that edge stays as it is
				}
				c := *ea
				c.to = to
				b.edgeIdx[key] = int32(len(b.edges))
				b.edges = append(b.edges, &c)
			}
		}
	}
}

// droppedNames returns the names of the nodes left out of the model.
func (b *Builder) droppedNames() map[string]bool {
	var out map[string]bool
	for _, qi := range b.mq.queues {
		if b.nodes[qi].dropped {
			if out == nil {
				out = map[string]bool{}
			}
			out[b.nodes[qi].name] = true
		}
	}
	return out
}
