package replay

// This file holds message queues (nodes with a Queue) and their brokers:
// a call into a queue node is a publish, which the broker enqueues,
// refuses or holds; consumers take the ready messages, at most Prefetch
// each, and work them one at a time through a call along the queue's
// out-edge (a delivery); the call's end acks or nacks the message, and a
// nack redelivers or dead-letters it (engine_broker_ack.go). A broker's
// memory and its alarm are in engine_memory.go.
//
// Flows (engine_flow.go) are a root request and the work it sets off
// through async edges and queues. A flow counts its pending pieces (the
// root, each async call, each message) and ends when the last one does.

import (
	"math"

	"cascade"
)

// Overflow and redelivery policies, compiled.
const (
	ovDropHead uint8 = iota
	ovReject
	ovBlock
)

const (
	rdRequeue uint8 = iota
	rdDelay
	rdNone
)

// Broker events' operations (event.gen of evBroker).
const (
	brRestart uint32 = iota // the alarm of a restart broker: it falls over
	brUp                    // the restart is over
	brRelease               // the alarm cleared: admit the held publishers
	brCheck                 // the rate's memory may have fallen under the watermark
	brMonitor               // the broker's periodic memory check (broker.every)
)

// mqueue is the replay state of one queue node.
type mqueue struct {
	node      int32 // index in Engine.nodes
	broker    int32 // index in Engine.brokers, or -1
	maxLen    int32 // 0 unbounded
	prefetch  int32 // 0 unlimited
	maxDeliv  int32 // 0 unlimited
	dlq       int32 // the dead-letter queue's index in Engine.mqs; -1 drops
	overflow  uint8
	redeliver uint8
	// immediate is Queue.ImmediateRedeliveries: with rdDelay, a message's
	// first immediate failed deliveries are requeued at once.
	immediate int32
	delay     int64   // ticks
	bytes     float64 // per message held
	outs      []int32 // out-edges: deliveries
	outCum    []float64
	outR      stream
	cons      []int32 // consumers, indices in Engine.cons
	rr        int32   // next consumer to try
	// The ready messages, a FIFO through msg.next.
	head, tail int32
	ready      int32
	unacked    int32 // delivered and not yet acked (buffered or worked)
	delayed    int32 // nacked, waiting to come back
	blocked    []heldPub
	bhead      int
	st         cascade.QueueOutcome
}

// consumer is one consumer of a queue: it holds the messages delivered
// to it (its buffer, a FIFO through msg.next) and works one at a time.
type consumer struct {
	q          int32
	unacked    int32
	busy       bool
	head, tail int32
}

// msg is a message held by a broker.
type msg struct {
	gen        uint32
	epoch      uint32 // its broker's epoch when it arrived: a restart loses it
	q          int32
	next       int32
	flow       int32 // -1 none
	depth      int32
	deliveries int32
	head       bool  // comes back to the head (requeue) rather than the tail
	waitFrom   int64 // when it was published or last failed: its wait is the queue node's latency
}

// heldPub is a publisher held back by a full queue that blocks or by its
// broker's memory alarm.
type heldPub struct {
	l     int32
	seq   uint32
	at    int64
	until int64 // the attempt's deadline, when its route has a timeout
}

// broker is the replay state of one broker.
type broker struct {
	base, wm   float64
	restart    bool
	restartFor int64 // ticks
	queues     []int32
	alarm      bool
	down       bool
	alarmAt    int64
	epoch      uint32
	out        cascade.BrokerOutcome
	// The memory of the message rate (cascade.Broker.RateMemoryS):
	// rateK seconds of rate, the bytes published per second averaged
	// exponentially over rateW ticks (rateWS seconds); rate is that
	// average as of rateAt. With a fall window (fallW ticks, fallWS
	// seconds; 0 none) a second average, fall, runs beside it and the
	// memory follows the lesser. checkAt is when a brCheck is due, 0
	// none.
	rateK, rateWS float64
	rateW         float64
	rate          float64
	fallWS, fallW float64
	fall          float64
	rateAt        int64
	checkAt       int64
	// every is how often, in ticks, the broker looks at its memory: its
	// alarm goes on and off only then (a brMonitor event); 0 looks at
	// every change.
	every int64
}

// flow is a root request's flow: pending counts its pieces of work not
// yet ended.
type flow struct {
	start   int64
	pending int32
	failed  bool
	done    bool
}

