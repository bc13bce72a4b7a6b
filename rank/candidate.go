package rank

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"cascade"
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
	// delivery-limit, redelivery, queue-cap, overflow, consumers,
	// prefetch, publish-async, publish-batch, fan-out-cut; or scenario
	// for the user's own.
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
// docs/rank.md, "Candidates", for the rules), in a fixed order: entries,
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
			publishBatchCandidate(m, ev, e, key, label, latencyTargetMS, add)
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
		nodeCandidates(m, ev, n, callers[n.Name], latencyTargetMS, bneck, add)
	}

	if topo != nil {
		brokerCandidates(m, ev, topo, add)
	}

	rateLimitCandidates(m, ev, add)
	capacityCandidates(m, ev, add)
	return out
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
