package rank

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"cascade"
	"cascade/replay"
)

// The remediations seed 002 names for a chain of tasks over a message
// queue (§5.3: one retry, then a delay-compensation queue; fan-out cut
// from 5 to 3; the log task off the synchronous path; a cap of 10,000
// per queue that drops): each stated in the broker's own words
// (RabbitMQ's queue arguments, basic.qos), each a merge patch over the
// queue node's Queue or the edges around it.
const (
	KindDelayQueue  = "delay-queue"
	KindDeliveries  = "delivery-limit"
	KindQueueCap    = "queue-cap"
	KindOverflow    = "overflow"
	KindConsumers   = "consumers"
	KindPrefetch    = "prefetch"
	KindPublish     = "publish-async"
	KindFanOutCut   = "fan-out-cut"
	delayMinMS      = 1000  // a delay queue's TTL: at least this
	delayP99s       = 4     // and this many of the consumer's p99
	queueCapDefault = 10000 // seed 002 §5.3's cap per queue
	// fanOutCutMin is the fewest queues a producer publishes to for a
	// fan-out cut to be proposed: a cut leaves it at least two.
	fanOutCutMin = 3
)

// queueTopology is what the queue candidates read of the model's
// shape: each queue's consumers (the nodes its deliveries go to) and
// publishers, and the nodes that consume from some queue.
type queueTopology struct {
	consumers  map[string][]string // queue → consumer nodes, by name
	publishers map[string][]string // queue → publishing nodes, by name
	consumerOf map[string]bool     // node → it consumes from a queue
	queuesOn   map[string]int      // broker → its queues
}

func topologyOf(m *cascade.Model) *queueTopology {
	t := &queueTopology{consumers: map[string][]string{}, publishers: map[string][]string{},
		consumerOf: map[string]bool{}, queuesOn: map[string]int{}}
	for i := range m.Nodes {
		if q := m.Nodes[i].Queue; q != nil && q.Broker != "" {
			t.queuesOn[q.Broker]++
		}
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		if isQueue(m, e.From) {
			t.consumers[e.From] = append(t.consumers[e.From], e.To)
			t.consumerOf[e.To] = true
		}
		if isQueue(m, e.To) {
			t.publishers[e.To] = append(t.publishers[e.To], e.From)
		}
	}
	for _, s := range t.consumers {
		sort.Strings(s)
	}
	for _, s := range t.publishers {
		sort.Strings(s)
	}
	return t
}

// hasQueues reports whether the model holds a message queue.
func hasQueues(m *cascade.Model) bool {
	for i := range m.Nodes {
		if m.Nodes[i].Queue != nil {
			return true
		}
	}
	return false
}

func isQueue(m *cascade.Model, name string) bool {
	n := m.Node(name)
	return n != nil && n.Queue != nil
}

// rabbit reports whether the queue speaks RabbitMQ's words (its queue
// arguments): RabbitMQ, or a queue that names no system.
func rabbit(q *cascade.Queue) bool { return q.System == "" || strings.EqualFold(q.System, "rabbitmq") }

// queuePatch is a node patch over the queue's fields.
func queuePatch(name string, p map[string]any) map[string]json.RawMessage {
	return replay.NodePatch(name, map[string]any{"queue": p})
}

// consumerFailing reports whether a consumer of queue name failed in the
// baseline (always, without evidence): only then are there redeliveries
// to change.
func (t *queueTopology) consumerFailing(ev *Evidence, name string) bool {
	for _, c := range t.consumers[name] {
		if ev.saw(failing, c) {
			return true
		}
	}
	return false
}

