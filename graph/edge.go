package graph

import (
	"math"
	"slices"

	"cascade"
)

// edgeAcc accumulates the calls of one edge.
type edgeAcc struct {
	from, to int32

	calls, failed, async int64
	// nacks counts publishes the broker refused (see call.nack).
	nacks    int64
	selfCall bool
	// okLatency and failedLatency are client-side durations (ms) of
	// successful and failed attempts.
	okLatency, failedLatency reservoir
	// explicit are the durations of failed attempts whose error names a
	// timeout.
	explicit reservoir
	// cut are the caller's waits on attempts it abandoned while the
	// callee still worked.
	cut reservoir
	// failedOther are the durations of the other failed attempts timed
	// by the caller's own span whose callee neither failed nor saw a
	// call of its own fail: they may still be timeouts, if they end at a
	// common duration.
	failedOther reservoir
	// net are half the difference between the client span's duration
	// and the callee's request span's, for calls timed by a client span
	// the callee answered: the one-way network (and client-side queue)
	// delay that belongs to neither node's exclusive time.
	net reservoir

	logical       int64 // first attempts
	retries       int64
	resendRetries int64 // retries known from resend counts
	failedRetried int64 // failed attempts followed by a retry
	// failedAt[a] counts failed attempts that were attempt a of their
	// call (capped at len−1): those at the longest chain seen could not
	// be retried, whatever the client's will.
	failedAt     [16]int64
	finalFailed  int64 // logical calls whose last attempt failed
	finalParent  int64 // … and whose caller's request failed
	maxAttempts  int32
	gaps         reservoir // backoff gaps, ms
	gaps1, gaps2 reservoir // … before the first and the second retry

	groups     int64   // caller requests with at least one call
	hist       []int64 // hist[k]: caller requests with k logical calls
	maxConc    int
	overlap    bool
	notAllOnce bool // some request ran its calls on this edge not all at once
	multi      bool // some request made two or more calls on this edge
	// ownGroups counts the caller requests in groups that failed on
	// their own (see finish).
	ownGroups  int64
	firstStart reservoir
	lastEnd    reservoir
	// spans holds, from the first caller request whose calls on this edge
	// overlapped and up to maxPoolCalls calls, each call's interval and
	// its caller request's number, to tell a pool shared by all requests
	// from one per request (see poolSharing). Past the cap the buffer is
	// dropped and the question stays open.
	spans     []poolCall
	spansFull bool
}

// addGroup records the calls one caller request (sp[req]) made on this edge,
// sorted by operation and start.
func (e *edgeAcc) addGroup(b *Builder, sp []tspan, req int32, calls []call) {
	r := &sp[req]
	e.groups++
	if r.failed && !r.childFinal {
		e.ownGroups++
	}
	e.addCalls(b, sp, r, calls)
	e.addRetries(b, r, calls)
	e.addConcurrency(b, calls)
	e.keepPoolCalls(calls)
}

// addCalls samples each call's latency, by outcome and failure cause, and
// its network time, and when the group's first call began and last ended.
func (e *edgeAcc) addCalls(b *Builder, sp []tspan, r *tspan, calls []call) {
	k := b.cfg.Reservoir
	var lo0, hi0 int64 = math.MaxInt64, math.MinInt64
	for i := range calls {
		c := &calls[i]
		e.calls++
		if c.async {
			e.async++
		}
		if c.nack {
			e.nacks++
		}
		ms := nsToMS(float64(c.end - c.start))
		if c.failed {
			e.failed++
			e.failedLatency.add(b.rng, k, ms)
			switch {
			case c.timeout:
				e.explicit.add(b.rng, k, ms)
			case c.cut:
				e.cut.add(b.rng, k, ms)
			case c.span != c.callee && (c.callee < 0 || !sp[c.callee].failed && !sp[c.callee].childFailed):
				// The caller's span failed while the callee had no
				// failure to answer with: the caller's doing.
				e.failedOther.add(b.rng, k, ms)
			}
		} else {
			e.okLatency.add(b.rng, k, ms)
		}
		if c.callee >= 0 && c.callee != c.span && !c.cut && !c.async {
			if d := (c.end - c.start) - (sp[c.callee].end - sp[c.callee].start); d >= 0 {
				e.net.add(b.rng, k, nsToMS(float64(d))/2)
			}
		}
		lo0, hi0 = min(lo0, c.start), max(hi0, c.end)
	}
	e.firstStart.add(b.rng, k, nsToMS(float64(lo0-r.start)))
	e.lastEnd.add(b.rng, k, nsToMS(float64(hi0-r.start)))
}

