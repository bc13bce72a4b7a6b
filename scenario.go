package cascade

import "encoding/json"

// Scenario is a what-if: traffic and changes to a model, written by users
// as YAML (or JSON) and by `cascade rank` as candidates. Changes are JSON
// merge patches (RFC 7386) over the model's own documents, so any field of
// model.json can be changed with the name it has there:
//
//	name: retries=1 on driver->redis
//	edges:
//	  driver->redis: {retry: {max_attempts: 1}}
//	nodes:
//	  mysql: {concurrency: 4, queue_cap: 100}
//	  "*": {deadline_propagation: true}
//	traffic: {kind: poisson, rate_per_sec: 50, duration_ms: 60000,
//	          surges: [{at_ms: 10000, for_ms: 60000, factor: 2}]}
//
// Node keys are node names or "*" (every node); edge keys are "FROM->TO"
// where either side may be "*"; entry keys are entry node names or "*".
// Patches apply in order: "*" first, then the named ones.
type Scenario struct {
	// Name is a short label shown in reports.
	Name string `json:"name,omitempty"`
	// Description says what the scenario changes and why; free text.
	Description string `json:"description,omitempty"`
	// Nodes maps a node name (or "*") to a merge patch over that node.
	Nodes map[string]json.RawMessage `json:"nodes,omitempty"`
	// Edges maps "FROM->TO" (or with "*" on a side) to a merge patch.
	Edges map[string]json.RawMessage `json:"edges,omitempty"`
	// Entries maps an entry node (or "*") to a merge patch.
	Entries map[string]json.RawMessage `json:"entries,omitempty"`
	// Traffic replaces the arrivals; nil keeps the replay's own.
	Traffic *Traffic `json:"traffic,omitempty"`
}

// Traffic kinds.
const (
	TrafficPoisson  = "poisson"  // open loop, exponential gaps at RatePerSec
	TrafficObserved = "observed" // the observed root-span start times
	TrafficClosed   = "closed"   // Users clients, each waits ThinkMS after an answer
)

// Traffic describes the arrivals of root requests.
type Traffic struct {
	// Kind is poisson (default), observed or closed.
	Kind string `json:"kind,omitempty"`
	// RatePerSec is the open-loop arrival rate; 0 means the model's
	// observed entry rates.
	RatePerSec float64 `json:"rate_per_sec,omitempty"`
	// Users and ThinkMS describe closed-loop clients.
	Users   int     `json:"users,omitempty"`
	ThinkMS float64 `json:"think_ms,omitempty"`
	// DurationMS is how long arrivals last; 0 means the replay's
	// --duration.
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Surges multiply the rate (open loop) or the users (closed loop) for
	// a while.
	Surges []Surge `json:"surges,omitempty"`
	// ArrivalsMS are explicit arrival times from replay start (observed
	// traffic); used when Kind is observed.
	ArrivalsMS []float64 `json:"arrivals_ms,omitempty"`
}

// Surge multiplies offered load by Factor from AtMS for ForMS.
type Surge struct {
	AtMS   float64 `json:"at_ms"`
	ForMS  float64 `json:"for_ms"`
	Factor float64 `json:"factor"`
}