// buildBrokers compiles the model's queues and brokers. It runs after
// the edges, and marks the routes into queue nodes (route.pub).
func (e *Engine) buildBrokers(index map[string]int32) {
	m := e.model
	bidx := make(map[string]int32, len(m.Brokers))
	e.brokers = make([]broker, len(m.Brokers))
	for i := range m.Brokers {
		mb := &m.Brokers[i]
		bidx[mb.Name] = int32(i)
		b := &e.brokers[i]
		b.base, b.wm = mb.BaseBytes, mb.MemoryWatermarkBytes
		b.restart = mb.Alarm == cascade.AlarmRestart
		b.restartFor = e.ticks(mb.RestartMS)
		if ms := memoryCheckMS(mb.System); ms > 0 && mb.MemoryWatermarkBytes > 0 {
			b.every = max(1, e.ticks(ms))
		}
		b.out.Name = mb.Name
		if mb.RateMemoryS > 0 {
			w := mb.RateWindowMS
			if w <= 0 {
				w = 1000
			}
			b.rateK, b.rateWS, b.rateW = mb.RateMemoryS, w/1000, float64(max(1, e.ticks(w)))
			if f := mb.RateFallMS; f > 0 {
				b.fallWS, b.fallW = f/1000, float64(max(1, e.ticks(f)))
			}
		}
	}
	for i := range m.Nodes {
		e.nodes[i].mq = -1
		if m.Nodes[i].Queue != nil {
			e.nodes[i].mq = int32(len(e.mqs))
			e.mqs = append(e.mqs, mqueue{node: int32(i)})
		}
	}
	for qi := range e.mqs {
		q := &e.mqs[qi]
		n := &e.nodes[q.node]
		mq := m.Nodes[q.node].Queue
		n.capacity = 0 // a queue has no slots: no utilisation, load or overload
		q.broker = -1
		if mq.Broker != "" {
			q.broker = bidx[mq.Broker]
			b := &e.brokers[q.broker]
			b.queues = append(b.queues, int32(qi))
		}
		q.maxLen = int32(min(mq.MaxLength, math.MaxInt32))
		q.prefetch = int32(min(mq.Prefetch, math.MaxInt32))
		q.maxDeliv = int32(min(mq.MaxDeliveries, math.MaxInt32))
		switch mq.Overflow {
		case cascade.OverflowRejectPublish:
			q.overflow = ovReject
		case cascade.OverflowBlock:
			q.overflow = ovBlock
		}
		switch mq.Redelivery {
		case cascade.RedeliverDelay:
			q.redeliver = rdDelay
		case cascade.RedeliverNone:
			q.redeliver = rdNone
		}
		q.delay = max(1, e.ticks(mq.DelayMS))
		q.immediate = int32(min(mq.ImmediateRedeliveries, math.MaxInt32))
		q.bytes = mq.MessageBytes
		q.dlq = -1
		if d, ok := index[mq.DeadLetter]; ok && mq.DeadLetter != "" {
			q.dlq = e.nodes[d].mq // -1 when it is not a queue: dropped
		}
		var cum float64
		for _, st := range n.stages {
			for _, ei := range st {
				w := m.Edges[ei].FanOut.MeanValue()
				if !(w > 0) {
					continue
				}
				cum += w
				q.outs = append(q.outs, ei)
				q.outCum = append(q.outCum, cum)
			}
		}
		for range max(1, mq.Consumers) {
			q.cons = append(q.cons, int32(len(e.cons)))
			e.cons = append(e.cons, consumer{q: int32(qi)})
		}
	}
	e.flowOn = len(e.mqs) > 0
	for i := range m.Edges {
		e.flowOn = e.flowOn || m.Edges[i].Async
	}
}