// addRetries counts the group's logical calls, chaining each operation's
// retries to the attempt they repeat.
func (e *edgeAcc) addRetries(b *Builder, r *tspan, calls []call) {
	w := &b.work
	n := len(calls)
	w.att = slices.Grow(w.att[:0], n)[:n]
	w.root = slices.Grow(w.root[:0], n)[:n]
	w.last = slices.Grow(w.last[:0], n)[:n]
	w.used = slices.Grow(w.used[:0], n)[:n]
	logical := 0
	for lo := 0; lo < n; {
		hi := lo
		resend := false
		for hi < n && calls[hi].op == calls[lo].op {
			resend = resend || calls[hi].resend > 0
			hi++
		}
		logical += e.retryChains(b, r, calls, lo, hi, resend)
		lo = hi
	}
	if logical >= len(e.hist) {
		e.hist = append(e.hist, make([]int64, logical+1-len(e.hist))...)
	}
	e.hist[logical]++
}

// addConcurrency notes the most calls the group had open at once, to tell
// sequential callers from parallel ones.
func (e *edgeAcc) addConcurrency(b *Builder, calls []call) {
	w := &b.work
	n := len(calls)
	conc := 1
	if n > 1 {
		e.multi = true
		w.starts, w.ends = w.starts[:0], w.ends[:0]
		for i := range calls {
			w.starts = append(w.starts, calls[i].start)
			w.ends = append(w.ends, calls[i].end)
		}
		slices.Sort(w.starts)
		slices.Sort(w.ends)
		open, j := 0, 0
		for _, s := range w.starts {
			for j < len(w.ends) && w.ends[j] <= s {
				j++
				open--
			}
			open++
			conc = max(conc, open)
		}
		if conc < n {
			e.notAllOnce = true
		}
	}
	e.maxConc = max(e.maxConc, conc)
	if conc > 1 {
		e.overlap = true
	}
}

// keepPoolCalls keeps the calls of overlapping groups, up to maxPoolCalls,
// for the test of whether requests share one pool (poolSharing).
func (e *edgeAcc) keepPoolCalls(calls []call) {
	if e.overlap && !e.spansFull {
		if len(e.spans)+len(calls) > maxPoolCalls {
			e.spans, e.spansFull = nil, true
		} else {
			for i := range calls {
				e.spans = append(e.spans, poolCall{calls[i].start, calls[i].end, e.groups})
			}
		}
	}
}

// maxPoolCalls caps the calls an edge keeps to look for a shared pool
// (24 bytes each: 1.5 MiB).
const maxPoolCalls = 1 << 16

// poolCall is one call kept for the shared-pool test.
type poolCall struct {
	start, end int64
	group      int64
}

// retryChains links the calls calls[lo:hi] (one operation, by start) into
// chains of attempts and returns the number of chains (logical calls).
//
// With resend counts (any call has one), a call with a positive count is a
// retry of the latest earlier call not yet retried. Without them, a call is
// a retry when it starts after a failed call of the same operation ended
// and that failure has not been retried yet (the latest such failure);
// calls that repeat after successes are fan-out, not retries.
func (e *edgeAcc) retryChains(b *Builder, r *tspan, calls []call, lo, hi int, resend bool) int {
	w := &b.work
	k := b.cfg.Reservoir
	chains := 0
	for i := lo; i < hi; i++ {
		c := &calls[i]
		w.used[i] = false
		prev := -1
		if !resend || c.resend > 0 {
			for j := i - 1; j >= lo; j-- {
				p := &calls[j]
				if w.used[j] || p.end > c.start || (!resend && !p.failed) {
					continue
				}
				if prev < 0 || p.end > calls[prev].end {
					prev = j
				}
			}
			if resend && prev < 0 {
				// The earlier attempt overlaps or is missing: the latest
				// earlier call not yet retried, whatever its end.
				for j := i - 1; j >= lo; j-- {
					if !w.used[j] {
						prev = j
						break
					}
				}
			}
		}
		if prev < 0 {
			w.att[i], w.root[i] = 1, int32(i)
			if resend && c.resend > 0 {
				w.att[i] = c.resend + 1
			}
			w.last[i] = int32(i)
			chains++
			e.logical++
		} else {
			w.used[prev] = true
			w.att[i] = w.att[prev] + 1
			w.root[i] = w.root[prev]
			w.last[w.root[i]] = int32(i)
			e.retries++
			if resend {
				e.resendRetries++
			}
			if calls[prev].failed {
				e.failedRetried++
			}
			gap := nsToMS(float64(max(0, c.start-calls[prev].end)))
			e.gaps.add(b.rng, k, gap)
			switch w.att[i] {
			case 2:
				e.gaps1.add(b.rng, k, gap)
			case 3:
				e.gaps2.add(b.rng, k, gap)
			}
		}
		e.maxAttempts = max(e.maxAttempts, w.att[i])
		if c.failed {
			e.failedAt[min(int(w.att[i]), len(e.failedAt)-1)]++
		}
	}
	for i := lo; i < hi; i++ {
		if w.root[i] != int32(i) {
			continue
		}
		if calls[w.last[i]].failed {
			e.finalFailed++
			if r.failed {
				e.finalParent++
			}
		}
	}
	return chains
}

