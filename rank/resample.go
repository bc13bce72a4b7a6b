package rank

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"cascade"
)

// resample returns m with the parameters it read from its capture drawn
// again from their sampling distributions, the draw keyed on seed: a
// parametric bootstrap. Replayed with seed, the baseline and every
// candidate get the same draw, so their paired differences carry the
// uncertainty of what the capture measured as well as the replay's own
// noise, and a thin capture widens the intervals.
//
// What is drawn, from each node's and edge's observed counts:
//   - a node's service time, scaled by exp(Z·cv/√n): the mean of n
//     requests whose exclusive times vary by cv (their coefficient of
//     variation, from the observed tiers) is known to about cv/√n;
//   - a node's own failure probability (an independent failure process
//     with at least one failure seen), from Beta(k + ½, n − k + ½), the
//     Jeffreys posterior of k failures in n requests;
//   - an edge's propagation, from Beta over the logical calls whose last
//     attempt failed (EdgeObserved.FinalFailed);
//   - an open entry's rate, scaled by Gamma(N, N) of the N arrivals it
//     was read from (its traced requests, or its rate over the capture's
//     length when counters scaled it up from sampled traces).
//
// Structure (slots, fan-out, retry policies, timeouts, a closed loop's
// clients) is not drawn: it is configuration, not an estimate. Nothing
// without observations is drawn, so a hand-built model replays as is.
func resample(m *cascade.Model, seed uint64) *cascade.Model {
	out := *m
	out.Nodes = slices.Clone(m.Nodes)
	out.Edges = slices.Clone(m.Edges)
	out.Entries = slices.Clone(m.Entries)
	for i := range out.Nodes {
		n := &out.Nodes[i]
		ob := n.Observed
		if ob == nil || ob.Requests < 2 || n.Queue != nil {
			continue
		}
		rng := drawRNG(seed, "node", n.Name)
		nreq := float64(ob.Requests)
		if cv := serviceCV(n); cv > 0 {
			f := math.Exp(rng.NormFloat64() * cv / math.Sqrt(nreq))
			n.Service = scaled(n.Service, f)
			if n.FailService != nil {
				fs := scaled(*n.FailService, f)
				n.FailService = &fs
			}
		}
		if o := n.Overload; o.Gaps == nil && o.Base > 0 && o.Base < 1 {
			k := math.Round(o.Base * nreq)
			if k >= 1 {
				n.Overload.Base = distuv.Beta{Alpha: k + 0.5, Beta: nreq - k + 0.5, Src: rng}.Rand()
			}
		}
	}
	for i := range out.Edges {
		e := &out.Edges[i]
		ob := e.Observed
		if ob == nil || ob.FinalFailed < 1 || e.Propagation <= 0 || e.Propagation >= 1 {
			continue
		}
		rng := drawRNG(seed, "edge", e.From+"->"+e.To)
		t := float64(ob.FinalFailed)
		k := e.Propagation * t
		e.Propagation = distuv.Beta{Alpha: k + 0.5, Beta: t - k + 0.5, Src: rng}.Rand()
	}
	if l := m.Load; l == nil || l.Shape != cascade.LoadClosed {
		for i := range out.Entries {
			en := &out.Entries[i]
			n := m.Node(en.Node)
			if n == nil || n.Observed == nil || n.Observed.Requests < 2 || en.RatePerSec <= 0 {
				continue
			}
			rng := drawRNG(seed, "entry", en.Node+" "+en.Operation)
			// The arrivals the rate was read from: the traced requests,
			// or, for a rate scaled up from counters (sampled traces),
			// the rate over the capture's length.
			c := max(float64(n.Observed.Requests), en.RatePerSec*m.Source.Length().Seconds())
			en.RatePerSec *= distuv.Gamma{Alpha: c, Beta: c, Src: rng}.Rand()
		}
	}
	return &out
}

// drawRNG is the random stream of one parameter's draw for seed: the
// same for every model that holds the parameter, whatever else changed.
func drawRNG(seed uint64, kind, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// serviceCV is the coefficient of variation of a node's exclusive time:
// from its observed tiers' quantile points, else from its p50 and p99 as
// a lognormal's, else 0 (nothing to draw from).
func serviceCV(n *cascade.Node) float64 {
	t := n.Tiers
	if t == nil {
		return 0
	}
	if len(t.Points) > 2 {
		var mean, sq float64
		for _, p := range t.Points {
			mean += p
		}
		mean /= float64(len(t.Points))
		for _, p := range t.Points {
			sq += (p - mean) * (p - mean)
		}
		if mean > 0 {
			return math.Sqrt(sq/float64(len(t.Points)-1)) / mean
		}
		return 0
	}
	if t.P50 > 0 && t.P99 > t.P50 {
		s := math.Log(t.P99/t.P50) / 2.326
		return math.Sqrt(math.Exp(s*s) - 1)
	}
	return 0
}

// scaled multiplies a distribution's Scale by f.
func scaled(d cascade.Dist, f float64) cascade.Dist {
	s := d.ScaleValue() * f
	d.Scale = &s
	return d
}
