package cascade

import (
	"errors"
	"fmt"
	"math"
)

// Validate reports every problem with the model, each with its path
// ("nodes[3].service_ms: exp needs mean > 0").
func (m *Model) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	m.validateHeader(add)
	names := m.validateNodes(add)
	m.validateEdges(names, add)
	brokers := m.validateBrokers(add)
	m.validateQueueLinks(names, brokers, add)
	m.validateEntries(names, add)
	return errors.Join(errs...)
}

// validateHeader checks the version and the load, which the rest of the
// model does not depend on.
func (m *Model) validateHeader(add func(error)) {
	if m.Version != ModelVersion {
		add(fmt.Errorf("version: %d, this cascade reads version %d", m.Version, ModelVersion))
	}
	if l := m.Load; l != nil {
		switch {
		case l.Shape != LoadOpen && l.Shape != LoadClosed:
			add(fmt.Errorf("load.shape: %q, want open or closed", l.Shape))
		case l.Shape == LoadClosed && l.Clients < 1:
			add(fmt.Errorf("load.clients: %d, a closed load needs at least 1", l.Clients))
		case l.ThinkMS < 0 || l.Clients < 0 || math.IsNaN(l.ThinkMS) || math.IsInf(l.ThinkMS, 0):
			add(errors.New("load: clients and think_ms must be finite and not negative"))
		}
	}
}

// validateNodes checks each node and returns the set of node names, which
// edges, queues and entries are checked against.
func (m *Model) validateNodes(add func(error)) map[string]bool {
	names := map[string]bool{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		p := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			add(fmt.Errorf("%s.name: empty", p))
		case names[n.Name]:
			add(fmt.Errorf("%s.name: %q appears twice", p, n.Name))
		}
		names[n.Name] = true
		validateNode(p, n, add)
	}
	return names
}

// validateNode checks one node's own fields, those that need no other
// part of the model; p is its path.
func validateNode(p string, n *Node, add func(error)) {
	if n.Replicas < 1 {
		add(fmt.Errorf("%s.replicas: %d, want at least 1", p, n.Replicas))
	}
	if n.Concurrency < 0 || n.QueueCap < 0 {
		add(fmt.Errorf("%s: concurrency and queue_cap must not be negative", p))
	}
	if n.ShedLowAt < 0 {
		add(fmt.Errorf("%s.shed_low_at: %d is negative", p, n.ShedLowAt))
	}
	if n.Queue == nil || n.Service.Kind != "" {
		add(n.Service.Validate(p + ".service_ms")) // a queue has no service time
	}
	if n.FailService != nil {
		add(n.FailService.Validate(p + ".fail_service_ms"))
	}
	switch n.LoadBalancer {
	case "", "round-robin", "random", "least-loaded", "p2c":
	default:
		add(fmt.Errorf("%s.load_balancer: %q, want round-robin, random, least-loaded or p2c", p, n.LoadBalancer))
	}
	if o := n.Overload; o.Base < 0 || o.Base > 1 || o.Slope < 0 {
		add(fmt.Errorf("%s.overload: base must be in [0, 1] and slope >= 0", p))
	}
	if g := n.Overload.Gaps; g != nil {
		add(g.Validate(p + ".overload.failure_gaps"))
	}
	if !(n.WaitCapMS >= 0) || math.IsInf(n.WaitCapMS, 0) {
		add(fmt.Errorf("%s.wait_cap_ms: %g, want a finite time >= 0", p, n.WaitCapMS))
	}
	if !(n.WaitSlowdown >= 0) || math.IsInf(n.WaitSlowdown, 0) {
		add(fmt.Errorf("%s.wait_slowdown: %g, want a finite share >= 0", p, n.WaitSlowdown))
	}
	if c := n.LoadCurve; c != nil {
		add(c.Validate(p + ".load_curve"))
	}
	if b := n.Breaker; b != nil && (b.Window < 1 || b.ErrorRate <= 0 || b.ErrorRate > 1 || b.OpenMS <= 0) {
		add(fmt.Errorf("%s.breaker: needs window >= 1, error_rate in (0, 1] and open_ms > 0", p))
	}
	if q := n.Queue; q != nil {
		add(validateQueue(p+".queue", q))
	}
}

