package rank

import (
	"fmt"

	"cascade"
)

// KindRedelivery is a redelivery policy with an immediate part and a
// delayed part (Queue.ImmediateRedeliveries): "one immediate retry,
// then a delay queue", or, where the queue has that already, every
// retry through the delay.
const (
	KindRedelivery = "redelivery"
	// immediateFirst is the immediate part proposed: one redelivery at
	// once, the least that is one. A second at once is what requeue at
	// once does already, the retries that come back into the failure.
	immediateFirst = 1
)

// mixedCandidates adds, for queue node n whose failing consumers' nacks
// are redelivered, the redelivery policy with an immediate part and a
// delayed part, or, where the queue has one, without its immediate part.
//
// Which applies is read from the queue's own fields, with no threshold
// of its own:
//
//   - a queue that requeues at once (requeues: requeue, or a delay too
//     short for a delay queue's TTL) or that redelivers through a delay
//     queue with no immediate part gets immediateFirst redelivery at
//     once, then the delay queue: its TTL where it has one, else
//     delayOf's. A failure that passes (one slow call, a blip) is
//     retried without waiting out the TTL; one that lasts is not retried
//     into itself again and again. It applies only where its delivery
//     limit leaves room for a delayed redelivery after the immediate
//     one (MaxDeliveries 0, or 2 + immediateFirst or more): with fewer
//     the policy is requeue at once, or no delay at all, under another
//     name;
//   - a queue that redelivers through a delay queue after an immediate
//     part (ImmediateRedeliveries above 0) gets every redelivery through
//     the delay: the immediate ones come back into what failed them.
//
// A delay queue without the immediate part, for a queue that requeues
// at once, is redeliveryCandidates' delay-queue.
func mixedCandidates(m *cascade.Model, ev *Evidence, t *queueTopology, n *cascade.Node, add func(Candidate)) {
	q := n.Queue
	if !redelivers(ev, t, n) {
		return
	}
	delayed := q.Redelivery == cascade.RedeliverDelay && q.DelayMS >= delayMinMS
	d, why := q.DelayMS, "the TTL as it was"
	if !delayed {
		d, why = delayOf(m, ev, t, n.Name)
	}
	if q.Redelivery == cascade.RedeliverDelay && q.ImmediateRedeliveries > 0 {
		p := map[string]any{"immediate_redeliveries": 0}
		if !delayed {
			p["delay_ms"] = d
		}
		words := fmt.Sprintf("every redelivery through the delay queue (TTL %g ms, dead-letter back to %s), none at once", d, n.Name)
		if !rabbit(q) {
			words = fmt.Sprintf("every failed message waits %g ms in a delay queue, none is redelivered at once", d)
		}
		add(Candidate{
			Name: "immediate=0 " + n.Name,
			Description: fmt.Sprintf("%s: %s (was %d at once first: a retry at once comes back into the failure that failed it; %s)",
				n.Name, words, q.ImmediateRedeliveries, why),
			Kind:     KindRedelivery,
			Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, p)},
		})
		return
	}
	if q.MaxDeliveries > 0 && q.MaxDeliveries < 2+immediateFirst {
		return // no delayed redelivery would be left after the immediate one
	}
	p := map[string]any{"immediate_redeliveries": immediateFirst}
	was := "every redelivery through the delay queue"
	if !delayed {
		p["redelivery"], p["delay_ms"] = cascade.RedeliverDelay, d
		was = "requeue at once"
	}
	// The words are immediateFirst's, 1.
	words := fmt.Sprintf("the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL %g ms, dead-letter back to %s)",
		d, n.Name)
	if !rabbit(q) {
		words = fmt.Sprintf("a failed message is redelivered at once the first time, then waits %g ms in a delay queue", d)
	}
	add(Candidate{
		Name: fmt.Sprintf("immediate=%d %s", immediateFirst, n.Name),
		Description: fmt.Sprintf("%s: %s, instead of %s (a failure that passes is retried without waiting; one that lasts waits out the TTL; %s)",
			n.Name, words, was, why),
		Kind:     KindRedelivery,
		Scenario: &cascade.Scenario{Nodes: queuePatch(n.Name, p)},
	})
}
