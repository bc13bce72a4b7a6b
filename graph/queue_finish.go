package graph

import "slices"

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
// it holds over time. It runs in phases, each leaving in a queueJoin or
// in the queue nodes what the next one reads.
func (b *Builder) finishQueues() {
	mq := &b.mq
	if len(mq.pubs) == 0 && len(mq.delivs) == 0 {
		return
	}
	b.dropCarried()
	j := b.indexPublishes()
	b.splitGroups()
	b.inheritFamilies()
	j.resolveDeliveries()
	j.matchDeliveries()
	b.dropDelayQueues()
	b.routeExchanges()
	b.countPassedOn()
	j.countMessages()
	j.requeueViaDelay()
	b.sizesFromDeliveries()
	j.countUnmatched()
	if mq.unknown > 0 {
		b.warnf("%d deliveries name no queue (no destination, no consumer group, no link or message id to a publish seen): they come from queue:unknown", mq.unknown)
	}
}

// queueJoin is what finishQueues' phases find of the publishes and the
// deliveries, indexed as b.mq.pubs and b.mq.delivs are.
type queueJoin struct {
	b      *Builder
	bySpan map[uint64]int32
	// A message id names a message of one destination: the copies of one
	// event that a publisher sends to several queues, or an exchange
	// routes to them, share their id, and are fan-out, not one message
	// moved from queue to queue. byMsg finds the first publish of an id
	// into a queue; idQueue the one queue an id was published to (-1
	// when it went to several), for the deliveries that name no queue or
	// came from another (see msgPublish).
	byMsg   map[[2]uint64]int32
	idQueue map[uint64]int32
	// matched says which publishes some delivery took: per publish for
	// its own queue, and per (publish, queue) for the queues split from
	// it.
	matched      []bool
	matchedSplit map[[2]int32]bool
	// pubOf is each delivery's publish (-1 for none seen).
	pubOf []int32
	own   map[int32]bool // queues with deliveries of their own
	// moved marks deliveries of messages the broker moved from the queue
	// they were published to (dead-lettered): their redelivery count is
	// the earlier queue's.
	moved []bool
	// ident names each delivery's message: its id, else its publish's
	// span, else the span its link names.
	ident []uint64
	// viaDelay are the redeliveries through a delay queue: back in the
	// queue at the failure plus the TTL, which is known once every one
	// is seen.
	viaDelay []delayBack
	// waits are the first deliveries' waits (from publish to delivery),
	// per queue: what a message delivered then had waited.
	waits map[int32][][2]int64
}

// indexPublishes indexes the publishes by span and by message id for
// the deliveries to find them, and counts each queue's publishes, their
// sizes and those by failed requests.
func (b *Builder) indexPublishes() *queueJoin {
	mq := &b.mq
	j := &queueJoin{
		b:            b,
		bySpan:       make(map[uint64]int32, len(mq.pubs)),
		byMsg:        map[[2]uint64]int32{},
		idQueue:      map[uint64]int32{},
		matched:      make([]bool, len(mq.pubs)),
		matchedSplit: map[[2]int32]bool{},
		pubOf:        make([]int32, len(mq.delivs)),
		own:          map[int32]bool{},
		moved:        make([]bool, len(mq.delivs)),
		ident:        make([]uint64, len(mq.delivs)),
		waits:        map[int32][][2]int64{},
	}
	for i := range mq.pubs {
		p := &mq.pubs[i]
		j.bySpan[p.key] = int32(i)
		if p.msgID != 0 {
			k := [2]uint64{uint64(uint32(p.queue)), p.msgID}
			if _, ok := j.byMsg[k]; !ok {
				j.byMsg[k] = int32(i)
			}
			if q, ok := j.idQueue[p.msgID]; !ok {
				j.idQueue[p.msgID] = p.queue
			} else if q != p.queue {
				j.idQueue[p.msgID] = -1
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
	return j
}

// inheritFamilies gives each queue split from a Kafka topic (one per
// consumer group, see splitGroups) the topic's publish counts: every
// group reads every message.
func (b *Builder) inheritFamilies() {
	for _, qi := range b.mq.queues {
		if q := b.nodes[qi].queue; q.family != qi {
			f := b.nodes[q.family].queue
			q.published, q.bytes, q.bytesN, q.failedPubs = f.published, f.bytes, f.bytesN, f.failedPubs
		}
	}
}

// resolveDeliveries finds each delivery's publish (by link or parent
// span, else by message id) and its queue (named by its spans, else
// its publish's, its consumer group's, or queue:unknown), and the
// identity its message is grouped by.
func (j *queueJoin) resolveDeliveries() {
	b, mq := j.b, &j.b.mq
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
			p, ok = j.bySpan[d.pub]
		}
		if !ok && d.msgID != 0 {
			p, ok = b.msgPublish(d, j.byMsg, j.idQueue, consumed)
		}
		if !ok {
			p = -1
		}
		j.pubOf[i] = p
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
			j.ident[i] = d.msgID
		case p >= 0:
			j.ident[i] = mq.pubs[p].key
		default:
			j.ident[i] = d.pub
		}
		j.own[d.queue] = true
	}
}

