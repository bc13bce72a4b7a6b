package replay

// A broker's memory and its alarm: what its queues hold and, where the
// model says so, seconds of its averaged publish rate; past the
// watermark the alarm blocks the publishers or the broker restarts.

import "math"

// memory updates broker bi's memory, its peak and, unless the broker
// looks at its memory only every so often (broker.every), its alarm.
func (e *Engine) memory(bi int32) {
	if bi < 0 {
		return
	}
	b := &e.brokers[bi]
	bytes, held := e.memBytes(b)
	if b.wm <= 0 || b.down || b.every > 0 {
		return
	}
	e.alarmCheck(bi, bytes, held)
}

// memBytes returns broker b's memory, and the part of it its queues'
// messages and its base hold, and notes its peak.
func (e *Engine) memBytes(b *broker) (bytes, held float64) {
	bytes = b.base
	for _, qi := range b.queues {
		q := &e.mqs[qi]
		bytes += float64(q.ready+q.unacked+q.delayed) * q.bytes
	}
	held = bytes
	if b.rateK > 0 {
		b.decay(e.now)
		bytes += b.rateK * b.rateMem()
	}
	if bytes > b.out.PeakBytes {
		b.out.PeakBytes = bytes
	}
	return bytes, held
}

// alarmCheck sets or clears broker bi's alarm for its memory bytes (held
// of it its base and messages).
func (e *Engine) alarmCheck(bi int32, bytes, held float64) {
	b := &e.brokers[bi]
	switch {
	case !b.alarm && bytes >= b.wm && bytes > b.base:
		b.alarm = true
		b.alarmAt = e.now
		b.out.Alarms++
		if b.restart {
			e.q.push(e.now, evBroker, bi, brRestart)
		}
	case b.alarm && !b.restart && bytes < b.wm:
		b.alarm = false
		b.out.AlarmMS += e.ms(e.now - b.alarmAt)
		e.q.push(e.now, evBroker, bi, brRelease)
		return
	}
	if b.every == 0 && b.alarm && !b.restart && b.rateK > 0 && b.rate > 0 && held < b.wm && b.checkAt <= e.now {
		// Blocked, nothing is published: the rate's memory only decays.
		// Look again when it will have fallen under the watermark (the
		// sooner of the two averages, when there are two).
		dt := b.rateW * math.Log(b.rateK*b.rate/(b.wm-held))
		if b.fallW > 0 && b.fall > 0 {
			dt = min(dt, b.fallW*math.Log(b.rateK*b.fall/(b.wm-held)))
		}
		b.checkAt = e.now + max(1, int64(math.Ceil(dt)))
		e.q.push(b.checkAt, evBroker, bi, brCheck)
	}
}

// decay brings the broker's average publish rate to time now.
func (b *broker) decay(now int64) {
	if now > b.rateAt {
		b.rate *= math.Exp(-float64(now-b.rateAt) / b.rateW)
		if b.fallW > 0 {
			b.fall *= math.Exp(-float64(now-b.rateAt) / b.fallW)
		}
		b.rateAt = now
	}
}

// rateMem is the averaged publish rate the broker's memory follows:
// the lesser of its two averages, when it has two.
func (b *broker) rateMem() float64 {
	if b.fallW > 0 {
		return min(b.rate, b.fall)
	}
	return b.rate
}

// published adds one of q's messages to its broker's publish rate.
func (e *Engine) published(q *mqueue) {
	if q.broker < 0 {
		return
	}
	if b := &e.brokers[q.broker]; b.rateK > 0 {
		b.decay(e.now)
		b.rate += q.bytes / b.rateWS
		if b.fallW > 0 {
			b.fall += q.bytes / b.fallWS
		}
	}
}

// onBroker runs broker bi's operation op.
func (e *Engine) onBroker(bi int32, op uint32) {
	b := &e.brokers[bi]
	switch op {
	case brRestart:
		if !b.down {
			e.restart(bi)
		}
	case brUp:
		b.down, b.alarm = false, false
		b.out.AlarmMS += e.ms(e.now - b.alarmAt)
		for _, qi := range b.queues {
			e.kick(&e.mqs[qi])
		}
		e.memory(bi)
	case brRelease:
		for _, qi := range b.queues {
			e.kick(&e.mqs[qi])
		}
	case brCheck:
		if b.checkAt == e.now {
			b.checkAt = 0
		}
		e.memory(bi)
	case brMonitor:
		// The broker's memory monitor: the alarm goes on or off only
		// here.
		bytes, held := e.memBytes(b)
		if b.wm > 0 && !b.down {
			e.alarmCheck(bi, bytes, held)
		}
		e.q.push(e.now+b.every, evBroker, bi, brMonitor)
	}
}

// restart makes broker bi fall over: it loses every message it holds
// (those being worked or waiting to come back are failed when they
// turn up), refuses its held publishers, and is down for its RestartMS.
func (e *Engine) restart(bi int32) {
	b := &e.brokers[bi]
	b.out.Restarts++
	b.epoch++
	for _, qi := range b.queues {
		q := &e.mqs[qi]
		b.out.Lost += int64(q.ready + q.unacked + q.delayed)
		for q.ready > 0 {
			mi, ms := e.popReady(q)
			e.endMsg(ms, false)
			e.freeMsg(mi, ms)
		}
		for _, c := range q.cons {
			cs := &e.cons[c]
			for mi := cs.head; mi >= 0; {
				ms := e.msgs.at(mi)
				next := ms.next
				e.endMsg(ms, false)
				e.freeMsg(mi, ms)
				mi = next
			}
			cs.head, cs.tail, cs.unacked = -1, -1, 0
		}
		q.unacked, q.delayed = 0, 0
		for _, h := range q.blocked[q.bhead:] {
			if e.live(h.l, h.seq) {
				q.st.BlockedMS += e.ms(e.now - h.at)
				e.refuse(q, h.l, h.seq)
			} else {
				q.st.BlockedMS += e.ms(min(e.now, h.until) - h.at)
			}
		}
		q.blocked, q.bhead = q.blocked[:0], 0
	}
	b.down = true
	e.memory(bi)
	e.q.push(e.now+b.restartFor, evBroker, bi, brUp)
}

// memoryCheckMS is how often a broker of the system looks at its memory,
// 0 when unknown (the replay then looks at every change). RabbitMQ's
// vm_memory_monitor reads the node's memory every second and sets or
// clears the memory alarm only then: an alarm lasts at least a second,
// however soon the memory falls back under the watermark.
func memoryCheckMS(system string) float64 {
	switch system {
	case "rabbitmq":
		return 1000
	}
	return 0
}