// queueCandidates adds the candidates of queue node n: a delay queue
// instead of requeue, fewer deliveries, a redelivery policy with an
// immediate part and a delayed part (or without the immediate part), a cap with its overflow policy
// (or its raise, cut and other policy where it filled), and the consumer
// count and prefetch.
// A queue that delivers to no consumer (a dead-letter queue) gets none:
// what reaches it has failed already.
func queueCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, n *cascade.Node, add func(Candidate)) {
	if len(t.consumers[n.Name]) == 0 {
		return
	}
	redeliveryCandidates(m, ev, t, n, add)
	mixedCandidates(m, ev, t, n, add)
	capCandidates(m, ev, t, n, add)
	consumerCandidates(m, ev, t, n, add)
}

// redeliveryCandidates adds a delay queue in place of requeue and a cut
// of the deliveries, where a consumer fails (its nacks are what is
// redelivered).
func redeliveryCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, n *cascade.Node, add func(Candidate)) {
	q := n.Queue
	if !redelivers(ev, t, n) {
		return
	}
	if requeues(q) {
		d, why := delayOf(m, ev, t, n.Name)
		words := fmt.Sprintf("nack → delay queue (TTL %g ms, dead-letter back to %s)", d, n.Name)
		if !rabbit(q) {
			words = fmt.Sprintf("failed messages wait %g ms in a delay queue, then back to %s", d, n.Name)
		}
		add(Candidate{
			Name:        "delay-queue " + n.Name,
			Description: fmt.Sprintf("%s: %s instead of requeue at once (%s)", n.Name, words, why),
			Kind:        KindDelayQueue,
			Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{
				"redelivery": cascade.RedeliverDelay, "delay_ms": d,
			})},
		})
	}
	dead := "dropped"
	if q.DeadLetter != "" {
		dead = "dead-lettered to " + q.DeadLetter
	}
	was := "unlimited"
	if q.MaxDeliveries > 0 {
		was = fmt.Sprintf("%d", q.MaxDeliveries-1)
	}
	for _, to := range []int{2, 1} {
		if q.MaxDeliveries > 0 && to >= q.MaxDeliveries {
			continue
		}
		what := fmt.Sprintf("at most %d redelivery, then %s", to-1, dead)
		if to == 1 {
			what = "no redelivery: a failed message is " + dead
		}
		words := fmt.Sprintf("x-delivery-limit %s→%d", was, to-1)
		if !rabbit(q) {
			words = fmt.Sprintf("redeliveries %s→%d", was, to-1)
		}
		add(Candidate{
			Name:        fmt.Sprintf("deliveries=%d %s", to, n.Name),
			Description: fmt.Sprintf("%s: %s (%s)", n.Name, words, what),
			Kind:        KindDeliveries,
			Scenario:    &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{"max_deliveries": to})},
		})
	}
}

// redelivers reports whether queue node n redelivers what its failing
// consumers nack: only then are there redeliveries to change.
func redelivers(ev *Evidence, t *queueTopology, n *cascade.Node) bool {
	q := n.Queue
	return q != nil && q.Redelivery != cascade.RedeliverNone && q.MaxDeliveries != 1 && len(t.consumers[n.Name]) > 0 &&
		t.consumerFailing(ev, n.Name)
}

// requeues reports whether q puts a failed message back at once. A
// delay shorter than a delay queue's least TTL is a message put back at
// once too (graph reads ack + republish as the tail after the
// republish).
func requeues(q *cascade.Queue) bool {
	return q.Redelivery == "" || q.Redelivery == cascade.RedeliverRequeue || q.Redelivery == cascade.RedeliverDelay && q.DelayMS < delayMinMS
}

