package cascade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
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
	// ObservedPeak marks a concurrency the data does not prove: the most
	// requests seen in flight, which a lock upstream or the load alone
	// may have set. graph leaves such a node unbounded (concurrency 0)
	// and keeps the peak in observed.peak_in_flight.
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
// Clients = max(peak, round(mean/(1 − D))) and ThinkMS = Clients/X − R
// by Little's law (X the root rate, R the mean root latency); otherwise
// open, replayed as Poisson arrivals at the entries' rates.
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
	// Tiers are the observed exclusive-time quantiles, kept so fit can
	// switch tiers; Service is what replay draws from.
	Tiers *Tiers `json:"tiers,omitempty"`
	// Overload is the load-dependent failure curve b + k·max(0, ρ − θ).
	Overload Overload `json:"overload"`
	// LoadBalancer picks a replica per call: round-robin (default),
	// random, least-loaded or p2c (power of two choices).
	LoadBalancer string `json:"load_balancer,omitempty"`
	// Breaker is a circuit breaker in front of the node, applied by every
	// caller; nil means none.
	Breaker *Breaker `json:"breaker,omitempty"`
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
	// Observed holds measurements the model was built from.
	Observed *EdgeObserved `json:"observed,omitempty"`
	// Provenance says, per field name, where the value came from.
	Provenance map[string]Provenance `json:"provenance,omitempty"`
}

// Dist is a distribution of a non-negative quantity (milliseconds for
// times, counts for fan-out). Kind selects the family:
//
//	const        Value
//	exp          Mean
//	lognormal    Mu, Sigma (of the underlying normal, in log-ms)
//	normal       Mean, Sigma
//	uniform      Min, Max
//	empirical    Points: observed values, drawn uniformly with replacement
//	tiers        P50, P95, P99: the quantile function is linear between the
//	             knots of TierKnots (P50/2 at 0, the tiers at 0.5, 0.95 and
//	             0.99, P99 + (P99 − P95) at 1)
//
// After the draw, a spike adds SpikeMS with probability SpikeProb (the
// "exp(10ms) + 60ms with 5%" mixture), Scale multiplies (absent: 1) and
// ShiftMS adds, then Floor and Cap clamp the result (Cap 0 means none) and
// a negative value becomes 0. Scale and ShiftMS are the what-if knobs
// "service time ×F" and "+D ms" over whatever distribution was fitted.
type Dist struct {
	Kind      string    `json:"kind"`
	Value     float64   `json:"value,omitempty"`
	Mean      float64   `json:"mean,omitempty"`
	Mu        float64   `json:"mu,omitempty"`
	Sigma     float64   `json:"sigma,omitempty"`
	Min       float64   `json:"min,omitempty"`
	Max       float64   `json:"max,omitempty"`
	P50       float64   `json:"p50,omitempty"`
	P95       float64   `json:"p95,omitempty"`
	P99       float64   `json:"p99,omitempty"`
	Points    []float64 `json:"points,omitempty"`
	SpikeProb float64   `json:"spike_prob,omitempty"`
	SpikeMS   float64   `json:"spike,omitempty"`
	Scale     *float64  `json:"scale,omitempty"`
	ShiftMS   float64   `json:"shift_ms,omitempty"`
	Floor     float64   `json:"floor,omitempty"`
	Cap       float64   `json:"cap,omitempty"`
}

// ScaleValue returns Scale, or 1 when it is absent.
func (d *Dist) ScaleValue() float64 {
	if d.Scale == nil {
		return 1
	}
	return *d.Scale
}

// Distribution kinds.
const (
	DistConst     = "const"
	DistExp       = "exp"
	DistLognormal = "lognormal"
	DistNormal    = "normal"
	DistUniform   = "uniform"
	DistEmpirical = "empirical"
	DistTiers     = "tiers"
)

// Const returns a constant distribution.
func Const(v float64) Dist { return Dist{Kind: DistConst, Value: v} }

// MeanValue returns the distribution's mean with its spike, Scale and
// ShiftMS, before floor and cap (for empirical, the sample mean; for
// tiers, an approximation).
func (d *Dist) MeanValue() float64 {
	var m float64
	switch d.Kind {
	case DistConst:
		m = d.Value
	case DistExp, DistNormal:
		m = d.Mean
	case DistLognormal:
		m = math.Exp(d.Mu + d.Sigma*d.Sigma/2)
	case DistUniform:
		m = (d.Min + d.Max) / 2
	case DistEmpirical:
		for _, p := range d.Points {
			m += p
		}
		if len(d.Points) > 0 {
			m /= float64(len(d.Points))
		}
	case DistTiers:
		q := d.TierKnots()
		for i := 1; i < len(q); i++ {
			m += (q[i][0] - q[i-1][0]) * (q[i][1] + q[i-1][1]) / 2
		}
	}
	return (m+d.SpikeProb*d.SpikeMS)*d.ScaleValue() + d.ShiftMS
}

