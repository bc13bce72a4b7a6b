package graph

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"cascade"
)

// A node with no limit of its own can still slow and fail with its
// load: a dependency nobody traces (a connection pool, a lock, a disk)
// makes its requests wait, and past a wait cap it rejects them. The
// capture shows it as exclusive time and own failures that rise with the
// rate of requests. loadCurve reads that relation, so that replay makes
// the slowdown and the failures from the load it replays (a retry storm
// that feeds itself, a fix that takes the load away) instead of drawing
// them at the capture's mix of loads.
//
// The load a request met is the rate of the node's requests per replica
// over the window before the one its start falls in (Config.Window; a
// failure retried at once raises its own window's rate, so that window
// would read the failures' retries as their cause), scaled by the
// traces' sampling (a sampled capture holds 1 in scale of the requests;
// the broker's counters tell, readSampling). It is the arrival rate and
// not the requests in flight: a node slower for any reason (a bad
// deploy halfway through) holds more requests in flight (Little's law),
// and a curve over them would read every slowdown as load. The
// requests, sorted by that load, are cut into up to curveMaxPoints bins
// of at least curveMinBin requests, a window never split; each bin gives
// a point: its mean load, the median exclusive time against the least
// loaded bin's, its share of own failures. A relation is kept only when
// the capture proves it: the most loaded bin against the least by a
// one-sided test at curveZ standard errors (Mann–Whitney for the times,
// two proportions for the failures) and by a margin that matters
// (curveMinSlowdown, curveMinFail). The points are then made monotone
// (more load, never faster or safer: pool-adjacent-violators, weighted
// by requests), and replay holds them flat beyond the last, so that no
// storm is read that the capture did not show.
//
// The rate can rise because the node is slow (its callers time out and
// retry) as well as the node slow down because the rate rose; a slowdown
// that came at one moment for another reason (a deploy, a noisy
// neighbour) then reads as load in the bins. So the relation must also
// hold from one window to the next: the changes of the rate between
// consecutive windows and the changes of the median time (or of the
// failure share) must go together, a Spearman correlation of curveDiffZ
// standard errors or more. A step at one moment moves one difference; a
// load that slows the node moves them all. And it must hold at any time:
// the windows of the capture's first half and of its second that met
// the same load (the range both halves cover) must show the same times
// and failures, or the change came with time, not load (a one-sided
// Mann–Whitney of their medians, failure shares, under curveZ); with
// fewer than curveMinMatched such windows in either half, time and load
// cannot be told apart, and no curve is read.
const (
	curveMinRequests = 120
	curveMinBin      = 30
	curveMaxPoints   = 6
	curveZ           = 3
	curveMinSlowdown = 1.2
	curveMinFail     = 0.02
	curveDiffZ       = 2
	curveMinMatched  = 3
	// curveMinWindow is the fewest requests of a window whose median
	// and failure share enter the differences.
	curveMinWindow = 3
	// curveMinSpread is the least ratio of the most loaded bin's rate to
	// the least loaded's.
	curveMinSpread = 1.25
)

// curveFit is a node's load curve, and each request's slowdown, for the
// service time (the exclusive times over it are the times at no load).
type curveFit struct {
	curve *cascade.LoadCurve
	// slow is, per request of seq in its order, the slowdown at its
	// load (nil without a slowdown curve).
	slow []float64
}

// loadCurve reads a node's load curve from its requests (seq, not
// changed), their exclusive times (ms, in seq's order), the sampling
// scale (1 when whole), its replicas, the windows' width and the capture's
// start (ns). ok is false when the capture shows no relation.
func loadCurve(seq []seqReq, excl []float64, scale float64, replicas int, window, start int64) (curveFit, bool) {
	if len(seq) < curveMinRequests || len(excl) != len(seq) || window <= 0 {
		return curveFit{}, false
	}
	load := windowLoads(seq, scale, replicas, window, start)
	rs := requestsByLoad(seq, excl, load, window, start)
	bins := binByLoad(rs)
	if len(bins) < 2 {
		return curveFit{}, false
	}
	slowOK, failOK := curveProven(bins, rs, seq, excl, load, window, start)
	if !slowOK && !failOK {
		return curveFit{}, false
	}
	c, slows := curveOf(bins, window, slowOK, failOK)
	if len(c.RatePerSec) < 2 {
		return curveFit{}, false
	}
	fit := curveFit{curve: c}
	if slows != nil {
		fit.slow = make([]float64, len(seq))
		for _, r := range rs {
			fit.slow[r.i] = c.SlowdownAt(r.k)
		}
	}
	return fit, true
}

