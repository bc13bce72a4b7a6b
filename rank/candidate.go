package rank

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"cascade"
	"cascade/internal/numfmt"
	"cascade/replay"
)

// Candidate is one remediation: a scenario of changes to the model, with
// what it changes in the user's words.
type Candidate struct {
	// Name identifies the candidate in the report; unique.
	Name string `json:"name"`
	// Description says what changes, in the user's words
	// ("driver→redis: max attempts 3→1 (no retries)").
	Description string `json:"description"`
	// Kind is the mechanism: attempts, backoff, retry-budget,
	// concurrency-cap, batching, bounded-queue, breaker, deadline,
	// load-balancer, rate-limit, replicas, pool, async, fallback,
	// bulkhead, priority; for message queues delay-queue,
	// delivery-limit, queue-cap, overflow, consumers, prefetch,
	// publish-async, fan-out-cut; or scenario for the user's own.
	Kind string `json:"kind"`
	// Fields are the model fields the change patches, as
	// "edge:FROM->TO/retry.max_attempts" or "node:NAME/queue_cap"; two
	// candidates are compatible when they patch no field in common.
	Fields []string `json:"fields"`
	// Scenario is the change, as merge patches.
	Scenario *cascade.Scenario `json:"scenario"`
}

// Candidate kinds.
const (
	KindAttempts    = "attempts"
	KindBackoff     = "backoff"
	KindBudget      = "retry-budget"
	KindCap         = "concurrency-cap"
	KindBatching    = "batching"
	KindQueue       = "bounded-queue"
	KindBreaker     = "breaker"
	KindDeadline    = "deadline"
	KindBalancer    = "load-balancer"
	KindRateLimit   = "rate-limit"
	KindReplicas    = "replicas"
	KindPool        = "pool"
	KindScenario    = "scenario"
	batchItemCost   = 0.5  // marginal cost of one more item in a batch, in calls
	maxBatch        = 10   // items per batch call
	budgetRatio     = 0.1  // retry budget: retries per first attempt
	backoffBaseMS   = 100  // exponential backoff base
	backoffCapMS    = 1000 // and cap
	breakerRate     = 0.5
	breakerWindow   = 20
	breakerOpenMS   = 5000
	breakerProbes   = 3
	rateLimitBurstS = 0.1 // an entry rate limit's burst, in seconds of its rate
)

// Evidence is what the baseline replays showed, which decides the
// candidates that can act: a breaker only where calls fail, a bounded
// queue only where calls queue, deadline propagation only where zombie
// work runs. Nil means no evidence: every such candidate is derived.
type Evidence struct {
	// Queued, Failing and Zombies name the nodes where, in some baseline
	// replay, calls queued, failed or ran as zombie work.
	Queued, Failing, Zombies map[string]bool
	// Utilisation is each node's mean slot utilisation under the normal
	// traffic (the bottleneck is the highest).
	Utilisation map[string]float64
	// RatePerSec and P99MS are each node's call rate and p99 latency
	// under the normal traffic, used where the model has no observed
	// values.
	RatePerSec map[string]float64
	P99MS      map[string]float64
	// LatencyMS is each node's mean time per call (queue and work, its
	// waits for its own calls included) under the normal traffic.
	LatencyMS map[string]float64
	// KneePerSec is the rate-limit candidate's rate: the highest swept
	// offered root rate still before the capacity knee
	// (CapacityCurve.SafePerSec); 0 means unknown (no rate-limit
	// candidate).
	KneePerSec float64
	// CapacityKneePerSec is the capacity knee itself
	// (CapacityCurve.KneePerSec), which the rate-limit candidate's
	// description names beside its rate; 0 when the sweep found none.
	CapacityKneePerSec float64
	// QueueFull names the nodes whose queue reached its cap and
	// BreakerOpened those whose breaker opened, in some baseline replay;
	// RateLimited reports that an entry's rate limit turned requests away
	// (the replay counts them over all entries).
	QueueFull, BreakerOpened map[string]bool
	RateLimited              bool
	// QueueMax is each queue node's most ready messages in any baseline
	// replay (message queues only).
	QueueMax map[string]int
}

// saw reports whether the evidence shows what pick selects for node name
// (always, without evidence).
func (ev *Evidence) saw(pick func(*Evidence) map[string]bool, name string) bool {
	return ev == nil || pick(ev)[name]
}

func queued(ev *Evidence) map[string]bool  { return ev.Queued }
func failing(ev *Evidence) map[string]bool { return ev.Failing }
func zombies(ev *Evidence) map[string]bool { return ev.Zombies }