// resetBrokers prepares the queues, brokers and flows for a run.
func (e *Engine) resetBrokers(seed uint64) {
	e.msgs.reset()
	e.flows.reset()
	for qi := range e.mqs {
		q := &e.mqs[qi]
		if q.outR.Rand == nil {
			q.outR = newStream(seed, streamQueue, uint64(qi))
		} else {
			q.outR.reseed(seed, streamQueue, uint64(qi))
		}
		q.rr, q.head, q.tail = 0, -1, -1
		q.ready, q.unacked, q.delayed = 0, 0, 0
		q.blocked, q.bhead = q.blocked[:0], 0
		q.st = cascade.QueueOutcome{}
	}
	for i := range e.cons {
		c := &e.cons[i]
		c.unacked, c.busy, c.head, c.tail = 0, false, -1, -1
	}
	for i := range e.brokers {
		b := &e.brokers[i]
		b.alarm, b.down, b.alarmAt, b.epoch = false, false, 0, 0
		b.rate, b.fall, b.rateAt, b.checkAt = 0, 0, 0, 0
		b.out = cascade.BrokerOutcome{Name: b.out.Name, PeakBytes: b.base}
		if b.every > 0 {
			e.q.push(b.every, evBroker, int32(i), brMonitor)
		}
	}
}

// publish takes the attempt (l, seq) on route r into its queue node: it
// is refused, held back, or accepted.
func (e *Engine) publish(l int32, r *route, seq uint32) {
	n := r.callee
	q := &e.mqs[n.mq]
	e.nodeCall(n)
	alarm := false
	if q.broker >= 0 {
		b := &e.brokers[q.broker]
		if b.down || (b.alarm && b.restart) {
			e.refuse(q, l, seq)
			return
		}
		alarm = b.alarm
		if alarm && r.failBlocked {
			// The publisher gives up at once on a blocked connection,
			// once it knows: the alarm's first heldMax publishes were on
			// their way and wait for it to clear.
			if r.heldAt != b.alarmAt {
				r.heldAt, r.heldN = b.alarmAt, 0
			}
			if r.heldN < r.heldMax {
				r.heldN++
				e.hold(q, l, seq)
				return
			}
			e.refuse(q, l, seq)
			return
		}
	}
	if alarm || q.bhead < len(q.blocked) {
		// Behind the alarm, or behind publishers already held.
		e.hold(q, l, seq)
		if !alarm {
			e.kick(q)
		}
		return
	}
	if !e.offer(q, l, seq) {
		e.hold(q, l, seq)
	}
}

// offer decides a publish that its broker lets through: the queue
// accepts it (dropping its head when full, for drop-head) or refuses it
// (reject-publish); it reports false, changing nothing, when the queue is
// full and blocks.
func (e *Engine) offer(q *mqueue, l int32, seq uint32) bool {
	if q.maxLen > 0 && q.ready >= q.maxLen {
		switch q.overflow {
		case ovBlock:
			return false
		case ovReject:
			e.published(q)
			e.refuse(q, l, seq)
			return true
		}
		e.dropHead(q)
	}
	e.accept(q, l, seq)
	return true
}

// refuse answers the publish (l, seq) with a nack.
func (e *Engine) refuse(q *mqueue, l int32, seq uint32) {
	q.st.Published++
	q.st.Rejected++
	e.m.rejectedQueue++
	e.nodeReject(&e.nodes[q.node])
	// Through an event: the publisher may be in the middle of issuing
	// this very call.
	e.q.push(e.now, evRespFail, l, seq)
}

// hold keeps the publish (l, seq) waiting.
func (e *Engine) hold(q *mqueue, l int32, seq uint32) {
	lk := e.link(l)
	until := int64(math.MaxInt64)
	if r := lk.rt; r.timeout > 0 {
		e.addTimer(r.self, l, seq)
		until = e.now + r.timeout
	}
	q.blocked = append(q.blocked, heldPub{l: l, seq: seq, at: e.now, until: until})
}

// accept enqueues the publish (l, seq) as a new message and confirms it.
func (e *Engine) accept(q *mqueue, l int32, seq uint32) {
	lk := e.link(l)
	mi := e.msgs.alloc()
	ms := e.msgs.at(mi)
	ms.q = e.nodes[q.node].mq
	ms.flow, ms.depth, ms.deliveries, ms.head = -1, int32(lk.depth), 0, false
	if pj := lk.pj; pj != nil {
		ms.depth = int32(pj.depth) + 1
	}
	if f := lk.flow; f >= 0 && e.flows.at(f).gainOK() {
		ms.flow = f
	}
	ms.epoch = 0
	if q.broker >= 0 {
		ms.epoch = e.brokers[q.broker].epoch
	}
	q.st.Published++
	ms.waitFrom = e.now
	e.published(q)
	e.q.push(e.now, evRespOK, l, seq)
	e.pushReady(q, mi, ms, false)
	e.dispatch(q)
	e.memory(q.broker)
}

