package cascade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// ModelVersion is the schema version of the model document that this code
// writes and reads. Readers reject documents of another major version.
const ModelVersion = 1

// Provenance says where a model value came from.
type Provenance string

// Provenances of model values.
const (
	Observed Provenance = "observed" // measured directly in the dataset
	Inferred Provenance = "inferred" // derived from observations by a rule (Little's law, peaks)
	Default  Provenance = "default"  // nothing observed it: a documented default
	Fitted   Provenance = "fit"      // chosen by the grid search of `cascade fit`
	UserSet  Provenance = "user"     // set by a scenario or a hand edit
	// ObservedPeak marks a limit the data does not prove, only the most
	// it saw: the most requests in flight, which a lock upstream or the
	// load alone may have set (graph leaves such a node unbounded,
	// concurrency 0, and keeps the peak in observed.peak_in_flight), or
	// the longest retry chain of an edge whose retries never ran out
	// (retry.max_attempts, at least the default graph replays).
	ObservedPeak Provenance = "observed-peak"
	// Aggregated marks a value read from aggregated series (the
	// OpenTelemetry Collector's servicegraph and spanmetrics connectors)
	// rather than from spans: counts, rates and histogram quantiles, with
	// nothing per request behind them.
	Aggregated Provenance = "aggregate"
)

// Model is the document model.json: the call graph with everything the
// replay engine needs to simulate it. `cascade graph` writes it
// uncalibrated, `cascade fit` writes it calibrated, users edit it, and
// `cascade replay` and `cascade rank` read it.
//
// All times are milliseconds (fields end in _ms); rates are per second.
// Nodes and edges are sorted (nodes by name, edges by from, to) so the
// document is stable byte for byte.
type Model struct {
	// Version is ModelVersion.
	Version int `json:"version"`
	// Name describes the system; free text.
	Name string `json:"name,omitempty"`
	// Source records what the model was built from.
	Source *ModelSource `json:"source,omitempty"`
	// Entries are where requests enter the system.
	Entries []Entry `json:"entries"`
	// Load is the shape of the load the root requests show: open
	// (arrivals independent of answers) or closed (clients that wait for
	// an answer before sending again); nil when not observed.
	Load *Load `json:"load,omitempty"`
	// Nodes are services, or service+operation at operation level, and
	// virtual nodes for uninstrumented callees.
	Nodes []Node `json:"nodes"`
	// Edges are calls between nodes.
	Edges []Edge `json:"edges"`
	// Brokers are the message brokers that hold the model's queues
	// (nodes with a Queue), for what the queues share: the broker's
	// memory and its alarm. A queue that names no broker has no memory
	// limit.
	Brokers []Broker `json:"brokers,omitempty"`
	// Fit holds the fit's report summary when the model is calibrated.
	Fit json.RawMessage `json:"fit,omitempty"`
}

// ModelSource records the data a model was built from.
type ModelSource struct {
	// Dataset is the dataset path or the raw inputs, as given.
	Dataset string `json:"dataset,omitempty"`
	// Level is "service" or "operation".
	Level string `json:"level,omitempty"`
	// Spans and Traces count what was read.
	Spans  int64 `json:"spans,omitempty"`
	Traces int64 `json:"traces,omitempty"`
	// StartNS and EndNS bound the observed time, Unix nanoseconds.
	StartNS int64 `json:"start_ns,omitempty"`
	EndNS   int64 `json:"end_ns,omitempty"`
	// From says what the graph was built from: "traces" (also when
	// empty), "aggregates" (service-graph and span-metrics series) or
	// "traces+aggregates" (traces, with what only the series hold added).
	From string `json:"from,omitempty"`
	// Series counts the aggregated series read.
	Series int64 `json:"series,omitempty"`
	// Notes say what the inputs could not show (aggregates carry no
	// fan-out per request and no retries) and how it was filled in.
	Notes []string `json:"notes,omitempty"`
}

// What a model was built from (ModelSource.From).
const (
	FromTraces     = "traces"
	FromAggregates = "aggregates"
	FromBoth       = "traces+aggregates"
)

// Length is the time the capture covers (EndNS − StartNS); 0 when the
// source does not say.
func (s *ModelSource) Length() time.Duration {
	if s == nil || s.EndNS <= s.StartNS || s.StartNS == 0 {
		return 0
	}
	return time.Duration(s.EndNS - s.StartNS)
}

// Load shapes.
const (
	LoadOpen   = "open"
	LoadClosed = "closed"
)