// Derive returns the candidates that the model's structure suggests (see
// the package documentation for the rules), in a fixed order: entries,
// then edges, then nodes, each by name, then capacity. latencyTargetMS is
// Config.LatencyTargetMS.
func Derive(m *cascade.Model, ev *Evidence, latencyTargetMS float64) []Candidate {
	var out []Candidate
	add := func(c Candidate) {
		c.Fields = fieldsOf(c.Scenario)
		c.Scenario.Name = c.Name
		c.Scenario.Description = c.Description
		out = append(out, c)
	}
	// A queue's deliveries are not calls: a consumer's callers are the
	// nodes that call it in line.
	callers := map[string][]string{}
	for i := range m.Edges {
		if e := &m.Edges[i]; !isQueue(m, e.From) {
			callers[e.To] = append(callers[e.To], e.From)
		}
	}

	// Retries at entries (the client of root requests) and on edges.
	for i := range m.Entries {
		en := &m.Entries[i]
		retryCandidates(en.Retry, "client→"+en.Node, "entry "+en.Node, func(p map[string]any) *cascade.Scenario {
			return &cascade.Scenario{Entries: replay.NodePatch(en.Node, p)}
		}, add)
		entryLimits(ev, en, add)
	}
	// A model with message queues: a delivery edge is the queue's (its
	// candidates are the queue's own), a publish edge has the publisher's
	// (see candidate_queue.go).
	var topo *queueTopology
	if hasQueues(m) {
		topo = topologyOf(m)
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		key := e.From + "->" + e.To
		label := e.From + "→" + e.To
		if topo != nil && isQueue(m, e.From) {
			continue
		}
		retryCandidates(e.Retry, label, key, func(p map[string]any) *cascade.Scenario {
			return &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(p)}}
		}, add)
		if topo != nil && isQueue(m, e.To) {
			publishCandidates(m, topo, e, key, label, add)
			continue
		}
		fanOutCandidates(m, e, key, label, callers[e.To], add)
		edgeLimits(m, ev, e, key, label, add)
		k := len(out)
		edgeRemedies(m, ev, e, key, label, add)
		if topo != nil && !slices.ContainsFunc(out[k:], func(c Candidate) bool { return c.Kind == KindAsync }) {
			offPathCandidate(topo, e, key, label, add)
		}
	}

	// Per node.
	bneck := ""
	if b := bottleneck(m, ev); b != nil && poolBinds(ev, b.Name) {
		bneck = b.Name
	}
	nodes := make([]*cascade.Node, len(m.Nodes))
	for i := range m.Nodes {
		nodes[i] = &m.Nodes[i]
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if n.Queue != nil {
			queueCandidates(m, ev, topo, n, add)
			continue
		}
		if q, why := littleQueue(n, ev, latencyTargetMS); q > 0 && ev.saw(queued, n.Name) {
			add(Candidate{
				Name:        "queue=" + fmt.Sprint(q) + " " + n.Name,
				Description: fmt.Sprintf("%s: bounded queue of %d per replica (%s)", n.Name, q, why),
				Kind:        KindQueue,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"queue_cap": q})},
			})
		}
		if n.Breaker == nil && len(callers[n.Name]) > 0 && ev.saw(failing, n.Name) {
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

	if topo != nil {
		brokerCandidates(m, ev, topo, add)
	}

	// An entry rate limit at the knee, split by share.
	if ev != nil && ev.KneePerSec > 0 {
		var shares float64
		for i := range m.Entries {
			shares += m.Entries[i].Share
		}
		for i := range m.Entries {
			en := &m.Entries[i]
			if en.RateLimit != nil {
				continue
			}
			share := 1 / float64(len(m.Entries))
			if shares > 0 {
				share = en.Share / shares
			}
			rate := round3(ev.KneePerSec * share)
			burst := math.Max(1, math.Ceil(rate*rateLimitBurstS))
			add(Candidate{
				Name:        "rate-limit " + en.Node,
				Description: fmt.Sprintf("%s: rate limit %s/s, burst %s (%s)", en.Node, num(rate), num(burst), kneeNote(ev, share)),
				Kind:        KindRateLimit,
				Scenario: &cascade.Scenario{Entries: replay.NodePatch(en.Node, map[string]any{"rate_limit": cascade.RateLimit{
					RatePerSec: rate, Burst: burst,
				}})},
			})
		}
	}

	// Capacity on the bottleneck: the busiest node, where its pool binds.
	if b := bottleneck(m, ev); b != nil && poolBinds(ev, b.Name) {
		u := ev.Utilisation[b.Name]
		pool := poolCandidate(m, b)
		if b.Replicas == 1 {
			// One replica: a second one and a pool twice the size are
			// the same slots, one change in effect, ranked once.
			pool.Description = fmt.Sprintf("%s (bottleneck, %.0f%% busy): %d→%d slots (pool %d→%d; a second replica is the same capacity)%s",
				b.Name, 100*u, b.Concurrency, 2*b.Concurrency, b.Concurrency, 2*b.Concurrency, pool.Description)
		} else {
			pool.Description = fmt.Sprintf("%s (bottleneck, %.0f%% busy): pool %d→%d slots per replica%s",
				b.Name, 100*u, b.Concurrency, 2*b.Concurrency, pool.Description)
			add(Candidate{
				Name:        "replicas+1 " + b.Name,
				Description: fmt.Sprintf("%s (bottleneck, %.0f%% busy): replicas %d→%d", b.Name, 100*u, b.Replicas, b.Replicas+1),
				Kind:        KindReplicas,
				Scenario:    &cascade.Scenario{Nodes: replay.NodePatch(b.Name, map[string]any{"replicas": b.Replicas + 1})},
			})
		}
		add(pool)
	}
	return out
}