// windowLoads returns the load each window of the capture met, per
// replica: the rate requests started at over the window before it (the
// first window's, its own), scaled by scale. A failure retried at once
// adds to the rate of its own window, and would read as load it did not
// meet. The last window, cut short by the capture's end, is rated by its
// own length.
func windowLoads(seq []seqReq, scale float64, replicas int, window, start int64) []float64 {
	var last int64
	for i := range seq {
		last = max(last, seq[i].start)
	}
	nw := int((last-start)/window) + 1
	starts := make([]float64, nw)
	for i := range seq {
		starts[max(0, int((seq[i].start-start)/window))]++
	}
	load := make([]float64, nw)
	rep := float64(max(1, replicas))
	rateOf := func(w int) float64 {
		width := float64(window)
		if w == nw-1 {
			width = float64(max(last-(start+int64(w)*window), window/10))
		}
		return scale * starts[w] / (width / 1e9) / rep
	}
	for w := range load {
		load[w] = rateOf(max(0, w-1))
	}
	return load
}

// curveReq is a request as the load curve reads it: its index in seq,
// its window and that window's load, its exclusive time and whether it
// failed on its own.
type curveReq struct {
	i   int
	w   int
	k   float64
	ex  float64
	own bool
}

// requestsByLoad returns the requests ordered by the load of their
// window, a window's requests together.
func requestsByLoad(seq []seqReq, excl, load []float64, window, start int64) []curveReq {
	nw := len(load)
	rs := make([]curveReq, len(seq))
	for i := range seq {
		w := max(0, int((seq[i].start-start)/window))
		rs[i] = curveReq{i: i, w: min(w, nw-1), ex: excl[i], own: seq[i].own}
		rs[i].k = load[rs[i].w]
	}
	slices.SortStableFunc(rs, func(a, b curveReq) int {
		if c := cmp.Compare(a.k, b.k); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
	return rs
}

// curveBin is rs[lo:hi], requests of neighbouring loads: their mean
// load, median exclusive time and own failure share.
type curveBin struct {
	lo, hi int
	k      float64
	med    float64
	fail   float64
}

// binByLoad cuts rs into bins of at least curveMinBin requests (and at
// most curveMaxPoints bins), a window never split, and reads each bin.
func binByLoad(rs []curveReq) []curveBin {
	size := max(curveMinBin, len(rs)/curveMaxPoints)
	var bins []curveBin
	for lo := 0; lo < len(rs); {
		hi := min(len(rs), lo+size)
		for hi < len(rs) && rs[hi].w == rs[hi-1].w {
			hi++ // a window stays whole
		}
		if len(rs)-hi < curveMinBin {
			hi = len(rs) // too few left for a bin of their own
		}
		bins = append(bins, curveBin{lo: lo, hi: hi})
		lo = hi
	}
	for b := range bins {
		x := &bins[b]
		ex := make([]float64, 0, x.hi-x.lo)
		var own int
		for _, r := range rs[x.lo:x.hi] {
			x.k += r.k
			ex = append(ex, r.ex)
			if r.own {
				own++
			}
		}
		n := float64(x.hi - x.lo)
		x.k /= n
		slices.Sort(ex)
		x.med = quantile(ex, 0.5)
		x.fail = float64(own) / n
	}
	return bins
}

// curveProven reports whether the capture proves that the requests slow
// with the load, and that they fail with it: the least and most loaded
// bins differ by enough and by curveZ standard errors, window-to-window
// changes move together (windowDiffZ), and both halves of the capture
// show the same at the same load (timeZ).
func curveProven(bins []curveBin, rs []curveReq, seq []seqReq, excl, load []float64, window, start int64) (slowOK, failOK bool) {
	first, top := bins[0], bins[len(bins)-1]
	if top.k < curveMinSpread*first.k || !(first.med > 0) {
		return false, false
	}
	exOf := func(x curveBin) []float64 {
		v := make([]float64, 0, x.hi-x.lo)
		for _, r := range rs[x.lo:x.hi] {
			v = append(v, r.ex)
		}
		return v
	}
	slowOK = top.med >= curveMinSlowdown*first.med && mannWhitneyZ(exOf(first), exOf(top)) >= curveZ
	failOK = top.fail-first.fail >= curveMinFail && twoProportionZ(first.fail, first.hi-first.lo, top.fail, top.hi-top.lo) >= curveZ
	if slowOK || failOK {
		ws := rs2win(len(load), seq, excl, start, window)
		dSlow, dFail := windowDiffZ(ws, load)
		slowOK = slowOK && dSlow >= curveDiffZ
		failOK = failOK && dFail >= curveDiffZ
		tSlow, tFail, matched := timeZ(ws, load)
		slowOK = slowOK && matched && math.Abs(tSlow) < curveZ
		failOK = failOK && matched && math.Abs(tFail) < curveZ
	}
	return slowOK, failOK
}

// curveOf builds the curve from the bins: the slowdown relative to the
// least load (when slow) and the own failure share (when fail), each
// made non-decreasing in the load (isotonic), at distinct loads. It
// returns the curve and the pooled slowdown per bin (nil when not slow).
func curveOf(bins []curveBin, window int64, slow, fail bool) (*cascade.LoadCurve, []float64) {
	first := bins[0]
	c := &cascade.LoadCurve{WindowMS: float64(window) / 1e6}
	w := make([]float64, len(bins))
	for b, x := range bins {
		w[b] = float64(x.hi - x.lo)
	}
	var slows []float64
	if slow {
		slows = make([]float64, len(bins))
		for b, x := range bins {
			slows[b] = x.med / first.med
		}
		slows = isotonic(slows, w)
		for b := len(slows) - 1; b >= 0; b-- {
			slows[b] /= slows[0] // relative to the least load, after pooling
		}
	}
	var fails []float64
	if fail {
		fails = make([]float64, len(bins))
		for b, x := range bins {
			fails[b] = x.fail
		}
		fails = isotonic(fails, w)
	}
	// Points at distinct loads (bins of equal mean load merge: the
	// later, pooled by isotonic, is the same).
	for b, x := range bins {
		k := round6(x.k)
		if n := len(c.RatePerSec); n > 0 && k <= c.RatePerSec[n-1] {
			c.Requests[n-1] += int64(w[b])
			continue
		}
		c.RatePerSec = append(c.RatePerSec, k)
		c.Requests = append(c.Requests, int64(w[b]))
		if slows != nil {
			c.Slowdown = append(c.Slowdown, round6(slows[b]))
		}
		if fails != nil {
			c.Fail = append(c.Fail, round6(fails[b]))
		}
	}
	return c, slows
}

// isotonic returns the non-decreasing sequence nearest v in weighted
// least squares (pool adjacent violators).
func isotonic(v, w []float64) []float64 {
	type block struct {
		sum, w float64
		n      int
	}
	var st []block
	for i := range v {
		st = append(st, block{sum: v[i] * w[i], w: w[i], n: 1})
		for len(st) > 1 {
			a, b := st[len(st)-2], st[len(st)-1]
			if a.sum/a.w <= b.sum/b.w {
				break
			}
			st = st[:len(st)-2]
			st = append(st, block{sum: a.sum + b.sum, w: a.w + b.w, n: a.n + b.n})
		}
	}
	out := make([]float64, 0, len(v))
	for _, b := range st {
		for range b.n {
			out = append(out, b.sum/b.w)
		}
	}
	return out
}

// mannWhitneyZ is the normal approximation of the Mann–Whitney U test
// that b's values tend to exceed a's (ties count a half), with the ties'
// correction of the variance: positive when b is larger.
func mannWhitneyZ(a, b []float64) float64 {
	type v struct {
		x   float64
		inB bool
	}
	all := make([]v, 0, len(a)+len(b))
	for _, x := range a {
		all = append(all, v{x: x})
	}
	for _, x := range b {
		all = append(all, v{x: x, inB: true})
	}
	slices.SortFunc(all, func(p, q v) int { return cmp.Compare(p.x, q.x) })
	n1, n2 := float64(len(a)), float64(len(b))
	n := n1 + n2
	var rankB, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		r := float64(i+j+1) / 2 // mean rank of the tie, 1-based
		t := float64(j - i)
		ties += t*t*t - t
		for k := i; k < j; k++ {
			if all[k].inB {
				rankB += r
			}
		}
		i = j
	}
	u := rankB - n2*(n2+1)/2
	mean := n1 * n2 / 2
	sd := math.Sqrt(n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1))))
	if !(sd > 0) {
		return 0
	}
	return (u - mean) / sd
}

