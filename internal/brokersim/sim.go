package brokersim

// The discrete-event loop: arrivals, publishes, deliveries, acks and nacks,
// delayed returns and the once-a-second scrape.

import (
	"container/heap"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"

	"cascade"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const (
	ms        = int64(1e6)
	confirmNS = 300_000 // publish → broker confirm
	netNS     = 200_000 // one way, consumer → callee
	epochNS   = int64(1_760_000_000) * 1e9
)

// Event kinds.
const (
	evArrive   = iota // a root request reaches the gateway
	evPublish         // a request tries its next publish
	evDone            // a consumer finishes its current delivery
	evDelayed         // a message's TTL in the delay queue is over
	evScrape          // Prometheus scrapes the broker
	evMemCheck        // the broker's memory monitor runs
)

// memCheckNS is the memory monitor's interval: the alarm goes on or off
// only when it runs, as RabbitMQ's vm_memory_monitor does, so memory
// overshoots the watermark between checks.
const memCheckNS = int64(1e9)

type event struct {
	t    int64
	seq  uint64
	kind int
	a, b int // request/queue/consumer indexes, by kind
	m    *msg
}

type events []*event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// msg is one message.
type msg struct {
	id       int
	q        int
	req      int
	pubTrace [16]byte
	pubSpan  [8]byte
	// deliveries so far; failEnd is when its last delivery failed.
	deliveries int
	failEnd    int64
}

type consumer struct {
	buf  []*msg // delivered, unacked; buf[0] is being worked when busy
	busy bool
	// current delivery's outcome, decided at its start
	failed bool
	start  int64
}

type queue struct {
	spec      QueueSpec
	ready     []*msg
	delayed   int
	dlq       int
	cons      []consumer
	rr        int
	out       cascade.QueueOutcome
	accepted  int64
	peakReady int
	failures  int64
	durs      []float64
	gaps      []float64
	unacked   int
}

type request struct {
	start   int64
	trace   [16]byte
	span    [8]byte
	next    int // index of the next queue to publish to
	failed  bool
	pending int // messages not yet settled for good
	lastEnd int64
	// attempt is when the current publish was first tried.
	attempt int64
}

type blocked struct{ req, q int }

type sim struct {
	sc  scenario
	cfg Config
	rng *rand.Rand
	h   events
	seq uint64
	// work counts pending events other than the periodic ones: the
	// scrape and the memory monitor run while it is positive.
	pending int
	qs      []*queue
	reqs    []*request
	msgs    int
	// held counts every message the broker holds; heldBytes their size.
	heldBytes  int64
	alarm      bool
	alarmSince int64
	broker     cascade.BrokerOutcome
	firstAlarm int64
	waiting    []blocked
	spans      []span
	ids        uint64
	scrapes    []scrape
	samples    int
	lastArrive int64
	now        int64
}

// span is one recorded span before it is marshalled.
type span struct {
	trace      [16]byte
	id, parent [8]byte
	svc, name  string
	kind       ptrace.SpanKind
	start, end int64
	errType    string
	attrs      []attr
	link       *[24]byte // trace id and span id of a linked span
}

type attr struct {
	k     string
	s     string
	i     int64
	isInt bool
}

func newSim(sc scenario, cfg Config) *sim {
	s := &sim{sc: sc, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0xb20ce5))}
	for _, qs := range sc.queues {
		s.qs = append(s.qs, &queue{spec: qs, cons: make([]consumer, qs.Consumers)})
	}
	s.broker.Name = sc.broker.Name
	s.broker.PeakBytes = float64(sc.broker.BaseBytes)
	return s
}

func (s *sim) push(e *event) {
	if e.kind != evScrape && e.kind != evMemCheck {
		s.pending++
	}
	s.seq++
	e.seq = s.seq
	heap.Push(&s.h, e)
}

func (s *sim) id() [8]byte {
	s.ids++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.ids*0x9e3779b97f4a7c15)
	return b
}

func (s *sim) traceID(kind byte, n int) [16]byte {
	var t [16]byte
	binary.BigEndian.PutUint64(t[:8], s.rng.Uint64())
	binary.BigEndian.PutUint64(t[8:], uint64(n))
	t[8] = kind
	return t
}

