package fit

import (
	"fmt"
	"math"
	"slices"

	"cascade"
	"cascade/internal/numfmt"
)

// A constant tier (p50, p95, p99, mean) replaces each node's service
// distribution by one number: the spread goes, and a constant at the
// P95 moves every request's time to the P95. Such a point can still
// score well when the failures are what the loss is dominated by (a
// timeout crossed by every call, a retry that fails because the first
// attempt was slow), and its replay then misses the latency the capture
// shows. A what-if read from that model answers for a system that does
// not exist. So a constant-tier point is admissible only when its replay
// keeps the in-sample latency fit: at every node of the model (queues
// aside) with at least admitMinRequests observed requests, the replayed
// P50 within admitP50 of the observed, and with admitMinRequestsP99 the
// P99 within admitP99 (or either within one tick), pooled over the
// windows as Report.Nodes pools them. What the nodes' own observed
// distributions (every node at the empirical tier, the rest of the model
// as it came) miss already is not held against a tier: a constant breaks
// only what the distribution keeps. The bounds are rank's
// (rank.DefaultTolerance, rank's fit check of the capture): a model the
// fit writes is one rank trusts.
//
// Points are then ordered by the number of node measures they break,
// then by loss: an admissible point (none broken: every point of a
// distribution tier, model, tiers or empirical, and a constant tier
// that keeps the latency) always beats an inadmissible one, and among
// inadmissible points (a grid of constant tiers only) the one that
// breaks the fewest wins.
const (
	admitP50            = 0.15
	admitP99            = 0.5
	admitMinRequests    = 20
	admitMinRequestsP99 = 100
)

// constantTier reports whether tier t replaces a distribution by a
// constant.
func constantTier(t string) bool {
	switch t {
	case "p50", "p95", "p99", "mean":
		return true
	}
	return false
}

// latSims are one replay's simulated P50 and P99 per window, per node of
// the window (in the order of Window.Nodes).
type latSims [][][2]float64

// Break is one node's latency measure that a point's replay misses
// beyond the admissible bound while the nodes' observed distributions
// keep it.
type Break struct {
	Node    string `json:"node"`
	Measure string `json:"measure"` // p50 or p99
	// Observed and Replayed are in ms, pooled over the windows; Gap is
	// Replayed/Observed − 1.
	Observed float64 `json:"observed_ms"`
	Replayed float64 `json:"replayed_ms"`
	Gap      float64 `json:"gap"`
}

// String says the break in words, its times as rank's fit line writes
// them: "gateway p50 2.08 ms observed, 8.67 ms replayed (+317%)",
// "frontend p50 1.46 s observed, 1.71 s replayed (+17%)".
func (b Break) String() string {
	return fmt.Sprintf("%s %s %s observed, %s replayed (%+.0f%%)", b.Node, b.Measure, numfmt.MS(b.Observed), numfmt.MS(b.Replayed), 100*b.Gap)
}

// gate holds what judging a point's latency needs: which nodes of each
// window are judged, and the reference replay (the nodes' observed
// distributions).
type gate struct {
	tierAxis int      // the grid's tier axis, -1 without one
	judged   [][]bool // per window, per node: in the model and not a queue
	ref      latSims  // the reference replay; nil until set
	tickMS   float64  // a gap within one tick is no gap
	names    []string // judged node names, sorted
	nodeID   [][]int  // per window, per node: index into names, -1 when not judged
}

func newGate(g *Grid, base *cascade.Model, windows []Window, tick float64) *gate {
	gt := &gate{tierAxis: -1, tickMS: tick}
	if g != nil {
		gt.tierAxis = tierAxis(g)
	}
	judge := map[string]bool{}
	for i := range base.Nodes {
		n := &base.Nodes[i]
		judge[n.Name] = n.Queue == nil
	}
	for _, w := range windows {
		for _, n := range w.Nodes {
			if judge[n.Name] && !slices.Contains(gt.names, n.Name) {
				gt.names = append(gt.names, n.Name)
			}
		}
	}
	slices.Sort(gt.names)
	for _, w := range windows {
		ids := make([]int, len(w.Nodes))
		for j, n := range w.Nodes {
			ids[j] = -1
			if judge[n.Name] {
				ids[j], _ = slices.BinarySearch(gt.names, n.Name)
			}
		}
		gt.nodeID = append(gt.nodeID, ids)
	}
	return gt
}