// brokerCandidates adds, per broker with two queues or more that requeue
// what their failing consumers nack, the delay queue as the broker's
// policy over all of them (RabbitMQ applies queue arguments by policy,
// to every queue whose name matches): the queues' retries come from one
// overload (consumers sharing a dependency), and a delay on one queue
// leaves the others' retries to keep it up. The TTL is the longest of
// the queues' own. Twice: with the deliveries as they are, and with one
// retry (seed 002 §5.3's fix: "one retry, then a delay-compensation
// queue").
func brokerCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, add func(Candidate)) {
	byBroker := map[string][]*cascade.Node{}
	var brokers []string
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if !redelivers(ev, t, n) || !requeues(n.Queue) {
			continue
		}
		if byBroker[n.Queue.Broker] == nil {
			brokers = append(brokers, n.Queue.Broker)
		}
		byBroker[n.Queue.Broker] = append(byBroker[n.Queue.Broker], n)
	}
	sort.Strings(brokers)
	for _, b := range brokers {
		qs := byBroker[b]
		if len(qs) < 2 {
			continue
		}
		sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
		var names []string
		ttl, why := 0.0, ""
		allRabbit := true
		for _, n := range qs {
			names = append(names, n.Name)
			if d, w := delayOf(m, ev, t, n.Name); d > ttl {
				ttl, why = d, w
			}
			allRabbit = allRabbit && rabbit(n.Queue)
		}
		who := b
		if who == "" {
			who = "the broker"
		}
		for _, one := range []bool{false, true} {
			p := map[string]any{"redelivery": cascade.RedeliverDelay, "delay_ms": ttl}
			name := "delay-queue policy " + who
			if one {
				p["max_deliveries"] = 2
				name = "delay-queue retry-once policy " + who
			}
			words := fmt.Sprintf("%s: policy on %s: nack → delay queue (TTL %g ms, dead-letter back to each queue)", who, strings.Join(names, ", "), ttl)
			if one {
				words += ", x-delivery-limit 1"
			}
			if !allRabbit {
				words = fmt.Sprintf("%s: on %s, failed messages wait %g ms in a delay queue, then go back", who, strings.Join(names, ", "), ttl)
				if one {
					words += ", at most once"
				}
			}
			c := Candidate{
				Name:        name,
				Description: fmt.Sprintf("%s, instead of requeue at once (%s)", words, why),
				Kind:        KindDelayQueue,
				Scenario:    &cascade.Scenario{Nodes: map[string]json.RawMessage{}},
			}
			for _, n := range qs {
				c.Scenario.Nodes[n.Name] = replay.RawPatch(map[string]any{"queue": p})
			}
			add(c)
		}
	}
}

// delayOf is a delay queue's TTL for queue name, and why, in words:
// long enough that a retry comes back after what failed it. That is
// delayP99s times the slowest consumer's p99 (the calls under way when
// it failed have drained), at least delayMinMS, up to a whole 100 ms;
// and, where a consumer's failures came in a burst (most of its calls
// failing for a while: NodeObserved.FailureBurstMS), the longest burst,
// up to a whole second (seed 002 §6.1: a retry 1 s later fails again
// while the failure lasts longer).
func delayOf(m *cascade.Model, ev *Evidence, t *queueTopology, name string) (float64, string) {
	p99, who := 0.0, ""
	burst, burstWho := 0.0, ""
	for _, c := range t.consumers[name] {
		if v := p99Of(m, ev, c); v > p99 {
			p99, who = v, c
		}
		if n := m.Node(c); n != nil && n.Observed != nil && n.Observed.FailureBurstMS > burst {
			burst, burstWho = n.Observed.FailureBurstMS, c
		}
	}
	d := math.Max(delayMinMS, math.Ceil(delayP99s*p99/100)*100)
	if b := math.Ceil(burst/1000) * 1000; b > d {
		return b, fmt.Sprintf("TTL %s: outlasts %s's longest failure burst, %s in which most of its calls failed", ms(b), burstWho, ms(round3(burst)))
	}
	if p99 <= 0 {
		return d, fmt.Sprintf("TTL %s: the consumers' p99 is unknown", ms(d))
	}
	if d == delayMinMS {
		return d, fmt.Sprintf("TTL %s, the least, above %d× %s's p99 of %s", ms(d), delayP99s, who, ms(round3(p99)))
	}
	return d, fmt.Sprintf("TTL %d× %s's p99 of %s", delayP99s, who, ms(round3(p99)))
}