// lognormal draws a duration (ns) with median p50MS and σ = sigma.
func (s *sim) lognormal(p50MS float64) int64 {
	return int64(p50MS * math.Exp(sigma*s.rng.NormFloat64()) * float64(ms))
}

func (s *sim) run() {
	t := epochNS
	for i := range s.cfg.Requests {
		t += int64(s.rng.ExpFloat64() / s.sc.rate * 1e9)
		s.push(&event{t: t, kind: evArrive, a: i})
	}
	s.lastArrive = t
	s.push(&event{t: (epochNS/1e9 + 1) * 1e9, kind: evScrape})
	if s.sc.broker.WatermarkBytes > 0 {
		s.push(&event{t: epochNS + memCheckNS/2, kind: evMemCheck})
	}
	for s.h.Len() > 0 {
		e := heap.Pop(&s.h).(*event)
		s.now = e.t
		if e.kind != evScrape && e.kind != evMemCheck {
			s.pending--
		}
		switch e.kind {
		case evArrive:
			s.arrive(e.a)
		case evPublish:
			s.tryPublish(e.a)
		case evDone:
			s.done(e.a, e.b)
		case evDelayed:
			q := s.qs[e.m.q]
			// Dead-lettered back from the delay queue, at the tail;
			// the queue's bound is not applied to it.
			q.delayed--
			q.ready = append(q.ready, e.m)
			q.peakReady = max(q.peakReady, len(q.ready))
		case evScrape:
			s.scrape()
			// Keep scraping while anything is left to happen, and once
			// more after.
			if s.pending > 0 {
				s.push(&event{t: e.t + 1e9, kind: evScrape})
			}
		case evMemCheck:
			s.memCheck()
			if s.pending > 0 {
				s.push(&event{t: e.t + memCheckNS, kind: evMemCheck})
			}
		}
		s.settle()
	}
	if s.alarm {
		s.broker.AlarmMS += float64(s.now-s.alarmSince) / float64(ms)
	}
}

// settle delivers what can be delivered and releases blocked publishers
// until nothing changes.
func (s *sim) settle() {
	for {
		for qi := range s.qs {
			s.dispatch(qi)
		}
		if !s.release() {
			return
		}
	}
}

func (s *sim) arrive(i int) {
	r := &request{start: s.now, trace: s.traceID(1, i+1), span: s.id(), lastEnd: s.now}
	s.reqs = append(s.reqs, r)
	s.push(&event{t: s.now + ms/2, kind: evPublish, a: i})
}

// canPublish reports whether a publish into q goes through now.
func (s *sim) canPublish(qi int) bool {
	if s.alarm {
		return false
	}
	q := s.qs[qi]
	return q.spec.Overflow != cascade.OverflowBlock || q.spec.MaxLength == 0 || len(q.ready) < q.spec.MaxLength
}

// tryPublish makes request i's next publish, or finishes the request.
func (s *sim) tryPublish(i int) {
	r := s.reqs[i]
	if r.next == len(s.qs) {
		end := s.now + ms/2
		sp := span{trace: r.trace, id: r.span, svc: "gateway", name: "POST /events", kind: ptrace.SpanKindServer,
			start: r.start, end: end}
		sp.attrs = []attr{{k: "http.request.method", s: "POST"}, {k: "http.route", s: "/events"}, {k: "http.response.status_code", i: 202, isInt: true}}
		if r.failed {
			sp.errType = "503"
			sp.attrs[2].i = 503
		}
		r.lastEnd = max(r.lastEnd, end)
		s.spans = append(s.spans, sp)
		return
	}
	r.attempt = s.now
	if !s.canPublish(r.next) {
		s.waiting = append(s.waiting, blocked{req: i, q: r.next})
		return
	}
	s.publish(i)
}