// gainOK adds a pending piece to a flow that has not ended, and reports
// whether it did.
func (f *flow) gainOK() bool {
	if f.done {
		return false
	}
	f.pending++
	return true
}

// pushReady puts message mi (record ms) among q's ready messages, at the
// head or the tail.
func (e *Engine) pushReady(q *mqueue, mi int32, ms *msg, head bool) {
	ms.next = -1
	switch {
	case q.head < 0:
		q.head, q.tail = mi, mi
	case head:
		ms.next = q.head
		q.head = mi
	default:
		e.msgs.at(q.tail).next = mi
		q.tail = mi
	}
	q.ready++
	n := &e.nodes[q.node]
	e.queuedAdd(n, 1)
	if int(q.ready) > n.nm.queueMax {
		n.nm.queueMax = int(q.ready)
		n.nm.queueMaxRep = int(q.ready)
	}
}

// popReady takes q's first ready message.
func (e *Engine) popReady(q *mqueue) (int32, *msg) {
	mi := q.head
	ms := e.msgs.at(mi)
	q.head = ms.next
	if q.head < 0 {
		q.tail = -1
	}
	q.ready--
	e.queuedAdd(&e.nodes[q.node], -1)
	return mi, ms
}

// dropHead drops q's oldest ready message (overflow drop-head), to the
// dead-letter queue when q has one.
func (e *Engine) dropHead(q *mqueue) {
	mi, ms := e.popReady(q)
	q.st.Dropped++
	e.endMsg(ms, false)
	e.toDeadLetter(q, mi, ms)
}

// dispatch delivers q's ready messages to the consumers that have room,
// round robin, and sets idle ones to work. A queue with no out-edge keeps
// its messages.
func (e *Engine) dispatch(q *mqueue) {
	if len(q.outs) == 0 {
		return
	}
	nc := int32(len(q.cons))
	for q.ready > 0 {
		ci := int32(-1)
		for k := int32(0); k < nc; k++ {
			c := q.rr + k
			if c >= nc {
				c -= nc
			}
			if cs := &e.cons[q.cons[c]]; q.prefetch == 0 || cs.unacked < q.prefetch {
				ci = c
				break
			}
		}
		if ci < 0 {
			return
		}
		q.rr = ci + 1
		if q.rr == nc {
			q.rr = 0
		}
		c := q.cons[ci]
		cs := &e.cons[c]
		mi, ms := e.popReady(q)
		ms.deliveries++
		q.st.Delivered++
		cs.unacked++
		q.unacked++
		if int(q.unacked) > q.st.UnackedMax {
			q.st.UnackedMax = int(q.unacked)
		}
		ms.next = -1
		if cs.tail >= 0 {
			e.msgs.at(cs.tail).next = mi
		} else {
			cs.head = mi
		}
		cs.tail = mi
		if !cs.busy {
			e.consume(c)
		}
	}
}

// consume sets idle consumer c to work its next buffered message: a call
// along one of the queue's out-edges, which ends in delivered.
func (e *Engine) consume(c int32) {
	cs := &e.cons[c]
	if cs.busy || cs.head < 0 {
		return
	}
	mi := cs.head
	ms := e.msgs.at(mi)
	cs.head = ms.next
	if cs.head < 0 {
		cs.tail = -1
	}
	cs.busy = true
	q := &e.mqs[cs.q]
	// A queue node's latency is a message's wait: from its publish, or
	// its last failed delivery, to the start of the work on it (graph
	// reads a queue's requests the same way).
	e.nodes[q.node].nm.latency.add(e.now - ms.waitFrom)
	ei := q.outs[0]
	if len(q.outs) > 1 {
		u := q.outR.Float64() * q.outCum[len(q.outCum)-1]
		for k, cum := range q.outCum {
			if u < cum {
				ei = q.outs[k]
				break
			}
		}
	}
	l, lk := e.newLink(ei, -1, 0, nil, -1, -1)
	// A delivery link: parent -1, its message in issue, the message's
	// generation in parentGen and the consumer in user (linkDone reads
	// none of them for a link without a parent that is not a root).
	lk.issue, lk.parentGen, lk.user = mi, ms.gen, c
	lk.flow, lk.depth = ms.flow, int8(ms.depth)
	e.send(l, lk)
}

