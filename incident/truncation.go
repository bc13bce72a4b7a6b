package incident

import (
	"math"
	"sort"
)

// Fan-out and truncation (see docs/incident.md, Method): their constants, chosen
// on the fixture generator (testdata/shapes' EarlyReturn) and the
// development day (Nezha TrainTicket 2023-01-30) only.
const (
	// fanRunM is the run of requests the count test looks at, fanAlpha
	// the false-alarm probability of one run under the normal: k of the
	// last fanRunM requests low, k the least with P(Binomial(fanRunM,
	// p) ≥ k) < fanAlpha, p the normal share of low requests (at least
	// fanPFloor).
	fanRunM   = 8
	fanAlpha  = 1e-3
	fanPFloor = 0.02
	// fanMinChange is the least relative change of the calls (or
	// descendants) from the onset on against what the normal gives the
	// same requests.
	fanMinChange = 0.25
	// fanFlagShare is the most of the normal requests a flag may take:
	// a request is low when its count is below the largest normal count
	// that no more than this share fall below (high likewise above the
	// smallest), so that a count that varies by chance (a fan-out of 3–5,
	// a share of requests that fail before calling) flags no more than
	// it.
	fanFlagShare = 0.25
	// fanMinNormal is the fewest normal requests an operation needs.
	fanMinNormal = 5
)

// fanRec is one request: its node and operation, start, the spans
// below it in its trace (descendants), whether it failed, and its calls
// per callee (fanOuts[lo:hi]).
type fanRec struct {
	at     int64
	op     int32 // in spanAcc.ops
	desc   int32
	lo, hi int32
	// last is the edge of the request's last call (the latest to
	// start), −1 without calls: the callee whose answer the request
	// ended after.
	last   int32
	failed bool
}

// fanOut is one request's calls to one callee.
type fanOut struct {
	edge int32 // in spanAcc.edgeList
	n    int32
}

// addFans records each request of the trace ss with its calls per
// callee and its descendants.
func (a *spanAcc) addFans(ss []tspan, calls []call) {
	desc := make([]int32, len(ss))
	parent := a.tree.Parent
	for i := range ss {
		for j, steps := parent[i], 0; j >= 0 && steps < len(ss); j, steps = parent[j], steps+1 {
			desc[j]++
		}
	}
	// calls are sorted by caller.
	x := 0
	for i := range ss {
		s := &ss[i]
		if !s.request {
			continue
		}
		for x < len(calls) && calls[x].caller < i {
			x++
		}
		r := fanRec{op: a.opID(s.service, s.op), at: s.start, desc: desc[i], failed: s.failed, lo: int32(len(a.fanOuts)), last: -1}
		var lastAt int64
		for ; x < len(calls) && calls[x].caller == i; x++ {
			e := a.edgeID(s.service, ss[calls[x].callee].service)
			if at := ss[calls[x].timing].start; r.last < 0 || at >= lastAt {
				r.last, lastAt = e, at
			}
			k := int(r.lo)
			for k < len(a.fanOuts) && a.fanOuts[k].edge != e {
				k++
			}
			if k == len(a.fanOuts) {
				a.fanOuts = append(a.fanOuts, fanOut{edge: e})
			}
			a.fanOuts[k].n++
		}
		r.hi = int32(len(a.fanOuts))
		a.fans = append(a.fans, r)
	}
}

// count returns the request's calls to callee.
func (a *spanAcc) count(r *fanRec, callee string) float64 {
	for _, o := range a.fanOuts[r.lo:r.hi] {
		if a.edgeList[o.edge][1] == callee {
			return float64(o.n)
		}
	}
	return 0
}

// fanNorm is one operation's normal count (calls to one callee, or
// descendants) per request: its mean, and the counts below lo (above
// hi) that flag a request low (high), with the normal share of each.
type fanNorm struct {
	n         int
	mean      float64
	lo, hi    float64
	low, high float64
}

func fanNormOf(xs []float64) fanNorm {
	sort.Float64s(xs)
	n := float64(len(xs))
	f := fanNorm{n: len(xs), lo: xs[0], hi: xs[len(xs)-1]}
	for _, x := range xs {
		f.mean += x
	}
	f.mean /= n
	// lo: the largest normal count with at most fanFlagShare below it.
	for i := range xs {
		if i > 0 && xs[i] != xs[i-1] {
			if float64(i)/n > fanFlagShare {
				break
			}
			f.lo, f.low = xs[i], float64(i)/n
		}
	}
	// hi: the smallest normal count with at most fanFlagShare above it.
	for i := len(xs) - 1; i >= 0; i-- {
		if i < len(xs)-1 && xs[i] != xs[i+1] {
			if float64(len(xs)-1-i)/n > fanFlagShare {
				break
			}
			f.hi, f.high = xs[i], float64(len(xs)-1-i)/n
		}
	}
	return f
}