// validateEdges checks each edge, its ends against the node names and its
// batching against the node it publishes to.
func (m *Model) validateEdges(names map[string]bool, add func(error)) {
	for i := range m.Edges {
		e := &m.Edges[i]
		p := fmt.Sprintf("edges[%d]", i)
		if !names[e.From] {
			add(fmt.Errorf("%s.from: unknown node %q", p, e.From))
		}
		if !names[e.To] {
			add(fmt.Errorf("%s.to: unknown node %q", p, e.To))
		}
		add(e.FanOut.Validate(p + ".fan_out"))
		if e.NetworkMS != nil {
			add(e.NetworkMS.Validate(p + ".network_ms"))
		}
		if e.Propagation < 0 || e.Propagation > 1 {
			add(fmt.Errorf("%s.propagation: %g is outside [0, 1]", p, e.Propagation))
		}
		if e.Parallelism < 0 || e.TimeoutMS < 0 {
			add(fmt.Errorf("%s: parallelism and timeout_ms must not be negative", p))
		}
		add(validateRetry(p+".retry", e.Retry))
		if f := e.Fallback; f != nil && !(f.Probability >= 0 && f.Probability <= 1) {
			add(fmt.Errorf("%s.fallback.probability: %g is outside [0, 1]", p, f.Probability))
		}
		if b := e.Batch; b != nil {
			m.validateBatch(p, e, b, add)
		}
		if e.HeldAtAlarm < 0 {
			add(fmt.Errorf("%s.held_at_alarm: %d is negative", p, e.HeldAtAlarm))
		}
		if e.Bulkhead < 0 {
			add(fmt.Errorf("%s.bulkhead: %d is negative", p, e.Bulkhead))
		}
		if o := e.Observed; o != nil {
			switch o.PoolSharing {
			case "", PoolShared, PoolPerRequest, PoolSharingUnknown:
			default:
				add(fmt.Errorf("%s.observed.pool_sharing: %q, want %s, %s or %s", p, o.PoolSharing, PoolShared, PoolPerRequest, PoolSharingUnknown))
			}
		}
	}
}

// validateBatch checks an edge's batching: a sane size and linger, and a
// queue at the far end, since only publishes batch; p is the edge's path.
func (m *Model) validateBatch(p string, e *Edge, b *Batch, add func(error)) {
	if b.Size < 1 || !(b.LingerMS >= 0) || math.IsInf(b.LingerMS, 0) {
		add(fmt.Errorf("%s.batch: size %d and linger_ms %g, want a size >= 1 and a finite linger >= 0", p, b.Size, b.LingerMS))
	}
	if to := m.Node(e.To); to != nil && to.Queue == nil {
		add(fmt.Errorf("%s.batch: %s is not a queue; only publishes batch", p, e.To))
	}
	if b.Size > 1 && b.LingerMS == 0 {
		add(fmt.Errorf("%s.batch: size %d without linger_ms waits for ever for a full batch", p, b.Size))
	}
}

// validateBrokers checks each broker and returns the set of broker names,
// which the queues are checked against.
func (m *Model) validateBrokers(add func(error)) map[string]bool {
	brokers := map[string]bool{}
	for i := range m.Brokers {
		b := &m.Brokers[i]
		p := fmt.Sprintf("brokers[%d]", i)
		switch {
		case b.Name == "":
			add(fmt.Errorf("%s.name: empty", p))
		case brokers[b.Name]:
			add(fmt.Errorf("%s.name: %q appears twice", p, b.Name))
		}
		brokers[b.Name] = true
		if !finiteNonNeg(b.BaseBytes) || !finiteNonNeg(b.MemoryWatermarkBytes) || !finiteNonNeg(b.RestartMS) ||
			!finiteNonNeg(b.RateMemoryS) || !finiteNonNeg(b.RateWindowMS) || !finiteNonNeg(b.RateFallMS) {
			add(fmt.Errorf("%s: base_bytes, memory_watermark_bytes, restart_ms, rate_memory_s, rate_window_ms and rate_fall_ms must be finite and not negative", p))
		}
		switch b.Alarm {
		case "", AlarmBlock, AlarmRestart:
		default:
			add(fmt.Errorf("%s.alarm: %q, want %s or %s", p, b.Alarm, AlarmBlock, AlarmRestart))
		}
	}
	return brokers
}