// Load is the shape of the observed load, read from the root requests'
// spans: how many were in flight over time. Arrivals independent of
// answers (an open load) leave as many in flight as an M/G/∞ queue, a
// Poisson count whose variance equals its mean; N clients that each wait
// for an answer, then think for Z, leave a binomial count, Bin(N, p)
// with p = R/(R+Z), whose variance is (1 − p) times its mean. So the
// index of dispersion D = variance/mean says which: Shape is closed when
// D < 0.5 (clients spend more time waiting than thinking, where the
// feedback of a closed loop changes what a slowdown does), with
// Clients = max(peak, round(mean/(1 − D))) and ThinkMS the mean time
// from an answer to the same client's next request: the starts after
// the first Clients less the answers before the last Clients, over
// their count (Little's law over the think periods themselves, so the
// capture's edges, where clients had not begun or were done, are not
// read as thinking); otherwise open, replayed as Poisson arrivals at
// the entries' rates.
type Load struct {
	Shape string `json:"shape"`
	// Roots counts the root requests read (at most the first 1,048,576).
	Roots int64 `json:"roots"`
	// InFlightMean and Dispersion are the time-weighted mean of the roots
	// in flight and its variance over its mean; PeakInFlight the most at
	// once; LatencyMS the mean root latency.
	InFlightMean float64 `json:"in_flight_mean"`
	Dispersion   float64 `json:"dispersion"`
	PeakInFlight int     `json:"peak_in_flight"`
	LatencyMS    float64 `json:"latency_ms"`
	// Clients and ThinkMS describe a closed load.
	Clients int     `json:"clients,omitempty"`
	ThinkMS float64 `json:"think_ms,omitempty"`
}

// ObservedTraffic returns the traffic the model's load describes:
// closed-loop clients when the load is closed, else nil (Poisson
// arrivals at the entries' rates).
func (m *Model) ObservedTraffic() *Traffic {
	if l := m.Load; l != nil && l.Shape == LoadClosed && l.Clients > 0 {
		return &Traffic{Kind: TrafficClosed, Users: l.Clients, ThinkMS: l.ThinkMS}
	}
	return nil
}

// Entry is an entry point: a node where root requests arrive.
type Entry struct {
	// Node names the entry node.
	Node string `json:"node"`
	// Operation is the root operation, when the model keeps one.
	Operation string `json:"operation,omitempty"`
	// RatePerSec is the observed arrival rate of root requests.
	RatePerSec float64 `json:"rate_per_sec"`
	// Share is this entry's fraction of all root requests (sums to 1).
	Share float64 `json:"share"`
	// Timeout, when positive, is the client's deadline for a root request:
	// the request counts as failed if it takes longer. 0 means none.
	TimeoutMS float64 `json:"timeout_ms,omitempty"`
	// Retry is how the client re-sends a failed root request (the seed-000
	// client); nil means it does not.
	Retry *Retry `json:"retry,omitempty"`
	// NetworkMS is the one-way delay between the client and the entry
	// node; nil means none.
	NetworkMS *Dist `json:"network_ms,omitempty"`
	// RateLimit is an entry token bucket; nil means none.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// LowPriority is the share of this entry's root requests that are
	// low priority (a priority split: two classes of requests, the low
	// one shed first, Node.ShedLowAt). Every call a request makes has its
	// class. 0 means all are high priority, 1 all low.
	LowPriority float64 `json:"low_priority,omitempty"`
}