// p99Of is node name's p99 latency: the baseline's, else the observed,
// else its service tiers'; 0 when none is known.
func p99Of(m *cascade.Model, ev *Evidence, name string) float64 {
	if ev != nil && ev.P99MS[name] > 0 {
		return ev.P99MS[name]
	}
	n := m.Node(name)
	if n == nil {
		return 0
	}
	if n.Observed != nil && n.Observed.LatencyP99MS > 0 {
		return n.Observed.LatencyP99MS
	}
	if n.Tiers != nil {
		return n.Tiers.P99
	}
	return 0
}

// capCandidates adds a cap on an unbounded queue, with drop-head and
// with reject-publish, where the baseline's queue reached it; and on a
// capped queue that filled, its raise, its cut and the other overflow
// policies.
//
// The cap is seed 002's 10,000 per queue, lowered, where the queue's
// broker has a memory watermark, to what the broker holds under it with
// each of its queues full (rounded down to 1, 2 or 5 × 10^k), so that
// the cap binds before the memory alarm does.
func capCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, n *cascade.Node, add func(Candidate)) {
	q := n.Queue
	overflow := func(name string, length int, policy, why string) {
		words := fmt.Sprintf("x-max-length %d, overflow %s", length, policy)
		if q.MaxLength > 0 && q.MaxLength != length {
			words = fmt.Sprintf("x-max-length %d→%d", q.MaxLength, length)
		}
		if q.MaxLength > 0 && q.MaxLength == length {
			words = fmt.Sprintf("overflow %s→%s", overflowOf(q), policy)
		}
		if !rabbit(q) {
			words = fmt.Sprintf("at most %d ready messages, overflow %s", length, policy)
		}
		p := map[string]any{"max_length": length}
		kind := KindQueueCap
		if q.MaxLength == length {
			p, kind = map[string]any{"overflow": policy}, KindOverflow
		} else if q.MaxLength == 0 {
			p["overflow"] = policy
		}
		add(Candidate{
			Name:        name + " " + n.Name,
			Description: fmt.Sprintf("%s: %s (%s; %s)", n.Name, words, overflowDoes(q, policy), why),
			Kind:        kind,
			Scenario:    &cascade.Scenario{Nodes: queuePatch(n.Name, p)},
		})
	}
	if q.MaxLength == 0 {
		c, why := capOf(m, t, q)
		if ev != nil && ev.QueueMax[n.Name] < c {
			return // the queue never held as many: the cap would not bind
		}
		for _, p := range []string{cascade.OverflowDropHead, cascade.OverflowRejectPublish} {
			overflow(fmt.Sprintf("cap=%d %s", c, p), c, p, why)
		}
		return
	}
	if ev != nil && ev.QueueMax[n.Name] < q.MaxLength {
		return
	}
	why := "the queue filled"
	overflow("cap×2", 2*q.MaxLength, overflowOf(q), why)
	if to, ok := limitCut(q.MaxLength); ok {
		overflow("cap÷2", to, overflowOf(q), why)
	}
	for _, p := range []string{cascade.OverflowDropHead, cascade.OverflowRejectPublish, cascade.OverflowBlock} {
		if p != overflowOf(q) {
			overflow("overflow="+p, q.MaxLength, p, why)
		}
	}
}

func overflowOf(q *cascade.Queue) string {
	if q.Overflow == "" {
		return cascade.OverflowDropHead
	}
	return q.Overflow
}

// overflowDoes says what a publish into the full queue does under policy.
func overflowDoes(q *cascade.Queue, policy string) string {
	switch policy {
	case cascade.OverflowRejectPublish:
		return "a publish into the full queue is refused: a confirming publisher sees a nack"
	case cascade.OverflowBlock:
		return "a publisher into the full queue waits for room"
	}
	if q.DeadLetter != "" {
		return "the full queue dead-letters its oldest message to " + q.DeadLetter
	}
	return "the full queue drops its oldest message"
}