// TierKnots returns the (quantile, value) knots of a tiers distribution.
func (d *Dist) TierKnots() [5][2]float64 {
	return [5][2]float64{{0, d.P50 / 2}, {0.5, d.P50}, {0.95, d.P95}, {0.99, d.P99}, {1, d.P99 + (d.P99 - d.P95)}}
}

// Validate reports what is wrong with the distribution, under path.
func (d *Dist) Validate(path string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	switch d.Kind {
	case DistConst:
		if d.Value < 0 {
			return bad("const value %g is negative", d.Value)
		}
	case DistExp:
		if d.Mean <= 0 {
			return bad("exp needs mean > 0")
		}
	case DistLognormal:
		if d.Sigma < 0 {
			return bad("lognormal sigma %g is negative", d.Sigma)
		}
	case DistNormal:
		if d.Sigma < 0 {
			return bad("normal sigma %g is negative", d.Sigma)
		}
	case DistUniform:
		if d.Max < d.Min || d.Min < 0 {
			return bad("uniform needs 0 <= min <= max, got [%g, %g]", d.Min, d.Max)
		}
	case DistEmpirical:
		if len(d.Points) == 0 {
			return bad("empirical needs points")
		}
		for i, p := range d.Points {
			if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
				return bad("points[%d] = %g is not a finite non-negative value", i, p)
			}
		}
	case DistTiers:
		if !(d.P50 >= 0 && d.P95 >= d.P50 && d.P99 >= d.P95) {
			return bad("tiers need 0 <= p50 <= p95 <= p99, got %g, %g, %g", d.P50, d.P95, d.P99)
		}
	default:
		return bad("unknown distribution kind %q", d.Kind)
	}
	if d.SpikeProb < 0 || d.SpikeProb > 1 {
		return bad("spike_prob %g is outside [0, 1]", d.SpikeProb)
	}
	if d.Cap != 0 && d.Cap < d.Floor {
		return bad("cap %g is below floor %g", d.Cap, d.Floor)
	}
	if f := d.ScaleValue(); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return bad("scale %g is not a finite non-negative factor", f)
	}
	if math.IsNaN(d.ShiftMS) || math.IsInf(d.ShiftMS, 0) {
		return bad("shift_ms %g is not finite", d.ShiftMS)
	}
	return nil
}

// Tiers are observed quantiles of a node's exclusive time, in ms.
type Tiers struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	// Points is a compact empirical shape: up to 101 quantiles (0..100%).
	Points []float64 `json:"points,omitempty"`
}

// Overload is the load-dependent failure probability of a node at load ρ
// ((in flight + queued) / capacity): Base + Slope·max(0, ρ − Threshold),
// clamped to [0, 1].
//
// Gaps, when set, replaces the independent draw of the Base part by the
// failure process the node was seen to follow: the number of calls from
// one of its own failures to the next (1: the very next call) is drawn
// from Gaps, rounded, at least 1. A failure every Nth call (a constant
// gap), bursts (many gaps of 1 between long ones) and independent
// failures (geometric gaps) are all such processes; their failure share
// is 1/mean gap, which Base keeps. The load-dependent part above Base is
// still drawn call by call.
type Overload struct {
	Base      float64 `json:"base"`
	Slope     float64 `json:"slope"`
	Threshold float64 `json:"threshold"`
	Gaps      *Dist   `json:"failure_gaps,omitempty"`
}

