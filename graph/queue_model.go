package graph

// This file writes what the joins of queue_finish.go found into the
// model: each queue node's Queue settings with their provenance.
// queue_model_links.go adds the deliveries, the entries of queues fed
// from outside the traces, the dead-letter routes and the brokers;
// queue_info.go the table of queues.

import (
	"cmp"
	"math"
	"slices"

	"cascade"
)

// finishQueueModel turns the queue nodes of the model into queues: their
// Queue settings with provenance, the deliveries as edges to their
// consumers, the brokers, and an entry for each queue whose messages
// came from no traced publisher. It writes each queue (addQueue), then
// the dead-letter routes and the brokers.
func (b *Builder) finishQueueModel(m *cascade.Model, spanSeconds float64) {
	if len(b.mq.queues) == 0 {
		return
	}
	idx := make(map[string]int, len(m.Nodes))
	for i := range m.Nodes {
		idx[m.Nodes[i].Name] = i
	}
	b.metrics.finishPrefetch()
	w := &queueWriter{
		b: b, m: m, spanSeconds: spanSeconds, idx: idx,
		brokers: map[string]*cascade.Broker{},
		peaks:   b.peakProcessing(),
		fed:     b.fedQueues(),
	}
	for _, qi := range b.mq.queues {
		if b.nodes[qi].dropped {
			continue
		}
		w.addQueue(qi)
	}
	w.setDeadLetters()
	w.addBrokers()
	b.fitRateMemory(m)
	if w.queueEntries {
		b.rebalanceEntries(m)
	}
}

// queueWriter is what finishQueueModel's phases share: the model being
// written, its nodes' indices by name, and what they found across the
// queues.
type queueWriter struct {
	b           *Builder
	m           *cascade.Model
	spanSeconds float64
	idx         map[string]int // model node name → index in m.Nodes
	brokers     map[string]*cascade.Broker
	// peaks are per queue node the most processing spans of its
	// deliveries in progress at once (peakProcessing); fed the queues
	// fed by other queues (fedQueues).
	peaks map[int32]int
	fed   map[int32]bool
	// queueEntries says an entry was added for a queue fed from outside
	// the traces.
	queueEntries bool
}

// queueOut is one queue node as addQueue writes it: its accumulated
// messages, the broker's series for it (nil for none), and the Queue
// settings with their provenance.
type queueOut struct {
	qi     int32
	acc    *nodeAcc
	q      *queueAcc
	name   string // the destination's name
	series *queueMetrics
	cq     *cascade.Queue
	prov   map[string]cascade.Provenance
}

// fedQueues returns the queues the broker moves other queues' messages
// to: they are fed by them, not from outside.
func (b *Builder) fedQueues() map[int32]bool {
	fed := map[int32]bool{}
	for _, qi := range b.mq.queues {
		for to := range b.nodes[qi].queue.deadLetter {
			fed[to] = true
		}
	}
	return fed
}

// addQueue writes queue node qi into the model: its Queue settings
// (system, consumers, redelivery, message size), the node's service
// and overload cleared for a queue's, the deliveries as edges, and an
// entry when its messages came from outside the traces.
func (w *queueWriter) addQueue(qi int32) {
	b := w.b
	acc := b.nodes[qi]
	q := acc.queue
	name := b.syms.names[q.dest]
	o := &queueOut{
		qi: qi, acc: acc, q: q, name: name,
		series: b.metrics.queue(name),
		cq:     &cascade.Queue{},
		prov:   map[string]cascade.Provenance{"replicas": cascade.Default},
	}
	w.readSystem(o)
	o.prov["max_length"], o.prov["overflow"] = cascade.Default, cascade.Default
	w.readConsumers(o)
	o.readRedelivery()
	o.readMessageSize()
	if o.cq.Broker != "" {
		o.prov["broker"] = cascade.Observed
	}
	o.setNode(&w.m.Nodes[w.idx[acc.name]])
	w.addDeliveries(o)
	w.addQueueEntry(o)
}