// release publishes for the blocked publishers that may go on, in the
// order they blocked, and reports whether any did.
func (s *sim) release() bool {
	moved := false
	for k := 0; k < len(s.waiting); {
		b := s.waiting[k]
		if !s.canPublish(b.q) {
			k++
			continue
		}
		s.waiting = append(s.waiting[:k], s.waiting[k+1:]...)
		s.publish(b.req)
		moved = true
	}
	return moved
}

// publish makes request i's publish into its next queue now.
func (s *sim) publish(i int) {
	r := s.reqs[i]
	qi := r.next
	q := s.qs[qi]
	s.msgs++
	m := &msg{id: s.msgs, q: qi, req: i, pubTrace: r.trace, pubSpan: s.id()}
	q.out.Published++
	q.out.BlockedMS += float64(s.now-r.attempt) / float64(ms)
	end := s.now + confirmNS
	sp := span{trace: r.trace, id: m.pubSpan, parent: r.span, svc: "gateway", name: "publish " + q.spec.Name,
		kind: ptrace.SpanKindProducer, start: r.attempt, end: end}
	sp.attrs = []attr{
		{k: "messaging.system", s: "rabbitmq"},
		{k: "messaging.destination.name", s: q.spec.Name},
		{k: "messaging.rabbitmq.destination.routing_key", s: q.spec.Name},
		{k: "messaging.operation.type", s: cascade.MessagingPublish},
		{k: "messaging.operation.name", s: "publish"},
		{k: "messaging.message.id", s: msgID(m.id)},
		{k: "messaging.message.body.size", i: q.spec.MessageBytes, isInt: true},
	}
	full := q.spec.MaxLength > 0 && len(q.ready) >= q.spec.MaxLength
	switch {
	case full && q.spec.Overflow == cascade.OverflowRejectPublish:
		q.out.Rejected++
		r.failed = true
		sp.errType = "basic.nack"
	default:
		if full { // drop-head
			old := q.ready[0]
			q.ready = q.ready[1:]
			q.out.Dropped++
			s.hold(qi, -1)
			s.lost(old)
		}
		q.accepted++
		r.pending++
		q.ready = append(q.ready, m)
		q.peakReady = max(q.peakReady, len(q.ready))
		s.hold(qi, 1)
	}
	s.spans = append(s.spans, sp)
	r.next++
	s.push(&event{t: end, kind: evPublish, a: i})
}

func msgID(n int) string { return "msg-" + strconv.Itoa(n) }

// hold adds n messages of queue qi to what the broker holds.
func (s *sim) hold(qi, n int) {
	s.heldBytes += int64(n) * s.qs[qi].spec.MessageBytes
	s.broker.PeakBytes = max(s.broker.PeakBytes, float64(s.sc.broker.BaseBytes+s.heldBytes))
}

// memCheck sets or clears the memory alarm.
func (s *sim) memCheck() {
	mem := s.sc.broker.BaseBytes + s.heldBytes
	w := s.sc.broker.WatermarkBytes
	switch {
	case !s.alarm && mem >= w:
		s.alarm, s.alarmSince = true, s.now
		s.broker.Alarms++
		if s.firstAlarm == 0 {
			s.firstAlarm = s.now
		}
	case s.alarm && mem < w:
		s.alarm = false
		s.broker.AlarmMS += float64(s.now-s.alarmSince) / float64(ms)
	}
}

// lost settles a message for good without an ack: its flow fails.
func (s *sim) lost(m *msg) {
	r := s.reqs[m.req]
	r.failed = true
	r.pending--
}

// dispatch delivers ready messages of queue qi to consumers with room,
// round robin.
func (s *sim) dispatch(qi int) {
	q := s.qs[qi]
	for len(q.ready) > 0 {
		c := -1
		for k := range q.cons {
			j := (q.rr + k) % len(q.cons)
			if q.spec.Prefetch == 0 || len(q.cons[j].buf) < q.spec.Prefetch {
				c = j
				break
			}
		}
		if c < 0 {
			return
		}
		q.rr = (c + 1) % len(q.cons)
		m := q.ready[0]
		q.ready = q.ready[1:]
		m.deliveries++
		q.out.Delivered++
		if m.deliveries > 1 {
			q.out.Redelivered++
			q.gaps = append(q.gaps, float64(s.now-m.failEnd)/float64(ms))
		}
		q.unacked++
		q.out.UnackedMax = max(q.out.UnackedMax, q.unacked)
		cs := &q.cons[c]
		cs.buf = append(cs.buf, m)
		if !cs.busy {
			s.work(qi, c)
		}
	}
}

