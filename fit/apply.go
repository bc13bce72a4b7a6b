package fit

import (
	"slices"

	"cascade"
)

// Apply returns a copy of m with the values of point idx set: the tier's
// service distribution on every node with observed tiers (m's own for
// the tier "model"), p on the
// edges' propagation, r on the re-activation of existing retry policies
// (edges, and entries for an untargeted r), k and θ on the nodes'
// overload curves, and the fan-out scale on the edges' fan-out (scaled
// from m's fan-out); a held axis (NAME=model) restores m's own values
// of what it names, over any less specific axis. m is not changed; the copy shares m's read-only
// parts (provenance maps, quantile points).
func (g *Grid) Apply(m *cascade.Model, idx int) *cascade.Model {
	out := *m
	out.Nodes = slices.Clone(m.Nodes)
	out.Edges = slices.Clone(m.Edges)
	out.Entries = slices.Clone(m.Entries)
	out.Fit = nil
	c := g.Coords(idx)
	// More specific targets apply last, so they win.
	for rank := 0; rank <= 2; rank++ {
		for a := range g.Axes {
			ax := &g.Axes[a]
			if ax.Numeric() && edgeRank(ax.Target) != rank {
				continue
			}
			if !ax.Numeric() && rank != 0 {
				continue
			}
			applyAxis(&out, m, ax, c[a])
		}
	}
	return &out
}

func applyAxis(out, base *cascade.Model, ax *Axis, i int) {
	switch ax.Param {
	case ParamTier:
		for j := range out.Nodes {
			n := &out.Nodes[j]
			if n.Tiers != nil {
				n.Service = TierDist(ax.Labels[i], n.Tiers)
				if ax.Labels[i] == TierModel {
					n.Service = base.Nodes[j].Service
				}
			}
		}
	case ParamP, ParamR, ParamFanOut:
		v := ax.Values[i]
		for j := range out.Edges {
			e, b := &out.Edges[j], &base.Edges[j]
			if !edgeMatches(out, e, ax.Target) {
				continue
			}
			switch ax.Param {
			case ParamP:
				e.Propagation = measured(b, v)
				if ax.Held {
					e.Propagation = b.Propagation
				}
			case ParamR:
				if e.Retry != nil {
					r := *e.Retry
					r.Reactivation = v
					if ax.Held {
						r.Reactivation = b.Retry.Reactivation
					}
					e.Retry = &r
				}
			case ParamFanOut:
				e.FanOut = b.FanOut
				if !ax.Held {
					e.FanOut = b.FanOut.Times(v)
				}
			}
		}
		if ax.Param == ParamR && ax.Target == "" {
			for j := range out.Entries {
				if en := &out.Entries[j]; en.Retry != nil {
					r := *en.Retry
					r.Reactivation = v
					if ax.Held {
						r.Reactivation = base.Entries[j].Retry.Reactivation
					}
					en.Retry = &r
				}
			}
		}
	case ParamK, ParamTheta:
		v := ax.Values[i]
		for j := range out.Nodes {
			n, b := &out.Nodes[j], &base.Nodes[j]
			if ax.Target != "" && n.Name != ax.Target {
				continue
			}
			switch {
			case ax.Param == ParamK && ax.Held:
				n.Overload.Slope = b.Overload.Slope
			case ax.Param == ParamK:
				n.Overload.Slope = v
			case ax.Held:
				n.Overload.Threshold = b.Overload.Threshold
			default:
				n.Overload.Threshold = v
			}
		}
	}
}

// measured returns the propagation p the grid gives an edge, kept
// within the 95% interval of what the capture measured on it
// (cascade.EdgeObserved.PropagationInterval) when graph read the edge's
// propagation from its failed calls: a fit searches what the evidence
// leaves open, and does not set 0.4 where hundreds of failed calls all
// failed their caller.
func measured(e *cascade.Edge, p float64) float64 {
	if e.Provenance["propagation"] != cascade.Observed {
		return p
	}
	lo, hi, ok := e.Observed.PropagationInterval()
	if !ok {
		return p
	}
	return round6(min(max(p, lo), hi))
}

// TierDist returns the service distribution of tier t built from observed
// tiers: a constant at P50, P95, P99 or the mean; the piecewise-linear
// quantile function through P50, P95 and P99 ("tiers"); or the observed
// quantile points ("empirical", which falls back to "tiers" when there
// are none). The tier "model" keeps a node's own distribution, which
// Apply reads from the model; here it gives "tiers".
func TierDist(t string, tr *cascade.Tiers) cascade.Dist {
	switch t {
	case "p50":
		return cascade.Const(tr.P50)
	case "p95":
		return cascade.Const(tr.P95)
	case "p99":
		return cascade.Const(tr.P99)
	case "mean":
		return cascade.Const(tr.Mean)
	case "empirical":
		if len(tr.Points) > 0 {
			return cascade.Dist{Kind: cascade.DistEmpirical, Points: tr.Points}
		}
	}
	return cascade.Dist{Kind: cascade.DistTiers, P50: tr.P50, P95: tr.P95, P99: tr.P99}
}
