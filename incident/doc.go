// Package incident finds where an incident began: it reads a capture's
// spans (and, when given, its metric samples and a fault-free reference
// capture), judges each node and call edge window by window against its
// normal range, explains each change by its callees or callers along the
// call graph, orders the unexplained ones as origins, and checks the first
// of them by replaying their faults in the model. RootCause and
// Investigate are its entry points; `cascade analyze` and `cascade rank
// --incident` call them, and report renders the Incident they return.
//
// It stands above replay: the replays go through replay.Batch and the faults
// are written as replay's scenario patches; replay imports nothing of it.
//
// # Method
//
// RootCause (Investigate, with metric samples and logs) reads spans grouped by
// trace. A request starts where a span
// has no parent, is a server or consumer span, or belongs to another
// service than its parent. Per node and window (Config.Window)
// it keeps the requests' count and errors and samples of their latency
// (the request span's duration) and self time (the duration minus the
// union of its synchronous calls, timed by the caller's client span
// where there is one); per call edge, the calls, the retries (a call
// repeating the operation of a failed call under the same request) and
// samples of the latency as the caller sees it and as the callee served
// it.
//
// A node's normal range is its first BaselineWindows windows, or a
// fault-free reference capture. Each later window is judged on five
// metrics: the median latency and the median self time (the shift of the
// median over its standard error, 1.2533·σ/√n, σ = 1.4826·MAD of the
// baseline, at least 5% of its median — a robust z-score), the share of
// requests slower than the baseline's p95 by more than MinChange (a
// binomial z against 5%, more than the baseline can have), and the
// error rate (a binomial z against the baseline's); and its requests
// against those its share of the window's root requests should bring
// (the baseline's requests per root): at most half of them, with a
// Poisson z of Threshold, and it has fallen silent. Only a rise counts:
// a service that got faster is not where an incident began (a callee
// that fails fast shows by its errors). A metric is out of range when
// its z reaches Threshold (4) and the change is material (a median up
// by MinChange, 25%; a slow share of 15%; errors up 5 points).
//
// Against a reference, a change point put out by one of those windowed
// metrics (latency, self time, slow share, errors) must also be out
// against the capture's own windows before it, judged the same way
// (ownChangeAt): a difference from the reference that is there before
// the onset is a baseline mismatch (another hour, other pods), not this
// incident, and the next change point that holds is taken. A change at
// the capture's first window has nothing before it and stands; so do
// changes the count tests, the logs and the metrics found, each against
// its own normal.
//
// Silence flows downstream, the other way from latency: a silent node is
// explained by a caller that fell silent too, by a caller that dropped
// its calls to it (see below), by a caller that records
// its calls (client spans) and changed within Slack windows (it stopped
// calling), or by one that changed more than Slack windows before —
// unless calls to it went unanswered (client spans with no child
// request), when it stopped answering itself. It is never explained by
// its callees, and a silent callee explained by a caller does not
// explain that caller back.
//
// Each call edge's latency as the caller sees it is judged the same way
// and given to one end. When the callee served those calls slower (the
// median of its own request spans on the edge rose by at least half as
// much) the change is the callee's. Otherwise the time was added between
// the two ends, and goes to the caller when at least two of its judged
// calls in that window are out and they are at least half of them (a
// starved CPU or an exhausted connection pool slows all of a caller's
// calls), or when the callee's other callers, judged in that window, see
// no change (only this caller's calls are slow); else to the callee (its
// network).
//
// The client−server gap is judged by calls, not windows, so that a thin
// service (a few calls a window) needs as many calls as a busy one, not
// as much time. A call's gap is the caller's span around it (its client
// span; in a capture without span kinds, the parent span in the
// caller's service) less the callee's request span: the network both
// ways, and the caller's client waiting for a CPU or a connection. Per
// edge the normal gaps are those of the normal range (at least 3 calls;
// a thinner edge takes those of its callee's inbound edges pooled, or
// else of every edge: the gap is mostly the network, which they share);
// a call is high when its gap exceeds max(the normal p95, the normal
// median + 5 ms). Pooling a callee's inbound edges (gap_in) and, apart,
// a caller's outbound ones (gap_out), the calls are walked in time
// order; the onset is the first high call of the first run of 8 calls
// with 4 high — under the normal (5% high) a run does so with
// probability 3.7·10⁻⁴ (the least k of 8 below α = 10⁻³) — whose calls
// from then on have a median gap at least 4 times the normal median
// (floored at 1 ms) and 5 ms above it; a run that fails this was chance
// and the walk goes on past it. The size is the log ratio of that
// median to the floored normal median, its uncertainty the calls counted
// and the median's 95% confidence interval (order statistics). A
// change is given to one end along the graph: to a caller whose gaps to
// at least two callees rose (each edge's median gap from the onset
// above its normal high: a starved CPU, an exhausted pool); to a callee
// whose gaps rose on at least half its inbound edges that carried calls,
// from a caller that is not so starved or whose gaps to its other
// callees mostly did not rise (its network). The owner gets a judgement
// per window from the onset's on (out when most of the window's calls
// are high and their median is 5 ms above normal), its size joins its
// score, the calls' added time on its edges is its own, and the callers
// of a callee that owns its gap are explained by it (their calls read as
// they saw them). Without a reference, a fault that began inside the
// first BaselineWindows windows is in their normal, and no step after
// them shows; so the test runs a second time with the first window
// alone as the normal (a call is high with probability at least
// 1/(n+1) for n normal calls, the chance it exceeds the largest of a
// few, which raises k), and a change it finds that began inside the
// normal range, at a node the first pass gave none, stands: it is out
// from the first judged window.
//
// Self time is judged by requests too (selftime.go), so that a thin
// service's CPU contention needs as many requests as a busy one's. Per
// node the normal self times (each request's, scaled for the mix of
// operations as in the windows) are the reference's, or the first
// BaselineWindows windows' (at least 5 requests); a request is high
// when its self time exceeds max(the normal p95, the normal median +
// 1 ms). The judged requests are walked in time order as the gap's
// calls are (the walk is runs.go's, shared with the gap and the
// fan-out tests): the onset is the first high request of the first run
// of 8 with k high, k the least with P(Binomial(8, p) ≥ k) < 10⁻³, p
// the normal share high (5%, or 1/(n+1) for n normal requests when
// that is more: the chance that a request exceeds the largest of a
// few), confirmed when the requests from the onset on have a median at
// least twice the normal median (floored at 1 ms) and 1 ms above it,
// and the same against the capture's own requests of the node before
// the onset (there must be one: a difference from the reference that
// is there from the capture's first request, or before the onset, is
// a baseline mismatch, not this incident). The size is the log ratio
// of that median to the floored normal median, its uncertainty the
// requests counted and the median's 95% confidence interval. Self time
// leaves out the time of the node's calls, so the step is the node's
// own (self_time_calls): it is not explained by its callees — unless
// the node re-sent calls from the onset's window to Slack windows
// later (its backoff is its callee's failures), or a callee owns a rise
// of the gap into it from no later than that (where the caller's spans
// do not time each call, as a span around several calls in Nezha's
// CSV, the time on the wire is counted in its self time) — and its
// callers'
// latency, which its served time holds, is explained by it as any
// callee's is. It gets a judgement per window from the onset's on (out
// when most of the window's requests are high and their median is
// 1 ms above normal), and its size joins its score. A serialised
// node's self time is judged by its windows (the time it held its
// slot), not here.
//
// Where self time did not rise and a fault-free reference is given,
// the same walk looks for a fall (self_time_drop): a request is low
// below min(the normal p5, the normal median − 1 ms), and the requests
// from the onset on must have a median at most half the normal median
// and 1 ms below it, against the reference and against the capture's
// requests before the onset. Without a reference no fall is judged: a
// capture's first windows may be the tail of an earlier disturbance,
// and the recovery from it is a fall (on the development day, against
// the first 30 s, 15 falls at five busy services, none injected). Work
// a node no longer does is what an injected early return leaves when
// the method returns before its own work (a leaf, with no calls to
// drop, then only gets faster); latency that falls is otherwise no
// fault (the windows judge rises only), since a request that ends at a
// failed call skips what came after it. So a fall is explained by any
// callee that changed no later than Slack windows after it, and is the
// node's own otherwise; its size (the |log ratio|) joins its score.
//
// Calls that vanish are judged by requests, not windows
// (truncation.go). Per request the pass keeps its calls per callee and
// its descendants (the spans below it in its trace); per operation the
// normal range gives their mean and a flag: a request is low when its
// count is below the largest normal count that at most 25% of the
// operation's normal requests fall below (high likewise, above), at
// least 5 normal requests. Per edge (a caller's requests, calls to one
// callee) and per node (its requests' descendants: truncation) the
// requests are walked in time order; the onset is the first flagged
// request of the first run of 8 with k flagged, k the least with
// P(Binomial(8, p) ≥ k) < 10⁻³, p the normal share flagged (at least
// 2%), confirmed when the requests from the onset on hold at least 25%
// fewer calls (descendants) than their operations' normal means give,
// with a Poisson z of Threshold; a run that fails this was chance and
// the walk goes on past it. The size is |log((expected+1)/(observed+1))|,
// its uncertainty the requests counted and the Poisson 95% interval of
// observed/expected. A rise (more calls: retries) is found the same way
// and not attributed. A caller's drop of calls to a callee is its own
// (its code returned early) unless calls to the callee went unanswered
// from the onset's window to Slack windows later (the callee stopped
// answering) or most of the requests that dropped the calls failed (a
// failed call ended them; the errors are judged as errors). A truncated
// node owns its truncation when it owns a drop, or when no callee
// explains it: one truncated itself, one whose calls went unanswered,
// or one whose calls from it dropped for a reason not its own. A drop
// whose flagged requests mostly (at least half) ended right after one
// other callee's answer — their last call, more often than in the
// caller's normal requests — is that callee's (ended_after: the calls
// after its answer vanished because of what it answered) when that
// callee cut its own code path too (a drop of its own calls, or its
// requests truncated), unless the caller's own answer ends its callers'
// requests in turn (the top of a chain of cut code paths is the
// origin). The owner gets a judgement per window from the onset's on (out when the
// window's requests hold 25% fewer than normal), its size joins its
// score, it is not explained by its callees, and a silent callee whose
// calls from it dropped is explained by it when the calls it still got
// were served as before (no latency, self time, slow share or error
// rate out from its change on).
//
// Metric samples beside the spans (Investigate's Samples; `cascade
// analyze` and `cascade rank --incident` pass the ones ingested) add
// each service's saturation: CPU, memory, queue depth, busy workers,
// rejections, an open breaker, consumer lag (counters by their rate),
// joined by service name. Their normal range is the points before the
// judged windows, back to ten minutes before the first span (per-pod
// metrics come a point a minute); each later point, standing for the
// step before it, is judged by a robust z against them (σ = 1.4826·MAD,
// at least 5% of the median) and marks the windows of that step. A node
// keeps, per window, the loudest of its span, call and metric
// judgements, and changes at the first out-of-range window followed by
// Persist − 1 more (2 in all).
//
// Log records beside the spans (Investigate's Logs, and ReferenceLogs
// for a reference; `cascade analyze` and `cascade rank --incident` pass
// a dataset's logs.parquet) add three count-based signals per service,
// joined by service name. Their normal range is the reference's logs (a
// reference without logs leaves them unjudged) or the first
// BaselineWindows windows'. Every count is of requests (distinct trace
// ids; a record without one counts alone), not records: one request's
// records (a line in a loop, an exception and its stack) are not
// independent. log_errors counts the requests with an ERROR or FATAL
// record or an exception's stack line against the service's requests in
// the spans times their normal share; log_new and log_risen count the
// requests with each template against the service's requests that
// logged, times its normal share (a template absent from the normal
// range has a share of half a request); log_stopped watches each
// template whose absences from normal windows (with any lines) its
// share explains by chance: it predicted at most one occurrence in all
// of them together (a thin service's statement, absent from a window
// of one request, is watched; one absent where its share predicted
// several comes and goes, and is not).
// A rise's onset is the first window, from the judged ones on, whose
// own count is at least twice what the normal share brings and whose
// count pooled with the next window's is too, holds at least 5 events
// and has a Poisson tail below 10⁻⁶ (and, for errors, a share of
// requests 5 points above normal); from the onset on, each window
// pooled with the one before it is judged when it holds 2 events and
// out by the same tests at 10⁻². A stop's onset is the first window of
// a run of windows without the template whose logging requests should
// have brought 8 with it (P = e⁻⁸ = 3.4·10⁻⁴); every window of the run
// is out. Counting against the service's own requests makes the signals
// independent of traffic, and a service that falls silent stops no
// template. The loudest change of each kind (new, risen, stopped; the
// earliest, then the least probable) joins the node's judgements as the
// gap's do, its size (the excess requests with it, or the missing ones,
// per request from the onset on, at most 1) joins its score, and its
// evidence names the template, the count from the onset and the count
// the normal share brings there. A change whose first signal is an
// error (its error rate, error records, a template new or risen) is
// explained only by a changed direct callee whose own errors (error
// rate, error records, a template new or risen) rose no later than
// Slack windows after it — the caller that logs the error its callee's
// exception sent back is explained by the callee — and never by a
// callee's latency: the deepest service whose errors rose unexplained
// is the origin.
//
// Degradation propagates upstream, from callee to caller. A changed node
// is explained by a changed direct callee that changed no more than Slack
// windows later and whose calls account for at least half the node's
// latency change: the rise of their median as the callee served them
// (plus the time on the wire when that was given to the callee), times
// the calls per request, over the change window and the next ones until
// they hold MinCount requests (at most Persist + Slack windows). An
// error change is accounted for by any changed callee; so is any change
// by a callee whose errors rose when the node re-sent calls to it in
// that window (its retries and their backoff are the time it lost).
//
// Each changed node gets a score: the share of its judged windows out of
// range from the change on (a fault lasts, a blip does not) times the
// change's size (the largest |log ratio| of its latency medians to
// normal, its own or as a caller sees it, plus its error rise, plus the
// largest log ratio of a saturation metric to normal, plus the size of
// the gap change and of the self-time step it owns) — not the z-score,
// which grows with traffic. The origins are the unexplained nodes —
// first those that own a gap change (the gap leaves out the callee's own
// time and is given to one end, so a slow callee or a caller's load does
// not make one; nor is its owner explained by its callees), then the
// others — by change time, changes within Slack windows of the first of
// a group counting as simultaneous, then by score; then the explained
// ones the same way. Against a reference, a change that starts in the
// capture's first two windows is a difference present from the start:
// its onset is a later step against the capture's own first
// BaselineWindows windows (judged as the windows are), and without one
// it leads the order only when its score is at least the first
// unexplained change dated inside the capture's (a small early
// difference is not this incident's onset; a large one is an incident
// that began before the capture). The origins named (Incident.Origins, at most Top)
// are the first of that order and, after it, only the candidates that
// could stand in its place: unexplained (a later change too: after a
// small early change the injected service's often came later and
// larger, issue 38), and, against a reference, not a windowed difference (latency, self time,
// slow share, errors, as a node or as a caller) with too few requests
// of the node before it to date it against the capture's own windows
// (a difference there from the start is a baseline mismatch). The
// other changed nodes stay in Nodes, in the same order. The confidence
// is the first origin's share of the top two unexplained scores (1: no
// rival, 0.5: a tie). Each changed node lists
// its evidence: every metric that was its loudest in some window from
// the change on, with its normal value, the top of its normal range,
// its value, its first window and its largest z. The path climbs from
// the origin to the changed caller that changed earliest, and on, with
// each edge's calls per parent request and attempts per call before and
// during the incident.
//
// The replay check (Config.Verify, default 5; it needs the model)
// then tests the first max(Top, Verify) changed nodes by replay. Each
// one's fault is what was observed at it over the incident (from the
// first of their changes to the end): its service time scaled by the
// ratio of its self-time median to normal (service_ms.scale), its own
// failure probability raised by its error-rate rise (overload.base,
// failure gaps dropped), and the time its callers' calls spent between
// the two ends beyond normal, halved, added each way to every call into
// it (network_ms.shift_ms). A node whose change was silence is left in
// its place: no knob of the model makes a node stop answering; one with
// nothing of its own that rose gets a fit of 0. The faults are injected
// into the baseline model — the model with each node's service drawn
// from 32 quantiles of its normal self time, its own failures at no more
// than its normal error rate, and each network delay at the normal time
// between the ends, since the model is usually built from the incident's
// own spans and holds the fault already — and replayed at the entry
// rates over the seeds Seed … Seed+Seeds−1 for Duration, or long enough
// to see 200 root requests, on a tick a tenth of the shortest mean
// service time (at most Tick, at least 1 µs), each fault against the
// baseline replay of the same seed. At each node judged and in the model
// the replay predicts the log ratio of its median latency and its
// failure rate's rise (rises only, as observed); the fit is 1 − Σ
// (predicted − observed)² / Σ observed² over the other nodes (1: the
// fault reproduces every other node's change; 0: no better than no
// fault; the faulty node's own change, which its fault was built from,
// is left out), on each
// NodeChange as ReplayFit with the fault as ReplayFault. The fit is
// reported, and the order stays the structural one: re-ordering by fit
// within each onset group, each class or all candidates tied no
// re-ordering on OnlineBoutique (TestNezhaOriginChoice), where such
// choices are made, and a tie keeps the method that was there;
// re-ordering all candidates also loses a synthetic fault
// (TestShapesFaults). The most infectable node is found by replaying the
// model with each node's service time slowed by Slowdown (50%) in turn:
// the one whose slowdown newly infects the most other nodes, then adds
// the most root p99.
//
// # Signals given and not judged
//
// A signal given and not judged is said, never dropped: Incident.Warnings
// names the logs when the reference carries none (their normal range is
// the reference's logs; Input.ReferenceLogs, `cascade analyze
// --baseline-logs`) or no service has a normal range of them, and the
// metrics when no saturation series names a service of the spans or
// none has 3 points before the judged windows. Input.ReferenceSamples
// (`--baseline-metrics`) gives a series with too few points of its own
// the reference's points of the same service and metric as its normal
// range. `cascade analyze` copies the warnings into the report's notes.
//
// The confidence's track record (Incident.Track) is counted on faults
// held out from the choice of the constants (docs/validation.md, "Root
// cause, round 2").
//
// # Determinism
//
// Replays run in parallel (Config.Parallel), each writing into a slot by
// index; reductions run in index order; latency samples are drawn from a
// seeded reservoir. Same spans, samples, model, configuration and seed
// give the same Incident, byte for byte, at any parallelism.
package incident