// asyncDone ends link l (record lk), which has no parent and is not a
// root: an async call, whose end is its flow's, or a delivery, whose end
// acks or nacks its message.
func (e *Engine) asyncDone(l int32, lk *link, ok bool) {
	f, mi, mg, c := lk.flow, lk.issue, lk.parentGen, lk.user
	e.freeLink(l, lk)
	if mi >= 0 {
		e.delivered(mi, mg, c, ok)
		return
	}
	if f >= 0 {
		e.flowWork(f, ok)
	}
}

// kick delivers q's ready messages and admits its held publishers while
// it can.
func (e *Engine) kick(q *mqueue) {
	for {
		e.dispatch(q)
		if !e.admit(q) {
			return
		}
	}
}

// admit lets q's first held publisher in, when its broker and the queue
// allow, and reports whether it did; publishers that gave up leave.
func (e *Engine) admit(q *mqueue) bool {
	for q.bhead < len(q.blocked) {
		if q.broker >= 0 {
			if b := &e.brokers[q.broker]; b.alarm || b.down {
				return false
			}
		}
		h := q.blocked[q.bhead]
		q.bhead++
		if !e.live(h.l, h.seq) {
			q.st.BlockedMS += e.ms(min(e.now, h.until) - h.at)
			continue
		}
		if !e.offer(q, h.l, h.seq) {
			q.bhead--
			return false
		}
		q.st.BlockedMS += e.ms(e.now - h.at)
		e.trimHeld(q)
		return true
	}
	e.trimHeld(q)
	return false
}

// trimHeld forgets the held publishers already let in.
func (e *Engine) trimHeld(q *mqueue) {
	if q.bhead == len(q.blocked) {
		q.blocked, q.bhead = q.blocked[:0], 0
	}
}

// brokerResults fills the outcome's queue and broker results.
func (e *Engine) brokerResults(o *cascade.Outcome) {
	if e.flowOn {
		m := &e.m
		o.Flows = m.flows
		o.FlowsUnfinished = m.roots - m.flows
		o.FlowSuccessRate = round6(ratio(m.flowsOK, m.roots))
		o.FlowP50MS = round6(e.ms1(m.flowLat.quantile(0.50)))
		o.FlowP95MS = round6(e.ms1(m.flowLat.quantile(0.95)))
		o.FlowP99MS = round6(e.ms1(m.flowLat.quantile(0.99)))
	}
	if len(e.mqs) == 0 {
		return
	}
	for i := range e.brokers {
		b := &e.brokers[i]
		bo := b.out
		if b.alarm {
			bo.AlarmMS += e.ms(e.now - b.alarmAt)
		}
		bo.PeakBytes = round6(bo.PeakBytes)
		bo.AlarmMS = round6(bo.AlarmMS)
		o.Brokers = append(o.Brokers, bo)
	}
	for i := range o.Nodes {
		no := &o.Nodes[i]
		for qi := range e.mqs {
			q := &e.mqs[qi]
			if e.nodes[q.node].name != no.Name {
				continue
			}
			st := q.st
			for _, h := range q.blocked[q.bhead:] {
				if e.live(h.l, h.seq) {
					st.BlockedMS += e.ms(e.now - h.at)
				} else {
					st.BlockedMS += e.ms(min(e.now, h.until) - h.at)
				}
			}
			st.BlockedMS = round6(st.BlockedMS)
			no.Queue = &st
		}
	}
}

// batchPublish adds the publish (l, seq) on route r to its batch: the
// first starts the linger, the last to fill it sends it.
func (e *Engine) batchPublish(b *batcher, r *route, l int32, seq uint32) {
	b.buf = append(b.buf, pendingPub{l: l, seq: seq})
	if len(b.buf) == 1 {
		e.q.push(e.now+b.linger, evBatch, b.route, b.gen)
	}
	if len(b.buf) >= b.size {
		e.flushBatch(b, r)
	}
}

// flushBatch publishes a batch's publishes whose publisher still waits
// (one that timed out has moved on).
func (e *Engine) flushBatch(b *batcher, r *route) {
	b.gen++ // the linger of this batch is spent
	// A copy: a publish may, through what it sets off, add to a batch.
	buf := append([]pendingPub(nil), b.buf...)
	b.buf = b.buf[:0]
	for _, p := range buf {
		if lk := e.link(p.l); lk.live && lk.seq == p.seq && lk.waiting {
			e.publish(p.l, r, p.seq)
		}
	}
}
