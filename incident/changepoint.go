package incident

import (
	"math"
	"sort"
)

// Change-point constants.
const (
	// medianSE is the standard error of a sample median in units of
	// σ/√n (√(π/2), for a normal sample).
	medianSE = 1.2533
	// madScale turns a median absolute deviation into a σ (normal data).
	madScale = 1.4826
	// sigmaFloor keeps σ at least this share of the median, so a baseline
	// of identical values does not make every wobble infinitely loud.
	sigmaFloor = 0.05
	// slowQuantile is the baseline quantile that, raised by MinChange,
	// defines a slow request; slowShareMin is the share of slow requests a window needs at least
	// (three times the expected 5%).
	slowQuantile = 0.95
	slowShareMin = 0.15
	// errorRiseMin is the smallest rise of the error rate that counts.
	errorRiseMin = 0.05
	// silentShareMax is the most of its expected requests a node may
	// still serve in a window and have fallen silent: half.
	silentShareMax = 0.5
)

// judgeThroughput judges a window's requests against what the root
// requests of the window should have brought: the baseline's requests
// per root request (perRoot) times the window's roots. A node that
// serves at most half of that, with a Poisson z of at least threshold,
// has fallen silent; otherwise, and where the window should have
// brought fewer than minCount requests or the node is an entry (perRoot
// 0), the judgement is empty.
func judgeThroughput(n, roots int64, perRoot, threshold float64, minCount int) judgement {
	exp := perRoot * float64(roots)
	if perRoot <= 0 || exp < float64(minCount) {
		return judgement{}
	}
	z := math.Max(0, (exp-float64(n))/math.Sqrt(exp))
	if z < threshold || float64(n) > silentShareMax*exp {
		// In range says nothing of the window's latency or errors: it
		// leaves the window as the other metrics judged it.
		return judgement{}
	}
	return judgement{judged: true, out: true, z: z, metric: "throughput", base: exp, value: float64(n), n: int(roots)}
}

// normal is a node's normal range, read from its baseline windows.
type normal struct {
	n                 int64
	latMed, latSigma  float64
	latSlow           float64 // the baseline's p95: slower is "slow"
	selfMed, selfSigm float64
	errRate           float64
}

// normalOf pools a node's baseline windows.
func normalOf(ws []*winAcc) normal {
	var nb normal
	var lat, self []float64
	var errs int64
	for _, w := range ws {
		nb.n += w.n
		errs += w.errs
		lat = append(lat, w.lat.vals...)
		self = append(self, w.self.vals...)
	}
	if nb.n == 0 {
		return nb
	}
	nb.errRate = float64(errs) / float64(nb.n)
	nb.latMed, nb.latSigma = medianSigma(lat)
	nb.selfMed, nb.selfSigm = medianSigma(self)
	nb.latSlow = quantile(lat, slowQuantile)
	return nb
}

// medianSigma returns the median of xs and a robust σ: 1.4826 × the
// median absolute deviation, at least 5% of the median.
func medianSigma(xs []float64) (med, sigma float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	med = quantile(xs, 0.5)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	sigma = madScale * quantile(dev, 0.5)
	return med, math.Max(sigma, math.Max(sigmaFloor*math.Abs(med), 1e-3))
}

// quantile returns the q-quantile of xs (linear between order
// statistics); it sorts a copy.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	f := pos - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// judgement is one window judged against the normal range.
type judgement struct {
	judged bool    // enough requests to judge
	out    bool    // out of the normal range
	z      float64 // the largest |z| (of the metrics out, if any)
	metric string
	base   float64
	value  float64
	n      int // values behind z
	// others are the window's other out-of-range metrics (the node's
	// evidence); nil when there are none.
	others []judgement
}

// merge returns the louder of two judgements of one window (an out one
// before one in range), keeping every out-of-range metric of both in its
// others.
func merge(cur, j judgement) judgement {
	if !j.judged {
		return cur
	}
	winner, loser := cur, j
	if !cur.judged || j.out && (!cur.out || j.z > cur.z) || !cur.out && !j.out && j.z > cur.z {
		winner, loser = j, cur
	}
	if loser.out {
		others := append([]judgement(nil), winner.others...)
		l := loser
		l.others = nil
		others = append(others, l)
		others = append(others, loser.others...)
		winner.others = others
	}
	return winner
}

// judge compares one window with the normal range on four metrics: the
// median latency and median self time (a shift of the median over the
// standard error of a median, σ from the baseline), the share of
// requests slower than the baseline's p95 by more than minChange (a
// binomial z against 5%, more than the baseline can have), and the error
// rate (a binomial z against the baseline's
// rate). A metric is out when its z reaches the threshold and the change
// is material: a median shifted by at least minChange, a slow share of
// at least 15%, an error rate up by at least 5 points.
func (nb *normal) judge(w *winAcc, threshold, minChange float64, minCount int) judgement {
	if w == nil || w.n < int64(minCount) || nb.n == 0 {
		return judgement{}
	}
	j := judgement{judged: true}
	var outs []judgement
	consider := func(metric string, z, base, value float64, n int, material bool) {
		out := math.Abs(z) >= threshold && material
		if out {
			outs = append(outs, judgement{judged: true, out: true, z: math.Abs(z), metric: metric, base: base, value: value, n: n})
		}
		switch {
		case out && (!j.out || math.Abs(z) > j.z):
			j = judgement{judged: true, out: true, z: math.Abs(z), metric: metric, base: base, value: value, n: n}
		case !j.out && math.Abs(z) > j.z:
			j.z, j.metric, j.base, j.value, j.n = math.Abs(z), metric, base, value, n
		}
	}
	shift := func(metric string, vals []float64, med, sigma float64) {
		if len(vals) == 0 {
			return
		}
		m := quantile(vals, 0.5)
		// Only a rise is a fault: a service that got faster is not
		// where an incident began (a drop is what a slow or failing
		// callee's callers see when their requests end early).
		z := math.Max(0, (m-med)/(medianSE*sigma/math.Sqrt(float64(len(vals)))))
		consider(metric, z, med, m, len(vals), m-med >= minChange*math.Abs(med))
	}
	shift("latency", w.lat.vals, nb.latMed, nb.latSigma)
	shift("self_time", w.self.vals, nb.selfMed, nb.selfSigm)
	if n := len(w.lat.vals); n > 0 {
		slow := 0
		for _, v := range w.lat.vals {
			if v > nb.latSlow*(1+minChange) {
				slow++
			}
		}
		q := float64(slow) / float64(n)
		p := 1 - slowQuantile
		z := math.Max(0, (q-p)/math.Sqrt(p*(1-p)/float64(n)))
		consider("slow_share", z, p, q, n, q >= slowShareMin)
	}
	pb := nb.errRate
	pw := float64(w.errs) / float64(w.n)
	pv := math.Max(pb, 1/float64(nb.n+1))
	z := math.Max(0, (pw-pb)/math.Sqrt(pv*(1-pv)/float64(w.n)))
	consider("error_rate", z, pb, pw, int(w.n), pw-pb >= errorRiseMin)
	for _, o := range outs {
		if o.metric != j.metric {
			j.others = append(j.others, o)
		}
	}
	return j
}

// changeAt returns the index of the first judged window that is out of
// range and stays out for persist judged windows (or to the end of the
// data when fewer remain); −1 when none.
func changeAt(js []judgement, persist int) int {
	for i := range js {
		if !js[i].judged || !js[i].out {
			continue
		}
		ok, seen := true, 1
		for k := i + 1; k < len(js) && seen < persist; k++ {
			if !js[k].judged {
				continue
			}
			seen++
			if !js[k].out {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}
