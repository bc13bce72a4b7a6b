package incident

import (
	"math"
	"sort"
	"strings"
)

// magnitudeAt measures a node's change in window w (see analyse).
func magnitudeAt(acc *spanAcc, edgeNormals map[[2]string]normal, nb normal, name string, w int64) float64 {
	logRatio := func(vals []float64, med float64) float64 {
		if len(vals) == 0 || med <= 0 {
			return 0
		}
		m := quantile(vals, 0.5)
		if m <= 0 {
			return 0
		}
		return math.Max(0, math.Log(m/med))
	}
	var mag, errRise float64
	if x := acc.nodes[name][w]; x != nil && nb.n > 0 {
		mag = logRatio(x.lat.vals, nb.latMed)
		errRise = math.Max(0, float64(x.errs)/float64(max(1, x.n))-nb.errRate)
	}
	for k, en := range edgeNormals {
		if k[1] != name {
			continue
		}
		if e := acc.edges[k][w]; e != nil {
			mag = math.Max(mag, logRatio(e.lat.vals, en.latMed))
		}
	}
	return mag + errRise
}

// accounts reports whether the calls from st to callee account for at
// least half of st's latency change in window w: the rise of their median
// latency as st sees it (over the edge's normal median), times the calls
// per st request, against the rise of st's own median latency. An error
// change (or a window too thin to weigh) is accounted for by any changed
// callee; any change by a callee whose errors rose, when st re-sent
// calls to it in that window (its retries and their backoff are the
// time st lost).
//
// When served is set the calls' latency is read as the callee served
// it (edgeNormals then holds the served normals): the time added
// between the two ends was the caller's own.
func accounts(acc *spanAcc, edgeNormals map[[2]string]normal, served bool, nb normal, st, cs *nodeState, w int64, minCount, pool int) bool {
	callee := cs.name
	j := st.js[st.change]
	if j.metric == "error_rate" || j.metric == "call_error_rate" || strings.HasPrefix(j.metric, "log_") {
		return true
	}
	if m := cs.js[cs.change].metric; m == "error_rate" || m == "call_error_rate" {
		if e := acc.edges[[2]string{st.name, callee}][w]; e != nil && e.retries > 0 {
			return true
		}
	}
	// A thin window is pooled with the next ones (up to pool windows)
	// until it holds minCount requests.
	var ownLat, vals []float64
	var n, calls int64
	for k := int64(0); k < int64(max(1, pool)) && n < int64(minCount); k++ {
		if own := acc.nodes[st.name][w+k]; own != nil {
			n += own.n
			ownLat = append(ownLat, own.lat.vals...)
		}
		if e := acc.edges[[2]string{st.name, callee}][w+k]; e != nil {
			calls += e.calls
			if served {
				vals = append(vals, e.srv.vals...)
			} else {
				vals = append(vals, e.lat.vals...)
			}
		}
	}
	en, ok := edgeNormals[[2]string{st.name, callee}]
	if n < int64(minCount) || nb.n == 0 {
		return true
	}
	if !ok || len(vals) == 0 {
		return false
	}
	rise := quantile(ownLat, 0.5) - nb.latMed
	contrib := (quantile(vals, 0.5) - en.latMed) * float64(calls) / float64(n)
	return rise*contrib > 0 && math.Abs(contrib) >= 0.5*math.Abs(rise)
}

// attributeCalls judges each call edge's latency as the caller sees it
// (its client span) against the edge's normal range, and gives a window
// out of range to one end. When the callee served those calls slower
// (the median of its request spans on the edge rose by at least half as
// much), the time is the callee's. Otherwise it was added between the
// two ends: to the caller when at least two of its judged calls in that
// window are out and they are at least half of them (a delay on all of
// a caller's calls is the caller's: a starved CPU, a full connection
// pool), or when the callee's other callers, judged in that window, see
// no change (only this caller's calls are slow); else to the callee (its
// network). A gap the count test gave to one end (gapOwners) goes to
// it from its onset on. The node keeps whichever of its own judgement and the
// calls' is out and louder.
//
// It returns the edges' normal ranges as the caller saw the calls and as
// the callee served them, and the edge windows whose added time was
// given to the callee.
func attributeCalls(acc, ref *spanAcc, byName map[string]*nodeState, lo int64, nw, scan int, cfg Config, gapOwned map[string]*stepChange, gapAt map[string]int) (map[[2]string]normal, map[[2]string]normal, map[edgeWindow]bool) {
	normals, srvNormals, edges := judgeCallEdges(acc, ref, lo, nw, scan, cfg)
	callers := map[edgeWindow]bool{}
	for i := scan; i < nw; i++ {
		wc := countWindowCalls(edges, i)
		for _, e := range edges {
			j := e.js[i]
			if !j.out {
				continue
			}
			target, served := wc.blame(acc, normals, e, lo, i, gapOwned, gapAt)
			if target == e.to && !served {
				callers[edgeWindow{e.from, e.to, lo + int64(i)}] = true
			}
			if target == e.to && acc.serial[e.to] {
				// A serialised callee is judged by the time it holds its
				// slot; the wait in its queue is not a change of its own.
				continue
			}
			st := byName[target]
			if st == nil {
				continue
			}
			st.js[i] = merge(st.js[i], j)
		}
	}
	return normals, srvNormals, callers
}

// callEdge is one call edge's judgements, window by window, with its
// normal range as the callee served the calls.
type callEdge struct {
	from, to string
	js       []judgement
	srv      normal
}