// Outcome is what one replay measured. Rates are per second of simulated
// time; latencies are milliseconds measured from a root request's first
// attempt; shares are fractions in [0, 1].
type Outcome struct {
	// Seed is the random seed of this replay.
	Seed uint64 `json:"seed"`
	// Scenario names the scenario replayed ("baseline" when none).
	Scenario string `json:"scenario"`
	// DurationMS is the time over which root requests arrived; DrainMS
	// the time the replay ran on after that, with no new arrivals, for
	// the work in flight to end.
	DurationMS float64 `json:"duration_ms"`
	DrainMS    float64 `json:"drain_ms,omitempty"`
	// Roots counts root requests offered; Succeeded those that succeeded.
	Roots     int64 `json:"roots"`
	Succeeded int64 `json:"succeeded"`
	// Unfinished counts the root requests still queued or in flight at
	// the end of the drain: offered, and neither a success nor a failure.
	Unfinished int64 `json:"unfinished"`
	// SuccessRate is Succeeded / Roots: a root request still queued or in
	// flight at the end counts against it, as a failure does.
	SuccessRate float64 `json:"success_rate"`
	// Goodput is root requests that succeeded within DurationMS, per
	// second of it (the drain's completions are not throughput).
	Goodput float64 `json:"goodput_per_sec"`
	// OfferedRate is root requests offered per second.
	OfferedRate float64 `json:"offered_per_sec"`
	// BacklogPerSec is how fast the root requests not yet ended grew over
	// the second half of the arrivals: offered minus ended, per second.
	// Overloaded reports a backlog that grew beyond the counts' Poisson
	// noise (three standard deviations) and was still there at the end of
	// the drain: the system did not keep up with what it was offered.
	BacklogPerSec float64 `json:"backlog_per_sec"`
	Overloaded    bool    `json:"overloaded,omitempty"`
	// Latency quantiles of successful roots, from the first attempt.
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP95MS float64 `json:"latency_p95_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	// Amplification is calls issued (all attempts, all edges, plus root
	// attempts) divided by root requests.
	Amplification float64 `json:"amplification"`
	// RetryShare is the fraction of calls that were retries.
	RetryShare float64 `json:"retry_share"`
	// ZombieShare is the fraction of executed work (slot time) spent on
	// calls whose caller had already given up.
	ZombieShare float64 `json:"zombie_share"`
	// RejectedShare is the fraction of calls rejected by a full queue, an
	// open breaker or a rate limit.
	RejectedShare float64 `json:"rejected_share"`
	// Flows counts finished flows: a root request with every message it
	// published and all the work those set off, through async edges and
	// queues; FlowsUnfinished those still pending at the end of the
	// drain. FlowSuccessRate is the share of all flows started (finished
	// or not) in which the root and every message's processing succeeded
	// (nothing dropped, rejected, dead-lettered or failed, and nothing
	// left pending); 0 flows when the model has no async edge.
	Flows           int64   `json:"flows,omitempty"`
	FlowsUnfinished int64   `json:"flows_unfinished,omitempty"`
	FlowSuccessRate float64 `json:"flow_success_rate,omitempty"`
	// Flow completion quantiles: from the root's first attempt to the end
	// of the flow's last piece of work, over successful flows.
	FlowP50MS float64 `json:"flow_p50_ms,omitempty"`
	FlowP95MS float64 `json:"flow_p95_ms,omitempty"`
	FlowP99MS float64 `json:"flow_p99_ms,omitempty"`
	// Nodes are per-node results, sorted by name.
	Nodes []NodeOutcome `json:"nodes"`
	// Brokers are per-broker results, in the model's order.
	Brokers []BrokerOutcome `json:"brokers,omitempty"`
	// CollapseAtMS is when goodput first fell below half of offered load
	// and stayed there to the end; negative when it never did.
	CollapseAtMS float64 `json:"collapse_at_ms"`
	// RecoverMS is how long after the last surge ended goodput returned to
	// at least 90% of offered load; negative when it never did or there
	// was no surge.
	RecoverMS float64 `json:"recover_ms"`
}

// NodeOutcome is one node's results in a replay.
type NodeOutcome struct {
	Name string `json:"name"`
	// Calls counts calls that reached the node (all attempts).
	Calls int64 `json:"calls"`
	// Failures counts calls that failed at the node (own failure,
	// propagated child failure, rejection or timeout seen by the caller).
	Failures int64 `json:"failures"`
	// Rejected counts calls turned away by a full queue or open breaker.
	Rejected int64 `json:"rejected"`
	// Utilisation is the mean fraction of slots busy.
	Utilisation float64 `json:"utilisation"`
	// QueueMax and QueueMean describe the queue length.
	QueueMax  int     `json:"queue_max"`
	QueueMean float64 `json:"queue_mean"`
	// LatencyP50MS, LatencyP95MS and LatencyP99MS are quantiles of
	// calls' time at the node (queue + work).
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP95MS float64 `json:"latency_p95_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	// Infected reports whether the node's failure rate or load passed the
	// infection threshold; InfectedAtMS and InfectedForMS say when first
	// and for how long in all.
	Infected      bool    `json:"infected"`
	InfectedAtMS  float64 `json:"infected_at_ms,omitempty"`
	InfectedForMS float64 `json:"infected_for_ms,omitempty"`
	// Series holds per-window values when requested, one per window.
	Series *NodeSeries `json:"series,omitempty"`
	// Queue holds a queue node's message counts; nil for other nodes.
	Queue *QueueOutcome `json:"queue,omitempty"`
}

// QueueOutcome is a queue node's message counts in a replay. The node's
// QueueMax and QueueMean are its ready messages.
type QueueOutcome struct {
	Published    int64 `json:"published"`
	Delivered    int64 `json:"delivered"`
	Acked        int64 `json:"acked"`
	Redelivered  int64 `json:"redelivered"`
	DeadLettered int64 `json:"dead_lettered"`
	// Dropped counts messages dropped by drop-head overflow; Rejected
	// publishes refused by reject-publish, a memory alarm or a restart.
	Dropped  int64 `json:"dropped"`
	Rejected int64 `json:"rejected"`
	// UnackedMax is the most messages delivered and not yet acked.
	UnackedMax int `json:"unacked_max"`
	// BlockedMS is the time publishers into this queue spent blocked
	// (overflow block or the broker's memory alarm), summed over them.
	BlockedMS float64 `json:"blocked_ms"`
}

// BrokerOutcome is one broker's results in a replay.
type BrokerOutcome struct {
	Name string `json:"name"`
	// PeakBytes is the most memory the broker held (base included).
	PeakBytes float64 `json:"peak_bytes"`
	// Alarms counts the times the memory alarm went off; AlarmMS is how
	// long it was on in all.
	Alarms  int64   `json:"alarms"`
	AlarmMS float64 `json:"alarm_ms"`
	// Restarts counts restarts (Alarm restart) and Lost the messages they
	// lost.
	Restarts int64 `json:"restarts"`
	Lost     int64 `json:"lost"`
}

// NodeSeries are a node's per-window time series.
type NodeSeries struct {
	WindowMS    float64   `json:"window_ms"`
	QueueDepth  []float64 `json:"queue_depth"`
	InFlight    []float64 `json:"in_flight"`
	Utilisation []float64 `json:"utilisation"`
	Failures    []int64   `json:"failures"`
	Calls       []int64   `json:"calls"`
}