// capOf is the cap proposed for queue q, and its rule in words.
func capOf(m *cascade.Model, t *queueTopology, q *cascade.Queue) (int, string) {
	c, why := queueCapDefault, fmt.Sprintf("seed 002's %d per queue", queueCapDefault)
	var b *cascade.Broker
	for i := range m.Brokers {
		if m.Brokers[i].Name == q.Broker {
			b = &m.Brokers[i]
		}
	}
	if b == nil || b.MemoryWatermarkBytes <= 0 || q.MessageBytes <= 0 || t.queuesOn[q.Broker] == 0 {
		return c, why
	}
	room := (b.MemoryWatermarkBytes - b.BaseBytes) / float64(t.queuesOn[q.Broker]) / q.MessageBytes
	if fit := roundDown125(room); fit < c {
		c = fit
		why = fmt.Sprintf("%s's watermark of %s holds %s messages of %s in each of its %d queues, rounded down",
			b.Name, bytesText(b.MemoryWatermarkBytes-b.BaseBytes), num(math.Floor(room)), bytesText(q.MessageBytes), t.queuesOn[q.Broker])
	}
	return c, why
}

// roundDown125 rounds x down to 1, 2 or 5 × 10^k (at least 1).
func roundDown125(x float64) int {
	if x < 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{5, 2, 1} {
		if f*p <= x {
			return int(f * p)
		}
	}
	return int(p)
}

// bytesText formats a size: "512 B", "2 KiB", "400 MiB".
func bytesText(b float64) string {
	switch {
	case b >= 1<<30:
		return num(round3(b/(1<<30))) + " GiB"
	case b >= 1<<20:
		return num(round3(b/(1<<20))) + " MiB"
	case b >= 1<<10:
		return num(round3(b/(1<<10))) + " KiB"
	}
	return num(round3(b)) + " B"
}

// consumerCandidates adds twice the consumers and a prefetch raise and
// cut where messages waited ready in the baseline, and half the
// consumers where a consumer fails under load.
func consumerCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, n *cascade.Node, add func(Candidate)) {
	q := n.Queue
	waited := ev.saw(queued, n.Name)
	if waited {
		to := 2 * q.Consumers
		c := Candidate{
			Name:     fmt.Sprintf("consumers×2 %s", n.Name),
			Kind:     KindConsumers,
			Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{"consumers": to})},
		}
		c.Description = fmt.Sprintf("%s: consumers %d → %d (messages waited ready)", n.Name, q.Consumers, to)
		// A consumer node's slots bound how many of its consumers work
		// at once: where they would hold the new ones back, they grow
		// with them. Slots fewer than the consumers already are not
		// the consumers' own but a resource they share and wait for (a
		// database's connections): more consumers wait for it too, and
		// raising it is the pool's own candidate.
		for _, name := range t.consumers[n.Name] {
			cn := m.Node(name)
			if cn == nil || cn.Concurrency <= 0 {
				continue
			}
			slots := cn.Concurrency * max(1, cn.Replicas)
			if slots >= to || slots < q.Consumers {
				continue
			}
			slots = (to + max(1, cn.Replicas) - 1) / max(1, cn.Replicas)
			c.Scenario.Nodes[name] = replay.RawPatch(map[string]any{"concurrency": slots})
			c.Description += fmt.Sprintf(", and %s's slots %d → %d per replica, which would hold them back", name, cn.Concurrency, slots)
		}
		add(c)
	}
	if q.Consumers >= 2 {
		for _, name := range t.consumers[n.Name] {
			cn := m.Node(name)
			if cn == nil || cn.Overload.Slope <= 0 || ev == nil || !ev.Failing[name] {
				continue
			}
			to := q.Consumers / 2
			add(Candidate{
				Name: fmt.Sprintf("consumers÷2 %s", n.Name),
				Description: fmt.Sprintf("%s: consumers %d → %d (%s fails under load: fewer messages worked at once)",
					n.Name, q.Consumers, to, name),
				Kind:     KindConsumers,
				Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{"consumers": to})},
			})
			break
		}
	}
	if !waited {
		return
	}
	qos := "prefetch (basic.qos)"
	if !rabbit(q) {
		qos = "prefetch"
	}
	was := "unlimited"
	if q.Prefetch > 0 {
		was = fmt.Sprint(q.Prefetch)
	}
	if q.Prefetch > 0 {
		add(Candidate{
			Name:        "prefetch×2 " + n.Name,
			Description: fmt.Sprintf("%s: %s %d → %d (messages waited ready)", n.Name, qos, q.Prefetch, 2*q.Prefetch),
			Kind:        KindPrefetch,
			Scenario:    &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{"prefetch": 2 * q.Prefetch})},
		})
	}
	if q.Prefetch != 1 {
		add(Candidate{
			Name: "prefetch=1 " + n.Name,
			Description: fmt.Sprintf("%s: %s %s → 1 (a consumer holds one message at a time: none waits behind a slow one)",
				n.Name, qos, was),
			Kind:     KindPrefetch,
			Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, map[string]any{"prefetch": 1})},
		})
	}
}