// gated reports whether point idx of g is judged: a constant tier.
func (gt *gate) gated(g *Grid, idx int) bool {
	if gt == nil || gt.tierAxis < 0 {
		return false
	}
	return constantTier(g.Axes[gt.tierAxis].Labels[g.Coords(idx)[gt.tierAxis]])
}

// reference returns base with every node that has observed tiers at the
// empirical tier: the nodes' observed distributions, against which a
// constant tier is judged.
func reference(base *cascade.Model) *cascade.Model {
	out := *base
	out.Nodes = slices.Clone(base.Nodes)
	for i := range out.Nodes {
		if n := &out.Nodes[i]; n.Tiers != nil {
			n.Service = TierDist("empirical", n.Tiers)
		}
	}
	return &out
}

// misses returns the node measures sims miss beyond the admissible
// bounds, pooled over the windows but exclude: per node, the
// request-weighted means of the windows' observed and replayed P50 and
// P99, judged where the node's requests reach admitMinRequests (P50)
// and admitMinRequestsP99 (P99). A nil sims (a replay that ran away)
// misses nothing it can tell.
func (gt *gate) misses(windows []Window, sims latSims, exclude int) []Break {
	if sims == nil {
		return nil
	}
	n := len(gt.names)
	req := make([]float64, n)
	acc := make([][4]float64, n) // obs p50, sim p50, obs p99, sim p99 (weighted sums)
	for w := range windows {
		if w == exclude || sims[w] == nil {
			continue
		}
		for j, o := range windows[w].Nodes {
			id := gt.nodeID[w][j]
			if id < 0 || o.Requests <= 0 {
				continue
			}
			r := float64(o.Requests)
			req[id] += r
			acc[id][0] += r * o.P50MS
			acc[id][1] += r * sims[w][j][0]
			acc[id][2] += r * o.P99MS
			acc[id][3] += r * sims[w][j][1]
		}
	}
	var out []Break
	for id, name := range gt.names {
		if req[id] < admitMinRequests {
			continue
		}
		a := acc[id]
		if b, ok := gt.judge(name, "p50", a[0]/req[id], a[1]/req[id], admitP50); !ok {
			out = append(out, b)
		}
		if req[id] >= admitMinRequestsP99 {
			if b, ok := gt.judge(name, "p99", a[2]/req[id], a[3]/req[id], admitP99); !ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// judge compares one measure: within bound (relative to the observed)
// or within one tick.
func (gt *gate) judge(node, measure string, obs, sim, bound float64) (Break, bool) {
	if !(obs > 0) || math.Abs(sim-obs) <= gt.tickMS {
		return Break{}, true
	}
	gap := sim/obs - 1
	if math.Abs(gap) <= bound {
		return Break{}, true
	}
	return Break{Node: node, Measure: measure, Observed: round6(obs), Replayed: round6(sim), Gap: round6(gap)}, false
}

// breaks returns what sims miss that the reference keeps, over the
// windows but exclude.
func (gt *gate) breaks(windows []Window, sims latSims, exclude int) []Break {
	ms := gt.misses(windows, sims, exclude)
	if len(ms) == 0 {
		return nil
	}
	ref := gt.misses(windows, gt.ref, exclude)
	return slices.DeleteFunc(ms, func(b Break) bool {
		return slices.ContainsFunc(ref, func(r Break) bool { return r.Node == b.Node && r.Measure == b.Measure })
	})
}
