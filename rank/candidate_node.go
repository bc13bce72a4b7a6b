package rank

import (
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// nodeCandidates adds the candidates of node n (not a message queue): a
// bounded queue, a circuit breaker and deadline propagation where the
// baseline calls for them, its remedies and limits, and the other load
// balancers. callers are the nodes that call it in line; bneck is the
// bottleneck whose pool binds, or empty.
func nodeCandidates(m *cascade.Model, ev *Evidence, n *cascade.Node, callers []string, latencyTargetMS float64, bneck string, add func(Candidate)) {
	if q, why := littleQueue(n, ev, latencyTargetMS); q > 0 && ev.saw(queued, n.Name) {
		add(Candidate{
			Name:        "queue=" + fmt.Sprint(q) + " " + n.Name,
			Description: fmt.Sprintf("%s: bounded queue of %d per replica (%s)", n.Name, q, why),
			Kind:        KindQueue,
			Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"queue_cap": q})},
		})
	}
	if n.Breaker == nil && len(callers) > 0 && ev.saw(failing, n.Name) {
		add(Candidate{
			Name: "breaker " + n.Name,
			Description: fmt.Sprintf("%s: circuit breaker (opens at %g%% errors over %d calls, open %s, %d probes)",
				n.Name, 100*breakerRate, breakerWindow, ms(breakerOpenMS), breakerProbes),
			Kind: KindBreaker,
			Scenario: &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"breaker": cascade.Breaker{
				ErrorRate: breakerRate, Window: breakerWindow, OpenMS: breakerOpenMS, HalfOpenProbes: breakerProbes,
			}})},
		})
	}
	if !n.DeadlinePropagation && ev.saw(zombies, n.Name) {
		add(Candidate{
			Name:        "deadline " + n.Name,
			Description: n.Name + ": deadline propagation (drop work whose caller gave up)",
			Kind:        KindDeadline,
			Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"deadline_propagation": true})},
		})
	}
	nodeRemedies(m, ev, n, latencyTargetMS, add)
	nodeLimits(m, ev, n, bneck, add)
	if n.Replicas > 1 {
		cur := n.LoadBalancer
		if cur == "" {
			cur = "round-robin"
		}
		for _, lb := range []string{"round-robin", "random", "least-loaded", "p2c"} {
			if lb == cur {
				continue
			}
			add(Candidate{
				Name:        "lb=" + lb + " " + n.Name,
				Description: fmt.Sprintf("%s: load balancing %s (was %s)", n.Name, lb, cur),
				Kind:        KindBalancer,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"load_balancer": lb})},
			})
		}
	}
}

// littleQueue sizes a bounded queue by Little's law: the calls a replica
// may hold (in service and queued) are L = λ·W for its call rate λ and
// the latency target W, so the queue is ⌈λ·W⌉ − slots (at least 1). It
// returns 0 for nodes without a slot limit or with a bounded queue.
func littleQueue(n *cascade.Node, ev *Evidence, targetMS float64) (int, string) {
	if n.Concurrency <= 0 || n.QueueCap > 0 {
		return 0, ""
	}
	rate, p99 := 0.0, 0.0
	if o := n.Observed; o != nil {
		rate, p99 = o.RatePerSec, o.LatencyP99MS
	}
	if ev != nil {
		if rate <= 0 {
			rate = ev.RatePerSec[n.Name]
		}
		if p99 <= 0 {
			p99 = ev.P99MS[n.Name]
		}
	}
	w, wWhy := targetMS, "target"
	if w <= 0 {
		w, wWhy = 2*p99, "2× p99"
	}
	if rate <= 0 || w <= 0 {
		return 0, ""
	}
	lambda := rate / float64(n.Replicas)
	l := math.Ceil(lambda * w / 1000)
	q := max(1, int(l)-n.Concurrency)
	return q, fmt.Sprintf("Little: %s/s × %s (%s) = %s in system − %d slots",
		num(round3(lambda)), ms(round3(w)), wWhy, num(l), n.Concurrency)
}