// Node is one service (or service+operation) of the model.
type Node struct {
	// Name identifies the node; unique.
	Name string `json:"name"`
	// Virtual marks a callee seen only from its callers' client spans
	// (a database, a cache, an uninstrumented service).
	Virtual bool `json:"virtual,omitempty"`
	// Replicas is the number of instances; at least 1.
	Replicas int `json:"replicas"`
	// Concurrency is the number of work slots per replica; 0 means
	// unlimited (no queueing at this node).
	Concurrency int `json:"concurrency"`
	// QueueCap bounds the queue per replica: a call that finds it full is
	// rejected at once (backpressure). 0 means unbounded.
	QueueCap int `json:"queue_cap,omitempty"`
	// ShedLowAt, when positive, turns away a low-priority call (see
	// Entry.LowPriority) that finds this many calls queued at its
	// replica, so that the low class is shed before the queue fills for
	// the high one. 0 means none.
	ShedLowAt int `json:"shed_low_at,omitempty"`
	// Service is the node's own (exclusive) service time per call: the
	// time a slot is busy excluding waits for children.
	Service Dist `json:"service_ms"`
	// FailService, when set, is the self time of a call that fails on its
	// own (drawn from Overload): failures are often fast (a refused
	// connection, a 503 from a server shedding load) or slow (a lock
	// wait that ends in an error), and a retry chain's latency depends on
	// which. Absent, a failing call draws from Service like any other.
	FailService *Dist `json:"fail_service_ms,omitempty"`
	// WaitCapMS, when positive, refuses a call still waiting for a slot
	// this long after it arrived (a pool's acquire timeout: HikariCP's
	// connectionTimeout, a semaphore tried with a timeout): it fails on
	// its own then, and its caller hears at once. 0 means none.
	WaitCapMS float64 `json:"wait_cap_ms,omitempty"`
	// WaitSlowdown, when positive, makes a call's service time grow by
	// this share for every call waiting for a slot at its replica as its
	// work starts: contention, as a database slows with the connections
	// queued on it, so that a saturated pool serves fewer calls a second
	// the longer its queue. 0 means none. Read from a hidden pool's
	// capture (graph: its completions per second while saturated,
	// against its waiters).
	WaitSlowdown float64 `json:"wait_slowdown,omitempty"`
	// Tiers are the observed exclusive-time quantiles, kept so fit can
	// switch tiers; Service is what replay draws from.
	Tiers *Tiers `json:"tiers,omitempty"`
	// Overload is the load-dependent failure curve b + k·max(0, ρ − θ).
	Overload Overload `json:"overload"`
	// LoadCurve, when set, is how the node's calls slow and fail with the
	// rate of calls arriving at its replica, read from the capture (see
	// LoadCurve); its Fail replaces Overload.
	LoadCurve *LoadCurve `json:"load_curve,omitempty"`
	// LoadBalancer picks a replica per call: round-robin (default),
	// random, least-loaded or p2c (power of two choices).
	LoadBalancer string `json:"load_balancer,omitempty"`
	// Breaker is a circuit breaker in front of the node, applied by every
	// caller; nil means none.
	Breaker *Breaker `json:"breaker,omitempty"`
	// Queue, when set, makes the node a message queue (a RabbitMQ queue,
	// a Kafka topic as one consumer group reads it): calls into it are
	// publishes that it holds until a consumer takes them, and its
	// out-edges are deliveries to its consumers. A queue node has no
	// service time or slots of its own; Concurrency, QueueCap, Service
	// and Overload are not used.
	Queue *Queue `json:"queue,omitempty"`
	// DeadlinePropagation, when true, drops abandoned work when it reaches
	// a worker and cancels it where it runs.
	DeadlinePropagation bool `json:"deadline_propagation,omitempty"`
	// Observed holds measurements the model was built from; replay does
	// not read them, fit compares against them.
	Observed *NodeObserved `json:"observed,omitempty"`
	// Provenance says, per field name, where the value came from.
	Provenance map[string]Provenance `json:"provenance,omitempty"`
}