// poolCandidate doubles the pool the node's work waits in: its slots per
// replica and, when a caller's shared pool into it holds the same limit
// (a worker pool seen both as the callee's concurrency and as the edge's
// parallelism), that pool too, so the change is not held back by the
// copy it leaves. Its Description holds only what it says of those
// shared pools.
func poolCandidate(m *cascade.Model, b *cascade.Node) Candidate {
	c := Candidate{
		Name:     "pool×2 " + b.Name,
		Kind:     KindPool,
		Scenario: &cascade.Scenario{Nodes: replay.NodePatch(b.Name, map[string]any{"concurrency": 2 * b.Concurrency})},
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		if e.To != b.Name || !e.SharedPool || e.Parallelism <= 0 || e.Parallelism > b.Concurrency*b.Replicas {
			continue
		}
		if c.Scenario.Edges == nil {
			c.Scenario.Edges = map[string]json.RawMessage{}
		}
		c.Scenario.Edges[e.From+"->"+e.To] = replay.RawPatch(map[string]any{"parallelism": 2 * e.Parallelism})
		c.Description += fmt.Sprintf(", and %s→%s's shared pool %d→%d", e.From, e.To, e.Parallelism, 2*e.Parallelism)
	}
	return c
}

// retryCandidates adds fewer attempts, backoff with full jitter and a
// retry budget for a policy that retries.
func retryCandidates(r *cascade.Retry, label, key string, scen func(map[string]any) *cascade.Scenario, add func(Candidate)) {
	if r == nil || r.MaxAttempts <= 1 || r.Reactivation <= 0 {
		return
	}
	retry := func(p map[string]any) *cascade.Scenario { return scen(map[string]any{"retry": p}) }
	for _, to := range []int{1, 2} {
		if to >= r.MaxAttempts {
			continue
		}
		what := "no retries"
		if to == 2 {
			what = "one retry"
		}
		add(Candidate{
			Name:        fmt.Sprintf("attempts=%d %s", to, key),
			Description: fmt.Sprintf("%s: max attempts %d→%d (%s)", label, r.MaxAttempts, to, what),
			Kind:        KindAttempts,
			Scenario:    retry(map[string]any{"max_attempts": to}),
		})
	}
	if b := r.Backoff; !(b.Kind == cascade.BackoffFullJitter && b.BaseMS >= backoffBaseMS) {
		was := b.Kind
		if was == "" {
			was = cascade.BackoffNone
		}
		if b.BaseMS > 0 {
			was += " " + ms(b.BaseMS)
		}
		add(Candidate{
			Name:        "backoff " + key,
			Description: fmt.Sprintf("%s: exponential backoff %s + full jitter, capped at %s (was %s)", label, ms(backoffBaseMS), ms(backoffCapMS), was),
			Kind:        KindBackoff,
			Scenario: retry(map[string]any{"backoff": map[string]any{
				"kind": cascade.BackoffFullJitter, "base_ms": backoffBaseMS, "max_ms": backoffCapMS,
			}}),
		})
	}
	if r.Budget == nil {
		add(Candidate{
			Name:        "budget " + key,
			Description: fmt.Sprintf("%s: retry budget of %g%% of calls (was unlimited)", label, 100*budgetRatio),
			Kind:        KindBudget,
			Scenario:    retry(map[string]any{"budget": map[string]any{"ratio": budgetRatio}}),
		})
	}
}

