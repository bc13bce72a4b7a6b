package replay

import (
	"math"
	"sort"

	"cascade"
)

// pickReplica chooses a replica of n for a new call whose slots begin at
// base in n.reps (0 for the shared pool, else a bulkhead's), and
// returns the index of the replica's slots there. Least-loaded and p2c
// compare the replicas' load in those slots.
func (e *Engine) pickReplica(n *node, base int32) int32 {
	k := n.replicas
	if k == 1 {
		return base
	}
	reps := n.reps[base : base+k]
	switch n.lb {
	case lbRandom:
		return base + int32(n.lbR.IntN(int(k)))
	case lbLeastLoaded:
		// Fewest outstanding calls (in service and queued); ties go
		// round-robin, so an idle fleet is not loaded from replica 0.
		best, bestLoad := int32(-1), int32(math.MaxInt32)
		r := n.rr
		for i := int32(0); i < k; i++ {
			if l := reps[r].busy + reps[r].qlen; l < bestLoad {
				best, bestLoad = r, l
			}
			if r++; r == k {
				r = 0
			}
		}
		if n.rr++; n.rr == k {
			n.rr = 0
		}
		return base + best
	case lbP2C:
		a := int32(n.lbR.IntN(int(k)))
		b := int32(n.lbR.IntN(int(k - 1)))
		if b >= a {
			b++
		}
		if reps[b].busy+reps[b].qlen < reps[a].busy+reps[a].qlen {
			return base + b
		}
		return base + a
	}
	r := n.rr
	if n.rr++; n.rr == k {
		n.rr = 0
	}
	return base + r
}

// breaker is a circuit breaker in front of a node, shared by all its
// callers: closed, it records the outcome of the last window calls and
// opens when at least minCalls are recorded and the failure share
// reaches rate; open, it rejects calls for openFor ticks; then half-open,
// it lets probes calls through and closes when they all succeed, or opens
// again at the first failure.
type breaker struct {
	rate      float64
	minCalls  int
	openFor   int64
	probes    int
	ring      []bool // true = failure
	pos, n    int
	fails     int
	state     uint8
	openUntil int64
	probeSent int
	probeOK   int
	opened    int64 // times opened
}

const (
	brkClosed uint8 = iota
	brkOpen
	brkHalfOpen
)

func (b *breaker) init(c *cascade.Breaker, e *Engine) {
	b.rate = c.ErrorRate
	b.minCalls = max(1, c.MinCalls)
	b.openFor = max(1, e.ticks(c.OpenMS))
	b.probes = max(1, c.HalfOpenProbes)
	b.ring = make([]bool, c.Window)
}

func (b *breaker) reset() {
	clear(b.ring)
	b.pos, b.n, b.fails = 0, 0, 0
	b.state = brkClosed
	b.openUntil, b.probeSent, b.probeOK, b.opened = 0, 0, 0, 0
}

// allow reports whether a call may pass now.
func (b *breaker) allow(e *Engine) bool {
	switch b.state {
	case brkOpen:
		if e.now < b.openUntil {
			return false
		}
		b.state = brkHalfOpen
		b.probeSent, b.probeOK = 0, 0
		fallthrough
	case brkHalfOpen:
		if b.probeSent >= b.probes {
			return false
		}
		b.probeSent++
	}
	return true
}

// record takes the outcome of a call that passed.
func (b *breaker) record(e *Engine, ok bool) {
	switch b.state {
	case brkOpen:
		return
	case brkHalfOpen:
		if !ok {
			b.open(e)
			return
		}
		b.probeOK++
		if b.probeOK >= b.probes {
			b.state = brkClosed
			clear(b.ring)
			b.pos, b.n, b.fails = 0, 0, 0
		}
		return
	}
	if b.n == len(b.ring) {
		if b.ring[b.pos] {
			b.fails--
		}
	} else {
		b.n++
	}
	b.ring[b.pos] = !ok
	if !ok {
		b.fails++
	}
	b.pos++
	if b.pos == len(b.ring) {
		b.pos = 0
	}
	if b.n >= b.minCalls && float64(b.fails) >= b.rate*float64(b.n) {
		b.open(e)
	}
}

func (b *breaker) open(e *Engine) {
	b.state = brkOpen
	b.openUntil = e.now + b.openFor
	b.opened++
}

// tokenBucket is a rate limit: rate tokens per tick up to burst; it
// starts full.
type tokenBucket struct {
	rate   float64 // tokens per tick
	burst  float64
	tokens float64
	last   int64
}

func (t *tokenBucket) init(perSec, burst float64, e *Engine) {
	t.rate = perSec / 1000 * e.tickMS
	t.burst = math.Max(1, burst)
}

func (t *tokenBucket) reset() { t.tokens, t.last = t.burst, 0 }