// Edge is a call from one node to another.
type Edge struct {
	// From and To name the caller and the callee.
	From string `json:"from"`
	To   string `json:"to"`
	// Async marks a producer→consumer edge: the caller does not wait.
	Async bool `json:"async,omitempty"`
	// Stage orders a caller's outgoing edges: edges of a lower stage
	// finish before edges of a higher stage start; edges of one stage run
	// together. Default 0.
	Stage int `json:"stage,omitempty"`
	// FanOut is the number of calls per request of the caller; a
	// distribution over counts (its draws are rounded to integers ≥ 0).
	FanOut Dist `json:"fan_out"`
	// Parallelism is how many of one request's calls on this edge run at
	// once: 1 means in sequence, 0 means all at once.
	Parallelism int `json:"parallelism"`
	// SharedPool, when true, makes Parallelism a pool shared by all
	// requests of the caller (per replica), as HotROD's route worker pool.
	SharedPool bool `json:"shared_pool,omitempty"`
	// NetworkMS is the one-way network delay; nil means none.
	NetworkMS *Dist `json:"network_ms,omitempty"`
	// TimeoutMS is the caller's deadline per attempt; 0 means none.
	TimeoutMS float64 `json:"timeout_ms,omitempty"`
	// Retry re-sends failed or timed-out calls; nil means no retries.
	Retry *Retry `json:"retry,omitempty"`
	// Propagation is p_uv: the probability that a failed call fails the
	// caller's request (1 hard dependency, less with a fallback).
	Propagation float64 `json:"propagation"`
	// Fallback is a fallback to add: of the failed calls that would fail
	// the caller (drawn with Propagation), the caller answers Probability
	// of them degraded instead; nil means none. Propagation is what the
	// system was seen to do; Fallback is a change to it, so a failed call
	// fails its caller with probability Propagation × (1 − Probability).
	Fallback *Fallback `json:"fallback,omitempty"`
	// Bulkhead, when positive, gives the calls on this edge a pool of
	// their own at the callee: Bulkhead slots per callee replica, with
	// their own queue (bounded by the callee's QueueCap), instead of the
	// callee's shared Concurrency slots, so that this caller cannot take
	// the slots the callee's other callers need. 0 means the shared pool.
	Bulkhead int `json:"bulkhead,omitempty"`
	// Availability is the fraction of time the edge is up, or a schedule
	// of partitions; nil means always up.
	Availability *Availability `json:"availability,omitempty"`
	// Batch, on an edge into a queue node, is a publisher that batches:
	// its publishes wait until Size of them are pending or LingerMS has
	// passed since the first, and go to the broker together (Kafka's
	// batch.size and linger.ms, a batching RabbitMQ publisher). nil
	// means every publish goes at once.
	Batch *Batch `json:"batch,omitempty"`
	// FailBlocked, on an edge into a queue node, is a publisher that
	// honours its broker's blocking (RabbitMQ's connection.blocked): while
	// the broker's memory alarm is on, its publish fails at once instead
	// of waiting for the alarm to clear. On a confirmed edge (Async false)
	// the failure reaches the caller through Propagation.
	FailBlocked bool `json:"fail_blocked,omitempty"`
	// HeldAtAlarm, on a FailBlocked edge, is how many of its publishes
	// each memory alarm holds before the publisher knows it is blocked:
	// RabbitMQ blocks a connection when it next publishes and tells the
	// client then (connection.blocked), so the publishes already on their
	// way wait for the alarm to clear, and only the later ones fail at
	// once. 0 means every publish during the alarm fails at once.
	HeldAtAlarm int `json:"held_at_alarm,omitempty"`
	// Observed holds measurements the model was built from.
	Observed *EdgeObserved `json:"observed,omitempty"`
	// Provenance says, per field name, where the value came from.
	Provenance map[string]Provenance `json:"provenance,omitempty"`
}

// Batch is a publisher's batching (Edge.Batch).
type Batch struct {
	// Size is how many publishes fill a batch; at least 1.
	Size int `json:"size"`
	// LingerMS is the longest a publish waits for its batch to fill; 0
	// means a batch goes only when full.
	LingerMS float64 `json:"linger_ms,omitempty"`
}

// Overflow policies of a bounded queue, as RabbitMQ's x-overflow names
// them (block is a publisher that waits for room, as a bounded channel or
// Kafka's max.block.ms does).
const (
	OverflowDropHead      = "drop-head"      // the oldest ready message is dropped (dead-lettered if the queue has a dead-letter route)
	OverflowRejectPublish = "reject-publish" // the new message is refused; a confirming publisher sees a nack
	OverflowBlock         = "block"          // the publisher waits until there is room
)

// Redelivery policies: what a consumer's failure does with the message.
const (
	RedeliverRequeue = "requeue" // nack with requeue: delivered again at once
	RedeliverDelay   = "delay"   // through a delay (TTL) queue: back after DelayMS
	RedeliverNone    = "none"    // nack without requeue: dead-lettered or dropped
)

// Memory alarm policies of a broker.
const (
	AlarmBlock   = "block"   // publishers wait while memory is above the watermark (RabbitMQ's memory alarm)
	AlarmRestart = "restart" // the broker falls over: it loses every message it holds and refuses publishes for RestartMS
)