// work starts consumer c of queue qi on its first buffered message and
// records the delivery's spans.
func (s *sim) work(qi, c int) {
	q := s.qs[qi]
	cs := &q.cons[c]
	m := cs.buf[0]
	cs.busy, cs.start = true, s.now
	trace := s.traceID(2, m.id)
	root := s.id()
	self := s.lognormal(q.spec.ServiceP50MS)
	failed := s.rng.Float64() < q.spec.FailP
	t := s.now + self/2
	errType := ""
	if failed {
		errType = "processing failed"
	}
	if q.spec.Callee != "" && !failed {
		callee := s.lognormal(q.spec.CalleeP50MS)
		cf := s.rng.Float64() < q.spec.CalleeFailP
		cl := span{trace: trace, id: s.id(), parent: root, svc: q.spec.Consumer, name: "GET /" + q.spec.Callee,
			kind: ptrace.SpanKindClient, start: t, end: t + 2*netNS + callee}
		sv := span{trace: trace, id: s.id(), parent: cl.id, svc: q.spec.Callee, name: "GET /" + q.spec.Callee,
			kind: ptrace.SpanKindServer, start: t + netNS, end: t + netNS + callee}
		cl.attrs = []attr{{k: "http.request.method", s: "GET"}, {k: "http.response.status_code", i: 200, isInt: true}}
		sv.attrs = []attr{{k: "http.request.method", s: "GET"}, {k: "http.route", s: "/" + q.spec.Callee},
			{k: "http.response.status_code", i: 200, isInt: true}}
		if cf {
			cl.errType, sv.errType = "503", "503"
			cl.attrs[1].i, sv.attrs[2].i = 503, 503
			failed, errType = true, "503"
		}
		s.spans = append(s.spans, sv, cl)
		t = cl.end
	}
	if !failed || q.spec.Callee == "" {
		t += self - self/2
	}
	cs.failed = failed
	link := new([24]byte)
	copy(link[:16], m.pubTrace[:])
	copy(link[16:], m.pubSpan[:])
	sp := span{trace: trace, id: root, svc: q.spec.Consumer, name: "process " + q.spec.Name,
		kind: ptrace.SpanKindConsumer, start: s.now, end: t, errType: errType, link: link}
	sp.attrs = []attr{
		{k: "messaging.system", s: "rabbitmq"},
		{k: "messaging.destination.name", s: q.spec.Name},
		{k: "messaging.operation.type", s: cascade.MessagingProcess},
		{k: "messaging.operation.name", s: "process"},
		{k: "messaging.message.id", s: msgID(m.id)},
		{k: "messaging.message.body.size", i: q.spec.MessageBytes, isInt: true},
		{k: RedeliveryAttr, i: int64(m.deliveries - 1), isInt: true},
	}
	s.spans = append(s.spans, sp)
	q.durs = append(q.durs, float64(t-s.now)/float64(ms))
	s.push(&event{t: t, kind: evDone, a: qi, b: c})
}

// done settles consumer c's current delivery: ack, or nack per the
// queue's redelivery policy.
func (s *sim) done(qi, c int) {
	q := s.qs[qi]
	cs := &q.cons[c]
	m := cs.buf[0]
	cs.buf = cs.buf[1:]
	cs.busy = false
	q.unacked--
	r := s.reqs[m.req]
	r.lastEnd = max(r.lastEnd, s.now)
	switch {
	case !cs.failed:
		q.out.Acked++
		r.pending--
		s.hold(qi, -1)
	case q.spec.Redelivery == cascade.RedeliverNone || (q.spec.MaxDeliveries > 0 && m.deliveries >= q.spec.MaxDeliveries):
		q.failures++
		q.out.DeadLettered++
		s.lost(m)
		if q.spec.DeadLetter != "" {
			q.dlq++
		} else {
			s.hold(qi, -1)
		}
	case q.spec.Redelivery == cascade.RedeliverDelay:
		q.failures++
		m.failEnd = s.now
		q.delayed++
		s.push(&event{t: s.now + int64(q.spec.DelayMS*float64(ms)), kind: evDelayed, m: m})
	default: // requeue: back at the head
		q.failures++
		m.failEnd = s.now
		q.ready = append([]*msg{m}, q.ready...)
		q.peakReady = max(q.peakReady, len(q.ready))
	}
	if len(cs.buf) > 0 {
		s.work(qi, c)
	}
}