// fanItem is one judged request in a pool: its count, what its
// operation's normal gives, and whether it is low (high) against it.
type fanItem struct {
	at        int64
	x, exp    float64
	normShare float64
	last      int32 // drops only: the edge of the request's last call, −1 none
	flag      bool
	failed    bool
}

// fanChange is a count-based change of a node's calls to one callee
// per request (fanout_drop, fanout_rise) or of its requests'
// descendants (truncation).
type fanChange struct {
	node, callee, metric string
	onset                int64 // ns: the first flagged request of the first run
	n                    int   // requests from the onset on
	exp, obs             float64
	low, high            float64 // the 95% interval of obs/exp (Poisson)
	size                 float64 // |log((exp+1)/(obs+1))|
	items                []fanItem
	failedShare          float64 // of the flagged requests from the onset
	// endedBy, for a drop, is the callee whose answer most of the
	// flagged requests ended after, when they did so more often than
	// the caller's normal requests did; "" otherwise.
	endedBy string
}

// fanPool runs the count test on items in time order: the onset is the
// first flagged request of the first run of fanRunM with k flagged,
// whose requests from then on hold at least fanMinChange fewer (drop)
// or more (rise) than their normal gives, with a Poisson z of
// threshold. It returns nil when there is none.
func fanPool(items []fanItem, drop bool, threshold float64) *fanChange {
	if len(items) == 0 {
		return nil
	}
	p := fanPFloor
	for _, it := range items {
		p = math.Max(p, it.normShare)
	}
	var ch *fanChange
	first := firstRun(len(items), fanRunM, gapRunK(fanRunM, p, fanAlpha),
		func(i int) bool { return items[i].flag },
		func(first int) bool {
			var exp, obs float64
			var flagged, failed int
			for _, it := range items[first:] {
				exp += it.exp
				obs += it.x
				if it.flag {
					flagged++
					if it.failed {
						failed++
					}
				}
			}
			z := (exp - obs) / math.Sqrt(math.Max(exp, 1))
			ok := obs <= (1-fanMinChange)*exp && z >= threshold
			if !drop {
				ok = obs >= (1+fanMinChange)*exp && -z >= threshold
			}
			if ok {
				h := 1.96 * math.Sqrt(obs)
				ch = &fanChange{onset: items[first].at, n: len(items) - first, exp: exp, obs: obs,
					low: math.Max(0, obs-h) / exp, high: (obs + h) / exp,
					size:  math.Abs(math.Log((exp + 1) / (obs + 1))),
					items: items[first:], failedShare: float64(failed) / float64(max(flagged, 1))}
			}
			return ok
		})
	if first < 0 {
		return nil
	}
	return ch
}

// fanOwner is a node whose requests dropped calls or ended early: its
// change, and the callees whose calls from it dropped.
type fanOwner struct {
	change *fanChange
	lost   map[string]bool
}

// fanSignals judges, per edge, the calls per caller request (drops and
// rises) and, per node, its requests' descendants (truncation), each
// against the normal of the request's operation: the reference's, or
// the first baseline windows'. Requests are judged from window lo+scan
// on.
func fanSignals(acc, ref *spanAcc, lo int64, scan int, cfg Config) (drops, rises map[[2]string]*fanChange, trunc map[string]*fanChange) {
	normSrc, normAcc := acc.fans, acc
	if ref != nil {
		normSrc, normAcc = ref.fans, ref
	}
	inNormal := func(r *fanRec) bool {
		return ref != nil || floorDiv(r.at, acc.width) < lo+int64(cfg.BaselineWindows)
	}
	opRecs, callees := normalFans(normSrc, normAcc, inNormal)
	descNorm, callNorm := fanNorms(normAcc, opRecs, callees)
	judged := judgedFans(acc, lo, scan)
	calleeList := sortedCallees(callees)
	normLast, normN := normalLastCalls(normSrc, normAcc, inNormal)
	bySvc := fansByService(acc, judged)
	drops, rises, trunc = map[[2]string]*fanChange{}, map[[2]string]*fanChange{}, map[string]*fanChange{}
	for _, svc := range sortedKeys(bySvc) {
		descItems, dropItems, riseItems := serviceFanItems(acc, judged, bySvc[svc], descNorm, callNorm, calleeList)
		for e, items := range dropItems {
			if ch := fanPool(items, true, cfg.Threshold); ch != nil {
				ch.node, ch.callee, ch.metric = e[0], e[1], "fanout_drop"
				ch.endedBy = endedBy(ch.items, e[1], normLast[e[0]], normN[e[0]], acc.calleeOf)
				drops[e] = ch
			}
			if ch := fanPool(riseItems[e], false, cfg.Threshold); ch != nil {
				ch.node, ch.callee, ch.metric = e[0], e[1], "fanout_rise"
				rises[e] = ch
			}
		}
		if ch := fanPool(descItems, true, cfg.Threshold); ch != nil {
			ch.node, ch.metric = svc, "truncation"
			trunc[svc] = ch
		}
	}
	return drops, rises, trunc
}