// Queue is a message queue's configuration, in the broker's own terms.
// Messages arrive by publish (the calls on the node's in-edges), wait in
// FIFO order, and are delivered to the consumers (the node's out-edges:
// each message goes to one consumer node, chosen by the edges' FanOut
// means as weights; one out-edge is the usual case). A consumer holds at
// most Prefetch unacked messages and works them one at a time; the
// consumer node's own Concurrency bounds how many of its consumers work
// at once.
type Queue struct {
	// System is the broker's kind: rabbitmq, kafka, nats, ...
	System string `json:"system,omitempty"`
	// Broker names the Model.Brokers entry that holds this queue; empty
	// means no broker memory limit.
	Broker string `json:"broker,omitempty"`
	// MaxLength bounds the ready messages (RabbitMQ's x-max-length); 0
	// means unbounded.
	MaxLength int `json:"max_length,omitempty"`
	// Overflow is what a publish into a full queue does: drop-head (the
	// default, as RabbitMQ's), reject-publish or block.
	Overflow string `json:"overflow,omitempty"`
	// Consumers is the number of consumers taking from the queue; at
	// least 1.
	Consumers int `json:"consumers"`
	// Prefetch is the most unacked messages a consumer holds (basic.qos);
	// 0 means unlimited.
	Prefetch int `json:"prefetch,omitempty"`
	// Redelivery is what a failed delivery does: requeue (the default),
	// delay or none.
	Redelivery string `json:"redelivery,omitempty"`
	// DelayMS is how long a failed message waits in the delay queue
	// before it is delivered again (its TTL), for Redelivery delay.
	DelayMS float64 `json:"delay_ms,omitempty"`
	// ImmediateRedeliveries, with Redelivery delay, requeues the first
	// this many failed deliveries of a message at once and sends the
	// later ones through the delay queue: "one immediate retry, then a
	// delay queue" is 1. 0 means every retry goes through the delay.
	ImmediateRedeliveries int `json:"immediate_redeliveries,omitempty"`
	// MaxDeliveries bounds the deliveries of one message, the first one
	// included (a quorum queue's delivery-limit, a consumer that counts
	// x-death); past it the message is dead-lettered. 0 means unlimited.
	MaxDeliveries int `json:"max_deliveries,omitempty"`
	// DeadLetter names the node that receives dead-lettered messages (a
	// queue node, often with no consumer); empty means they are dropped.
	// Either way the message's flow has failed.
	DeadLetter string `json:"dead_letter,omitempty"`
	// MessageBytes is the mean size of a message held by the broker
	// (body and headers), for the broker's memory.
	MessageBytes float64 `json:"message_bytes,omitempty"`
}

// Broker is a message broker: what its queues share.
type Broker struct {
	// Name identifies the broker; queues name it in Queue.Broker.
	Name string `json:"name"`
	// System is the broker's kind: rabbitmq, kafka, nats, ...
	System string `json:"system,omitempty"`
	// BaseBytes is the memory the broker uses holding no messages.
	BaseBytes float64 `json:"base_bytes,omitempty"`
	// MemoryWatermarkBytes is the memory high watermark: past it the
	// alarm goes off (vm_memory_high_watermark). 0 means no limit.
	MemoryWatermarkBytes float64 `json:"memory_watermark_bytes,omitempty"`
	// Alarm is what the alarm does: block (the default, as RabbitMQ) or
	// restart.
	Alarm string `json:"alarm,omitempty"`
	// RestartMS is how long a restarting broker refuses publishes.
	RestartMS float64 `json:"restart_ms,omitempty"`
	// RateMemoryS is the memory the broker holds for the message rate,
	// on top of BaseBytes and the messages its queues hold: that many
	// seconds of the bytes published per second. RabbitMQ's memory
	// follows its message rate (bodies awaiting the garbage collector,
	// buffers, the allocators' carriers) as much as the messages it holds.
	// 0 means memory is base and messages held only.
	RateMemoryS float64 `json:"rate_memory_s,omitempty"`
	// RateWindowMS is the time constant of the average publish rate that
	// RateMemoryS multiplies (an exponential average); 0 with a
	// RateMemoryS means 1000.
	RateWindowMS float64 `json:"rate_window_ms,omitempty"`
	// RateFallMS, when set, is a second, shorter time constant: the
	// memory follows the lesser of the two averages, so it rises with
	// the rate as slowly as RateWindowMS says and falls as fast as
	// RateFallMS says when publishing slows or stops (RabbitMQ collects
	// the bodies at once when its alarm blocks the publishers, yet does
	// not grow with a short burst). 0 means one average.
	RateFallMS float64 `json:"rate_fall_ms,omitempty"`
	// Provenance says, per field name, where the value came from.
	Provenance map[string]Provenance `json:"provenance,omitempty"`
}