// publishCandidates adds the candidates of edge e, a publish into a
// queue: without waiting for the confirm, for a confirmed publish; and
// the fan-out cut of a producer that publishes to fanOutCutMin queues or
// more.
func publishCandidates(m *cascade.Model, t *queueTopology, e *cascade.Edge, key, label string, add func(Candidate)) {
	if !e.Async {
		add(Candidate{
			Name: "no-confirm " + key,
			Description: fmt.Sprintf("%s: publish without waiting for the confirm (%s no longer waits for the broker; a refused publish is lost, not retried)",
				label, e.From),
			Kind:     KindPublish,
			Scenario: &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"async": true})}},
		})
	}
	var queues []string
	for i := range m.Edges {
		o := &m.Edges[i]
		if o.From == e.From && isQueue(m, o.To) && fanOutMean(o) > 0 {
			queues = append(queues, o.To)
		}
	}
	if len(queues) < fanOutCutMin || !droppable(m, t, e.To) {
		return
	}
	add(Candidate{
		Name: "drop " + key,
		Description: fmt.Sprintf("%s: publish to %d of %d queues (drop %s): a product change, %s no longer runs; flow success then counts only the remaining tasks",
			e.From, len(queues)-1, len(queues), e.To, strings.Join(t.consumers[e.To], ", ")),
		Kind:     KindFanOutCut,
		Scenario: &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"fan_out": replay.DistPatch(cascade.Const(0))})}},
	})
}

// droppable reports whether queue name's work is its own: it has
// consumers, and no other node calls them (no task depends on what they
// do, as points depends on rights in seed 002).
func droppable(m *cascade.Model, t *queueTopology, name string) bool {
	if len(t.consumers[name]) == 0 {
		return false
	}
	for _, c := range t.consumers[name] {
		for i := range m.Edges {
			if e := &m.Edges[i]; e.To == c && !isQueue(m, e.From) {
				return false
			}
		}
	}
	return true
}

// offPathCandidate adds moving a consumer's task off the request path:
// a synchronous call into a node that also works messages from a queue
// (a task of the asynchronous chain, called in line), made async, unless
// its failures were seen to fail the caller (a propagation above
// asyncMaxProp that the data or the user set: the caller needs the
// answer). Derive adds it only where edgeRemedies' async did not.
func offPathCandidate(t *queueTopology, e *cascade.Edge, key, label string, add func(Candidate)) {
	if e.Async || !t.consumerOf[e.To] || e.Propagation > asyncMaxProp && pRead(e) {
		return // the caller was seen to need its answer (points needs rights')
	}
	add(Candidate{
		Name:        "off-path " + key,
		Description: fmt.Sprintf("%s: move %s off the request path (async: %s no longer waits for it)", label, e.To, e.From),
		Kind:        KindAsync,
		Scenario:    &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"async": true})}},
	})
}
