package graph

// This file reshapes the queue nodes to the broker's routing before
// finishQueues counts their messages: a Kafka topic read by several
// consumer groups becomes a queue per group, an exchange the queues it
// routes to.

import (
	"cmp"
	"slices"
)

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