// scrape is one sample of the broker's metrics.
type scrape struct {
	t      int64
	queues []queueSample
	mem    int64
	alarm  bool
}

type queueSample struct {
	name                    string
	ready, unacked, workers int
}

func (s *sim) scrape() {
	sc := scrape{t: s.now, mem: s.sc.broker.BaseBytes + s.heldBytes, alarm: s.alarm}
	for _, q := range s.qs {
		sc.queues = append(sc.queues, queueSample{name: q.spec.Name, ready: len(q.ready), unacked: q.unacked, workers: len(q.cons)})
		if q.spec.Redelivery == cascade.RedeliverDelay {
			sc.queues = append(sc.queues, queueSample{name: q.spec.Name + ".retry", ready: q.delayed})
		}
		if q.spec.DeadLetter != "" {
			sc.queues = append(sc.queues, queueSample{name: q.spec.DeadLetter, ready: q.dlq})
		}
	}
	s.scrapes = append(s.scrapes, sc)
}

// truth summarises the run.
func (s *sim) truth() *Truth {
	tr := &Truth{Seed: s.cfg.Seed, Requests: s.cfg.Requests, RatePerS: s.sc.rate}
	if n := len(s.reqs); n > 1 {
		tr.MeasuredRatePerS = float64(n-1) / (float64(s.reqs[n-1].start-s.reqs[0].start) / 1e9)
	}
	for _, q := range s.qs {
		qt := QueueTruth{QueueSpec: q.spec, Outcome: q.out, Accepted: q.accepted, PeakReady: q.peakReady}
		qt.ServiceMeanMS = q.spec.ServiceP50MS * math.Exp(sigma*sigma/2)
		qt.PublishRatePerS = tr.MeasuredRatePerS
		qt.MeasuredServiceMeanMS = round3(mean(q.durs))
		qt.MeasuredServiceP50MS = round3(quantile(q.durs, 0.5))
		if q.out.Delivered > 0 {
			qt.FailureShare = round3(float64(q.failures) / float64(q.out.Delivered))
			qt.RedeliveryShare = round3(float64(q.out.Redelivered) / float64(q.out.Delivered))
		}
		qt.RedeliveryDelayMS = round3(mean(q.gaps))
		qt.ServiceMeanMS = round3(qt.ServiceMeanMS)
		qt.PublishRatePerS = round3(qt.PublishRatePerS)
		qt.Outcome.BlockedMS = round3(qt.Outcome.BlockedMS)
		tr.Queues = append(tr.Queues, qt)
	}
	tr.MeasuredRatePerS = round3(tr.MeasuredRatePerS)
	tr.Broker = BrokerTruth{BrokerSpec: s.sc.broker, Outcome: s.broker, FirstAlarmNS: s.firstAlarm}
	tr.Broker.Outcome.AlarmMS = round3(tr.Broker.Outcome.AlarmMS)
	var ok []float64
	for _, r := range s.reqs {
		if !r.failed && r.pending == 0 {
			ok = append(ok, float64(r.lastEnd-r.start)/float64(ms))
		}
	}
	tr.Outcome.Flows = int64(len(s.reqs))
	if len(s.reqs) > 0 {
		tr.Outcome.FlowSuccessRate = round3(float64(len(ok)) / float64(len(s.reqs)))
	}
	tr.Outcome.FlowP50MS = round3(quantile(ok, 0.5))
	tr.Outcome.FlowP95MS = round3(quantile(ok, 0.95))
	return tr
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
