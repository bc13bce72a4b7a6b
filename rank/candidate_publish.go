package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// KindPublishBatch is a publisher that batches its publishes into a
// queue (Edge.Batch: Kafka's batch.size and linger.ms, a batching
// RabbitMQ publisher).
const KindPublishBatch = "publish-batch"

// publishBatchCandidate adds batching for edge e, a publish into a
// queue, sized by Little's law on the publisher's channel: a publisher
// replica publishing λ a second, each publish costing c (publishCost),
// has λ·c publishes under way at once on average. Where that is more
// than 1, the publishes overlap: a batch of k = ⌈λ·c⌉ is what arrives
// while one publish is under way, and pays c once for k of them. Where
// it is 1 or less a publish finds the last one done, and a batch would
// wait for publishes that are not coming: no candidate. The linger is
// the time k publishes take to arrive (k/λ, a whole ms up), at most the
// room the latency budget leaves (lingerRoom); where that room holds
// fewer than 2 publishes, no candidate either. An edge that batches
// already gets the candidate only where the size differs from its own.
func publishBatchCandidate(m *cascade.Model, ev *Evidence, e *cascade.Edge, key, label string, latencyTargetMS float64, add func(Candidate)) {
	c, cWhy := publishCost(e)
	pub := m.Node(e.From)
	if c <= 0 || pub == nil {
		return
	}
	rate := rateOf(m, ev, e.From) * fanOutMean(e) / float64(max(1, pub.Replicas))
	inFlight := rate * c / 1000
	if inFlight <= 1 {
		return
	}
	k := int(math.Ceil(inFlight))
	linger := math.Ceil(float64(k) / rate * 1000)
	lingerWhy := fmt.Sprintf("the time %d take to arrive", k)
	if room, why := lingerRoom(m, ev, e, c, latencyTargetMS); room < linger {
		linger = math.Floor(room)
		k = int(math.Floor(rate * linger / 1000))
		lingerWhy = why
	}
	if k < 2 {
		return // the budget leaves no room for a batch
	}
	if b := e.Batch; b != nil && b.Size == k {
		return
	}
	words := fmt.Sprintf("batch publishes, %d a batch or what is there after %g ms", k, linger)
	if b := e.Batch; b != nil && b.Size > 1 {
		words = fmt.Sprintf("batch size %d→%d, linger %g→%g ms", b.Size, k, b.LingerMS, linger)
	}
	add(Candidate{
		Name: fmt.Sprintf("publish-batch=%d %s", k, key),
		Description: fmt.Sprintf("%s: %s (%s publishes %s/s per replica against %s of %s: %s under way at once; the linger is %s)",
			label, words, e.From, num(round3(rate)), cWhy, ms(round3(c)), num(round3(inFlight)), lingerWhy),
		Kind: KindPublishBatch,
		Scenario: &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{
			"batch": map[string]any{"size": k, "linger_ms": linger},
		})}},
	})
}

// publishCost is what one publish on edge e costs its publisher, in ms,
// and its name in words: for a confirmed publish (the publisher waits),
// the confirm's round trip the model replays (the edge's network delay
// both ways), else the publish's observed median (its client span, the
// confirm included); for a publish that does not wait for its confirm,
// the observed median only (the send). 0 when none is known.
func publishCost(e *cascade.Edge) (float64, string) {
	if !e.Async && e.NetworkMS != nil {
		if d := e.NetworkMS.MeanValue(); d > 0 {
			return 2 * d, "a confirm's round trip"
		}
	}
	if o := e.Observed; o != nil && o.LatencyP50MS > 0 {
		return o.LatencyP50MS, "a publish's observed median"
	}
	return 0, ""
}

// lingerRoom is the most a publish on edge e may wait for its batch
// within its flow's latency budget, and why; +Inf where the model sets
// no budget. The budget is the tightest the model states: for a
// confirmed publish, its timeout (less the round trip c, which must fit
// in it too) and the clients' deadline (the least Entry.TimeoutMS, less
// the publisher's p99: what its requests take already at the tail);
// for any publish, Config.LatencyTargetMS less the publisher's p99.
func lingerRoom(m *cascade.Model, ev *Evidence, e *cascade.Edge, c, latencyTargetMS float64) (float64, string) {
	room, why := math.Inf(1), ""
	p99 := p99Of(m, ev, e.From)
	tight := func(budget, used float64, what, usedWhat string) {
		if budget > 0 && budget-used < room {
			room = max(0, budget-used)
			why = fmt.Sprintf("the room %s of %s leaves over %s of %s", what, ms(round3(budget)), usedWhat, ms(round3(used)))
		}
	}
	if !e.Async {
		tight(e.TimeoutMS, c, "the publish's timeout", "its round trip")
		deadline := 0.0
		for i := range m.Entries {
			if t := m.Entries[i].TimeoutMS; t > 0 && (deadline == 0 || t < deadline) {
				deadline = t
			}
		}
		tight(deadline, p99, "the clients' deadline", e.From+"'s p99")
	}
	tight(latencyTargetMS, p99, "the latency target", e.From+"'s p99")
	return room, why
}
