package replay

// This file holds how a delivered message ends: the consumer's ack or
// nack, a redelivery (at once or after a delay), and a dead letter, and
// a message's end in its flow (engine_broker.go has the publish and
// delivery path).

// deadLetter dead-letters message mi (record ms), no longer held by q.
func (e *Engine) deadLetter(q *mqueue, mi int32, ms *msg) {
	q.st.DeadLettered++
	e.endMsg(ms, false)
	e.toDeadLetter(q, mi, ms)
}

// toDeadLetter moves message mi, whose flow has ended, to q's
// dead-letter queue, or frees it. The dead-letter queue takes it as the
// broker does: past its memory alarm, but not while it restarts nor past
// a full queue that does not drop its head.
func (e *Engine) toDeadLetter(q *mqueue, mi int32, ms *msg) {
	if q.dlq < 0 {
		e.freeMsg(mi, ms)
		return
	}
	d := &e.mqs[q.dlq]
	d.st.Published++
	e.nodeCall(&e.nodes[d.node])
	if d.broker >= 0 && e.brokers[d.broker].down {
		d.st.Rejected++
		e.freeMsg(mi, ms)
		return
	}
	if d.maxLen > 0 && d.ready >= d.maxLen {
		if d.overflow != ovDropHead {
			d.st.Rejected++
			e.freeMsg(mi, ms)
			return
		}
		e.dropHead(d)
	}
	ms.q = q.dlq
	ms.deliveries, ms.head = 0, false
	if d.broker >= 0 {
		ms.epoch = e.brokers[d.broker].epoch
	}
	e.pushReady(d, mi, ms, false)
	e.dispatch(d)
	if d.broker != q.broker {
		e.memory(d.broker)
	}
}

// endMsg ends message ms's part in its flow.
func (e *Engine) endMsg(ms *msg, ok bool) {
	if f := ms.flow; f >= 0 {
		ms.flow = -1
		e.flowWork(f, ok)
	}
}

func (e *Engine) freeMsg(mi int32, ms *msg) {
	ms.gen++
	e.msgs.release(mi)
}

// delivered ends consumer c's work on message mi (generation mg): an
// ack when ok, else a nack.
func (e *Engine) delivered(mi int32, mg uint32, c int32, ok bool) {
	cs := &e.cons[c]
	q := &e.mqs[cs.q]
	cs.busy = false
	if ms := e.msgs.at(mi); ms.gen == mg && ms.q == cs.q {
		switch {
		case q.broker >= 0 && ms.epoch != e.brokers[q.broker].epoch:
			// Lost in a restart while it was worked.
			e.endMsg(ms, false)
			e.freeMsg(mi, ms)
		case ok:
			cs.unacked--
			q.unacked--
			q.st.Acked++
			e.endMsg(ms, true)
			e.freeMsg(mi, ms)
		default:
			cs.unacked--
			q.unacked--
			e.nack(q, mi, ms)
		}
	}
	e.consume(c)
	e.kick(q)
	e.memory(q.broker)
}

// nack redelivers a failed message or dead-letters it.
func (e *Engine) nack(q *mqueue, mi int32, ms *msg) {
	if (q.maxDeliv > 0 && ms.deliveries >= q.maxDeliv) || q.redeliver == rdNone {
		e.deadLetter(q, mi, ms)
		return
	}
	q.st.Redelivered++
	q.delayed++
	e.published(q) // a retry is published again (RabbitMQ counts a republish, a dead-letter move)
	ms.waitFrom = e.now
	d := q.delay
	ms.head = q.redeliver == rdRequeue || q.redeliver == rdDelay && ms.deliveries <= q.immediate
	if ms.head {
		// A requeue takes a tick: a delivery that fails at once (a
		// down edge, a full consumer queue) cannot spin in one tick.
		d = 1
	}
	e.q.push(e.now+d, evMsgBack, mi, ms.gen)
}

// onMsgBack brings a redelivered message back to its queue's ready
// messages.
func (e *Engine) onMsgBack(mi int32, gen uint32) {
	ms := e.msgs.at(mi)
	if ms.gen != gen {
		return
	}
	q := &e.mqs[ms.q]
	if q.broker >= 0 && ms.epoch != e.brokers[q.broker].epoch {
		e.endMsg(ms, false) // lost in a restart while it waited
		e.freeMsg(mi, ms)
		return
	}
	q.delayed--
	e.pushReady(q, mi, ms, ms.head)
	if q.overflow == ovDropHead && q.maxLen > 0 && q.ready > q.maxLen {
		e.dropHead(q)
	}
	e.kick(q)
	e.memory(q.broker)
}
