package graph

import (
	"cmp"
	"math"
	"slices"

	"cascade"
)

// The evidence an edge's calls give of the client's policy: whether its
// pool is shared by the caller's requests, how many attempts its retries
// may make, and its timeout.

// minPoolEpisodes is the fewest episodes in which one caller request was
// held back by another's calls that show a pool shared by all requests.
// One or two could be the moment between a call's end and the next
// call's start of a request with a pool of its own; three show a habit.
const minPoolEpisodes = 3

// DefaultSharedPool is what shared_pool holds when the capture does not
// show whether an edge's pool of parallelism p is shared by the caller's
// requests or one per request (pool_sharing "unknown"): shared. A limit
// on a client's concurrency is most often a resource of the process (a
// worker pool, a connection pool, a semaphore), and a shared pool is the
// cautious guess: it makes a what-if that sends more requests at once
// through the edge queue for the pool, where a per-request pool would
// promise that the pool never binds. Both replay the capture alike
// (its requests never met on the edge), and the report replays the
// other way too (analyze's sensitivity). See docs/model.md.
const DefaultSharedPool = true

// poolSharing tells from the kept calls whether this edge's parallelism p
// is one pool shared by all the caller's requests or one per request
// (cascade.PoolShared, PoolPerRequest or PoolSharingUnknown). It sweeps
// the calls in time order:
//   - calls in flight past p, which only calls of two or more requests
//     can add up to: separate pools, per request;
//   - else, at least minPoolEpisodes episodes of two or more requests in
//     flight together in which, at some moment, the p calls in flight
//     filled the pool while one of those requests, with fewer than p of
//     its own in flight, still had calls to start: held back by the
//     other's calls, so shared;
//   - else unknown: the requests did not meet on the edge, or met with
//     room to spare (the tails of two requests, one call each), which
//     either kind of pool allows.
//
// Past the kept calls' cap the answer is unknown.
func (e *edgeAcc) poolSharing(p int) string {
	if e.spansFull || len(e.spans) == 0 || p < 1 {
		return cascade.PoolSharingUnknown
	}
	type event struct {
		t     int64
		d     int
		group int64
	}
	ev := make([]event, 0, 2*len(e.spans))
	total := map[int64]int{}
	for _, c := range e.spans {
		ev = append(ev, event{c.start, 1, c.group}, event{c.end, -1, c.group})
		total[c.group]++
	}
	slices.SortFunc(ev, func(a, b event) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.d, b.d) // ends first
	})
	open := map[int64]int{}    // calls in flight per request
	started := map[int64]int{} // calls started per request
	inFlight, episodes := 0, 0
	held := false // the current episode saw a request held back
	var prev int64
	for _, x := range ev {
		// The state since the previous event held for x.t − prev.
		if x.t > prev && len(open) >= 2 && inFlight == p && !held {
			for g, n := range open {
				if n < p && started[g] < total[g] {
					held = true
					break
				}
			}
		}
		prev = x.t
		inFlight += x.d
		if x.d > 0 {
			started[x.group]++
		}
		open[x.group] += x.d
		if open[x.group] == 0 {
			delete(open, x.group)
		}
		if inFlight > p {
			return cascade.PoolPerRequest
		}
		if len(open) < 2 {
			if held {
				episodes++
			}
			held = false
		}
	}
	if episodes >= minPoolEpisodes {
		return cascade.PoolShared
	}
	return cascade.PoolSharingUnknown
}

// DefaultMaxAttempts is the retry limit (attempts, the first included)
// graph gives an edge whose retries never ran out in the capture: every
// chain of attempts ended in a success, so the longest chain seen is only
// a lower bound of the client's limit. It is 3, the most common default
// among retrying clients: the AWS SDKs' standard mode, Spring Retry's
// SimpleRetryPolicy, resilience4j's Retry and HotROD's own GetDriver loop
// all make at most 3 attempts (Envoy's one retry, 2 attempts, is the
// lower outlier; gRPC's retry policy has no default and caps at 5). An
// edge that showed more attempts keeps the most it showed.
const DefaultMaxAttempts = 3

