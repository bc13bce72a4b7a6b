package rank

import (
	"encoding/json"
	"fmt"
	"math"

	"cascade"
	"cascade/replay"
)

// The remediations seed 002 names besides retries, fan-out and
// backpressure (§5.3: move a call the caller does not need off the
// request path; §6.2: make it async, and split work of different
// importance into pools and queues of its own): sync→async, a fallback,
// a bulkhead and a priority split. Each is derived only where the model
// and the baseline's evidence call for it.
const (
	KindAsync    = "async"
	KindFallback = "fallback"
	KindBulkhead = "bulkhead"
	KindPriority = "priority"

	// asyncMaxProp is the highest propagation at which a synchronous
	// call is one whose result the caller does not need: it fails the
	// caller at most one time in five that it fails.
	asyncMaxProp = 0.2
	// asyncMinShare is the least share of the caller's latency that the
	// wait for the call must take for making it async to be worth
	// proposing: less is off the critical path already.
	asyncMinShare = 0.1
	// fallbackMinProp is the least propagation of an edge that gets a
	// fallback candidate: below it the caller has one already.
	fallbackMinProp = 0.5
	// fallbackQ is the candidate fallback's probability: a default or
	// cached answer that is there for 9 failures in 10 (a cache has
	// misses; a fallback that never fails would be a promise).
	fallbackQ = 0.9
)

// latencyOf is the mean time at node name: the baseline's, else the
// model's observed median; 0 when neither is known.
func latencyOf(m *cascade.Model, ev *Evidence, name string) float64 {
	if ev != nil && ev.LatencyMS[name] > 0 {
		return ev.LatencyMS[name]
	}
	if n := m.Node(name); n != nil && n.Observed != nil {
		return n.Observed.LatencyP50MS
	}
	return 0
}

// rateOf is node name's call rate: the baseline's, else the model's
// observed; 0 when neither is known.
func rateOf(m *cascade.Model, ev *Evidence, name string) float64 {
	if ev != nil && ev.RatePerSec[name] > 0 {
		return ev.RatePerSec[name]
	}
	if n := m.Node(name); n != nil && n.Observed != nil {
		return n.Observed.RatePerSec
	}
	return 0
}

func fanOutMean(e *cascade.Edge) float64 {
	if e.Observed != nil && e.Observed.FanOutMean > 0 {
		return e.Observed.FanOutMean
	}
	return e.FanOut.MeanValue()
}

// pRead reports whether the edge's propagation is what the data or the
// user says (graph's observed p, a user's value, or a hand-made model
// without provenance), not a default (graph writes 1 where no call
// failed for good) or a fit's: a fit moves p freely where no call
// failed for good, and then says nothing of what the caller needs.
func pRead(e *cascade.Edge) bool {
	switch e.Provenance["propagation"] {
	case "", cascade.Observed, cascade.UserSet:
		return true
	}
	return false
}

// edgeRemedies adds sync→async and a fallback for edge e.
func edgeRemedies(m *cascade.Model, ev *Evidence, e *cascade.Edge, key, label string, add func(Candidate)) {
	if e.Async {
		return
	}
	// Sync→async: a call that rarely fails its caller when it fails
	// (p low, which graph reads only where calls failed for good; it
	// writes 1 where none did) is one whose result the caller does not
	// need, and when the caller waits a material share of its time for
	// it, firing and forgetting it takes that wait off the request's
	// path, and its failures with it.
	if e.Propagation <= asyncMaxProp && pRead(e) {
		caller, callee := latencyOf(m, ev, e.From), latencyOf(m, ev, e.To)
		if e.Observed != nil && e.Observed.LatencyP50MS > 0 && (ev == nil || ev.LatencyMS[e.To] <= 0) {
			callee = e.Observed.LatencyP50MS
		}
		wait := callee
		if e.Parallelism == 1 {
			wait *= fanOutMean(e) // one after another
		}
		why := ""
		if caller > 0 && wait > 0 {
			why = fmt.Sprintf(", and %s waits %s of its %s for it", e.From, ms(round3(math.Min(wait, caller))), ms(round3(caller)))
		}
		if caller <= 0 || wait >= asyncMinShare*caller {
			add(Candidate{
				Name: "async " + key,
				Description: fmt.Sprintf("%s: make the call async, fire and forget (a failed call fails %s %.0f%% of the time%s)",
					label, e.From, 100*e.Propagation, why),
				Kind:     KindAsync,
				Scenario: &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"async": true})}},
			})
		}
	}
	// A fallback where failures start: the callee fails calls on its
	// own (its overload curve) or the edge does (a timeout, an outage),
	// the baseline saw them, and they fail the caller.
	callee := m.Node(e.To)
	if callee == nil || e.Fallback != nil || e.Propagation < fallbackMinProp || !ev.saw(failing, e.To) {
		return
	}
	if o := callee.Overload; o.Base <= 0 && o.Slope <= 0 && e.TimeoutMS <= 0 && e.Availability == nil {
		return
	}
	add(Candidate{
		Name: "fallback " + key,
		Description: fmt.Sprintf("%s: a fallback, %s answers degraded (a default or cached answer) for %.0f%% of the failed calls instead of failing (degraded answers count as successes)",
			label, e.From, 100*fallbackQ),
		Kind:     KindFallback,
		Scenario: &cascade.Scenario{Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"fallback": cascade.Fallback{Probability: fallbackQ}})}},
	})
}

