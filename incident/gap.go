package incident

import (
	"math"
	"sort"
)

// The client−server gap (see docs/incident.md, Method): its constants, chosen on
// the development day (Nezha TrainTicket 2023-01-30) only.
const (
	// gapFloorMS is the least a call's gap must exceed its edge's normal
	// median by to be high (with the normal p95); and the least the
	// median after an onset must rise by.
	gapFloorMS = 5.0
	// gapMinMS floors a normal median gap when the size is a ratio to
	// it: gaps of a few µs do not make a large ratio of a small rise.
	gapMinMS = 1.0
	// gapRunM is the run of calls the count test looks at, gapAlpha the
	// false-alarm probability of one run under the normal (5% of calls
	// high): k of the last gapRunM calls high, k the least with
	// P(Binomial(gapRunM, 0.05) ≥ k) < gapAlpha (4 of 8).
	gapRunM  = 8
	gapAlpha = 1e-3
	// gapMinRatio is the least ratio of the post-onset median gap to the
	// normal median that counts as a change.
	gapMinRatio = 4.0
	// gapMinNormal is the fewest normal calls an edge needs.
	gapMinNormal = 3
)

// gapRec is one synchronous call the caller timed with its own span:
// its start, the time between the caller's span and the callee's
// request span (the gap: the network both ways, and the caller's
// client waiting for a CPU or a connection), and its latency as the
// caller saw it.
type gapRec struct {
	edge     int32 // in spanAcc.edgeList
	at       int64 // the caller's span start, ns
	gap, lat float64
}

// gapEdge is one edge's calls for the gap test.
type gapEdge struct {
	key       [2]string
	normal    []float64 // the normal range's gaps, sorted
	med, high float64
	latMed    float64 // the normal median latency as the caller saw it
	normalN   int
	calls     []gapRec // judged calls, by time (a part of spanAcc.gaps)
}

// gapTest is the gap's count test: a run of gapRunM calls at 5% high
// under the normal, confirmed by the median from the onset on.
var gapTest = medianTest{m: gapRunM, p: 0.05, alpha: gapAlpha, ratio: gapMinRatio, min: gapMinMS, floor: gapFloorMS}

