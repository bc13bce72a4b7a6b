package fit

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// regimeAlpha is the significance below which a node's own failures are
// taken to differ between the fitted windows, and regimeMinOwn the own
// failures a node needs before the question is asked.
const (
	regimeAlpha  = 1e-3
	regimeMinOwn = 10
)

// regimeWarnings flags nodes whose own failure rate differs between the
// fitted windows by more than chance: a χ² test of homogeneity of own
// failures over requests, window by window. The model gives a node one
// base rate (plus what load adds through the overload curve), so a burst
// of its own failures in some windows — an incident inside the capture —
// makes the fit average two regimes: on the fixture generator a hard
// dependency under an error burst in half the windows fits p = 0.8, where
// the same fault throughout fits 1.0 (TestShapesFit). The fit goes on; the
// warning says what to do.
func regimeWarnings(obs *Observations) []string {
	type acc struct {
		own, req []float64
	}
	by := map[string]*acc{}
	var names []string
	for _, w := range obs.Windows {
		for _, n := range w.Nodes {
			if n.Requests == 0 {
				continue
			}
			a := by[n.Name]
			if a == nil {
				a = &acc{}
				by[n.Name] = a
				names = append(names, n.Name)
			}
			a.own = append(a.own, float64(n.Own))
			a.req = append(a.req, float64(n.Requests))
		}
	}
	var out []string
	for _, name := range names {
		a := by[name]
		if len(a.req) < 2 {
			continue
		}
		var own, req float64
		for i := range a.req {
			own += a.own[i]
			req += a.req[i]
		}
		if own < regimeMinOwn || own == req {
			continue
		}
		p := own / req
		var x2 float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range a.req {
			e := a.req[i] * p
			d := a.own[i] - e
			x2 += d * d / (e * (1 - p))
			r := a.own[i] / a.req[i]
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
		df := float64(len(a.req) - 1)
		pv := distuv.ChiSquared{K: df}.Survival(x2)
		if pv >= regimeAlpha {
			continue
		}
		out = append(out, fmt.Sprintf("%s's own failures differ between the windows beyond chance "+
			"(%.1f%% to %.1f%% of its requests; χ² = %.1f, %d df, p = %.1e): unless load explains it "+
			"through the overload curve, the windows hold two regimes and the fit averages them; "+
			"fit the windows of one (--windows)", name, 100*lo, 100*hi, x2, len(a.req)-1, pv))
	}
	return out
}