// sortedCallEdges returns the edges between two different services,
// sorted by caller and then callee, so that the judging runs in the
// same order on every run.
func sortedCallEdges(acc *spanAcc) [][2]string {
	var keys [][2]string
	for _, k := range sortedEdgeKeys(acc.edges) {
		if k[0] != k[1] {
			keys = append(keys, k)
		}
	}
	return keys
}

// edgeAsWin reads an edge window's calls as the caller saw them, so
// that they can be judged like a node's requests.
func edgeAsWin(e *edgeWin) *winAcc {
	if e == nil {
		return nil
	}
	return &winAcc{n: e.calls, lat: e.lat}
}

// edgeAsSrv reads an edge window's calls as the callee served them,
// for the normal that tells the callee's time from the time between.
func edgeAsSrv(e *edgeWin) *winAcc {
	if e == nil {
		return nil
	}
	return &winAcc{n: e.calls, lat: e.srv}
}

// judgeCallEdges judges, in each window from scan on, each edge whose
// normal range holds at least MinCount calls, and returns the edges'
// normals as the caller saw the calls and as the callee served them,
// with the judged edges; an edge too thin to judge is left out.
func judgeCallEdges(acc, ref *spanAcc, lo int64, nw, scan int, cfg Config) (map[[2]string]normal, map[[2]string]normal, []callEdge) {
	normals := map[[2]string]normal{}
	srvNormals := map[[2]string]normal{}
	var edges []callEdge
	for _, k := range sortedCallEdges(acc) {
		base, srvBase := edgeBaseline(acc, ref, k, lo, cfg.BaselineWindows)
		nb := normalOf(base)
		if nb.n < int64(cfg.MinCount) {
			continue
		}
		normals[k] = nb
		e := callEdge{from: k[0], to: k[1], js: make([]judgement, nw), srv: normalOf(srvBase)}
		srvNormals[k] = e.srv
		for i := scan; i < nw; i++ {
			j := nb.judge(edgeAsWin(acc.edges[k][lo+int64(i)]), cfg.Threshold, cfg.MinChange, cfg.MinCount)
			j.metric = "call_" + j.metric
			e.js[i] = j
		}
		edges = append(edges, e)
	}
	return normals, srvNormals, edges
}

// edgeBaseline returns edge k's normal windows as the caller saw them and
// as the callee served them: every reference window in time order, or
// else the first baselineWindows windows from lo.
func edgeBaseline(acc, ref *spanAcc, k [2]string, lo int64, baselineWindows int) (base, srvBase []*winAcc) {
	for _, e := range normalEdgeWins(acc, ref, k, lo, baselineWindows) {
		if e != nil {
			base = append(base, edgeAsWin(e))
			srvBase = append(srvBase, edgeAsSrv(e))
		}
	}
	return base, srvBase
}

// normalEdgeWins returns edge k's normal windows: the reference's, in
// time order, or else the capture's first baselineWindows from lo (nil
// where the edge had no calls).
func normalEdgeWins(acc, ref *spanAcc, k [2]string, lo int64, baselineWindows int) []*edgeWin {
	var out []*edgeWin
	if ref != nil {
		ws := make([]int64, 0, len(ref.edges[k]))
		for w := range ref.edges[k] {
			ws = append(ws, w)
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
		for _, w := range ws {
			out = append(out, ref.edges[k][w])
		}
		return out
	}
	for w := lo; w < lo+int64(baselineWindows); w++ {
		out = append(out, acc.edges[k][w])
	}
	return out
}

// windowCalls counts, for one window, each service's judged and out
// calls as caller and as callee, which decide whose an out call is.
type windowCalls struct {
	judged, out     map[string]int
	inJudged, inOut map[string]int
}

// countWindowCalls counts the judged and out calls of window i over all
// edges before any of them is given to an end.
func countWindowCalls(edges []callEdge, i int) windowCalls {
	judged, out := map[string]int{}, map[string]int{}
	inJudged, inOut := map[string]int{}, map[string]int{}
	for _, e := range edges {
		if e.js[i].judged {
			judged[e.from]++
			inJudged[e.to]++
			if e.js[i].out {
				out[e.from]++
				inOut[e.to]++
			}
		}
	}
	return windowCalls{judged: judged, out: out, inJudged: inJudged, inOut: inOut}
}

// blame gives edge e's out window i to the end that added the time (see
// attributeCalls), and reports whether the callee served the calls slower.
func (c windowCalls) blame(acc *spanAcc, normals map[[2]string]normal, e callEdge, lo int64, i int, gapOwned map[string]*stepChange, gapAt map[string]int) (string, bool) {
	target := e.to
	served := false
	if x := acc.edges[[2]string{e.from, e.to}][lo+int64(i)]; x != nil && len(x.srv.vals) > 0 && len(x.lat.vals) > 0 {
		rise := quantile(x.lat.vals, 0.5) - normals[[2]string{e.from, e.to}].latMed
		srvRise := quantile(x.srv.vals, 0.5) - e.srv.latMed
		served = rise > 0 && srvRise >= 0.5*rise
	}
	gapOwner := func(n, metric string) bool {
		ch := gapOwned[n]
		return ch != nil && ch.metric == metric && gapAt[n] <= i
	}
	switch {
	case served:
	case gapOwner(e.to, "gap_in"):
	case gapOwner(e.from, "gap_out"):
		target = e.from
	case c.out[e.from] >= 2 && 2*c.out[e.from] >= c.judged[e.from]:
		target = e.from
	case c.inJudged[e.to] > 1 && c.inOut[e.to] == 1:
		target = e.from
	}
	return target, served
}

// edgeWindow is one edge in one window.
type edgeWindow struct {
	from, to string
	w        int64
}
