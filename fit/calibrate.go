package fit

// This file writes the model the fit found: the calibrated one, or the
// model as it came with the report's summary.

import (
	"encoding/json"
	"maps"
	"slices"

	"cascade"
)

// calibrate returns base with point best's values, provenance "fit" on
// what the grid set (not on what a held axis keeps), and the report's
// summary in Model.Fit.
func calibrate(base *cascade.Model, g *Grid, best int, rep *Report) (*cascade.Model, error) {
	out := g.Apply(base, best)
	for i := range out.Nodes {
		out.Nodes[i].Provenance = maps.Clone(out.Nodes[i].Provenance)
	}
	for i := range out.Edges {
		out.Edges[i].Provenance = maps.Clone(out.Edges[i].Provenance)
	}
	set := func(p *map[string]cascade.Provenance, key string) {
		if *p == nil {
			*p = map[string]cascade.Provenance{}
		}
		(*p)[key] = cascade.Fitted
	}
	c := g.Coords(best)
	for a := range g.Axes {
		ax := &g.Axes[a]
		switch {
		case ax.Held:
			// The model keeps its own values, and their provenance.
		case ax.Param == ParamTier:
			if ax.Labels[c[a]] == TierModel {
				continue
			}
			for i := range out.Nodes {
				if out.Nodes[i].Tiers != nil {
					set(&out.Nodes[i].Provenance, "service_ms")
				}
			}
		case ax.Param == ParamP || ax.Param == ParamR || ax.Param == ParamFanOut:
			if ax.Param == ParamFanOut && ax.Values[c[a]] == 1 {
				continue
			}
			key := map[string]string{ParamP: "propagation", ParamR: "retry.reactivation", ParamFanOut: "fan_out"}[ax.Param]
			for i := range out.Edges {
				e := &out.Edges[i]
				owner := g.owner(ax.Param, func(t string) bool { return edgeMatches(out, e, t) })
				if b := &base.Edges[i]; ax.Param == ParamP && e.Propagation == b.Propagation && b.Provenance["propagation"] == cascade.Observed {
					continue // the measured value held (measured)
				}
				if owner == a && (ax.Param != ParamR || e.Retry != nil) {
					set(&e.Provenance, key)
				}
			}
		case ax.Param == ParamK || ax.Param == ParamTheta:
			key := "overload.slope"
			if ax.Param == ParamTheta {
				key = "overload.threshold"
			}
			for i := range out.Nodes {
				n := &out.Nodes[i]
				if g.owner(ax.Param, func(t string) bool { return t == "" || t == n.Name }) == a {
					set(&n.Provenance, key)
				}
			}
		}
	}
	b, err := json.Marshal(rep.summary())
	if err != nil {
		return nil, err
	}
	out.Fit = b
	out.Sort()
	return out, nil
}

// uncalibrated returns model m unchanged but for the report's summary in
// Model.Fit: the fit kept it (Calibration.Kept says why).
func uncalibrated(m *cascade.Model, rep *Report) (*cascade.Model, error) {
	out := *m
	out.Nodes, out.Edges, out.Entries = slices.Clone(m.Nodes), slices.Clone(m.Edges), slices.Clone(m.Entries)
	b, err := json.Marshal(rep.summary())
	if err != nil {
		return nil, err
	}
	out.Fit = b
	return &out, nil
}

// owner returns the axis of param whose value Apply leaves on what match
// accepts (the most specific matching target, the last of equals), or
// -1.
func (g *Grid) owner(param string, match func(target string) bool) int {
	own := -1
	for a := range g.Axes {
		ax := &g.Axes[a]
		if ax.Param != param || !match(ax.Target) {
			continue
		}
		if own < 0 || edgeRank(ax.Target) >= edgeRank(g.Axes[own].Target) {
			own = a
		}
	}
	return own
}
