package replay

import "cascade"

// Result is what one replay measured: the outcome document, plus the
// counts behind its shares and the root requests' time series.
type Result struct {
	cascade.Outcome
	// Counts are the replay's event counts.
	Counts Counts `json:"counts"`
	// NodeCounts are per-node counts that the outcome does not carry,
	// sorted by name like Outcome.Nodes.
	NodeCounts []NodeCounts `json:"node_counts"`
	// Series counts the root requests per window.
	Series RootSeries `json:"roots_series"`
}

// Counts are a replay's totals.
type Counts struct {
	// Roots counts root requests offered; Succeeded and Failed those
	// that ended, and InFlight those still out at the end.
	Roots     int64 `json:"roots"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	InFlight  int64 `json:"in_flight"`
	// Calls counts every attempt sent (root attempts included); Retries
	// those that were retries.
	Calls   int64 `json:"calls"`
	Retries int64 `json:"retries"`
	// Timeouts counts attempts the caller gave up on.
	Timeouts int64 `json:"timeouts"`
	// RejectedQueue, RejectedBreaker and RejectedLimit count calls turned
	// away by a full queue, an open breaker or an entry rate limit.
	RejectedQueue   int64 `json:"rejected_queue"`
	RejectedBreaker int64 `json:"rejected_breaker"`
	RejectedLimit   int64 `json:"rejected_limit"`
	// Unavailable counts calls that failed on a down edge.
	Unavailable int64 `json:"unavailable"`
	// Executions counts attempts that got a slot and started work.
	Executions int64 `json:"executions"`
	// Zombies counts attempts that finished their work after their
	// caller had given up; Cancelled those dropped or cancelled by
	// deadline propagation instead.
	Zombies   int64 `json:"zombies"`
	Cancelled int64 `json:"cancelled"`
	// Late counts answers that reached a caller that had stopped
	// waiting.
	Late int64 `json:"late"`
	// Truncated counts calls that did not call their children because
	// they were 64 calls deep (a cycle in the graph).
	Truncated int64 `json:"truncated"`
	// Shed counts low-priority calls turned away by a priority split
	// (Node.ShedLowAt) before the queue was full; they count in the
	// rejected share too.
	Shed int64 `json:"shed,omitempty"`
	// LowRoots, LowSucceeded and LowFailed count the low-priority root
	// requests (Entry.LowPriority) among Roots, Succeeded and Failed.
	LowRoots     int64 `json:"low_roots,omitempty"`
	LowSucceeded int64 `json:"low_succeeded,omitempty"`
	LowFailed    int64 `json:"low_failed,omitempty"`
	// Degraded counts failed calls a fallback answered for
	// (Edge.Fallback): the caller went on, degraded, instead of failing.
	Degraded int64 `json:"degraded,omitempty"`
	// Events counts scheduled events.
	Events int64 `json:"events"`
	// Aborted reports a replay stopped early because it had more than
	// 4,194,304 attempts in flight (see ErrRunaway).
	Aborted bool `json:"aborted,omitempty"`
}

// NodeCounts are one node's counts.
type NodeCounts struct {
	// Name is the node's name.
	Name string `json:"name"`
	// InFlightMax is the most calls holding slots at once, all replicas.
	InFlightMax int `json:"in_flight_max"`
	// QueueMaxReplica is the longest queue of a single replica.
	QueueMaxReplica int `json:"queue_max_replica"`
	// Timeouts counts attempts to the node that their callers gave up
	// on; Zombies and Cancelled are as in Counts.
	Timeouts  int64 `json:"timeouts"`
	Zombies   int64 `json:"zombies"`
	Cancelled int64 `json:"cancelled"`
	// Degraded counts the failed calls of this node's that a fallback
	// answered for (the node is the caller).
	Degraded int64 `json:"degraded,omitempty"`
	// BreakerOpened counts how often the node's breaker opened.
	BreakerOpened int64 `json:"breaker_opened,omitempty"`
	// MeanLoad is the mean of ρ = (in flight + queued) / capacity; 0 for
	// nodes of unlimited concurrency.
	MeanLoad float64 `json:"mean_load"`
	// LatencyMeanMS is the mean time at the node (queue and work).
	LatencyMeanMS float64 `json:"latency_mean_ms"`
}

// RootSeries counts root requests per window: offered by arrival time,
// succeeded by completion time.
type RootSeries struct {
	// WindowMS is the window length.
	WindowMS float64 `json:"window_ms"`
	// Offered, Succeeded and Failed hold one count per window.
	Offered   []int64 `json:"offered"`
	Succeeded []int64 `json:"succeeded"`
	Failed    []int64 `json:"failed"`
}