// histQuantile returns the count k (index into h) at quantile q of a
// histogram of n observations.
func histQuantile(h []int64, n int64, q float64) float64 {
	target := int64(math.Ceil(q * float64(n)))
	target = max(target, 1)
	var acc int64
	for k, c := range h {
		acc += c
		if acc >= target {
			return float64(k)
		}
	}
	return float64(len(h) - 1)
}

// fanOutDist turns a histogram of counts (hist[k] requests made k calls)
// into the distribution replay draws from: a constant when every request
// made the same number of calls, else an empirical distribution of 100
// points apportioned to the counts by frequency (largest remainder), or
// 1000 points when some observed count is rarer than 1%. A count rarer
// than one point still gets one, so that no observed call disappears.
func fanOutDist(hist []int64) cascade.Dist {
	var total int64
	distinct := 0
	last := 0
	for k, c := range hist {
		total += c
		if c > 0 {
			distinct++
			last = k
		}
	}
	if distinct <= 1 {
		return cascade.Const(float64(last))
	}
	size := 100
	for _, c := range hist {
		if c > 0 && float64(c)/float64(total)*100 < 0.5 {
			size = 1000
			break
		}
	}
	type share struct {
		k    int
		n    int
		frac float64
	}
	shares := make([]share, 0, distinct)
	used := 0
	for k, c := range hist {
		if c == 0 {
			continue
		}
		exact := float64(c) / float64(total) * float64(size)
		n := int(math.Floor(exact))
		shares = append(shares, share{k: k, n: n, frac: exact - float64(n)})
		used += n
	}
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case shares[a].frac > shares[b].frac:
			return -1
		case shares[a].frac < shares[b].frac:
			return 1
		}
		return 0
	})
	for i := 0; used < size; i++ {
		shares[order[i%len(order)]].n++
		used++
	}
	// Every observed count keeps at least one point, taken from the most
	// frequent count.
	for i := range shares {
		if shares[i].n == 0 {
			big := 0
			for j := range shares {
				if shares[j].n > shares[big].n {
					big = j
				}
			}
			shares[big].n--
			shares[i].n++
		}
	}
	pts := make([]float64, 0, size)
	for _, s := range shares {
		for range s.n {
			pts = append(pts, float64(s.k))
		}
	}
	return cascade.Dist{Kind: cascade.DistEmpirical, Points: pts}
}

// mergeWeighted merges two sorted samples that stand for na and nb
// observations into one sorted sample of their mixture, repeating values so
// that each sample weighs in proportion to its count (at most 4096 values
// result).
func mergeWeighted(a []float64, na int64, bs []float64, nb int64) []float64 {
	switch {
	case len(bs) == 0:
		return a
	case len(a) == 0:
		return bs
	}
	if int64(len(a)) == na && int64(len(bs)) == nb {
		out := append(slices.Clone(a), bs...)
		slices.Sort(out)
		return out
	}
	const size = 4096
	total := float64(na + nb)
	ka := max(1, int(math.Round(size*float64(na)/total)))
	kb := max(1, size-ka)
	out := make([]float64, 0, ka+kb)
	for i := range ka {
		out = append(out, a[i*len(a)/ka])
	}
	for i := range kb {
		out = append(out, bs[i*len(bs)/kb])
	}
	slices.Sort(out)
	return out
}

// gapSummary returns the observed backoff gaps: all of them when there are
// at most 11, else their 0%, 10%, …, 100% quantiles.
func gapSummary(sorted []float64) []float64 {
	if len(sorted) == 0 {
		return nil
	}
	if len(sorted) <= 11 {
		out := make([]float64, len(sorted))
		for i, v := range sorted {
			out[i] = roundMS(v)
		}
		return out
	}
	out := make([]float64, 11)
	for i := range out {
		out[i] = roundMS(quantile(sorted, float64(i)/10))
	}
	return out
}

// backoffOf reads a backoff policy from the gaps before retries: none when
// the median gap is under 1 ms; exponential when the gap before the second
// retry is about twice the gap before the first (ratio 1.6–2.5, with at
// least 5 of each), its base half the first median; else fixed at the
// median gap.
func backoffOf(all, first, second []float64) cascade.Backoff {
	med := quantile(all, 0.5)
	if len(all) == 0 || med < 1 {
		return cascade.Backoff{Kind: cascade.BackoffNone}
	}
	if len(first) >= 5 && len(second) >= 5 {
		m1, m2 := quantile(first, 0.5), quantile(second, 0.5)
		if m1 > 0 && m2/m1 >= 1.6 && m2/m1 <= 2.5 {
			return cascade.Backoff{Kind: cascade.BackoffExponential, BaseMS: roundMS(m1 / 2)}
		}
	}
	return cascade.Backoff{Kind: cascade.BackoffFixed, BaseMS: roundMS(med)}
}
