package graph

// This file writes what links the queues into the model: the deliveries
// as edges to their consumers, the entries of queues fed from outside
// the traces, the dead-letter routes and the brokers.

import (
	"cmp"
	"slices"

	"cascade"
)

// addDeliveries adds the queue's deliveries to the model: one edge per
// consumer node (by name), its mean the consumer's share of the
// messages.
func (w *queueWriter) addDeliveries(o *queueOut) {
	b, q := w.b, o.q
	cons := make([]int32, 0, len(q.out))
	for c := range q.out {
		cons = append(cons, c)
	}
	slices.SortFunc(cons, func(x, y int32) int { return cmp.Compare(b.nodes[x].name, b.nodes[y].name) })
	for _, c := range cons {
		d := q.out[c]
		share := 1.0
		if q.messages > 0 {
			share = round6(float64(d.first) / float64(q.messages))
		}
		w.m.Edges = append(w.m.Edges, cascade.Edge{
			From: o.acc.name, To: b.nodes[c].name, Async: true,
			FanOut: cascade.Const(share), Parallelism: 1, Propagation: 1,
			Observed: deliveryObserved(q, d, share),
			Provenance: map[string]cascade.Provenance{
				"fan_out": cascade.Observed, "parallelism": cascade.Default,
				"propagation": cascade.Default, "retry": cascade.Default, "stage": cascade.Default,
			},
		})
	}
}

// deliveryObserved returns what was observed of one consumer's
// deliveries d from queue q, share its share of the messages: its
// calls, redeliveries (as retries), failures and processing latency.
func deliveryObserved(q *queueAcc, d *deliveryAcc, share float64) *cascade.EdgeObserved {
	lat := d.latency.sorted()
	eo := &cascade.EdgeObserved{
		Calls:          d.calls,
		ParentRequests: q.messages,
		FanOutMean:     share,
		FanOutP50:      1,
		FanOutP95:      1,
		FanOutMax:      1,
		Retries:        d.redelivered,
		Propagation:    1,
		LatencyP50MS:   roundMS(quantile(lat, 0.5)),
		LatencyP95MS:   roundMS(quantile(lat, 0.95)),
		LatencyP99MS:   roundMS(quantile(lat, 0.99)),
		RetryEvidence:  EvidenceNone,
	}
	if d.calls > 0 {
		eo.ErrorRate = round6(float64(d.failed) / float64(d.calls))
		eo.RetryShare = round6(float64(d.redelivered) / float64(d.calls))
		eo.AttemptsPerCall = round6(float64(d.calls) / float64(max(1, d.first)))
	}
	if d.redelivered > 0 {
		eo.RetryEvidence = EvidenceRedelivery
	}
	return eo
}

// addQueueEntry adds the queue as an entry when messages were
// delivered with no publish seen (and no other queue feeds it): they
// came from outside the traces, and the queue is where they enter.
func (w *queueWriter) addQueueEntry(o *queueOut) {
	q := o.q
	if q.published == 0 && q.messages > 0 && !w.fed[o.qi] {
		w.queueEntries = true
		e := cascade.Entry{Node: o.acc.name, Share: 0}
		if w.spanSeconds > 0 {
			e.RatePerSec = round6(float64(q.messages) / w.spanSeconds)
		}
		w.m.Entries = append(w.m.Entries, e)
	}
}

// setDeadLetters sets each queue's dead-letter route (deadLetterOf), by
// the first rule that names one: a queue the broker moved the queue's
// messages to (published here, delivered from there); else a queue
// whose name says dead letters that the consumers publish to while
// processing the queue's messages; else a queue fed only by failed
// processing of them (3 publishes or more).
func (w *queueWriter) setDeadLetters() {
	b := w.b
	for _, qi := range b.mq.queues {
		acc := b.nodes[qi]
		if acc.dropped {
			continue
		}
		node := &w.m.Nodes[w.idx[acc.name]]
		dl, why := b.deadLetterOf(qi)
		if dl != "" {
			node.Queue.DeadLetter = dl
			node.Provenance["dead_letter"] = why
		} else {
			node.Provenance["dead_letter"] = cascade.Default
		}
	}
}

// addBrokers adds the brokers the queues named, by name.
func (w *queueWriter) addBrokers() {
	names := make([]string, 0, len(w.brokers))
	for n := range w.brokers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w.m.Brokers = append(w.m.Brokers, *w.brokers[n])
	}
}

// EvidenceRedelivery says a delivery edge's retries are redeliveries.
const EvidenceRedelivery = "redelivery"

// deadLetterOf returns the dead-letter queue of queue node qi, and how it
// was found.
func (b *Builder) deadLetterOf(qi int32) (string, cascade.Provenance) {
	q := b.nodes[qi].queue
	var best int32 = -1
	for to, n := range q.deadLetter {
		if n > 0 && (best < 0 || b.nodes[to].name < b.nodes[best].name) {
			best = to
		}
	}
	if best >= 0 {
		return b.nodes[best].name, cascade.Observed
	}
	// The queues this queue's consumers publish to while processing its
	// messages.
	var named, failures string
	for to, n := range q.passedOn {
		if to == qi || n == 0 || b.nodes[to].dropped {
			continue
		}
		name := b.nodes[to].name
		switch tq := b.nodes[to].queue; {
		case isDeadLetter(b.syms.names[tq.dest]):
			if named == "" || name < named {
				named = name
			}
		case n >= 3 && q.failedOn[to] == n && tq.published == n:
			if failures == "" || name < failures {
				failures = name
			}
		}
	}
	if named != "" {
		return named, cascade.Inferred
	}
	if failures != "" {
		return failures, cascade.Inferred
	}
	return "", ""
}

// brokerOf returns the broker of a messaging system, from the broker's
// series when there are some: the memory high watermark, and its memory
// when holding few messages (the least it used).
func (b *Builder) brokerOf(system string) *cascade.Broker {
	br := &cascade.Broker{Name: system, System: system, Provenance: map[string]cascade.Provenance{}}
	bm := b.metrics.broker
	if bm.limitN > 0 {
		br.MemoryWatermarkBytes = bm.limit
		br.Provenance["memory_watermark_bytes"] = cascade.Observed
	} else {
		br.Provenance["memory_watermark_bytes"] = cascade.Default
	}
	if bm.memN > 0 {
		br.BaseBytes = bm.memMin
		br.Provenance["base_bytes"] = cascade.Inferred
	} else {
		br.Provenance["base_bytes"] = cascade.Default
	}
	if system == "rabbitmq" {
		br.Alarm = cascade.AlarmBlock
	}
	br.Provenance["alarm"] = cascade.Default
	return br
}

// rebalanceEntries recomputes the entries' shares after queue entries
// were added: each entry's rate over all entries' rates.
func (b *Builder) rebalanceEntries(m *cascade.Model) {
	var total float64
	for i := range m.Entries {
		total += m.Entries[i].RatePerSec
	}
	if total <= 0 {
		return
	}
	for i := range m.Entries {
		m.Entries[i].Share = round6(m.Entries[i].RatePerSec / total)
	}
}
