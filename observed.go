package cascade

import "math"

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
	// FailureBurstMS is the longest stretch in which most of the node's
	// requests failed (a run of 20 consecutive requests, half or more of
	// them failed); 0 when none did. A delay queue's TTL outlasts it.
	FailureBurstMS float64 `json:"failure_burst_ms,omitempty"`
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
	RetryEvidence   string  `json:"retry_evidence,omitempty"`
	RetryShare      float64 `json:"retry_share"`
	AttemptsPerCall float64 `json:"attempts_per_call"`
	// MaxAttemptsSeen is the longest chain of attempts seen, the first
	// included; 0 on an edge that was not seen to retry.
	MaxAttemptsSeen int `json:"max_attempts_seen,omitempty"`
	// RetryLimit says whether the capture shows the retry policy's limit
	// (RetryLimitObserved: some logical call failed at its last attempt
	// after MaxAttemptsSeen attempts, it ran out) or not
	// (RetryLimitUnknown: every chain ended in a success before that, so
	// MaxAttemptsSeen is only a lower bound of the limit and the edge's
	// retry.max_attempts is a default); empty on an edge that was not
	// seen to retry.
	RetryLimit string `json:"retry_limit,omitempty"`
	// PoolSharing says what the capture shows of whether the edge's
	// parallelism is one pool for all the caller's requests
	// (PoolShared), one per request (PoolPerRequest), or neither
	// (PoolSharingUnknown: requests never held each other back on the
	// edge nor went past the pool together, so shared_pool is a
	// default); empty when parallelism is not a pool: at most 1,
	// unlimited, or no request made more calls than that at once.
	PoolSharing   string    `json:"pool_sharing,omitempty"`
	BackoffGapsMS []float64 `json:"backoff_gaps_ms,omitempty"`
	Propagation   float64   `json:"propagation"`
	// FinalFailed counts the logical calls whose last attempt failed:
	// the trials behind Propagation (PropagationInterval).
	FinalFailed  int64   `json:"final_failed,omitempty"`
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP95MS float64 `json:"latency_p95_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	SelfCall     bool    `json:"self_call,omitempty"`
}

// PropagationInterval returns the 95% Wilson score interval of the
// propagation the capture measured: Propagation of FinalFailed trials.
// ok is false when no logical call failed, so nothing was measured.
func (o *EdgeObserved) PropagationInterval() (lo, hi float64, ok bool) {
	if o == nil || o.FinalFailed <= 0 {
		return 0, 1, false
	}
	const z = 1.959964
	n, p := float64(o.FinalFailed), o.Propagation
	d := 1 + z*z/n
	c := (p + z*z/(2*n)) / d
	h := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / d
	return math.Max(0, min(c-h, p)), math.Min(1, max(c+h, p)), true
}

// What the capture shows of an edge's retry limit (EdgeObserved.RetryLimit).
const (
	// RetryLimitObserved: some logical call ran out of attempts, so the
	// longest chain seen is the limit.
	RetryLimitObserved = "observed"
	// RetryLimitUnknown: no logical call ran out of attempts, so the
	// longest chain seen is a lower bound of the limit.
	RetryLimitUnknown = "unknown"
)

// What the capture shows of an edge's pool (EdgeObserved.PoolSharing).
const (
	// PoolShared: while calls of two or more caller requests were in
	// flight, the pool was full and one of them held calls back, and the
	// calls in flight never went past it.
	PoolShared = "shared"
	// PoolPerRequest: calls of two or more requests in flight together
	// went past the pool, so each request has its own.
	PoolPerRequest = "per-request"
	// PoolSharingUnknown: neither was seen; the edge's shared_pool is
	// the default (graph.DefaultSharedPool).
	PoolSharingUnknown = "unknown"
)
