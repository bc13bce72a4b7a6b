package graph

// This file writes what the joins of queue_finish.go found into the
// model: each queue node's Queue settings with their provenance, the
// brokers, the entries of queues fed from outside the traces, and the
// table of queues.

import (
	"cmp"
	"math"
	"slices"

	"cascade"
)

// finishQueueModel turns the queue nodes of the model into queues: their
// Queue settings with provenance, the deliveries as edges to their
// consumers, the brokers, and an entry for each queue whose messages
// came from no traced publisher.
func (b *Builder) finishQueueModel(m *cascade.Model, spanSeconds float64) {
	if len(b.mq.queues) == 0 {
		return
	}
	idx := make(map[string]int, len(m.Nodes))
	for i := range m.Nodes {
		idx[m.Nodes[i].Name] = i
	}
	b.metrics.finishPrefetch()
	brokers := map[string]*cascade.Broker{}
	queueEntries := false
	peaks := b.peakProcessing()
	// Queues the broker moves other queues' messages to are fed by them,
	// not from outside.
	fed := map[int32]bool{}
	for _, qi := range b.mq.queues {
		for to := range b.nodes[qi].queue.deadLetter {
			fed[to] = true
		}
	}
	for _, qi := range b.mq.queues {
		acc := b.nodes[qi]
		if acc.dropped {
			continue
		}
		q := acc.queue
		node := &m.Nodes[idx[acc.name]]
		name := b.syms.names[q.dest]
		qm := b.metrics.queue(name)
		prov := map[string]cascade.Provenance{"replicas": cascade.Default}
		cq := &cascade.Queue{}
		if q.sys >= 0 {
			cq.System = b.syms.names[q.sys]
			cq.Broker = cq.System
			prov["system"] = cascade.Observed
			if brokers[cq.Broker] == nil {
				brokers[cq.Broker] = b.brokerOf(cq.System)
			}
		}
		prov["max_length"], prov["overflow"] = cascade.Default, cascade.Default

		// Consumers: the broker's count, else the distinct consumer
		// instances (or nodes) seen taking messages.
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
		if pf, aggregated := b.metrics.prefetchOf(name, qm); pf > 0 {
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
		if peak := peaks[qi]; peak > cq.Consumers {
			if all := cq.Consumers * cq.Prefetch; prov["prefetch"] != cascade.Default && peak <= all {
				cq.Consumers, cq.Prefetch = all, 1
				prov["consumers"], prov["prefetch"] = cascade.Inferred, cascade.Inferred
			} else {
				cq.Consumers, cq.Prefetch = peak, 1
				prov["consumers"], prov["prefetch"] = cascade.ObservedPeak, cascade.Inferred
			}
		}

		// Redelivery: requeue when a failed message comes back at once,
		// delay (its TTL the median wait) when later, none when failures
		// were never delivered again.
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

		// Message size: the spans' body sizes, else queue bytes over
		// ready messages from the broker's series.
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
		if cq.Broker != "" {
			prov["broker"] = cascade.Observed
		}

		node.Queue = cq
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

		// Deliveries: one edge per consumer node, its mean the consumer's
		// share of the messages.
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
			m.Edges = append(m.Edges, cascade.Edge{
				From: acc.name, To: b.nodes[c].name, Async: true,
				FanOut: cascade.Const(share), Parallelism: 1, Propagation: 1,
				Observed: eo,
				Provenance: map[string]cascade.Provenance{
					"fan_out": cascade.Observed, "parallelism": cascade.Default,
					"propagation": cascade.Default, "retry": cascade.Default, "stage": cascade.Default,
				},
			})
		}
		// Messages delivered with no publish seen came from outside the
		// traces: the queue is where they enter.
		if q.published == 0 && q.messages > 0 && !fed[qi] {
			queueEntries = true
			e := cascade.Entry{Node: acc.name, Share: 0}
			if spanSeconds > 0 {
				e.RatePerSec = round6(float64(q.messages) / spanSeconds)
			}
			m.Entries = append(m.Entries, e)
		}
	}
	// Dead-letter routes, by the first rule that names one: a queue the
	// broker moved the queue's messages to (published here, delivered
	// from there); else a queue whose name says dead letters that the
	// consumers publish to while processing the queue's messages; else a
	// queue fed only by failed processing of them (3 publishes or more).
	for _, qi := range b.mq.queues {
		acc := b.nodes[qi]
		if acc.dropped {
			continue
		}
		node := &m.Nodes[idx[acc.name]]
		dl, why := b.deadLetterOf(qi)
		if dl != "" {
			node.Queue.DeadLetter = dl
			node.Provenance["dead_letter"] = why
		} else {
			node.Provenance["dead_letter"] = cascade.Default
		}
	}
	names := make([]string, 0, len(brokers))
	for n := range brokers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m.Brokers = append(m.Brokers, *brokers[n])
	}
	b.fitRateMemory(m)
	if queueEntries {
		b.rebalanceEntries(m)
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

// queueInfos describes the queue nodes; infos are the nodes' infos in
// name order.
func (b *Builder) queueInfos(infos []NodeInfo) []QueueInfo {
	if len(b.mq.queues) == 0 {
		return nil
	}
	byName := make(map[string]*NodeInfo, len(infos))
	for i := range infos {
		byName[infos[i].Name] = &infos[i]
	}
	out := make([]QueueInfo, 0, len(b.mq.queues))
	for _, qi := range b.mq.queues {
		acc := b.nodes[qi]
		if acc.dropped {
			continue
		}
		q := acc.queue
		info := QueueInfo{
			Name: acc.name, Published: q.published, Messages: q.messages, Deliveries: q.deliveries,
			Redelivered: q.redelivered, Failed: q.failed, Exhausted: q.exhausted,
			Republished: q.republished, ViaDelay: q.viaDelay,
		}
		var via int32 = -1
		for v := range q.delayVia {
			if via < 0 || b.nodes[v].name < b.nodes[via].name {
				via = v
			}
		}
		if via >= 0 {
			info.DelayQueue = b.nodes[via].name
		}
		if q.deliveries > 0 {
			info.RedeliveryShare = round6(float64(q.redelivered) / float64(q.deliveries))
		}
		if d := q.delays.sorted(); len(d) > 0 {
			info.RedeliveryDelayMS = []float64{roundMS(quantile(d, 0.5)), roundMS(quantile(d, 0.95)), roundMS(quantile(d, 0.99))}
		}
		if qm := b.metrics.queue(b.syms.names[q.dest]); qm != nil && len(qm.depth) > 0 {
			info.DepthSource = DepthMetric
			for t, v := range qm.depth {
				info.Depth = append(info.Depth, DepthPoint{TimeNS: t, Ready: v})
			}
			slices.SortFunc(info.Depth, func(x, y DepthPoint) int { return cmp.Compare(x.TimeNS, y.TimeNS) })
		} else if ni := byName[acc.name]; ni != nil {
			info.DepthSource = DepthSpans
			for _, w := range ni.Series {
				info.Depth = append(info.Depth, DepthPoint{TimeNS: w.StartNS, Ready: w.MeanInFlight})
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(x, y QueueInfo) int { return cmp.Compare(x.Name, y.Name) })
	return out
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