// readSystem reads the queue's messaging system, its broker the
// system's, and reads that broker once (brokerOf).
func (w *queueWriter) readSystem(o *queueOut) {
	b, q, cq := w.b, o.q, o.cq
	if q.sys < 0 {
		return
	}
	cq.System = b.syms.names[q.sys]
	cq.Broker = cq.System
	o.prov["system"] = cascade.Observed
	if w.brokers[cq.Broker] == nil {
		w.brokers[cq.Broker] = b.brokerOf(cq.System)
	}
}

// readConsumers reads the queue's consumers and their prefetch.
// Consumers: the broker's count, else the distinct consumer instances
// (or nodes) seen taking messages, else the workers the processing
// spans show in progress at once.
func (w *queueWriter) readConsumers(o *queueOut) {
	b, q, cq, prov, qm := w.b, o.q, o.cq, o.prov, o.series
	switch {
	case qm != nil && qm.consumers > 0:
		cq.Consumers = int(math.Round(qm.consumers))
		prov["consumers"] = cascade.Observed
	case len(q.consumers) > 0:
		cq.Consumers = len(q.consumers)
		prov["consumers"] = cascade.Observed
	default:
		cq.Consumers = 1
		prov["consumers"] = cascade.Default
	}
	if pf, aggregated := b.metrics.prefetchOf(o.name, qm); pf > 0 {
		// One consumer's: an aggregate over channels is divided by
		// the consumers it sums over.
		cq.Prefetch = max(1, int(math.Round(pf)))
		prov["prefetch"] = cascade.Observed
		if aggregated {
			prov["prefetch"] = cascade.Inferred
		}
	} else {
		prov["prefetch"] = cascade.Default
	}
	// A model consumer works one message at a time. A consumer that
	// handles its deliveries at once (a goroutine per message, up to
	// its prefetch) shows more processing spans in progress than
	// there are consumers: each of those is a worker, holding one
	// message.
	//
	// With the prefetch known from the broker's series, each
	// consumer can hold that many at once: the workers are
	// consumers × prefetch (the peak seen is what the load asked
	// for). Without it, the peak is all the capture shows.
	if peak := w.peaks[o.qi]; peak > cq.Consumers {
		if all := cq.Consumers * cq.Prefetch; prov["prefetch"] != cascade.Default && peak <= all {
			cq.Consumers, cq.Prefetch = all, 1
			prov["consumers"], prov["prefetch"] = cascade.Inferred, cascade.Inferred
		} else {
			cq.Consumers, cq.Prefetch = peak, 1
			prov["consumers"], prov["prefetch"] = cascade.ObservedPeak, cascade.Inferred
		}
	}
}

// readRedelivery reads the queue's redelivery: requeue when a failed
// message comes back at once, delay (its TTL the median wait) when
// later, none when failures were never delivered again; and the most
// deliveries of a message.
func (o *queueOut) readRedelivery() {
	q, cq, prov := o.q, o.cq, o.prov
	delays := q.delays.sorted()
	immediate := 0
	if q.viaDelay > 0 {
		immediate = q.immediateFirst()
	}
	switch {
	case q.viaDelay > 0 && (q.viaDelay >= q.republished || immediate > 0):
		// Through a delay queue: back after its TTL (delayTTLs).
		cq.Redelivery, cq.DelayMS = cascade.RedeliverDelay, max(redeliveryTailMS, roundMS(q.ttlMS))
		prov["redelivery"], prov["delay_ms"] = cascade.Observed, cascade.Inferred
		if m := immediate; m > 0 {
			// Its first m retries came back at once (requeued, or
			// published again to the tail), the later ones through
			// the delay queue.
			cq.ImmediateRedeliveries = m
			prov["immediate_redeliveries"] = cascade.Observed
		}
	case q.republished > 0:
		// Ack + republish: back at the tail, after the time from the
		// failure to the republish (none when it came first).
		cq.Redelivery = cascade.RedeliverDelay
		cq.DelayMS = max(redeliveryTailMS, roundMS(quantile(delays, 0.5)))
		prov["redelivery"], prov["delay_ms"] = cascade.Observed, cascade.Inferred
	case len(delays) > 0:
		med := quantile(delays, 0.5)
		if med < redeliveryRequeueMS {
			cq.Redelivery = cascade.RedeliverRequeue
		} else {
			cq.Redelivery, cq.DelayMS = cascade.RedeliverDelay, roundMS(med)
			prov["delay_ms"] = cascade.Inferred
		}
		prov["redelivery"] = cascade.Inferred
	case q.redelivered > 0:
		cq.Redelivery = cascade.RedeliverRequeue // flags without the earlier deliveries: no delay to read
		prov["redelivery"] = cascade.Default
	case q.failed > 0:
		cq.Redelivery = cascade.RedeliverNone
		prov["redelivery"] = cascade.Inferred
	default:
		prov["redelivery"] = cascade.Default
	}
	switch {
	case q.redelivered > 0 && q.exhausted > 0 && q.exhaustedMax > 1:
		cq.MaxDeliveries = int(q.exhaustedMax)
		prov["max_deliveries"] = cascade.Observed
	case q.redelivered > 0:
		cq.MaxDeliveries = int(q.maxDeliveries)
		prov["max_deliveries"] = cascade.ObservedPeak
	default:
		prov["max_deliveries"] = cascade.Default
	}
}

