package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// rateLimitCandidates adds an entry rate limit at the knee, split by the
// entries' shares, for every entry without one.
func rateLimitCandidates(m *cascade.Model, ev *Evidence, add func(Candidate)) {
	if ev == nil || ev.KneePerSec <= 0 {
		return
	}
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

// capacityCandidates adds capacity on the bottleneck, the busiest node,
// where its pool binds: one more replica and a pool twice the size (one
// candidate when a second replica is the same slots).
func capacityCandidates(m *cascade.Model, ev *Evidence, add func(Candidate)) {
	b := bottleneck(m, ev)
	if b == nil || !poolBinds(ev, b.Name) {
		return
	}
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