// twoProportionZ is the z of p2 − p1 (shares of n1 and n2) with the
// pooled standard error: positive when p2 is larger.
func twoProportionZ(p1 float64, n1 int, p2 float64, n2 int) float64 {
	p := (p1*float64(n1) + p2*float64(n2)) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	if !(se > 0) {
		return 0
	}
	return (p2 - p1) / se
}

// noteCurve says in the model's notes what a node's load curve holds.
func (b *Builder) noteCurve(name string, c *cascade.LoadCurve) {
	n := len(c.RatePerSec) - 1
	var parts []string
	if len(c.Slowdown) > 0 {
		parts = append(parts, fmt.Sprintf("its calls take ×%.3g as long", c.Slowdown[n]))
	}
	if len(c.Fail) > 0 {
		parts = append(parts, fmt.Sprintf("fail %.3g%% instead of %.3g%%", 100*c.Fail[n], 100*c.Fail[0]))
	}
	var total int64
	for _, r := range c.Requests {
		total += r
	}
	b.curveNotes = append(b.curveNotes, fmt.Sprintf(
		"node %s slows and fails with its load: at %.3g calls/s against %.3g, %s (from %d requests); replay makes this from the load it replays",
		name, c.RatePerSec[n], c.RatePerSec[0], joinAnd(parts), total))
}

