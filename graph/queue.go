package graph

import (
	"strings"

	"cascade"
)

// Messaging roles of a span (tspan.msg).
const (
	msgNone    uint8 = iota
	msgPublish       // sends a message to a queue or topic
	msgReceive       // a consumer took a message (receive, poll)
	msgProcess       // a consumer handled a message
)

// delivering reports whether a role is a consumer's: a delivery of a
// message, not a request sent by a caller.
func delivering(role uint8) bool { return role == msgReceive || role == msgProcess }

// roleOf reads a span's messaging role from its operation type, else from
// its kind: a producer (or client) span that names a destination
// publishes, a consumer span receives. Settle spans (acks) and spans
// with no messaging attribute have none, and are read as before.
func roleOf(s *cascade.Span) uint8 {
	switch s.MessagingOperation {
	case cascade.MessagingPublish, cascade.MessagingSend, cascade.MessagingCreate:
		return msgPublish
	case cascade.MessagingReceive:
		return msgReceive
	case cascade.MessagingProcess, "deliver":
		return msgProcess
	case "":
		switch s.Kind {
		case cascade.KindProducer, cascade.KindClient:
			if s.Destination != "" {
				return msgPublish
			}
		case cascade.KindConsumer:
			return msgReceive
		}
	}
	return msgNone
}

// msgSpan holds the messaging attributes of one span of the trace being
// read.
type msgSpan struct {
	key   uint64 // the span's own trace+span key, as links name it
	link  uint64 // the first link's trace+span key; 0 for none
	msgID uint64 // a hash of the message id; 0 for none
	sys   int32  // symbols, -1 for none
	dest  int32
	group int32
	redel int32
	bytes int64
	// carried are the links of a publish span that carries messages
	// created elsewhere (a batch publish linking to each message's
	// creation context); nil for other spans.
	carried []uint64
}

// pubRec is one message published.
type pubRec struct {
	key, msgID   uint64
	start, end   int64
	bytes        int64
	queue        int32
	callerFailed bool // the request that published it failed
	// deliv is the delivery whose processing published it (a consumer
	// passing the message on, or to a dead-letter queue); -1 for none.
	deliv int32
	// retry marks a consumer's retry: the message of delivery deliv
	// published again (the same message id, or a delivery count above
	// 0), to its own queue (ack + republish) or to a delay queue that
	// dead-letters it back. It is a redelivery, not a new message.
	retry bool
	// carried marks a message of a carrier (a batch publish span): key is
	// its creation context, the span its link names. When that span is a
	// publish seen (a "create" span), the message is that one's, and this
	// record is dropped at Finish.
	carried bool
}

// delivRec is one delivery of a message to a consumer: the consumer's
// processing span, and the receive span that took the message.
type delivRec struct {
	at         int64 // when the message left the queue: the receive span's start
	start, end int64 // the processing span
	pub        uint64
	msgID      uint64
	queue      int32 // -1 until resolved at Finish
	dest       int32 // the destination the consumer's spans name; -1 for none
	consumer   int32 // the consumer's node
	inst       int32
	group      int32
	sys        int32
	redel      int32
	bytes      int64
	failed     bool
}

// mqAcc accumulates what the messaging spans show.
type mqAcc struct {
	spans []msgSpan        // of the trace being read
	idx   map[uint64]int32 // span id → its spans index
	// procOf maps a processing span of the trace being read (its index)
	// to its delivery in delivs.
	procOf  map[int32]int32
	pubs    []pubRec
	delivs  []delivRec
	queueOf map[uint64]int32 // queue name symbol (with group) → node
	queues  []int32          // queue nodes, in order of creation
	// unknown counts deliveries whose queue could not be named.
	unknown int64
}

func newMQAcc() mqAcc {
	return mqAcc{queueOf: map[uint64]int32{}, idx: map[uint64]int32{}, procOf: map[int32]int32{}}
}

// attrs returns the messaging attributes of span s (which has a role).
func (b *Builder) attrs(s *tspan) *msgSpan { return &b.mq.spans[b.mq.idx[s.id]] }

// linkKey is the key of span spanID of trace traceID, as a link names
// it.
func linkKey(traceID, spanID string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(traceID); i++ {
		h ^= uint64(traceID[i])
		h *= 1099511628211
	}
	return h ^ spanKey(spanID)*0x9e3779b97f4a7c15 | 1
}

