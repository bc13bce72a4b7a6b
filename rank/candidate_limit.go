package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// Every limit of the model gets a candidate that raises it and one that
// cuts it, where the baseline shows it binds: a node's pool, an edge's
// pool (per request or shared by the caller's requests), a queue cap, an
// entry's rate limit and a breaker's error rate. A limit that never binds
// changes nothing when moved a little, and gets no candidate.
const (
	// bindingUtilisation is the mean slot utilisation at which a node's
	// pool binds even where no call queued in the baseline.
	bindingUtilisation = 0.9
	// bindingPoolLoad is the share of a shared pool that Little's law
	// says its calls hold on average (calls per second on the edge × the
	// callee's mean time per call) at which the pool binds: the calls of
	// several requests then meet in it often.
	bindingPoolLoad = 0.8
)

// limitCut halves a whole limit (at least 1); ok is false when it is 1
// already, where there is nothing to cut.
func limitCut(n int) (int, bool) { return max(1, n/2), n >= 2 }

// nodeLimits adds a raise and a cut of node n's pool, queue cap and
// breaker, each where it binds. The bottleneck's pool raise is the
// capacity candidate of Derive, which is not repeated here.
func nodeLimits(m *cascade.Model, ev *Evidence, n *cascade.Node, bottleneck string, add func(Candidate)) {
	if n.Concurrency > 0 && poolBinds(ev, n.Name) {
		why := bindsAt(ev, n.Name)
		if n.Name != bottleneck {
			c := poolCandidate(m, n)
			c.Description = fmt.Sprintf("%s: pool %d→%d slots per replica (%s)%s", n.Name, n.Concurrency, 2*n.Concurrency, why, c.Description)
			add(c)
		}
		if to, ok := limitCut(n.Concurrency); ok {
			add(Candidate{
				Name:        "pool÷2 " + n.Name,
				Description: fmt.Sprintf("%s: pool %d→%d slots per replica (%s)", n.Name, n.Concurrency, to, why),
				Kind:        KindPool,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"concurrency": to})},
			})
		}
	}
	if q := n.QueueCap; q > 0 && (ev == nil || ev.QueueFull[n.Name]) {
		queue := func(name string, to int) {
			add(Candidate{
				Name:        name + " " + n.Name,
				Description: fmt.Sprintf("%s: queue cap %d→%d per replica (the queue filled)", n.Name, q, to),
				Kind:        KindQueue,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"queue_cap": to})},
			})
		}
		queue("queue×2", 2*q)
		if to, ok := limitCut(q); ok {
			queue("queue÷2", to)
		}
	}
	if b := n.Breaker; b != nil && (ev == nil || ev.BreakerOpened[n.Name]) {
		// Raised, the breaker opens at an error rate halfway from its own
		// to 100%; cut, at half its own.
		breaker := func(name string, to float64) {
			to = round3(to)
			add(Candidate{
				Name:        name + " " + n.Name,
				Description: fmt.Sprintf("%s: breaker opens at %s%%→%s%% errors (it opened)", n.Name, num(100*b.ErrorRate), num(100*to)),
				Kind:        KindBreaker,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"breaker": map[string]any{"error_rate": to}})},
			})
		}
		if b.ErrorRate < 1 {
			breaker("breaker↑", (1+b.ErrorRate)/2)
		}
		if b.ErrorRate > 0 {
			breaker("breaker↓", b.ErrorRate/2)
		}
	}
}

// poolBinds reports whether node name's pool binds: calls queued at it
// or its slots were busy bindingUtilisation of the time (always, without
// evidence).
func poolBinds(ev *Evidence, name string) bool {
	return ev == nil || ev.Queued[name] || ev.Utilisation[name] >= bindingUtilisation
}

// bindsAt says in words what shows that node name's pool binds.
func bindsAt(ev *Evidence, name string) string {
	switch {
	case ev == nil:
		return "without a baseline replay to show where it binds"
	case ev.Queued[name]:
		return fmt.Sprintf("calls queued, %.0f%% busy", 100*ev.Utilisation[name])
	}
	return fmt.Sprintf("%.0f%% busy", 100*ev.Utilisation[name])
}

// edgeLimits adds a raise and a cut of edge e's pool where it binds: one
// request's calls outnumber it (they wait their turn), or, for a pool
// shared by the caller's requests, Little's law fills bindingPoolLoad of
// it.
func edgeLimits(m *cascade.Model, ev *Evidence, e *cascade.Edge, key, label string, add func(Candidate)) {
	if e.Parallelism <= 0 || e.Async {
		return
	}
	p, mean := e.Parallelism, fanOutMean(e)
	why := ""
	switch load := sharedPoolLoad(m, ev, e); {
	case mean > float64(p):
		why = fmt.Sprintf("%s calls per request", num(round3(mean)))
	case e.SharedPool && load >= bindingPoolLoad:
		why = fmt.Sprintf("%.0f%% held on average", 100*load)
	default:
		return
	}
	pool := func(name string, to int) {
		what := fmt.Sprintf("per-request concurrency cap %d→%d", p, to)
		if e.SharedPool {
			what = fmt.Sprintf("shared worker pool %d→%d", p, to)
		}
		add(Candidate{
			Name:        name + " " + key,
			Description: fmt.Sprintf("%s: %s (%s)", label, what, why),
			Kind:        KindPool,
			Scenario:    &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"parallelism": to})}},
		})
	}
	pool("pool×2", 2*p)
	if to, ok := limitCut(p); ok {
		pool("pool÷2", to)
	}
}

// sharedPoolLoad is the mean share of edge e's shared pool its calls
// hold by Little's law: the edge's calls per second per caller replica
// times the callee's mean time per call (and the network both ways),
// over the pool; 0 when the rates are unknown or the pool is not shared.
func sharedPoolLoad(m *cascade.Model, ev *Evidence, e *cascade.Edge) float64 {
	if !e.SharedPool || e.Parallelism <= 0 {
		return 0
	}
	from := m.Node(e.From)
	reps := 1
	if from != nil && from.Replicas > 1 {
		reps = from.Replicas
	}
	w := latencyOf(m, ev, e.To)
	if e.NetworkMS != nil {
		w += 2 * e.NetworkMS.MeanValue()
	}
	lambda := rateOf(m, ev, e.From) * fanOutMean(e) / float64(reps)
	return lambda * w / 1000 / float64(e.Parallelism)
}

// entryLimits adds a raise and a cut of entry en's rate limit where it
// turned calls away.
func entryLimits(ev *Evidence, en *cascade.Entry, add func(Candidate)) {
	rl := en.RateLimit
	if rl == nil || rl.RatePerSec <= 0 || ev != nil && !ev.RateLimited {
		return
	}
	limit := func(name string, f float64) {
		rate, burst := round3(rl.RatePerSec*f), math.Max(1, math.Ceil(rl.Burst*f))
		add(Candidate{
			Name: name + " " + en.Node,
			Description: fmt.Sprintf("%s: rate limit %s/s→%s/s, burst %s→%s (it turned requests away)",
				en.Node, num(rl.RatePerSec), num(rate), num(rl.Burst), num(burst)),
			Kind: KindRateLimit,
			Scenario: &cascade.Scenario{Entries: replay.NodePatch(en.Node, map[string]any{"rate_limit": cascade.RateLimit{
				RatePerSec: rate, Burst: burst,
			}})},
		})
	}
	limit("rate-limit×2", 2)
	limit("rate-limit÷2", 0.5)
}