// At returns the failure probability at load rho.
func (o Overload) At(rho float64) float64 {
	p := o.Base + o.Slope*math.Max(0, rho-o.Threshold)
	return math.Min(1, math.Max(0, p))
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

// NodeObserved are a node's measurements from the dataset.
type NodeObserved struct {
	Requests       int64   `json:"requests"`
	RatePerSec     float64 `json:"rate_per_sec"`
	ErrorRate      float64 `json:"error_rate"`
	PeakInFlight   int     `json:"peak_in_flight"`
	MeanInFlight   float64 `json:"mean_in_flight"`
	LatencyP50MS   float64 `json:"latency_p50_ms"`
	LatencyP95MS   float64 `json:"latency_p95_ms"`
	LatencyP99MS   float64 `json:"latency_p99_ms"`
	QueueDepthMax  float64 `json:"queue_depth_max,omitempty"`
	PoolSize       float64 `json:"pool_size,omitempty"`
	Rejected       float64 `json:"rejected,omitempty"`
	LittleL        float64 `json:"little_l,omitempty"`
	SelfCall       bool    `json:"self_call,omitempty"`
	Component      int     `json:"scc,omitempty"`
	Betweenness    float64 `json:"betweenness,omitempty"`
	CapacitySource string  `json:"capacity_source,omitempty"`
	// CapacityProven says whether the traces or metrics prove a limit on
	// concurrency (a pool_size metric, a serialised node); a peak in
	// flight alone proves none.
	CapacityProven bool `json:"capacity_proven,omitempty"`
	// ZombieShare is the share of the node's busy time spent on calls
	// whose caller had already given up.
	ZombieShare float64 `json:"zombie_share,omitempty"`
	// FailureProcess says how the node's own failures came, read from
	// their sequence in time: "independent", "regular" (gaps between
	// failures less spread than independent failures give, down to a
	// failure every Nth call) or "bursty" (more spread: failures come
	// together); empty with too few failures to tell. FailureDispersion
	// is the gaps' variance over an independent process's.
	FailureProcess    string  `json:"failure_process,omitempty"`
	FailureDispersion float64 `json:"failure_dispersion,omitempty"`
}

// EdgeObserved are an edge's measurements from the dataset.
type EdgeObserved struct {
	Calls            int64   `json:"calls"`
	ParentRequests   int64   `json:"parent_requests"`
	FanOutMean       float64 `json:"fan_out_mean"`
	FanOutP50        float64 `json:"fan_out_p50"`
	FanOutP95        float64 `json:"fan_out_p95"`
	FanOutMax        float64 `json:"fan_out_max"`
	FanOutHistogram  []int64 `json:"fan_out_histogram,omitempty"`
	ObservedParallel float64 `json:"observed_parallelism"`
	Overlapping      bool    `json:"overlapping"`
	ErrorRate        float64 `json:"error_rate"`
	Timeouts         int64   `json:"timeouts"`
	// Cut counts attempts the caller abandoned while the callee went on
	// working (counted as failed timeouts of the edge).
	Cut int64 `json:"cut,omitempty"`
	// TimeoutEvidence says how TimeoutMS was found: "timeout errors",
	// "cut-off durations", "callee outlived caller", "slow failures" or
	// "none".
	TimeoutEvidence string `json:"timeout_evidence,omitempty"`
	Retries         int64  `json:"retries"`
	// RetryEvidence says how retries were told from fan-out:
	// "resend_count", "staggered siblings", both, or "none".
	RetryEvidence   string    `json:"retry_evidence,omitempty"`
	RetryShare      float64   `json:"retry_share"`
	AttemptsPerCall float64   `json:"attempts_per_call"`
	BackoffGapsMS   []float64 `json:"backoff_gaps_ms,omitempty"`
	Propagation     float64   `json:"propagation"`
	LatencyP50MS    float64   `json:"latency_p50_ms"`
	LatencyP95MS    float64   `json:"latency_p95_ms"`
	LatencyP99MS    float64   `json:"latency_p99_ms"`
	SelfCall        bool      `json:"self_call,omitempty"`
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
	sort.SliceStable(m.Entries, func(i, j int) bool {
		if m.Entries[i].Node != m.Entries[j].Node {
			return m.Entries[i].Node < m.Entries[j].Node
		}
		return m.Entries[i].Operation < m.Entries[j].Operation
	})
}

// Validate reports every problem with the model, each with its path
// ("nodes[3].service_ms: exp needs mean > 0").
func (m *Model) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m.Version != ModelVersion {
		add(fmt.Errorf("version: %d, this cascade reads version %d", m.Version, ModelVersion))
	}
	if l := m.Load; l != nil {
		switch {
		case l.Shape != LoadOpen && l.Shape != LoadClosed:
			add(fmt.Errorf("load.shape: %q, want open or closed", l.Shape))
		case l.Shape == LoadClosed && l.Clients < 1:
			add(fmt.Errorf("load.clients: %d, a closed load needs at least 1", l.Clients))
		case l.ThinkMS < 0 || l.Clients < 0 || math.IsNaN(l.ThinkMS) || math.IsInf(l.ThinkMS, 0):
			add(errors.New("load: clients and think_ms must be finite and not negative"))
		}
	}
	names := map[string]bool{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		p := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			add(fmt.Errorf("%s.name: empty", p))
		case names[n.Name]:
			add(fmt.Errorf("%s.name: %q appears twice", p, n.Name))
		}
		names[n.Name] = true
		if n.Replicas < 1 {
			add(fmt.Errorf("%s.replicas: %d, want at least 1", p, n.Replicas))
		}
		if n.Concurrency < 0 || n.QueueCap < 0 {
			add(fmt.Errorf("%s: concurrency and queue_cap must not be negative", p))
		}
		if n.ShedLowAt < 0 {
			add(fmt.Errorf("%s.shed_low_at: %d is negative", p, n.ShedLowAt))
		}
		add(n.Service.Validate(p + ".service_ms"))
		if n.FailService != nil {
			add(n.FailService.Validate(p + ".fail_service_ms"))
		}
		switch n.LoadBalancer {
		case "", "round-robin", "random", "least-loaded", "p2c":
		default:
			add(fmt.Errorf("%s.load_balancer: %q, want round-robin, random, least-loaded or p2c", p, n.LoadBalancer))
		}
		if o := n.Overload; o.Base < 0 || o.Base > 1 || o.Slope < 0 {
			add(fmt.Errorf("%s.overload: base must be in [0, 1] and slope >= 0", p))
		}
		if g := n.Overload.Gaps; g != nil {
			add(g.Validate(p + ".overload.failure_gaps"))
		}
		if b := n.Breaker; b != nil && (b.Window < 1 || b.ErrorRate <= 0 || b.ErrorRate > 1 || b.OpenMS <= 0) {
			add(fmt.Errorf("%s.breaker: needs window >= 1, error_rate in (0, 1] and open_ms > 0", p))
		}
	}
	for i := range m.Edges {
		e := &m.Edges[i]
		p := fmt.Sprintf("edges[%d]", i)
		if !names[e.From] {
			add(fmt.Errorf("%s.from: unknown node %q", p, e.From))
		}
		if !names[e.To] {
			add(fmt.Errorf("%s.to: unknown node %q", p, e.To))
		}
		add(e.FanOut.Validate(p + ".fan_out"))
		if e.NetworkMS != nil {
			add(e.NetworkMS.Validate(p + ".network_ms"))
		}
		if e.Propagation < 0 || e.Propagation > 1 {
			add(fmt.Errorf("%s.propagation: %g is outside [0, 1]", p, e.Propagation))
		}
		if e.Parallelism < 0 || e.TimeoutMS < 0 {
			add(fmt.Errorf("%s: parallelism and timeout_ms must not be negative", p))
		}
		add(validateRetry(p+".retry", e.Retry))
		if f := e.Fallback; f != nil && !(f.Probability >= 0 && f.Probability <= 1) {
			add(fmt.Errorf("%s.fallback.probability: %g is outside [0, 1]", p, f.Probability))
		}
		if e.Bulkhead < 0 {
			add(fmt.Errorf("%s.bulkhead: %d is negative", p, e.Bulkhead))
		}
	}
	if len(m.Entries) == 0 {
		add(errors.New("entries: none; a model needs at least one entry node"))
	}
	for i := range m.Entries {
		en := &m.Entries[i]
		p := fmt.Sprintf("entries[%d]", i)
		if !names[en.Node] {
			add(fmt.Errorf("%s.node: unknown node %q", p, en.Node))
		}
		if en.RatePerSec < 0 || en.Share < 0 {
			add(fmt.Errorf("%s: rate_per_sec and share must not be negative", p))
		}
		if !(en.LowPriority >= 0 && en.LowPriority <= 1) {
			add(fmt.Errorf("%s.low_priority: %g is outside [0, 1]", p, en.LowPriority))
		}
		add(validateRetry(p+".retry", en.Retry))
		if en.NetworkMS != nil {
			add(en.NetworkMS.Validate(p + ".network_ms"))
		}
	}
	return errors.Join(errs...)
}

func validateRetry(p string, r *Retry) error {
	if r == nil {
		return nil
	}
	if r.MaxAttempts < 1 {
		return fmt.Errorf("%s.max_attempts: %d, want at least 1 (the first attempt)", p, r.MaxAttempts)
	}
	if r.Reactivation < 0 || r.Reactivation > 1 {
		return fmt.Errorf("%s.reactivation: %g is outside [0, 1]", p, r.Reactivation)
	}
	switch r.Backoff.Kind {
	case "", BackoffNone, BackoffFixed, BackoffExponential, BackoffFullJitter, BackoffDecorrelated:
	default:
		return fmt.Errorf("%s.backoff.kind: %q, want none, fixed, exponential, full-jitter or decorrelated-jitter", p, r.Backoff.Kind)
	}
	return nil
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