// validateQueueLinks checks that each queue's broker and dead-letter node
// exist; it is a pass of its own because the brokers are only known once
// they are checked, after the nodes.
func (m *Model) validateQueueLinks(names, brokers map[string]bool, add func(error)) {
	for i := range m.Nodes {
		q := m.Nodes[i].Queue
		if q == nil {
			continue
		}
		p := fmt.Sprintf("nodes[%d].queue", i)
		if q.Broker != "" && !brokers[q.Broker] {
			add(fmt.Errorf("%s.broker: unknown broker %q", p, q.Broker))
		}
		if q.DeadLetter != "" && !names[q.DeadLetter] {
			add(fmt.Errorf("%s.dead_letter: unknown node %q", p, q.DeadLetter))
		}
	}
}

// validateEntries checks that there is at least one entry and that each
// names a known node with sane rates, retries and network time.
func (m *Model) validateEntries(names map[string]bool, add func(error)) {
	if len(m.Entries) == 0 {
		add(errors.New("entries: none; a model needs at least one entry node"))
	}
	for i := range m.Entries {
		en := &m.Entries[i]
		p := fmt.Sprintf("entries[%d]", i)
		if !names[en.Node] {
			add(fmt.Errorf("%s.node: unknown node %q", p, en.Node))
		}
		if en.RatePerSec < 0 || en.Share < 0 {
			add(fmt.Errorf("%s: rate_per_sec and share must not be negative", p))
		}
		if !(en.LowPriority >= 0 && en.LowPriority <= 1) {
			add(fmt.Errorf("%s.low_priority: %g is outside [0, 1]", p, en.LowPriority))
		}
		add(validateRetry(p+".retry", en.Retry))
		if en.NetworkMS != nil {
			add(en.NetworkMS.Validate(p + ".network_ms"))
		}
	}
}

// finiteNonNeg reports a value that is neither negative, +Inf nor NaN.
func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// validateQueue checks a broker queue's settings; p is its path in the
// model, for the errors.
func validateQueue(p string, q *Queue) error {
	var errs []error
	if q.ImmediateRedeliveries < 0 {
		errs = append(errs, fmt.Errorf("%s.immediate_redeliveries: %d is negative", p, q.ImmediateRedeliveries))
	}
	if q.Consumers < 1 {
		errs = append(errs, fmt.Errorf("%s.consumers: %d, want at least 1", p, q.Consumers))
	}
	if q.MaxLength < 0 || q.Prefetch < 0 || q.MaxDeliveries < 0 {
		errs = append(errs, fmt.Errorf("%s: max_length, prefetch and max_deliveries must not be negative", p))
	}
	switch q.Overflow {
	case "", OverflowDropHead, OverflowRejectPublish, OverflowBlock:
	default:
		errs = append(errs, fmt.Errorf("%s.overflow: %q, want %s, %s or %s", p, q.Overflow, OverflowDropHead, OverflowRejectPublish, OverflowBlock))
	}
	switch q.Redelivery {
	case "", RedeliverRequeue, RedeliverNone:
	case RedeliverDelay:
		if !(q.DelayMS > 0) {
			errs = append(errs, fmt.Errorf("%s.delay_ms: %g, redelivery delay needs delay_ms > 0", p, q.DelayMS))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.redelivery: %q, want %s, %s or %s", p, q.Redelivery, RedeliverRequeue, RedeliverDelay, RedeliverNone))
	}
	if !finiteNonNeg(q.DelayMS) || !finiteNonNeg(q.MessageBytes) {
		errs = append(errs, fmt.Errorf("%s: delay_ms and message_bytes must be finite and not negative", p))
	}
	return errors.Join(errs...)
}

// validateRetry checks a retry policy (nil: none); p is its path in the
// model, for the errors.
func validateRetry(p string, r *Retry) error {
	if r == nil {
		return nil
	}
	if r.MaxAttempts < 1 {
		return fmt.Errorf("%s.max_attempts: %d, want at least 1 (the first attempt)", p, r.MaxAttempts)
	}
	if r.Reactivation < 0 || r.Reactivation > 1 {
		return fmt.Errorf("%s.reactivation: %g is outside [0, 1]", p, r.Reactivation)
	}
	switch r.Backoff.Kind {
	case "", BackoffNone, BackoffFixed, BackoffExponential, BackoffFullJitter, BackoffDecorrelated:
	default:
		return fmt.Errorf("%s.backoff.kind: %q, want none, fixed, exponential, full-jitter or decorrelated-jitter", p, r.Backoff.Kind)
	}
	return nil
}
