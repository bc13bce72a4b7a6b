// Package replay is cascade's tick-based diffusion engine: it replays a
// model (cascade.Model) under a scenario (cascade.Scenario) and measures
// how load and failure spread (cascade.Outcome, in a Result).
//
// # Engine
//
// Replay is a discrete-event simulation on a virtual clock of ticks
// (Config.Tick, default 1 ms): every drawn duration (a service time, a
// network delay) is rounded to a neighbouring tick with the remainder
// carried into the stream's next draw, so that durations keep their
// mean at any tick (settings such as a timeout round up); events are
// kept in a timing wheel with a heap for the far future, and events of
// one tick run in the order they were scheduled.
// Idle ticks cost nothing: the clock jumps to the next tick that has an
// event, and per-window metrics are time-weighted integrals updated when
// a node's state changes, so the cost of a replay grows with its events.
//
// Randomness comes from PCG streams derived from Config.Seed, one per
// purpose (arrivals, service, failure, network, fan-out, retry, load
// balancing, availability, a queue's choice of out-edge) and per node, edge or entry. A change to one
// mechanism leaves the draws of the others alone, so scenarios compared
// under one seed see common random numbers. Same model, configuration
// and seed give the same Result, byte for byte once encoded.
//
// # A call
//
// A call u→v is sent after the edge's network delay (NetworkMS, one way,
// drawn each way). At v the load balancer picks a replica (round-robin,
// random, least-loaded — fewest calls in service and queued, ties in
// turn — or p2c, the better of two random replicas). A free slot starts
// the call; otherwise it joins the replica's FIFO queue, and a bounded
// queue that is full rejects it at once. A call that starts draws its
// own failure from the overload curve b + k·max(0, ρ − θ) at ρ = (calls
// holding slots + queued at v) / (replicas × concurrency) (0 when the
// concurrency is unlimited), and its self time from Node.Service (or the
// tier Config.Tier selects). After its self time a call that failed
// answers at once; otherwise it calls its children stage by stage
// (Edge.Stage; edges of a stage run together): per edge, a count drawn
// from FanOut (rounded, at least 0), up to Parallelism at a time (0: all
// at once), or through a per-replica pool shared by all the caller's
// calls (SharedPool). It holds its slot while it waits for synchronous
// children; asynchronous edges are fired and forgotten. A child that
// fails (after its retries) fails the call with probability Propagation,
// and the call then fails fast: it answers at once and gives up on its
// other children. The answer travels back after the network delay. A
// call 64 calls below its root request calls no children (Counts.Truncated),
// so a cycle in the graph cannot recurse forever; a replay whose calls in
// flight multiply past 4,194,304 (fan-out on a cycle) stops with
// ErrRunaway.
//
// A failed call that would fail its caller (drawn with Propagation) is
// answered by the caller's fallback instead with probability
// Fallback.Probability: the caller goes on, degraded (Counts.Degraded,
// NodeCounts.Degraded of the caller), so a failed call fails it with
// probability p × (1 − q). An edge with a Bulkhead of N takes N slots
// per callee replica of its own, each with its own FIFO queue bounded by
// QueueCap, instead of the replica's Concurrency slots; the load
// balancer compares replicas by the load in those slots, and the
// callee's capacity (ρ, utilisation) counts them when its concurrency is
// bounded. An entry's LowPriority share of root requests is low
// priority (drawn per request from a stream of its own), and so is every
// call they make: at a node with ShedLowAt, a low-priority call that
// finds that many calls queued at its replica is turned away at once
// (Counts.Shed), so the low class is shed before the queue fills for the
// high one; Counts.LowRoots, LowSucceeded and LowFailed count the low
// class's root requests.
//
// The caller waits TimeoutMS per attempt (Entry.TimeoutMS for root
// requests). When it gives up the callee's work goes on as zombie work —
// and so does the work of every call that work sends — unless the callee
// has DeadlinePropagation: then work whose caller has gone is dropped
// when it reaches a worker and cancelled where it runs, which frees its
// slot and gives up on its children. A failed or timed-out attempt is
// sent again with probability Reactivation while attempts remain
// (MaxAttempts counts the first) and the retry budget has a token (each
// first attempt deposits Ratio tokens, each retry spends one), after the
// backoff: none; fixed Base; exponential Base·2^n; full jitter
// uniform(0, Base·2^n); decorrelated jitter uniform(Base, 3·previous);
// n = 1 for the first retry, and Max caps every kind.
//
// A circuit breaker belongs to its node and is shared by all callers: it
// opens when at least MinCalls of the last Window calls are recorded and
// the failure share reaches ErrorRate, rejects calls for OpenMS, then
// lets HalfOpenProbes calls through and closes when they all succeed. An
// entry's rate limit is a token bucket (RatePerSec, Burst) that every
// root attempt passes. An edge that is down (a scheduled partition, or at
// random: alternating up and down periods, exponential, with down periods
// of mean MeanDownMS and Up the fraction of time up) fails its calls at
// once.
//
// # Message queues
//
// A node with a Queue is a broker's queue. A call into it is a publish:
// the broker accepts it (the message joins the FIFO of ready messages),
// refuses it (a nack: reject-publish overflow, a broker restarting or in
// a restart alarm), or holds the publisher (block overflow on a full
// queue, or the broker's memory alarm) until it can accept. Drop-head
// overflow drops the oldest ready message to make room. A confirmed
// publish (a synchronous edge) ends at the confirm, not at consumption,
// and a refused one is a failed call that the edge's Retry may repeat
// (the edge's timeout applies to a held publisher; a publish takes no
// network delay); an async publish ends its flow's piece with it.
// Publishes and deliveries are calls, and count in Amplification.
//
// Each of Queue.Consumers consumers holds at most Prefetch unacked
// messages (0: all it is given) and works them one at a time; the broker
// hands ready messages to consumers with room in turn. Working a message
// is a call from the queue node along one of its out-edges (chosen by
// FanOut means as weights, from a stream of its own): the consumer node's
// slots, service time, overload, children, timeouts and the edge's retry
// apply as to any call. Its success acks the message; its failure nacks
// it: requeue puts it back at the head of the ready messages (a tick
// later, so a delivery that fails at once cannot spin), delay at the tail
// after DelayMS, none dead-letters it, and so does any failure of its
// MaxDeliveries-th delivery. A dead-lettered or dropped message goes to
// the DeadLetter queue node as a new message outside any flow, or is
// dropped when there is none or it is not a queue. A queue node with no
// out-edge keeps its messages. Its QueueMax and QueueMean (and the
// series' QueueDepth) are its ready messages; NodeOutcome.Queue counts
// publishes (accepted and refused), deliveries, acks, redeliveries,
// dead letters, drops, refusals, the most unacked messages, and the time
// publishers spent held (by those that gave up: until their deadline).
//
// A broker holds BaseBytes plus MessageBytes for every ready, unacked or
// delayed message of its queues. When that reaches MemoryWatermarkBytes
// the alarm goes off: block holds every publish into its queues until
// memory falls below the watermark; restart loses every message held
// (BrokerOutcome.Lost; their flows fail), refuses the held publishers
// and every publish for RestartMS, then starts empty.
//
// A flow is a root request and the work it sets off through async edges
// and queues: the root, every async call and every message published
// count as pending pieces, and the flow ends with its last. It succeeds
// when the root succeeded, no async call failed for good, no publish was
// refused for good and every message was acked (none dropped,
// dead-lettered or lost). Flows are counted only in models with an async
// edge or a queue; FlowP50MS… are from the root's first attempt to the
// flow's end, over successful flows that ended within the replay.
//
// # Arrivals
//
// Root requests arrive at the entries by share: as a Poisson process at
// the model's entry rates or the traffic's rate, multiplied by surges
// while they last; at observed times (Traffic.ArrivalsMS or
// Config.Observed, which can name each arrival's entry); or from
// closed-loop users who wait an exponential think time (mean ThinkMS)
// after each answer (a surge adds users, or pauses some when its factor is
// below 1). Arrivals stop at Traffic.DurationMS or Config.Duration; the
// replay then runs on for Config.Drain with no new arrivals (by default
// DrainFor: three times the slowest 1% the capture saw, plus any
// redelivery delays), so that the work in flight can end. A root
// request or flow still queued or in flight after the drain is
// unfinished: it counts against the success rate (succeeded ÷ offered),
// as a failure does, and is shown apart (Outcome.Unfinished). A replay
// whose backlog of unended roots grew over the second half of the
// arrivals beyond the counts' Poisson noise, and was still there at the
// end, is overloaded (Outcome.Overloaded, with the growth per second).
//
// # Outcomes
//
// Latencies are of successful root requests, from their first attempt.
// Amplification is calls sent (every attempt on every edge, root
// attempts included) per root request; the retry, rejected and zombie
// shares are of calls sent, calls sent and slot time. A node is
// infected in a window (Config.Window) when its failures reach
// Config.InfectFailureRate of its calls or its mean load reaches
// Config.InfectLoad. The replay collapsed at the start of the last run of
// windows, to the end, in which fewer than half the roots offered
// succeeded, when that run is at least 3 windows long and was offered at
// least 20 roots (shorter or thinner runs are what a healthy replay's
// last windows look like by chance, or with requests still in flight at
// the end); it recovered at the first window after the last surge (or
// else the last scheduled partition) in which at least 90% did.
//
// RunSeeds replays several seeds in parallel, and Summarize gives each
// headline metric's mean and 95% interval (Student's t).
//
// # Scenarios
//
// A scenario (docs/scenario.md) changes the model with JSON merge patches
// (RFC 7386) over the model's own documents, so any field of model.json
// can be changed with the name it has there:
//
//	name: retries=1 on driver->redis
//	edges:
//	  driver->redis: {retry: {max_attempts: 1}}
//	nodes:
//	  mysql: {concurrency: 4, queue_cap: 100}
//	  "*": {deadline_propagation: true}
//	traffic: {kind: poisson, rate_per_sec: 50,
//	          surges: [{at_ms: 10000, for_ms: 60000, factor: 2}]}
//
// Node and entry keys are names or patterns ("*", "stock:*"; path.Match
// syntax); edge keys are FROM->TO with a pattern allowed on either side.
// Patterns apply before names. Besides the model's own fields a node
// patch takes one knob, pool: N (0 or null: unbounded), which sets the
// pool the node's work waits in — a caller's shared pool into it when the
// model has one, else the node's concurrency — so that one value changes
// the real limit. service_ms.scale and service_ms.shift_ms transform the
// fitted distribution (×F, then +D ms). A key that names
// nothing, a misspelt field and a model that no longer validates are
// errors. ParseSet turns `--set node.NAME.FIELD.PATH=VALUE` (and edge.,
// entry., traffic.) into the same patches.
package replay