// fanCallKey is one operation's calls to one callee, the unit a drop or
// rise is normal for.
type fanCallKey struct {
	op     opKey
	callee string
}

// normalFans returns the normal requests of normSrc per operation, and
// per operation the callees any of them called, whose counts the normal
// is taken of.
func normalFans(normSrc []fanRec, normAcc *spanAcc, inNormal func(*fanRec) bool) (opRecs map[opKey][]*fanRec, callees map[opKey]map[string]bool) {
	opRecs = map[opKey][]*fanRec{}
	callees = map[opKey]map[string]bool{}
	for i := range normSrc {
		r := &normSrc[i]
		if !inNormal(r) {
			continue
		}
		k := normAcc.ops[r.op]
		opRecs[k] = append(opRecs[k], r)
		for _, o := range normAcc.fanOuts[r.lo:r.hi] {
			if callees[k] == nil {
				callees[k] = map[string]bool{}
			}
			callees[k][normAcc.edgeList[o.edge][1]] = true
		}
	}
	return opRecs, callees
}

// fanNorms returns the normal counts per operation, its descendants and
// its calls to each callee, of the operations with at least fanMinNormal
// normal requests, since fewer give no normal to judge against.
func fanNorms(normAcc *spanAcc, opRecs map[opKey][]*fanRec, callees map[opKey]map[string]bool) (descNorm map[opKey]fanNorm, callNorm map[fanCallKey]fanNorm) {
	descNorm = map[opKey]fanNorm{}
	callNorm = map[fanCallKey]fanNorm{}
	for k, rs := range opRecs {
		if len(rs) < fanMinNormal {
			continue
		}
		ds := make([]float64, len(rs))
		for i, r := range rs {
			ds[i] = float64(r.desc)
		}
		descNorm[k] = fanNormOf(ds)
		for c := range callees[k] {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = normAcc.count(r, c)
			}
			callNorm[fanCallKey{k, c}] = fanNormOf(xs)
		}
	}
	return descNorm, callNorm
}

// judgedFans returns the requests of acc from window lo+scan on, in
// time order, as the pools are judged.
func judgedFans(acc *spanAcc, lo int64, scan int) []*fanRec {
	var judged []*fanRec
	for i := range acc.fans {
		if r := &acc.fans[i]; floorDiv(r.at, acc.width) >= lo+int64(scan) {
			judged = append(judged, r)
		}
	}
	sort.SliceStable(judged, func(i, j int) bool { return judged[i].at < judged[j].at })
	return judged
}

// sortedCallees lists each operation's normal callees in name order, so
// a request's items are built in the same order on every run.
func sortedCallees(callees map[opKey]map[string]bool) map[opKey][]string {
	calleeList := map[opKey][]string{}
	for k, cs := range callees {
		for c := range cs {
			calleeList[k] = append(calleeList[k], c)
		}
		sort.Strings(calleeList[k])
	}
	return calleeList
}

// normalLastCalls counts, per caller, its normal requests (normN) and
// those whose last call was to each callee (normLast), against which
// endedBy tells whether a drop's requests stopped at one callee's answer.
func normalLastCalls(normSrc []fanRec, normAcc *spanAcc, inNormal func(*fanRec) bool) (normLast map[string]map[string]float64, normN map[string]float64) {
	normLast = map[string]map[string]float64{}
	normN = map[string]float64{}
	for i := range normSrc {
		r := &normSrc[i]
		if !inNormal(r) {
			continue
		}
		svc := normAcc.ops[r.op].service
		normN[svc]++
		if c := normAcc.lastCallee(r); c != "" {
			if normLast[svc] == nil {
				normLast[svc] = map[string]float64{}
			}
			normLast[svc][c]++
		}
	}
	return normLast, normN
}