// nodeRemedies adds a bulkhead and a priority split at node n.
func nodeRemedies(m *cascade.Model, ev *Evidence, n *cascade.Node, latencyTargetMS float64, add func(Candidate)) {
	if n.Concurrency <= 0 || !ev.saw(queued, n.Name) {
		return
	}
	// A bulkhead: a pool of slots shared by several callers, where calls
	// queued. The caller that sends the most calls gets its share of the
	// slots as a pool of its own and the others keep the rest — the same
	// capacity, split — so that a surge or a slowdown of its calls queues
	// in its own pool and cannot take the slots the others need.
	var in []*cascade.Edge
	bulked := false
	for i := range m.Edges {
		if e := &m.Edges[i]; e.To == n.Name && e.From != n.Name {
			in = append(in, e)
			bulked = bulked || e.Bulkhead > 0
		}
	}
	var total, best float64
	var heavy *cascade.Edge
	for _, e := range in {
		r := fanOutMean(e) * rateOf(m, ev, e.From)
		total += r
		if r > best {
			best, heavy = r, e
		}
	}
	for i := range m.Entries {
		if m.Entries[i].Node == n.Name {
			total += m.Entries[i].RatePerSec // root requests are a caller too
		}
	}
	if n.Concurrency >= 2 && len(in) >= 2 && !bulked && heavy != nil && total > 0 {
		share := best / total
		k := min(n.Concurrency-1, max(1, int(math.Round(share*float64(n.Concurrency)))))
		key := heavy.From + "->" + heavy.To
		add(Candidate{
			Name: fmt.Sprintf("bulkhead=%d %s", k, key),
			Description: fmt.Sprintf("%s: a bulkhead for %s→%s, %d of its %d slots per replica its own and %d left to its other callers (%s sends %.0f%% of its calls), so that one caller cannot take every slot",
				n.Name, heavy.From, heavy.To, k, n.Concurrency, n.Concurrency-k, heavy.From, 100*share),
			Kind: KindBulkhead,
			Scenario: &cascade.Scenario{
				Edges: map[string]json.RawMessage{key: replay.RawPatch(map[string]any{"bulkhead": k})},
				Nodes: replay.NodePatch(n.Name, map[string]any{"concurrency": n.Concurrency - k}),
			},
		})
	}
	// A priority split where the traffic has a low-priority class
	// (Entry.LowPriority: which requests can wait is the business's to
	// say, not the traces'): shed that class once half the queue bound
	// is queued, or, for an unbounded queue, the Little's-law queue.
	var low, shares float64
	for i := range m.Entries {
		w := m.Entries[i].Share
		if w <= 0 {
			w = 1
		}
		low += m.Entries[i].LowPriority * w
		shares += w
	}
	if low <= 0 || n.ShedLowAt > 0 {
		return
	}
	at, why := n.QueueCap/2, fmt.Sprintf("half the queue bound of %d", n.QueueCap)
	if n.QueueCap < 2 {
		q, _ := littleQueue(n, ev, latencyTargetMS)
		at, why = q, "the Little's-law queue"
	}
	if at < 1 {
		return
	}
	add(Candidate{
		Name: fmt.Sprintf("shed-low=%d %s", at, n.Name),
		Description: fmt.Sprintf("%s: priority split, turn low-priority calls (%.0f%% of requests) away once %d are queued per replica (%s), so the queue stays open to the rest",
			n.Name, 100*low/shares, at, why),
		Kind:     KindPriority,
		Scenario: &cascade.Scenario{Nodes: replay.NodePatch(n.Name, map[string]any{"shed_low_at": at})},
	})
}