// gapRunK is the least k with P(Binomial(m, p) ≥ k) < alpha.
func gapRunK(m int, p, alpha float64) int {
	for k := 0; k <= m; k++ {
		tail := 0.0
		for j := k; j <= m; j++ {
			tail += binom(m, j) * math.Pow(p, float64(j)) * math.Pow(1-p, float64(m-j))
		}
		if tail < alpha {
			return k
		}
	}
	return m + 1
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// gapEdges collects each edge's normal gaps (the reference's, or the
// first baseline windows') and its judged calls (from window lo+scan on).
func gapEdges(acc, ref *spanAcc, lo int64, scan int, cfg Config) map[[2]string]*gapEdge {
	edges := map[[2]string]*gapEdge{}
	get := func(k [2]string) *gapEdge {
		e := edges[k]
		if e == nil {
			e = &gapEdge{key: k}
			edges[k] = e
		}
		return e
	}
	normLat := map[[2]string][]float64{}
	if ref != nil {
		for _, r := range ref.gaps {
			k := ref.edgeList[r.edge]
			e := get(k)
			e.normal = append(e.normal, r.gap)
			normLat[k] = append(normLat[k], r.lat)
		}
	}
	// acc's calls by edge, each edge's in time order: an edge's judged
	// calls are a suffix of its run, held without a copy.
	sort.SliceStable(acc.gaps, func(i, j int) bool {
		a, b := &acc.gaps[i], &acc.gaps[j]
		if a.edge != b.edge {
			return a.edge < b.edge
		}
		return a.at < b.at
	})
	for i := 0; i < len(acc.gaps); {
		j := i
		for j < len(acc.gaps) && acc.gaps[j].edge == acc.gaps[i].edge {
			j++
		}
		k := acc.edgeList[acc.gaps[i].edge]
		judged := j
		for x := i; x < j; x++ {
			r := &acc.gaps[x]
			w := floorDiv(r.at, acc.width)
			if ref == nil && w < lo+int64(cfg.BaselineWindows) {
				e := get(k)
				e.normal = append(e.normal, r.gap)
				normLat[k] = append(normLat[k], r.lat)
			}
			if w >= lo+int64(scan) && judged == j {
				judged = x
			}
		}
		if judged < j {
			get(k).calls = acc.gaps[judged:j:j]
		}
		i = j
	}
	// An edge with too few normal calls of its own (a thin one, in a
	// short normal range) takes the normal of its callee's inbound
	// edges pooled, or else of every edge's: the gap is mostly the
	// network, which the capture's edges share.
	var all []float64
	byCallee := map[string][]float64{}
	latByCallee := map[string][]float64{}
	for k, e := range edges {
		all = append(all, e.normal...)
		byCallee[k[1]] = append(byCallee[k[1]], e.normal...)
		latByCallee[k[1]] = append(latByCallee[k[1]], normLat[k]...)
	}
	for k, e := range edges {
		if len(e.calls) == 0 {
			delete(edges, k)
			continue
		}
		lat := normLat[k]
		switch {
		case len(e.normal) >= gapMinNormal:
		case len(byCallee[k[1]]) >= gapMinNormal:
			e.normal = append([]float64(nil), byCallee[k[1]]...)
			lat = latByCallee[k[1]]
		case len(all) >= gapMinNormal:
			e.normal = append([]float64(nil), all...)
		default:
			delete(edges, k)
			continue
		}
		sort.Float64s(e.normal)
		e.normalN = len(e.normal)
		e.med = quantile(e.normal, 0.5)
		e.high = math.Max(quantile(e.normal, 0.95), e.med+gapFloorMS)
		e.latMed = quantile(lat, 0.5)
	}
	return edges
}

// gapPool runs the count test on the calls of edges pooled in time
// order: a call is high when its gap exceeds its edge's normal high; the
// onset is the first high call of the first run of gapRunM calls with k
// high, whose calls from then on have a median gap at least gapMinRatio
// times the pool's normal median and gapFloorMS above it. It returns nil
// when there is none.
//
// Each edge's calls must be in time order, as gapEdges gives them.
func gapPool(node, metric string, es []*gapEdge, thin bool) *stepChange {
	if len(es) == 0 {
		return nil
	}
	// The edges' calls, each edge's in time order, merged by time (ties
	// by edge, in the order es gives them): no copy of the calls.
	var normal []float64
	n := 0
	for _, e := range es {
		n += len(e.calls)
		normal = append(normal, e.normal...)
	}
	items := make([]runItem, 0, n)
	next := make([]int, len(es))
	for len(items) < n {
		best := -1
		for i, e := range es {
			if next[i] < len(e.calls) && (best < 0 || e.calls[next[i]].at < es[best].calls[next[best]].at) {
				best = i
			}
		}
		e := es[best]
		r := &e.calls[next[best]]
		next[best]++
		items = append(items, runItem{at: r.at, v: r.gap, high: r.gap > e.high})
	}
	t := gapTest
	if thin {
		// A normal of a few calls: a call exceeds the largest of n
		// with probability 1/(n+1), more than 5% when n < 19.
		t.p = math.Max(t.p, 1/float64(len(normal)+1))
	}
	ch := medianStep(items, quantile(normal, 0.5), t)
	if ch == nil {
		return nil
	}
	ch.node, ch.metric, ch.edges = node, metric, es
	return ch
}

// medianCI returns the order statistics (0-based) bounding a 95%
// confidence interval of the median of n sorted values.
func medianCI(n int) (int, int) {
	h := 1.96 * math.Sqrt(float64(n)) / 2
	lo := int(math.Floor(float64(n)/2 - h))
	hi := int(math.Ceil(float64(n)/2+h)) - 1
	return max(0, lo), min(n-1, max(hi, 0))
}

// rose reports whether an edge's calls from at on have a median gap above
// its normal high, and whether any were made.
func (e *gapEdge) rose(at int64) (rose, seen bool) {
	var post []float64
	for _, r := range e.calls {
		if r.at >= at {
			post = append(post, r.gap)
		}
	}
	if len(post) == 0 {
		return false, false
	}
	return quantile(post, 0.5) > e.high, true
}

// gapOwners runs the count test per callee (its inbound edges) and per
// caller (its outbound edges) and gives each change to one end. A
// caller whose gaps to at least two callees rose is starved (its CPU,
// its connection pool): the change is its own (gap_out). A callee whose
// gaps rose on at least half its inbound edges that carried calls, from
// a caller whose gaps to its other callees mostly did not rise, owns
// the change (gap_in: its network).
func gapOwners(acc, ref *spanAcc, lo int64, scan int, cfg Config) (map[string]*stepChange, map[[2]string]*gapEdge) {
	edges := gapEdges(acc, ref, lo, scan, cfg)
	owned := ownGaps(edges, false)
	if ref != nil || cfg.BaselineWindows < 2 {
		return owned, edges
	}
	// Without a reference the normal range is the capture's first
	// windows, and a fault that began inside them is in its normal:
	// there is no step after them to find. So the test runs again with
	// the first window alone as the normal (a thin one: see gapPool),
	// and a change it finds that began inside the normal range, at a
	// node the first pass gave none, stands.
	c1 := cfg
	c1.BaselineWindows = 1
	early := gapEdges(acc, nil, lo, 1, c1)
	end := (lo + int64(cfg.BaselineWindows)) * acc.width
	for x, ch := range ownGaps(early, true) {
		if owned[x] != nil || ch.onset >= end {
			continue
		}
		owned[x] = ch
		if ch.metric == "gap_in" {
			for k, e := range early {
				if k[1] == x {
					edges[k] = e
				}
			}
		}
	}
	return owned, edges
}

// ownGaps runs the count test of gapOwners on edges and gives each
// change to one end; thin marks normals of one window (see gapPool).
func ownGaps(edges map[[2]string]*gapEdge, thin bool) map[string]*stepChange {
	keys := make([][2]string, 0, len(edges))
	for k := range edges {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	in, out := map[string][]*gapEdge{}, map[string][]*gapEdge{}
	var nodes []string
	seen := map[string]bool{}
	for _, k := range keys {
		in[k[1]] = append(in[k[1]], edges[k])
		out[k[0]] = append(out[k[0]], edges[k])
		for _, n := range k {
			if !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
	}
	sort.Strings(nodes)
	owned := map[string]*stepChange{}
	starved := map[string]bool{}
	for _, c := range nodes {
		ch := gapPool(c, "gap_out", out[c], thin)
		if ch == nil {
			continue
		}
		var r int
		for _, e := range out[c] {
			if up, _ := e.rose(ch.onset); up {
				r++
			}
		}
		if r >= 2 {
			starved[c] = true
			owned[c] = ch
		}
	}
	for _, x := range nodes {
		ch := gapPool(x, "gap_in", in[x], thin)
		if ch == nil {
			continue
		}
		var up, judged int
		own := false
		for _, e := range in[x] {
			r, s := e.rose(ch.onset)
			if !s {
				continue
			}
			judged++
			if !r {
				continue
			}
			up++
			// The caller's gaps to its other callees.
			var oUp, oJudged int
			for _, o := range out[e.key[0]] {
				if o.key[1] == x {
					continue
				}
				if r2, s2 := o.rose(ch.onset); s2 {
					oJudged++
					if r2 {
						oUp++
					}
				}
			}
			if 2*oUp < oJudged || oJudged == 0 || !starved[e.key[0]] {
				own = true
			}
		}
		if !own || 2*up < judged {
			continue
		}
		if prev := owned[x]; prev == nil || ch.onset < prev.onset {
			owned[x] = ch
		}
	}
	return owned
}

// gapJudgements turns a change into one judgement per window from the
// onset's on: a window with calls of the pool from the onset on is out
// when most of them are high and their median gap is gapFloorMS above
// the normal median, with the binomial z of their share above their
// edges' high against 5%.
func gapJudgements(ch *stepChange, width, lo int64, nw int) []judgement {
	return runWindows(ch.items, ch.normMed, gapFloorMS, ch.p, false, ch.metric, width, lo, nw)
}