// take spends a token if there is one.
func (t *tokenBucket) take(e *Engine) bool {
	t.tokens = math.Min(t.burst, t.tokens+float64(e.now-t.last)*t.rate)
	t.last = e.now
	if t.tokens < 1 {
		return false
	}
	t.tokens--
	return true
}

// availability says whether an edge is up: down during scheduled
// partitions, and at random when Up < 1, alternating up and down periods
// drawn from exponentials (down periods of mean MeanDownMS, up periods of
// mean MeanDownMS·Up/(1−Up)). The random schedule is drawn lazily from
// the edge's own stream, so it does not depend on when the edge is used.
type availability struct {
	parts    [][2]int64 // scheduled partitions [from, to), sorted
	random   bool
	upMean   float64 // ms
	downMean float64 // ms
	isUp     bool
	until    int64 // the current random period ends here
}

func (a *availability) init(c *cascade.Availability, e *Engine) {
	for _, p := range c.Partitions {
		a.parts = append(a.parts, [2]int64{e.ticks(p.AtMS), e.ticks(p.AtMS + p.ForMS)})
	}
	sort.Slice(a.parts, func(i, j int) bool { return a.parts[i][0] < a.parts[j][0] })
	if c.Up > 0 && c.Up < 1 {
		a.random = true
		a.downMean = c.MeanDownMS
		if a.downMean <= 0 {
			a.downMean = 1000
		}
		a.upMean = a.downMean * c.Up / (1 - c.Up)
	}
}

func (a *availability) reset(e *Engine, r *stream) {
	a.isUp, a.until = true, 0
	if a.random {
		// Start in the stationary state.
		a.isUp = r.Float64() < a.upMean/(a.upMean+a.downMean)
		a.until = e.ticks(r.ExpFloat64() * a.period())
	}
}

func (a *availability) period() float64 {
	if a.isUp {
		return a.upMean
	}
	return a.downMean
}

// up reports whether the edge is up now.
func (a *availability) up(e *Engine, r *stream) bool {
	for _, p := range a.parts {
		if e.now < p[0] {
			break
		}
		if e.now < p[1] {
			return false
		}
	}
	if !a.random {
		return true
	}
	for e.now >= a.until {
		a.isUp = !a.isUp
		a.until += max(1, e.ticks(r.ExpFloat64()*a.period()))
	}
	return a.isUp
}

// retryPolicy is a compiled cascade.Retry with its budget's state.
type retryPolicy struct {
	on       bool
	react    float64
	max      int32
	kind     string
	base     float64
	maxMS    float64
	budgetOn bool
	ratio    float64
	perTick  float64
	capTok   float64
	tokens   float64
	last     int64
}

func (p *retryPolicy) init(r *cascade.Retry) {
	*p = retryPolicy{}
	if r == nil || r.MaxAttempts <= 1 {
		return
	}
	p.on = true
	p.react = r.Reactivation
	p.max = int32(r.MaxAttempts)
	p.kind = r.Backoff.Kind
	p.base = r.Backoff.BaseMS
	p.maxMS = r.Backoff.MaxMS
	if b := r.Budget; b != nil {
		p.budgetOn = true
		p.ratio = b.Ratio
		p.perTick = b.MinPerSec / 1000 // per ms; scaled by tickMS in refill
		p.capTok = b.Max
		if p.capTok <= 0 {
			p.capTok = 10 + b.MinPerSec
		}
	}
}

func (p *retryPolicy) reset() { p.tokens, p.last = p.capTok, 0 }

func (p *retryPolicy) refill(e *Engine) {
	if p.perTick > 0 {
		p.tokens += float64(e.now-p.last) * e.tickMS * p.perTick
	}
	p.last = e.now
	p.tokens = math.Min(p.tokens, p.capTok)
}

// deposit credits a first attempt to the budget.
func (p *retryPolicy) deposit(e *Engine) {
	p.refill(e)
	p.tokens = math.Min(p.capTok, p.tokens+p.ratio)
}

// allow spends a budget token for a retry, if the budget allows one.
func (p *retryPolicy) allow(e *Engine) bool {
	if !p.budgetOn {
		return true
	}
	p.refill(e)
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// wait returns the backoff before retry n (n = 1 for the first retry);
// prev holds the previous decorrelated-jitter wait.
func (p *retryPolicy) wait(n int32, prev *float64, r *rng) float64 {
	var d float64
	switch p.kind {
	case cascade.BackoffFixed:
		d = p.base
	case cascade.BackoffExponential:
		d = p.base * math.Ldexp(1, int(n))
	case cascade.BackoffFullJitter:
		d = r.Float64() * p.base * math.Ldexp(1, int(n))
	case cascade.BackoffDecorrelated:
		last := *prev
		if last < p.base {
			last = p.base
		}
		d = p.base + r.Float64()*(3*last-p.base)
		if p.maxMS > 0 && d > p.maxMS {
			d = p.maxMS
		}
		*prev = d
	}
	if p.maxMS > 0 && d > p.maxMS {
		d = p.maxMS
	}
	return d
}