// Retry is a retry policy.
type Retry struct {
	// Reactivation is r_uv: the probability that a failed or timed-out
	// attempt is sent again (while attempts remain).
	Reactivation float64 `json:"reactivation"`
	// MaxAttempts counts the first attempt: 1 means no retries.
	MaxAttempts int `json:"max_attempts"`
	// Backoff is the wait before a retry.
	Backoff Backoff `json:"backoff"`
	// Budget limits retries to a share of calls (token bucket); nil
	// means unlimited.
	Budget *RetryBudget `json:"budget,omitempty"`
}

// Backoff kinds.
const (
	BackoffNone         = "none"
	BackoffFixed        = "fixed"
	BackoffExponential  = "exponential"
	BackoffFullJitter   = "full-jitter"
	BackoffDecorrelated = "decorrelated-jitter"
)

// Backoff is the wait before retry n (n = 1 for the first retry):
// none 0; fixed Base; exponential Base·2^n; full-jitter uniform(0,
// Base·2^n); decorrelated-jitter min(Max, uniform(Base, 3·previous)). Max,
// when positive, caps every kind.
type Backoff struct {
	Kind   string  `json:"kind"`
	BaseMS float64 `json:"base_ms,omitempty"`
	MaxMS  float64 `json:"max_ms,omitempty"`
}

// RetryBudget is a token bucket on retries, as gRPC's retry throttling and
// Finagle's RetryBudget: each first attempt deposits Ratio tokens (plus
// MinPerSec per second), each retry spends one; no token, no retry.
type RetryBudget struct {
	Ratio     float64 `json:"ratio"`
	MinPerSec float64 `json:"min_per_sec,omitempty"`
	// Max caps the stored tokens; 0 means 10 + MinPerSec.
	Max float64 `json:"max,omitempty"`
}

// Breaker is a circuit breaker: it opens when the error rate over the last
// Window calls reaches ErrorRate (with at least MinCalls), rejects calls
// for OpenMS, then lets HalfOpenProbes calls through and closes if they
// all succeed.
type Breaker struct {
	ErrorRate      float64 `json:"error_rate"`
	Window         int     `json:"window"`
	MinCalls       int     `json:"min_calls,omitempty"`
	OpenMS         float64 `json:"open_ms"`
	HalfOpenProbes int     `json:"half_open_probes"`
}

// Fallback is how a caller answers when a call fails: degraded (a
// default, a cached or partial answer) instead of failing.
type Fallback struct {
	// Probability is q: the share of the failures that would fail the
	// caller that the fallback answers instead, in [0, 1].
	Probability float64 `json:"probability"`
}

// RateLimit is a token bucket: RatePerSec tokens a second, up to Burst.
type RateLimit struct {
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      float64 `json:"burst"`
}

// Availability takes an edge down: at random (Up is the fraction of time
// up, in periods of MeanDownMS) or on a schedule of partitions.
type Availability struct {
	Up         float64     `json:"up,omitempty"`
	MeanDownMS float64     `json:"mean_down_ms,omitempty"`
	Partitions []Partition `json:"partitions,omitempty"`
}

// Partition is a scheduled outage of an edge, from replay start.
type Partition struct {
	AtMS  float64 `json:"at_ms"`
	ForMS float64 `json:"for_ms"`
}

// Node returns the node named name, or nil.
func (m *Model) Node(name string) *Node {
	for i := range m.Nodes {
		if m.Nodes[i].Name == name {
			return &m.Nodes[i]
		}
	}
	return nil
}

// Sort puts nodes in name order and edges in (from, stage, to) order.
func (m *Model) Sort() {
	sort.Slice(m.Nodes, func(i, j int) bool { return m.Nodes[i].Name < m.Nodes[j].Name })
	sort.SliceStable(m.Edges, func(i, j int) bool {
		a, b := &m.Edges[i], &m.Edges[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.To < b.To
	})
	sort.Slice(m.Brokers, func(i, j int) bool { return m.Brokers[i].Name < m.Brokers[j].Name })
	sort.SliceStable(m.Entries, func(i, j int) bool {
		if m.Entries[i].Node != m.Entries[j].Node {
			return m.Entries[i].Node < m.Entries[j].Node
		}
		return m.Entries[i].Operation < m.Entries[j].Operation
	})
}

// DecodeModel reads a model document strictly: unknown fields are errors
// (a misspelt field would otherwise be silently ignored), and the model
// is validated.
func DecodeModel(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("byte %d: %w", se.Offset, err)
		}
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// EncodeModel writes the model as indented JSON with a trailing newline,
// sorted so equal models give equal bytes.
func EncodeModel(m *Model) ([]byte, error) {
	m.Sort()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