// retryLimit returns the max attempts of an edge that retries and what
// the capture shows of its limit (cascade.RetryLimitObserved or
// RetryLimitUnknown). The limit is observed when some logical call
// failed at its last attempt after the most attempts seen: it ran out,
// so the policy stopped it there. When none did, every chain ended in a
// success before reaching the limit, which is then unknown: at least the
// most attempts seen, and DefaultMaxAttempts unless the capture showed
// more.
func (e *edgeAcc) retryLimit() (int, string) {
	seen := int(e.maxAttempts)
	if e.failedAt[min(seen, len(e.failedAt)-1)] > 0 {
		return seen, cascade.RetryLimitObserved
	}
	return max(seen, DefaultMaxAttempts), cascade.RetryLimitUnknown
}

// minNetCalls is the fewest paired calls from which an edge's network
// delay is read: enough for a 95% quantile.
const minNetCalls = 20

// How an edge's retries and timeout were found
// (EdgeObserved.RetryEvidence and TimeoutEvidence).
const (
	EvidenceNone     = "none"
	EvidenceResend   = "resend_count"
	EvidenceSiblings = "staggered siblings"
	EvidenceErrType  = "timeout errors"
	EvidenceCutOff   = "cut-off durations"
	EvidenceOutlived = "callee outlived caller"
	EvidenceSlow     = "slow failures"
)

// timeout reads the caller's deadline on the edge from the caller's own
// record of its attempts, by the strongest evidence it holds, and
// returns the attempts that ran into it, the deadline (0 when unknown)
// and the evidence:
//
//   - timeout errors: the median duration of failed attempts whose
//     caller's span says its deadline ran out (callerTimeout: gRPC
//     DEADLINE_EXCEEDED, or its own error naming a timeout while the
//     callee answered no failure);
//   - cut-off durations: failed attempts of the caller's span whose
//     callee neither failed nor saw a call of its own fail, slower than
//     99% of the successful ones (at least 20), at least 3 of them
//     ending at a common duration (their 10%–90% spread within 10% of
//     their median): the deadline is their median;
//   - callee outlived caller: the median wait of the attempts the caller
//     abandoned while the callee still worked;
//   - slow failures: such slow failed attempts that do not end at a
//     common duration; the deadline is the longest of them, the weakest
//     reading.
//
// A deadline shorter than the edge's successful attempts cannot be one
// (a call that outlasts its deadline does not succeed): a reading below
// the 99% quantile of the successes is passed over for the next. Without
// any left the deadline is unknown. An error the callee answered with,
// and the duration of an attempt timed by the callee's own span, are the
// callee's doing, not the caller's, and are no evidence.
func (e *edgeAcc) timeout(ok []float64) (n int64, ms float64, evidence string) {
	var slow []float64
	var slowN int64
	okP99 := 0.0
	if len(ok) > 0 {
		okP99 = quantile(ok, 0.99)
	}
	if e.failedOther.n > 0 && e.okLatency.n >= 20 {
		for _, v := range e.failedOther.sorted() {
			if v > okP99 {
				slow = append(slow, v)
			}
		}
		if len(slow) > 0 {
			slowN = int64(math.Round(float64(len(slow)) / float64(len(e.failedOther.vals)) * float64(e.failedOther.n)))
		}
	}
	common := len(slow) >= 3 && quantile(slow, 0.9)-quantile(slow, 0.1) <= 0.1*quantile(slow, 0.5)
	type reading struct {
		n        int64 // attempts that show it
		ms       float64
		evidence string
	}
	readings := []reading{
		{e.explicit.n, quantile(e.explicit.sorted(), 0.5), EvidenceErrType},
		{0, quantile(slow, 0.5), EvidenceCutOff},
		{e.cut.n, quantile(e.cut.sorted(), 0.5), EvidenceOutlived},
		{0, lastOf(slow), EvidenceSlow},
	}
	if common {
		readings[1].n = slowN
	} else {
		readings[3].n = slowN
	}
	// The attempts of every reading that stands are timeouts; the
	// strongest names the deadline.
	for _, r := range readings {
		if r.n > 0 && r.ms >= okP99 {
			n += r.n
			if evidence == "" {
				ms, evidence = roundMS(r.ms), r.evidence
			}
		}
	}
	if evidence == "" {
		return 0, 0, EvidenceNone
	}
	return n, ms, evidence
}

// lastOf returns the last value of a sorted sample, 0 when empty.
func lastOf(sorted []float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)-1]
}
