// Package graph builds the directed call graph of a traced system and the
// statistics the propagation model needs, and writes them as an
// uncalibrated model document (cascade.Model) with Graphviz, Mermaid and
// table renderings.
//
// Build reads spans grouped by trace (the order of ingest.ReadSpans), one
// trace at a time: each trace is analysed when the next begins and then
// forgotten, so memory is bounded by the largest trace and by the nodes and
// edges, not by the dataset.
//
// # Nodes and calls
//
// A span starts a request in a node when it has no parent in its trace, or
// it is a server or consumer span, or it belongs to another service than
// its parent (a client span of another service is a callee that reports
// itself, as HotROD's mysql and redis do; a kindless span of another
// service is how Nezha's CSV shows a call). Other spans (internal spans,
// client spans of the same service) fold into the request of their parent.
// Nodes are services, or service:operation of the request span at
// LevelOperation.
//
// A request with a parent is a call from the parent's request. The span
// that timed the call gives its latency and status: the caller's client
// (or producer) span when the parent is one that is not itself a request,
// the parent when it is a kindless span whose only child is this one, else
// the request span itself (SERVER-only captures, and client spans written
// under the callee's service, time the callee's own work). A client or
// producer span with no request below it calls the node its Peer names
// (peer.service, server.address, db.system/db.name,
// messaging.destination.name): a virtual node unless an instrumented
// service of that name exists. A peer named only by an IP address (and
// port) is node "peer:ADDR" (PeerPrefix), an uninstrumented peer at that
// address (Title), never a service. Producer and consumer calls are
// asynchronous. A call to the caller's own node is a self-call: kept, and
// marked on the edge and the node. A synchronous call whose callee
// outlived its caller was cut off: failed at the caller's give-up whatever
// the callee's status, a timeout of the edge, and zombie work at the
// callee.
//
// # Message queues
//
// Spans with messaging attributes (a messaging system, operation type or
// destination) put a queue node between producer and consumer:
// "queue:<destination>" (QueuePrefix), or "queue:<topic>/<group>" for a
// Kafka topic that several consumer groups read. A publish span is a call
// from its request into the queue, also when it is a root span (its
// service is then an entry). A consumer's processing span (messaging
// operation process, or the child of a receive span that does the work,
// as Brave's on-message under poll) starts the consumer's request,
// delivered from the queue: the consumer's service time and errors are
// its processing span's. A delivery is never a root request or an entry.
// At Finish every delivery is joined to the message it took, across
// traces: through its span link to the publish span, the publish span it
// sits under, or the message id. The joins give the messages' waits (the
// queue node's requests, so its in-flight count is the queue's depth),
// redeliveries and their delays, dead-letter routes, and one flow per
// message. The queue's settings, the brokers and the delivery edges come
// out with provenance; Result.Queues adds the counts behind them and the
// depth over time. Memory grows by a small record per message and per
// delivery, kept for the joins.
//
// # Statistics
//
// Per edge, per caller request: the calls and their concurrency (the most
// open at once), retries, the first start and last end. Where spans carry
// resend counts, those link retries to their attempts; otherwise a call is
// a retry when it repeats the operation of a failed or cut-off call on the
// same edge under the same request and starts after that attempt ended (a
// staggered sibling); siblings that start together are fan-out. Fan-out
// counts logical calls (first attempts), over the caller's requests less
// those that failed on their own without a call on the edge: replay
// answers a request that fails on its own at once, without calling its
// children, so counting those requests as zeros would take their calls
// away twice. Each edge's timeout comes from its
// own attempts, strongest evidence first: timeout errors, failures cut at a
// common duration, callees that outlived the caller, slow failures; else it
// is unknown (0). EdgeObserved.RetryEvidence and TimeoutEvidence say which.
//
// Per node: requests, errors, latency, exclusive time (duration minus the
// union of its synchronous calls' intervals, so parallel calls count once),
// instances, and a timeline of in-flight requests in bins of
// Config.Resolution (10 ms): each bin holds the time-averaged number of
// requests in flight, accumulated in any order and merged pairwise when a
// node's bins exceed Config.MaxBins.
//
// A node's own failures (failed with no call of theirs failed for good)
// make its overload base; their exclusive times its fail_service_ms (20
// or more), the others' its service_ms, each as the observed shape (101
// equiprobable points). Sorted by start, the gaps between own failures
// tell independent failures from regular or bursty ones (a variance
// three standard errors off a geometric law's); those become the node's
// failure process (Overload.Gaps). A publisher whose own failures crowd
// into its broker's memory alarm (the memory_alarm series; a one-sided
// Fisher test, docs/model.md) was blocked by the broker: its base is its
// rate outside the alarm, and its edges into queues are fail_blocked.
// A publish that its request does not subtract (fire and forget) and
// that the broker held (it overlaps the alarm and took longer than 99%
// of its edge's publishes outside it) is a wait: its time beyond those
// publishes' median leaves the request's exclusive time (held.go).
// Exclusive time leaves out backoff waits
// between a failed attempt and its retry, and half the gap between a
// client span and the callee's span is the edge's network_ms.
//
// A node's concurrency is set only where the data proves a limit (a
// pool_size metric, or departures that stay regular while requests queue:
// serialised, capacity 1; or, where a fault inside the capture makes the
// holding times two populations, requests that arrive while another is in
// progress making their first call only after it ends, 95% of 30 or more
// whose wait is over twice the usual pre-call delay). The peak in flight alone is what the load or a
// limit upstream let through: such a node is unbounded, provenance
// observed-peak, and NodeObserved.CapacityProven is false.
//
// Quantiles come from reservoirs of Config.Reservoir values (4096): exact
// below that, estimated from a uniform sample above. Sampling draws from a
// PCG generator seeded with Config.Seed, so a given input always gives the
// same model, byte for byte.
//
// The graph algorithms come from gonum: strongly connected components and
// a stable topological order (topo.SortStabilized), betweenness centrality
// (network.Betweenness), and breadth-first depth from the entry nodes.
//
// At scale, where spans are not all kept, BuildAggregates (an
// AggregateBuilder) builds a service-level model from the series the
// OpenTelemetry Collector's servicegraph and spanmetrics connectors make of
// spans: edges, call and failure rates, latency tiers. Those hold no
// fan-out per request and no retries; the model's provenance (aggregate,
// inferred, default) and ModelSource.Notes say so. Refine adds what only
// the series hold to a model built from a sample of traces, which wins
// where both hold a node or an edge.
//
// Traces a head sampler kept 1 in N of show 1/N of the arrivals. When a
// broker's publish counters name the queues the traces publish to, and
// count more than 1.5 times the traced publishes (the median over the
// queues), the entry rates are scaled by that ratio and ModelSource.Notes
// says so (docs/model.md, "Sampled traces").
//
// docs/model.md documents every field of the model and where its value
// comes from.
package graph