// fansByService indexes the judged requests by service, so the requests
// of the whole capture are held once, as indices, and each pool's items
// only while it is judged (a change keeps the items it holds).
func fansByService(acc *spanAcc, judged []*fanRec) map[string][]int32 {
	bySvc := map[string][]int32{}
	for i, r := range judged {
		svc := acc.ops[r.op].service
		bySvc[svc] = append(bySvc[svc], int32(i))
	}
	return bySvc
}

// serviceFanItems builds one service's pools from its judged requests
// (idx into judged): one item per request for the truncation pool, and
// per edge one for the drop and one for the rise pool, each against the
// normal of the request's operation; operations without one are left
// out.
func serviceFanItems(acc *spanAcc, judged []*fanRec, idx []int32, descNorm map[opKey]fanNorm, callNorm map[fanCallKey]fanNorm,
	calleeList map[opKey][]string) (descItems []fanItem, dropItems, riseItems map[[2]string][]fanItem) {
	dropItems, riseItems = map[[2]string][]fanItem{}, map[[2]string][]fanItem{}
	for _, i := range idx {
		r := judged[i]
		k := acc.ops[r.op]
		if d, ok := descNorm[k]; ok && d.mean > 0 {
			x := float64(r.desc)
			descItems = append(descItems, fanItem{at: r.at, x: x, exp: d.mean,
				flag: x < d.lo, failed: r.failed, normShare: d.low})
		}
		for _, c := range calleeList[k] {
			f, ok := callNorm[fanCallKey{k, c}]
			if !ok || f.mean == 0 {
				continue
			}
			x := acc.count(r, c)
			e := [2]string{k.service, c}
			dropItems[e] = append(dropItems[e], fanItem{at: r.at, x: x, exp: f.mean, flag: x < f.lo, failed: r.failed, normShare: f.low,
				last: r.last})
			riseItems[e] = append(riseItems[e], fanItem{at: r.at, x: x, exp: f.mean, flag: x > f.hi, failed: r.failed, normShare: f.high})
		}
	}
	return descItems, dropItems, riseItems
}

// lastCallee returns the callee of a request's last call, or "".
func (a *spanAcc) lastCallee(r *fanRec) string { return a.calleeOf(r.last) }

// calleeOf returns the callee of edge e, or "" for −1.
func (a *spanAcc) calleeOf(e int32) string {
	if e < 0 {
		return ""
	}
	return a.edgeList[e][1]
}

// endedBy returns the callee whose answer most (at least half) of a
// drop's flagged requests ended after, when that callee was the last
// call of a smaller share of the caller's normal requests (normLast
// counts of n; callee names an item's last edge): the requests stopped at its answer, and the calls after
// it vanished. It returns "" otherwise, and never the dropped callee.
func endedBy(items []fanItem, dropped string, normLast map[string]float64, n float64, callee func(int32) string) string {
	count := map[string]int{}
	flagged := 0
	for _, it := range items {
		if !it.flag {
			continue
		}
		flagged++
		if c := callee(it.last); c != "" && c != dropped {
			count[c]++
		}
	}
	best, bestN := "", 0
	for _, c := range sortedKeys(count) {
		if count[c] > bestN {
			best, bestN = c, count[c]
		}
	}
	if best == "" || 2*bestN < flagged {
		return ""
	}
	share := float64(bestN) / float64(flagged)
	if n > 0 && normLast[best]/n >= share {
		return ""
	}
	return best
}

// endedOwner returns the callee a drop k (caller, callee) is given to
// because the caller's requests ended after its answer (endedBy), or
// "". The callee must have cut its own code path too (a drop of its
// own calls, or its requests truncated): a callee that changed nothing
// of its own answered as it always did, and the caller's code returned
// after it. A caller whose own answer ends its callers' requests keeps
// its drops: the top of a chain of cut code paths is the origin.
func endedOwner(k [2]string, drops map[[2]string]*fanChange, trunc map[string]*fanChange) string {
	cutOwn := func(n string) bool {
		if trunc[n] != nil {
			return true
		}
		for e := range drops {
			if e[0] == n {
				return true
			}
		}
		return false
	}
	c := drops[k].endedBy
	if c == "" || !cutOwn(c) {
		return ""
	}
	for e, ch := range drops {
		if e[1] != k[0] && ch.endedBy == k[0] && e[0] != k[0] {
			return "" // the caller ends its own callers' requests
		}
	}
	return c
}