// fanOutCandidates adds a concurrency cap and batching for an edge whose
// calls fan out.
func fanOutCandidates(m *cascade.Model, e *cascade.Edge, key, label string, callers []string, add func(Candidate)) {
	mean := e.FanOut.MeanValue()
	if e.Observed != nil && e.Observed.FanOutMean > 0 {
		mean = e.Observed.FanOutMean
	}
	if mean <= 1 || e.Async {
		return
	}
	// Concurrency cap where there is none: half the parallelism seen (at
	// least 1). An edge with a pool has its cut among the limits
	// (edgeLimits), where it binds.
	par := mean
	if e.Observed != nil && e.Observed.ObservedParallel > 0 {
		par = e.Observed.ObservedParallel
	}
	if cap := max(1, int(math.Floor(par/2))); e.Parallelism == 0 && float64(cap) < par {
		add(Candidate{
			Name:        fmt.Sprintf("cap=%d %s", cap, key),
			Description: fmt.Sprintf("%s: at most %d calls at once per request (was all at once)", label, cap),
			Kind:        KindCap,
			Scenario:    &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"parallelism": cap})}},
		})
	}
	// Batching, when this edge is the callee's only caller (the callee's
	// service time changes for every caller) and there are at least two
	// calls to batch: a mean below 2 is mostly single calls (or retries
	// read as repeats), and "batch 1.2 calls into 1" changes nothing real.
	callee := m.Node(e.To)
	if callee == nil || len(callers) != 1 || mean < 2 {
		return
	}
	k := min(maxBatch, int(math.Ceil(mean)))
	calls := math.Ceil(mean / float64(k))
	f := 1 + batchItemCost*float64(k-1)
	patch := map[string]any{"fan_out": replay.DistPatch(cascade.Const(calls))}
	timeout := ""
	if e.TimeoutMS > 0 {
		// The timeout was set for one item; a batch gets as much more
		// time as it takes.
		patch["timeout_ms"] = round3(e.TimeoutMS * f)
		timeout = ", timeout ×" + num(f)
	}
	add(Candidate{
		Name: fmt.Sprintf("batch=%d %s", k, key),
		Description: fmt.Sprintf("%s: batch %s calls into %s (batches of %d, %s service ×%s%s)",
			label, num(round3(mean)), num(calls), k, e.To, num(f), timeout),
		Kind: KindBatching,
		Scenario: &cascade.Scenario{
			Edges: map[string]json.RawMessage{key: replay.RawPatch(patch)},
			Nodes: replay.NodePatch(e.To, replay.SlowNode(callee, f)),
		},
	})
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

// bottleneck returns the node of highest utilisation, or nil.
func bottleneck(m *cascade.Model, ev *Evidence) *cascade.Node {
	if ev == nil {
		return nil
	}
	var best *cascade.Node
	for i := range m.Nodes {
		n := &m.Nodes[i]
		u := ev.Utilisation[n.Name]
		if n.Concurrency <= 0 || u <= 0 {
			continue
		}
		if best == nil || u > ev.Utilisation[best.Name] || u == ev.Utilisation[best.Name] && n.Name < best.Name {
			best = n
		}
	}
	return best
}

// userCandidate wraps a scenario of the user's.
func userCandidate(s *cascade.Scenario, i int) Candidate {
	name := s.Name
	if name == "" {
		name = fmt.Sprintf("scenario %d", i+1)
	}
	desc := s.Description
	if desc == "" {
		desc = name
	}
	c := *s
	c.Name = name
	return Candidate{Name: name, Description: desc, Kind: KindScenario, Fields: fieldsOf(&c), Scenario: &c}
}

func round3(x float64) float64 { return numfmt.Round3(x) }

// kneeNote says where a rate-limit candidate's rate comes from, so that
// it reads apart from the knee beside it: the highest swept load before
// the capacity knee, the entry's share of it when there are several.
func kneeNote(ev *Evidence, share float64) string {
	s := "the highest swept load, at which goodput still kept up (the knee lies beyond the sweep)"
	if ev.CapacityKneePerSec > 0 {
		s = fmt.Sprintf("the highest swept load below the capacity knee of %s/s", num(ev.CapacityKneePerSec))
	}
	if share < 1 {
		return fmt.Sprintf("its %s%% share of %s/s, %s", num(100*share), num(ev.KneePerSec), s)
	}
	return s
}