// readMessageSize reads the queue's message size: the spans' body
// sizes, else queue bytes over ready messages from the broker's series.
func (o *queueOut) readMessageSize() {
	q, cq, prov, qm := o.q, o.cq, o.prov, o.series
	switch {
	case q.bytesN > 0:
		cq.MessageBytes = math.Round(q.bytes / float64(q.bytesN))
		prov["message_bytes"] = cascade.Observed
	case qm != nil && qm.bytesPerMessage() > 0:
		cq.MessageBytes = math.Round(qm.bytesPerMessage())
		prov["message_bytes"] = cascade.Inferred
	default:
		prov["message_bytes"] = cascade.Default
	}
}

// setNode makes the model node a queue: its Queue settings, no
// service, capacity or overload of its own, and its most ready messages
// observed.
func (o *queueOut) setNode(node *cascade.Node) {
	qm, prov := o.series, o.prov
	node.Queue = o.cq
	node.Concurrency, node.QueueCap = 0, 0
	node.Service, node.Tiers, node.FailService = cascade.Const(0), nil, nil
	node.Overload = cascade.Overload{Threshold: 1}
	obs := node.Observed
	obs.CapacitySource, obs.CapacityProven = "", false
	obs.FailureProcess, obs.FailureDispersion, obs.FailureBurstMS = "", 0, 0
	// Ready messages at most: the broker's series, else the most
	// messages the spans show waiting at once.
	if qm != nil && qm.depthN > 0 {
		obs.QueueDepthMax = qm.depthMax
		prov["observed.queue_depth_max"] = cascade.Observed
	} else {
		obs.QueueDepthMax = float64(obs.PeakInFlight)
		prov["observed.queue_depth_max"] = cascade.Inferred
	}
	node.Provenance = prov
}

// peakProcessing returns, per queue node, the most processing spans of
// its deliveries in progress at once.
func (b *Builder) peakProcessing() map[int32]int {
	type ev struct {
		q     int32
		at    int64
		delta int
	}
	var evs []ev
	for i := range b.mq.delivs {
		d := &b.mq.delivs[i]
		if d.queue >= 0 && d.end > d.start {
			evs = append(evs, ev{d.queue, d.start, 1}, ev{d.queue, d.end, -1})
		}
	}
	slices.SortFunc(evs, func(x, y ev) int {
		return cmp.Or(cmp.Compare(x.q, y.q), cmp.Compare(x.at, y.at),
			cmp.Compare(x.delta, y.delta)) // an end before a start at the same time
	})
	cur, peaks := map[int32]int{}, map[int32]int{}
	for _, e := range evs {
		cur[e.q] += e.delta
		peaks[e.q] = max(peaks[e.q], cur[e.q])
	}
	return peaks
}