// fanOwners gives each drop of calls and each truncation to one node
// along the graph. A caller's drop of calls to a callee is its own (its
// code returned early) unless the callee stopped answering (calls to it
// went unanswered from the onset's window to Slack windows later) or
// most of the requests that dropped the calls failed (a failed call
// ends them: the errors are judged as such). A truncated node owns its
// truncation when it owns a drop, or when none of its callees explains
// it: a callee truncated itself, one whose calls went unanswered, or
// one whose calls from it dropped for a reason not its own.
func fanOwners(acc, ref *spanAcc, lo int64, scan int, cfg Config, callees map[string][]string) map[string]*fanOwner {
	drops, _, trunc := fanSignals(acc, ref, lo, scan, cfg)
	unanswered := func(callee string, at int64) bool {
		w := floorDiv(at, acc.width)
		for k := int64(0); k <= int64(cfg.Slack); k++ {
			if acc.unansweredTo(callee, w+k) > 0 {
				return true
			}
		}
		return false
	}
	owned := map[string]*fanOwner{}
	foreign := map[[2]string]bool{} // drops not the caller's own
	keys := make([][2]string, 0, len(drops))
	for k := range drops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		ch := drops[k]
		if unanswered(k[1], ch.onset) || ch.failedShare >= 0.5 {
			foreign[k] = true
			continue
		}
		if c := endedOwner(k, drops, trunc); c != "" {
			// The callee whose answer ended the requests owns the drop:
			// the calls after it vanished because of what it answered.
			foreign[k] = true
			ended := *ch
			ended.node, ended.metric = c, "ended_after"
			if o := owned[c]; o == nil {
				owned[c] = &fanOwner{change: &ended, lost: map[string]bool{}}
			} else if ended.onset < o.change.onset {
				o.change = &ended // the callees it dropped stay in lost
			}
			continue
		}
		o := owned[k[0]]
		if o == nil {
			o = &fanOwner{change: ch, lost: map[string]bool{}}
			owned[k[0]] = o
		} else if ch.onset < o.change.onset || ch.onset == o.change.onset && ch.size > o.change.size {
			o.change = ch
		}
		o.lost[k[1]] = true
	}
	for _, n := range sortedKeys(trunc) {
		ch := trunc[n]
		if owned[n] != nil || ch.failedShare >= 0.5 {
			continue
		}
		own := true
		for _, c := range callees[n] {
			if trunc[c] != nil || foreign[[2]string{n, c}] || unanswered(c, ch.onset) {
				own = false
				break
			}
		}
		if !own {
			continue
		}
		o := &fanOwner{change: ch, lost: map[string]bool{}}
		for _, c := range callees[n] {
			if drops[[2]string{n, c}] != nil {
				o.lost[c] = true
			}
		}
		owned[n] = o
	}
	return owned
}

// fanJudgements turns a change into one judgement per window from the
// onset's on: a window's requests from the onset on are out when they
// hold fanMinChange fewer than their normal gives, with the Poisson z.
func fanJudgements(ch *fanChange, width, lo int64, nw int) []judgement {
	js := make([]judgement, nw)
	exp, obs, n := make([]float64, nw), make([]float64, nw), make([]int, nw)
	for _, it := range ch.items {
		k := int(floorDiv(it.at, width) - lo)
		if k < 0 || k >= nw {
			continue
		}
		exp[k] += it.exp
		obs[k] += it.x
		n[k]++
	}
	for k := range js {
		if n[k] == 0 {
			continue
		}
		z := (exp[k] - obs[k]) / math.Sqrt(math.Max(exp[k], 1))
		js[k] = judgement{judged: true, out: obs[k] <= (1-fanMinChange)*exp[k], z: math.Max(z, 0),
			metric: ch.metric, base: exp[k] / float64(n[k]), value: obs[k] / float64(n[k]), n: n[k]}
	}
	return js
}

// servedAsBefore reports whether no window from c on has the node's
// latency, self time, slow share or error rate out of range: the calls
// it still got were served as before, so a drop of calls to it is not
// its doing.
func servedAsBefore(js []judgement, c int) bool {
	for _, j := range js[c:] {
		for _, o := range append([]judgement{j}, j.others...) {
			switch o.metric {
			case "latency", "self_time", "self_time_calls", "self_time_drop", "slow_share", "error_rate":
				if o.out {
					return false
				}
			}
		}
	}
	return true
}
