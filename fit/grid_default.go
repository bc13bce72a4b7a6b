package fit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"cascade"
)

// DefaultGrid returns the grid a fit searches when none is given:
//
//	tier=model|p50|p95|p99|empirical   when nodes have observed tiers
//	p=0.01:0.5:0.01              the seed's range, every edge
//	r=C-0.2:C+0.2:0.1            around the observed re-activation C
//	                             (within [0, 1]), when retries exist
//	k=0:2:0.5                    overload slope, every node
//	theta=0.6:1.2:0.2            overload threshold, every node
//	fanout=1                     the observed fan-out
//
// C is the call-weighted mean of the model's re-activation probabilities,
// rounded to 0.1. With edges, tiers and retries the grid has 50 × 5 × 5
// × 5 × 4 = 25,000 points (15,000 when C is 1 or 0); never fewer than
// 1,000 when the model has edges.
func DefaultGrid(m *cascade.Model) (*Grid, error) {
	var parts []string
	for i := range m.Nodes {
		if m.Nodes[i].Tiers != nil {
			parts = append(parts, ParamTier+"="+strings.Join(DefaultTiers, "|"))
			break
		}
	}
	if len(m.Edges) > 0 {
		parts = append(parts, "p=0.01:0.5:0.01")
	}
	if c, ok := retryCentre(m, ""); ok {
		c = math.Round(c*10) / 10
		lo, hi := math.Max(0, c-0.2), math.Min(1, c+0.2)
		parts = append(parts, fmt.Sprintf("r=%s:%s:0.1", fmtG(lo), fmtG(hi)))
	}
	parts = append(parts, "k=0:2:0.5", "theta=0.6:1.2:0.2")
	if len(m.Edges) > 0 {
		parts = append(parts, "fanout=1")
	}
	return ParseGrid(strings.Join(parts, ","), m)
}

func fmtG(x float64) string { return strconv.FormatFloat(roundGrid(x), 'g', -1, 64) }

// setCentres records the model's value of each numeric axis.
func (g *Grid) setCentres(m *cascade.Model) {
	for i := range g.Axes {
		a := &g.Axes[i]
		switch a.Param {
		case ParamP:
			var sum, w float64
			src := cascade.Default
			for j := range m.Edges {
				e := &m.Edges[j]
				if !edgeMatches(m, e, a.Target) {
					continue
				}
				c := edgeWeight(e)
				sum += c * e.Propagation
				w += c
				if e.Provenance["propagation"] == cascade.Observed {
					src = cascade.Observed
				}
			}
			if w > 0 {
				a.Centre, a.HasCentre, a.CentreSource = sum/w, true, string(src)
			}
		case ParamR:
			if c, ok := retryCentre(m, a.Target); ok {
				a.Centre, a.HasCentre, a.CentreSource = c, true, string(cascade.Observed)
			}
		case ParamK, ParamTheta:
			var sum float64
			n := 0
			src := cascade.Default
			key := "overload.slope"
			if a.Param == ParamTheta {
				key = "overload.threshold"
			}
			for j := range m.Nodes {
				nd := &m.Nodes[j]
				if a.Target != "" && nd.Name != a.Target {
					continue
				}
				v := nd.Overload.Slope
				if a.Param == ParamTheta {
					v = nd.Overload.Threshold
				}
				sum += v
				n++
				if p := nd.Provenance[key]; p != "" && p != cascade.Default {
					src = p
				}
			}
			if n > 0 {
				a.Centre, a.HasCentre, a.CentreSource = sum/float64(n), true, string(src)
			}
		case ParamFanOut:
			a.Centre, a.HasCentre, a.CentreSource = 1, true, string(cascade.Observed)
		}
	}
}

// edgeWeight is an edge's weight in a mean over edges: its observed
// calls, or 1.
func edgeWeight(e *cascade.Edge) float64 {
	if e.Observed != nil && e.Observed.Calls > 0 {
		return float64(e.Observed.Calls)
	}
	return 1
}

// retryCentre returns the call-weighted mean re-activation of the retry
// policies target names (every edge and entry for "").
func retryCentre(m *cascade.Model, target string) (float64, bool) {
	var sum, w float64
	for i := range m.Edges {
		e := &m.Edges[i]
		if e.Retry != nil && edgeMatches(m, e, target) {
			c := edgeWeight(e)
			sum += c * e.Retry.Reactivation
			w += c
		}
	}
	if target == "" {
		for i := range m.Entries {
			if r := m.Entries[i].Retry; r != nil {
				sum += r.Reactivation
				w++
			}
		}
	}
	if w == 0 {
		return 0, false
	}
	return sum / w, true
}

// restrictTier replaces the grid's tier axis by the single tier t.
func (g *Grid) restrictTier(t string) {
	for i := range g.Axes {
		if g.Axes[i].Param == ParamTier {
			g.Axes[i].Labels = []string{t}
			return
		}
	}
	g.Axes = append([]Axis{{Param: ParamTier, Labels: []string{t}}}, g.Axes...)
}