// joinAnd joins phrases with commas and a final "and".
func joinAnd(p []string) string {
	switch len(p) {
	case 0:
		return ""
	case 1:
		return p[0]
	}
	s := p[0]
	for _, x := range p[1 : len(p)-1] {
		s += ", " + x
	}
	return s + " and " + p[len(p)-1]
}

// winStats is one window's requests: their median exclusive time and
// their share of own failures.
type winStats struct {
	n    int
	med  float64
	fail float64
}

// rs2win gathers the requests per window.
func rs2win(nw int, seq []seqReq, excl []float64, start, window int64) []winStats {
	ex := make([][]float64, nw)
	own := make([]int, nw)
	for i := range seq {
		w := min(nw-1, max(0, int((seq[i].start-start)/window)))
		ex[w] = append(ex[w], excl[i])
		if seq[i].own {
			own[w]++
		}
	}
	out := make([]winStats, nw)
	for w := range ex {
		if n := len(ex[w]); n > 0 {
			slices.Sort(ex[w])
			out[w] = winStats{n: n, med: quantile(ex[w], 0.5), fail: float64(own[w]) / float64(n)}
		}
	}
	return out
}

// windowDiffZ returns the Spearman correlations, in standard errors
// (r·√(n−1)), of the change of the load between consecutive windows
// (both with curveMinWindow requests or more) with the change of their
// median time and with the change of their failure share.
func windowDiffZ(ws []winStats, load []float64) (slow, fail float64) {
	var dl, dm, df []float64
	for w := 1; w < len(ws); w++ {
		if ws[w].n < curveMinWindow || ws[w-1].n < curveMinWindow {
			continue
		}
		dl = append(dl, load[w]-load[w-1])
		dm = append(dm, ws[w].med-ws[w-1].med)
		df = append(df, ws[w].fail-ws[w-1].fail)
	}
	if len(dl) < 4 {
		return 0, 0
	}
	z := math.Sqrt(float64(len(dl) - 1))
	return spearman(dl, dm) * z, spearman(dl, df) * z
}

// spearman is the rank correlation of x and y (ties take their mean
// rank); 0 when either is constant.
func spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		a, b := rx[i]-mx, ry[i]-my
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks returns the 1-based ranks of v, ties at their mean rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

// timeZ compares, at the load both halves of the capture met, the
// windows of the second half with those of the first: the Mann–Whitney
// z of their median times and of their failure shares (positive: the
// second half slower, failing more), and whether each half had
// curveMinMatched windows in the common range.
func timeZ(ws []winStats, load []float64) (slow, fail float64, ok bool) {
	half := len(ws) / 2
	lo := [2]float64{math.Inf(1), math.Inf(1)}
	hi := [2]float64{math.Inf(-1), math.Inf(-1)}
	for w := range ws {
		if ws[w].n < curveMinWindow {
			continue
		}
		h := 0
		if w >= half {
			h = 1
		}
		lo[h], hi[h] = math.Min(lo[h], load[w]), math.Max(hi[h], load[w])
	}
	from, to := math.Max(lo[0], lo[1]), math.Min(hi[0], hi[1])
	var med, fl [2][]float64
	for w := range ws {
		if ws[w].n < curveMinWindow || load[w] < from || load[w] > to {
			continue
		}
		h := 0
		if w >= half {
			h = 1
		}
		med[h] = append(med[h], ws[w].med)
		fl[h] = append(fl[h], ws[w].fail)
	}
	if len(med[0]) < curveMinMatched || len(med[1]) < curveMinMatched {
		return 0, 0, false
	}
	return mannWhitneyZ(med[0], med[1]), mannWhitneyZ(fl[0], fl[1]), true
}
