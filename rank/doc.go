// Package rank ranks remediations for a model by replaying them, sweeps
// its capacity and checks it for metastability. Run and Capacity are its
// entry points; `cascade rank` and `cascade analyze` call them, and report
// renders what they return. Where an incident began is the incident
// package's job, which stands beside this one and replays through replay.Batch.
//
// # Candidates
//
// Derive reads the model's structure, with the baseline replays'
// evidence (which nodes queue, fail or run zombie work; utilisation) and
// the capacity knee:
//
//   - each retrying edge, and each entry whose client retries (max
//     attempts above 1 and a re-activation above 0): max attempts → 1 and
//     → 2; exponential backoff with full jitter, base 100 ms, cap 1 s
//     (uniform(0, 100 ms·2^n): the first retry waits up to 200 ms, past a
//     short blip and a few service times; full jitter spreads the retries
//     of clients that failed together, as in the AWS Architecture Blog's
//     "Exponential Backoff and Jitter"; the cap keeps the wait well under
//     the timeouts callers usually set); a retry budget of 0.1 retries per
//     first attempt, the token ratio of gRPC's retry throttling examples
//     and half Finagle's default 20%, with no per-second floor;
//   - each limit of the model where the baseline shows it binds: a
//     raise (twice the limit) and a cut (half of it, at least 1; a limit
//     of 1 has no cut), each stated in the knob's own words
//     ("frontend→route: shared worker pool 3→6", "mysql: pool 4→2 slots
//     per replica", "orders: queue cap 100→50 per replica", "api: rate
//     limit 10/s→20/s", "db: breaker opens at 50%→75% errors"; a
//     breaker's raise opens halfway from its error rate to 100%, its cut
//     at half of it). A node's pool binds where calls queued at it or
//     its slots were 90% busy or more; an edge's pool (per request, or
//     shared by the caller's requests, as HotROD's route workers) where
//     one request's calls outnumber it (they wait their turn), or, shared,
//     where Little's law fills 80% of it (the edge's calls per second per
//     caller replica times the callee's mean time per call, the network
//     both ways included); a queue cap where the queue reached it; a rate
//     limit where it turned requests away (the replay counts those over
//     all entries); a breaker where it opened. A limit that never binds
//     gets no candidate: moved, it changes nothing. The busiest node's
//     raise is its capacity candidate below;
//   - each synchronous edge without a limit whose mean fan-out exceeds 1:
//     a concurrency cap of half the parallelism seen (at least 1, per
//     request); and, when the edge is its
//     callee's only caller, batching: up to 10 calls become one, the
//     fan-out falls to ⌈fan-out / k⌉ and the callee's service time (and
//     the edge's timeout) grow to 1 + 0.5·(k − 1) times, as if every item
//     after the first cost half a call (the other half being the per-call
//     overhead of a round trip, decoding and scheduling that a batch pays
//     once);
//   - each node with a slot limit whose calls queued: a bounded queue sized
//     by Little's law, ⌈λ·W⌉ − slots per replica (at least 1), for its
//     call rate λ per replica and a latency target W (Config's, else twice
//     the node's observed p99; without observed values, the rate and p99
//     the replay shows at the lowest load of the capacity sweep);
//   - each called node whose calls failed: a circuit breaker (error rate
//     0.5 over 20 calls, open 5 s, 3 half-open probes);
//   - each node that ran zombie work: deadline propagation;
//   - each node with more than one replica: every other load-balancing
//     policy;
//   - seed 002's remediations beside those (§5.3, §6.2), each where the
//     evidence calls for it: sync→async for a synchronous edge whose
//     propagation the data measured at 0.2 or less (not a default, nor a
//     fit's, which moves p freely where no call failed for good) and
//     whose wait takes at least 10% of the caller's mean latency (the
//     caller rarely needs its result, and waits for it); a fallback
//     (q = 0.9: a default or cached answer that is there for 9 failures
//     in 10) on an edge of propagation 0.5 or more whose callee fails on
//     its own (its overload curve) or whose calls can time out or go
//     down, where the baseline saw the callee fail; a bulkhead at a node
//     of 2 or more slots with 2 or more calling edges, where calls
//     queued: the caller sending the most calls gets its share of the
//     slots (rounded, at least 1, leaving at least 1) as a pool of its
//     own, and the node keeps the rest — the same capacity, split; and,
//     where the entries declare a low-priority class (Entry.LowPriority),
//     a priority split at each node with a slot limit where calls
//     queued: shed low-priority calls at half the queue bound, or at the
//     Little's-law queue below when the queue is unbounded. The
//     bulkhead and the priority split protect one class of requests from
//     another, which the root-level objectives below do not separate;
//     their replays show it per node (latency, queue) and in the shed
//     counts;
//   - on a model with message queues (nodes with a Queue), the
//     remediations seed 002 §5.3 names, in the broker's own words
//     (RabbitMQ's queue arguments, basic.qos; neutral words for other
//     systems); a queue node gets none of the node candidates above, a
//     delivery edge none of the edge ones, and a queue no consumer reads
//     (a dead-letter queue) none at all. Where a consumer failed: a delay
//     queue instead of requeue ("nack → delay queue (TTL 1000 ms,
//     dead-letter back to q)"; the TTL is 4× the slowest consumer's
//     p99, at least 1 s, up to a whole 100 ms, or where longer a
//     consumer's longest failure burst, up to a whole second: a retry
//     must come back after what failed it), and at most 1 and 0
//     redeliveries ("x-delivery-limit 3→1"); where two queues or more of
//     one broker requeue for failing consumers (their retries feed one
//     overload, often a dependency they share), the delay queue as the
//     broker's policy over all of them, the longest of their TTLs, with
//     the deliveries as they are and with one retry (seed 002's "one
//     retry, then a delay-compensation queue"). An unbounded queue whose
//     ready messages reached it: a cap of 10,000 (seed 002's), lowered
//     where the queue's broker has a memory watermark to what it holds
//     with each of its queues full (rounded down to 1, 2 or 5 × 10^k),
//     with drop-head and with reject-publish; a capped queue that
//     filled: its cap ×2 and ÷2 and each other overflow policy. Where
//     messages waited ready: consumers ×2 (and the consumer node's
//     slots, where they would hold the new consumers back and are the
//     consumers' own: slots fewer than the consumers already are a
//     resource they share, a database's connections, and its raise is
//     the pool's candidate), prefetch
//     ×2 and prefetch 1; where a consumer fails under load (its overload
//     curve): consumers ÷2. On each confirmed publish: publish without
//     waiting for the confirm. A producer publishing to 3 queues or
//     more: one candidate per queue whose consumers no other node calls,
//     dropping it ("publish to 4 of 5 queues (drop q-log)") — a product
//     change, said so, whose flows then count only the remaining tasks.
//     A synchronous call into a node that also consumes from a queue,
//     whose failures were not seen to fail the caller: move the task off
//     the request path (async). Not derived: splitting a queue by
//     priority (a scenario patch cannot add the new queue node) and the
//     broker's memory watermark (configuration: raising it moves the
//     alarm, not the load that sets it off);
//   - each entry: a rate limit at the capacity knee (the highest swept load
//     still before it, split by share, with a burst of 100 ms of it rounded
//     up);
//   - the busiest node (highest utilisation), where its pool binds: one
//     more replica, and twice the slots per replica (with a caller's
//     shared pool into it that holds the same limit).
//
// Config.Scenarios add the user's own. Each candidate is a
// cascade.Scenario of merge patches, named in the user's words
// ("driver→redis: max attempts 3→1 (no retries)").
//
// # Scoring
//
// The baseline and every candidate are replayed over the same seeds
// (Config.Seed …, Config.Seeds of them) under two traffics: the normal
// one (Config.Traffic, else the model's observed load: its closed-loop
// clients when Model.Load is closed, else Poisson at the entry rates) and a
// surge, the same traffic times Config.SurgeFactor for the middle third
// of the run. Replay draws
// each purpose's random numbers from its own
// stream, so a seed gives baseline and candidate the same arrivals and
// service times where the change does not act: common random numbers.
// For each seed the difference candidate − baseline on the objective,
// averaged over the two traffics, is one paired observation; the
// report gives their mean and a 95% Student's t interval. A candidate is
// a win when the interval lies wholly on the better side of zero, worse
// when wholly on the other, and of no measurable effect when it contains
// zero (ends included): an unchanged model gives identical replays,
// differences of exactly zero, and is never a win. The composite
// objective averages the five headline metrics' relative changes
// (success, goodput, p99, amplification, spread — the time-averaged
// number of infected nodes), each signed so that positive is better.
//
// Where the baseline's replays count flows (a model with message queues
// or async edges: a root request and the work of every message it
// published), a flow's success, goodput (successful flows per second)
// and p99 stand for the root request's in the objective and the
// composite, since an async publish leaves the root blind to what its
// messages do; the effects add the flow metrics (p50 included), and a
// change that costs flow success names the queue that lost the messages
// and how (overflow drops, a memory alarm that blocks or refuses
// publishers, a broker restart, more dead letters or redeliveries).
// Models whose replays count no flows are scored as before.
//
// # The data a ranking rests on
//
// The intervals above are over replay seeds: they say how sure the
// replay is of a change's effect on the model, not how sure the model
// is of the system. Report.Basis states what the model was read from:
// the traces, spans and root requests, the instrumented services
// (virtual nodes are not services), the fewest requests any node saw
// and which node, and the fit's windows. A model read from fewer than
// MinRoots (100) root requests is too thin to rank on: the observed
// success rate of n roots has a 95% interval of half-width
// 1.96·√(p(1−p)/n), under 10 pp at its widest (p = ½) only from n = 97,
// and with no failure among n roots the rule of three bounds the failure
// rate at 3/n, 3 pp at n = 100. Below that the uncertainty of the rates
// the model replays is wider than the effects the ranking sorts, however
// narrow the seed-to-seed intervals are (a replay that runs longer or
// over more seeds narrows them without adding a single observation). The
// ranking then abstains rather than widen its intervals: every row that
// would be a win or worse gets the verdict NotEnoughData ("not enough
// data"), with its interval still shown, and there is no compatible set.
// No threshold applies to the fit's windows: a capture shorter than two
// windows is fitted as one (the bundled HotROD example is 90 s, one
// window of 300 roots), and its roots, not its windows, bound what it
// can show. A node with fewer than MinNodeRequests (100) has a p99 that
// is its slowest request; Basis names the thinnest node so that a
// reader can weigh the changes that act on it, but it does not stop the
// ranking. A model built by hand or from aggregated series has no Basis
// and is ranked as it stands.
//
// Each row says what it costs (calls rejected beyond the baseline's,
// latency added, success lost where its interval excludes zero) and why
// it works. Success lost is explained, in the traffic where it falls
// most: the node whose failures per root request rose most, followed
// down to the callee whose rise is at least half its caller's (a failure
// that propagates counts at every caller on its way up), with its failed
// share of calls before and after and why it rose: calls turned away by
// an open breaker or a full queue, callers that time out, more load past
// its overload curve's threshold, or, for a node that does not fail on
// its own, a failing callee whose failures its retries no longer save,
// with what reaches it more (more calls, or more at once). As for why
// it works: the per-node quantity that changes most relative to its
// baseline, among calls per root request, queue maximum, failures per
// root, p99 and infected time (and the zombie share), in the traffic
// where the objective moves most; a win's mechanism is a fall, a worse
// candidate's a rise.
//
// # Compatible set
//
// Two candidates are compatible when they patch no field in common (a
// retry's attempts and its backoff are compatible; two attempt counts are
// not). Starting from the top win, each next win in rank order (up to
// Config.MaxSet) that is compatible with the set is tried together with
// it and joins when the set's paired objective improves on average. The
// final set is scored against the baseline like a candidate.
//
// # Capacity and metastability
//
// Capacity sweeps Poisson arrivals from CapacityMin to CapacityMax times
// the normal rate. The knee is where goodput / offered first falls below
// 95% of its value at the lowest load (interpolated between points: the
// ratio, not the goodput, so a system that fails a constant share at any
// load still has a knee); the collapse is the first load past the knee
// where goodput is under 20% of offered or under 90% of the best goodput
// at a lower load. At each point Little's law is checked per node: the
// mean number in the node (queued plus holding a slot, from the replay's
// series) against the rate of calls not rejected times their mean time
// at the node. It holds within 10% wherever the time calls spend in the
// node is all recorded, even while a queue grows; a gap marks time that
// is not — work dropped by deadline propagation, calls left waiting
// behind abandoned work at the end — as in seed 000's storm.
//
// The surge traffic is the metastability check: goodput that has not
// returned to 90% of offered load by the end of the run (the replay's
// RecoverMS), in at least half the seeds, means the system stays degraded
// after its trigger is gone. The candidates under which most seeds
// recover remove it.
//
// # Determinism
//
// Replays run in parallel (Config.Parallel), each writing into a slot by
// index; reductions run in index order. Same model, configuration and
// seeds give the same Report, byte for byte, at any parallelism.
package rank