// matchDeliveries reads what each delivery of a publish seen says of
// the broker: the publish's own queue took it (matched), a delay queue
// sent it back (delayVia), a consumer group's queue or an exchange's
// bound queue received it (matchedSplit, routes), or the broker moved
// it to a dead-letter queue (moved, deadLetter).
func (j *queueJoin) matchDeliveries() {
	b, mq := j.b, &j.b.mq
	for i := range mq.delivs {
		d, p := &mq.delivs[i], j.pubOf[i]
		if p >= 0 {
			if from := mq.pubs[p].queue; from == d.queue {
				j.matched[p] = true
			} else if pub := &mq.pubs[p]; pub.retry && pub.deliv >= 0 && mq.delivs[pub.deliv].queue == d.queue && !j.own[from] {
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
				j.matchedSplit[[2]int32{p, d.queue}] = true
			} else if !j.own[from] && !isDeadLetter(b.syms.names[b.nodes[d.queue].queue.dest]) {
				// Published to a destination nothing is delivered from,
				// delivered from a queue: an exchange that routes to it.
				j.matchedSplit[[2]int32{p, d.queue}] = true
				q := b.nodes[from].queue
				if q.routes == nil {
					q.routes = map[int32]bool{}
				}
				q.routes[d.queue] = true
			} else {
				j.moved[i] = true
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
}

// dropDelayQueues leaves the delay queues out of the model: each is
// its queue's redelivery policy (delayVia), not a queue of its own.
func (b *Builder) dropDelayQueues() {
	for _, qi := range b.mq.queues {
		for via := range b.nodes[qi].queue.delayVia {
			b.nodes[via].dropped = true
		}
	}
}

// countPassedOn counts what the consumers of each queue publish, and to
// where (passedOn), and which of those publishes came from a failed
// processing (failedOn).
func (b *Builder) countPassedOn() {
	mq := &b.mq
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
}

// countUnmatched feeds the publishes no delivery was seen to take (the
// consumer untraced, or its trace not sampled) to their queues: such a
// message waits for no one knows how long, so it counts as the publish
// itself, as a virtual node's calls do. A topic's publish counts so at
// each consumer group's queue, and an exchange's at each bound queue,
// that did not take it.
func (j *queueJoin) countUnmatched() {
	b, mq := j.b, &j.b.mq
	for i := range mq.pubs {
		p := &mq.pubs[i]
		if !j.matched[i] {
			b.nodes[p.queue].addRequest(b, p.start, p.end, false, false, -1, 0)
		}
		for _, qi := range b.nodes[p.queue].queue.split {
			if !j.matchedSplit[[2]int32{int32(i), qi}] {
				b.nodes[qi].addRequest(b, p.start, p.end, false, false, -1, 0)
			}
		}
		for _, qi := range b.nodes[p.queue].queue.routed {
			if !j.matchedSplit[[2]int32{int32(i), qi}] {
				b.nodes[qi].addRequest(b, p.start, p.end, false, false, -1, 0)
			}
		}
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