// strKey hashes a message id (0 for none).
func strKey(v string) uint64 {
	if v == "" {
		return 0
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(v); i++ {
		h ^= uint64(v[i])
		h *= 1099511628211
	}
	return h | 1
}

// addMessaging notes the messaging role and attributes of span s.
func (b *Builder) addMessaging(t *tspan, s *cascade.Span) {
	t.msg = roleOf(s)
	if t.msg == msgNone {
		return
	}
	m := msgSpan{sys: -1, dest: -1, group: -1, redel: s.Redelivery, bytes: s.MessageBytes, msgID: strKey(s.MessageID)}
	if s.MessagingSystem != "" {
		m.sys = b.syms.id(s.MessagingSystem)
	}
	if s.Destination != "" {
		m.dest = b.syms.id(s.Destination)
	}
	if s.ConsumerGroup != "" {
		m.group = b.syms.id(s.ConsumerGroup)
	}
	if t.msg == msgPublish {
		m.key = linkKey(s.TraceID, s.SpanID)
	}
	if len(s.Links) > 0 {
		m.link = linkKey(s.Links[0].TraceID, s.Links[0].SpanID)
		if t.msg == msgPublish && s.MessagingOperation != cascade.MessagingCreate {
			// The messaging conventions' publish span links to the
			// creation context of each message it sends: it carries
			// them.
			m.carried = make([]uint64, len(s.Links))
			for i, l := range s.Links {
				m.carried[i] = linkKey(l.TraceID, l.SpanID)
			}
		}
	}
	b.mq.idx[t.id] = int32(len(b.mq.spans))
	b.mq.spans = append(b.mq.spans, m)
}

// processing reports whether span i, a child of a receive span, is the
// consumer's processing of the message: a span of the same service that
// neither calls out nor publishes (Brave's "on-message" under "poll").
func (b *Builder) processing(sp []tspan, i int32) bool {
	s, p := &sp[i], &sp[b.work.tree.Parent[i]]
	if s.svc != p.svc || s.msg == msgPublish {
		return false
	}
	switch s.kind {
	case kInternal, kUnspecified, kServer, kConsumer:
		return true
	}
	return false
}

// classifyDelivery handles a consumer's span: a receive span whose
// children process the message becomes their envelope and starts no
// request (its own time is the poll's, microseconds); otherwise the span
// (or a processing child of an envelope) starts a request of the
// consumer's node, delivered from the queue. A delivery is never a root
// request, so never an entry.
func (b *Builder) classifyDelivery(sp []tspan, i int32) {
	s := &sp[i]
	t := &b.work.tree
	if s.msg == msgReceive {
		for c := t.First[i]; c >= 0; c = t.Next[c] {
			if b.processing(sp, c) {
				s.envelope, s.req = true, -1
				return
			}
		}
	}
	s.request, s.req = true, i
	s.node = b.nodeOf(s)
	env := i
	if p := t.Parent[i]; p >= 0 && sp[p].envelope {
		env = p
	}
	b.addDelivery(sp, i, env)
}

// addDelivery records the delivery processed by span proc, taken by the
// receive span env (proc itself when it is both).
func (b *Builder) addDelivery(sp []tspan, proc, env int32) {
	s, e := &sp[proc], &sp[env]
	d := delivRec{
		at: e.start, start: s.start, end: s.end, queue: -1,
		dest: -1, group: -1, sys: -1, consumer: s.node, inst: s.inst, failed: s.failed,
	}
	// The processing span's own attributes first, then the envelope's.
	for _, k := range [2]int32{proc, env} {
		if sp[k].msg == msgNone {
			continue
		}
		m := b.attrs(&sp[k])
		d.dest = pick(d.dest, m.dest)
		d.group = pick(d.group, m.group)
		d.sys = pick(d.sys, m.sys)
		d.redel = max(d.redel, m.redel)
		d.bytes = max(d.bytes, m.bytes)
		if d.msgID == 0 {
			d.msgID = m.msgID
		}
		if d.pub == 0 {
			d.pub = m.link
		}
	}
	// A consumer span under the producer's publish span (context
	// propagated in the message): the publish is its parent.
	if p := b.work.tree.Parent[env]; p >= 0 && sp[p].msg == msgPublish {
		m := b.attrs(&sp[p])
		d.pub = m.key
		d.dest = pick(d.dest, m.dest)
		d.sys = pick(d.sys, m.sys)
	}
	if d.dest >= 0 {
		d.queue = b.queueNode(d.dest, d.sys)
	}
	b.mq.procOf[proc] = int32(len(b.mq.delivs))
	b.mq.delivs = append(b.mq.delivs, d)
}

func pick(have, v int32) int32 {
	if have >= 0 {
		return have
	}
	return v
}

// addPublish records the publish span i: a call from its request to the
// queue node its destination names (else its peer), and the message.
func (b *Builder) addPublish(sp []tspan, i int32) {
	s := &sp[i]
	m := b.attrs(s)
	dest := m.dest
	if dest < 0 {
		dest = s.peer
	}
	if dest < 0 {
		dest = b.syms.id("unknown")
	}
	q := b.queueNode(dest, m.sys)
	from, ok := b.mq.procOf[s.req]
	if !ok {
		from = -1
	}
	// A consumer publishing the message it is processing again (the
	// same id, or counting an earlier delivery) retries it: ack +
	// republish. Back into its own queue, that is a redelivery to the
	// queue's tail, not a call from the consumer to its queue (which
	// would make a cycle of every retry). A retry through another queue
	// (a delay queue) is told apart at Finish, when the message is seen
	// delivered from the first queue again.
	retry, requeue := false, false
	if from >= 0 {
		d := &b.mq.delivs[from]
		retry = m.msgID != 0 && m.msgID == d.msgID || m.redel > 0
		requeue = retry && d.queue == q
	}
	// A carrier that sends messages whose create spans are in its own
	// trace adds no call: each create span made the call of its message.
	if !requeue && !(len(m.carried) > 0 && !s.failed && b.createdHere(m.carried)) {
		// A failed publish is no fire-and-forget: its caller knew (see
		// call.nack), so its failure is the caller's failed call, not
		// the caller's own.
		b.addCall(sp, s.req, q, -1, i, !s.failed)
		if s.failed {
			b.work.calls[len(b.work.calls)-1].nack = true
		}
	}
	if s.failed {
		return
	}
	rec := pubRec{
		key: m.key, msgID: m.msgID, start: s.start, end: s.end, bytes: m.bytes,
		queue: q, callerFailed: sp[s.req].failed, deliv: from, retry: retry,
	}
	if len(m.carried) == 0 {
		b.mq.pubs = append(b.mq.pubs, rec)
		return
	}
	// A carrier's messages are those its links name, each with its own
	// creation context as its key: the deliveries link to that context.
	rec.carried, rec.msgID = true, 0
	for _, k := range m.carried {
		rec.key = k
		b.mq.pubs = append(b.mq.pubs, rec)
	}
}

// createdHere reports whether every key names a publish span of the
// trace being read.
func (b *Builder) createdHere(keys []uint64) bool {
	for _, k := range keys {
		found := false
		for j := range b.mq.spans {
			if b.mq.spans[j].key == k {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// carrier reports whether span i carries messages created in other
// traces, so that its trace is no root request of its own but part of
// theirs: a publish span with links to the messages' creation contexts
// (a batch publisher's flush), or a span of no kind of its own (an
// internal span, a timer's) whose child of the same service is one.
func (b *Builder) carrier(sp []tspan, i int32) bool {
	s := &sp[i]
	if s.msg == msgPublish {
		return len(b.attrs(s).carried) > 0
	}
	if s.kind != kInternal && s.kind != kUnspecified {
		return false
	}
	t := &b.work.tree
	for c := t.First[i]; c >= 0; c = t.Next[c] {
		if sp[c].svc == s.svc && sp[c].msg == msgPublish && len(b.attrs(&sp[c]).carried) > 0 {
			return true
		}
	}
	return false
}

// QueuePrefix begins the name of a queue node: "queue:orders".
const QueuePrefix = "queue:"

// queueNode returns the node of the queue dest names. Kafka's consumer
// groups each read the whole topic: Finish splits a topic read by several
// groups into a queue per group (the deliveries name their group).
func (b *Builder) queueNode(dest, sys int32) int32 {
	key := uint64(uint32(dest))
	if n, ok := b.mq.queueOf[key]; ok {
		if q := b.nodes[n].queue; q.sys < 0 {
			q.sys = sys
		}
		return n
	}
	name := QueuePrefix + b.syms.names[dest]
	n := int32(len(b.nodes))
	acc := newNodeAcc(name, name, b)
	acc.virtual = false
	acc.queue = &queueAcc{dest: dest, sys: sys, family: n, group: -1}
	b.nodes = append(b.nodes, acc)
	b.mq.queueOf[key] = n
	b.mq.queues = append(b.mq.queues, n)
	return n
}

// isDeadLetter reports whether a queue's name says it holds dead letters
// ("orders.dlq", "orders-dead-letter", "dlx.orders", "parking-lot").
func isDeadLetter(name string) bool {
	l := strings.ToLower(name)
	for _, w := range []string{"dead", "dlq", "dlx", "parking"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
