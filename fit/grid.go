package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"cascade"
)

// Parameters a grid can search.
const (
	ParamTier   = "tier"   // the service tier of every node with observed tiers
	ParamP      = "p"      // propagation p of edges
	ParamR      = "r"      // re-activation r of retry policies
	ParamK      = "k"      // overload slope k of nodes
	ParamTheta  = "theta"  // overload threshold θ of nodes
	ParamFanOut = "fanout" // scale of edges' fan-out
)

// params lists the parameters in the order of a grid's axes.
var params = []string{ParamTier, ParamP, ParamR, ParamK, ParamTheta, ParamFanOut}

// Tiers are the service tiers a grid or Config.Tier can name: a constant
// at the observed P50, P95, P99 or mean of each node's exclusive time,
// the piecewise-linear quantile function through P50/P95/P99 ("tiers"),
// the observed quantile points ("empirical"), or each node's service
// distribution as the model holds it ("model": what graph wrote, or a
// user set).
var Tiers = []string{"p50", "p95", "p99", "mean", "tiers", "empirical", TierModel}

// TierModel is the tier that keeps each node's service distribution as
// the model holds it.
const TierModel = "model"

// DefaultTiers are the tiers of the default grid: the model's own
// service distributions (first, so that it wins a tie), the seed's three
// quantiles and the whole observed shape.
var DefaultTiers = []string{TierModel, "p50", "p95", "p99", "empirical"}

func isTier(s string) bool { return slices.Contains(Tiers, s) }

// Edge classes a p, r or fanout axis can target.
const (
	ClassSync    = "sync"    // synchronous edges
	ClassAsync   = "async"   // producer→consumer edges
	ClassVirtual = "virtual" // edges to virtual (uninstrumented) nodes
)

// maxGridPoints bounds a grid's size.
const maxGridPoints = 50_000_000

// Axis is one dimension of a grid: a parameter, the part of the model it
// sets, and its values.
type Axis struct {
	// Param is one of ParamTier, ParamP, ParamR, ParamK, ParamTheta and
	// ParamFanOut.
	Param string `json:"param"`
	// Target narrows the axis: empty for every edge (p, r, fanout) or
	// node (k, theta); an edge class (sync, async, virtual) or an edge
	// "FROM->TO" for p, r and fanout; a node name for k and theta.
	Target string `json:"target,omitempty"`
	// Values are the numeric values, ascending; nil for the tier axis.
	Values []float64 `json:"values,omitempty"`
	// Labels are the tier names of the tier axis.
	Labels []string `json:"labels,omitempty"`
	// Step is the spacing of a range (start:stop:step); 0 for lists.
	Step float64 `json:"step,omitempty"`
	// Centre is the value the model holds before the fit (for r and
	// p, what graph observed), and HasCentre says whether there is one.
	Centre    float64 `json:"centre,omitempty"`
	HasCentre bool    `json:"has_centre,omitempty"`
	// CentreSource is the provenance of the centre (observed, default…).
	CentreSource string `json:"centre_source,omitempty"`
	// Held, for an axis written NAME=model, holds what the axis names at
	// the model's own values (each edge's or node's): the axis has one
	// value, "model". A fit holds an axis it finds flat this way when it
	// searches the other axes again.
	Held bool `json:"held,omitempty"`
}

// HeldValue is the value of a held axis: the model's own values.
const HeldValue = "model"

// Name returns the axis name as the grid specification writes it: the
// parameter, and ".TARGET" when it has one.
func (a *Axis) Name() string {
	if a.Target == "" {
		return a.Param
	}
	return a.Param + "." + a.Target
}

// Len returns the number of values.
func (a *Axis) Len() int {
	if a.Param == ParamTier {
		return len(a.Labels)
	}
	return len(a.Values)
}

// Numeric reports whether the axis has numbers (every axis but tier).
func (a *Axis) Numeric() bool { return a.Param != ParamTier }

// Format returns value i as text.
func (a *Axis) Format(i int) string {
	if a.Held {
		return HeldValue
	}
	if !a.Numeric() {
		return a.Labels[i]
	}
	return strconv.FormatFloat(a.Values[i], 'g', -1, 64)
}

// spec returns the axis as a specification fragment.
func (a *Axis) spec() string {
	var vals string
	switch {
	case a.Held:
		vals = HeldValue
	case !a.Numeric():
		vals = strings.Join(a.Labels, "|")
	case a.Step > 0 && len(a.Values) > 1:
		vals = fmt.Sprintf("%s:%s:%s", a.Format(0), a.Format(len(a.Values)-1), strconv.FormatFloat(a.Step, 'g', -1, 64))
	default:
		s := make([]string, len(a.Values))
		for i := range a.Values {
			s[i] = a.Format(i)
		}
		vals = strings.Join(s, "|")
	}
	return a.Name() + "=" + vals
}

// Grid is the set of points a fit searches: the product of its axes.
// Point i has coordinates in mixed radix, the first axis most
// significant, so the points of the first tier come first.
type Grid struct {
	Axes []Axis `json:"axes"`
}

// Size returns the number of points.
func (g *Grid) Size() int {
	n := 1
	for i := range g.Axes {
		n *= g.Axes[i].Len()
	}
	return n
}

// String returns the grid's specification, which ParseGrid reads back.
func (g *Grid) String() string {
	s := make([]string, len(g.Axes))
	for i := range g.Axes {
		s[i] = g.Axes[i].spec()
	}
	return strings.Join(s, ",")
}

// Coords returns point idx's value index on each axis.
func (g *Grid) Coords(idx int) []int {
	c := make([]int, len(g.Axes))
	for a := len(g.Axes) - 1; a >= 0; a-- {
		n := g.Axes[a].Len()
		c[a] = idx % n
		idx /= n
	}
	return c
}

// Index returns the point at coordinates c.
func (g *Grid) Index(c []int) int {
	idx := 0
	for a := range g.Axes {
		idx = idx*g.Axes[a].Len() + c[a]
	}
	return idx
}

// Values returns point idx as axis=value pairs, in axis order.
func (g *Grid) Values(idx int) Point {
	c := g.Coords(idx)
	out := make(Point, len(g.Axes))
	for a := range g.Axes {
		out[a] = AxisValue{Axis: g.Axes[a].Name(), Value: g.Axes[a].Format(c[a])}
	}
	return out
}

// ParseGrid reads a grid specification: axes separated by commas, each
// NAME=VALUES where NAME is a parameter (tier, p, r, k, theta, fanout),
// optionally followed by ".TARGET", and VALUES is a range START:STOP:STEP
// (STOP included), a list A|B|C, or "model" (a numeric axis held at the
// model's own values, each edge's or node's):
//
//	p=0.01:0.5:0.01,r=0:1:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,tier=p50|p95|p99|empirical,fanout=1
//	p.async=0.1|0.5,p.frontend->route=0:1:0.25,k.mysql=0:4:1
//
// Targets: p, r and fanout take an edge class (sync, async, virtual) or
// an edge FROM->TO; k and theta take a node name. An axis with a target
// overrides the untargeted axis of its parameter for what it names (an
// edge beats a class, a class beats every edge). Parameters the grid
// does not name keep the model's values. m, when not nil, is checked:
// targets must name its edges and nodes, r needs a retry policy to set,
// and centres are read from it.
func ParseGrid(spec string, m *cascade.Model) (*Grid, error) {
	g := &Grid{}
	seen := map[string]bool{}
	var errs []error
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, vals, ok := strings.Cut(part, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("grid %q: want NAME=VALUES", part))
			continue
		}
		param, target, _ := strings.Cut(strings.TrimSpace(name), ".")
		a := Axis{Param: strings.ToLower(param), Target: target}
		if !slices.Contains(params, a.Param) {
			errs = append(errs, fmt.Errorf("grid %q: parameter %q, want one of %s", part, param, strings.Join(params, ", ")))
			continue
		}
		if seen[a.Name()] {
			errs = append(errs, fmt.Errorf("grid %q: axis %s given twice", part, a.Name()))
			continue
		}
		seen[a.Name()] = true
		if err := a.parseValues(strings.TrimSpace(vals)); err != nil {
			errs = append(errs, fmt.Errorf("grid %q: %w", part, err))
			continue
		}
		if m != nil {
			if err := a.check(m); err != nil {
				errs = append(errs, fmt.Errorf("grid %q: %w", part, err))
				continue
			}
		}
		g.Axes = append(g.Axes, a)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(g.Axes) == 0 {
		return nil, errors.New("grid: no axis")
	}
	g.sort()
	if float64(g.Size()) > maxGridPoints || g.Size() <= 0 {
		return nil, fmt.Errorf("grid: more than %d points", maxGridPoints)
	}
	if m != nil {
		g.setCentres(m)
	}
	return g, nil
}

// sort puts the axes in parameter order, then untargeted before
// targeted, then by target.
func (g *Grid) sort() {
	rank := func(p string) int { return slices.Index(params, p) }
	slices.SortStableFunc(g.Axes, func(x, y Axis) int {
		if d := rank(x.Param) - rank(y.Param); d != 0 {
			return d
		}
		return strings.Compare(x.Target, y.Target)
	})
}

func (a *Axis) parseValues(s string) error {
	if s == "" {
		return errors.New("no values")
	}
	if a.Param == ParamTier {
		if a.Target != "" {
			return errors.New("tier takes no target")
		}
		for _, t := range strings.Split(s, "|") {
			t = strings.ToLower(strings.TrimSpace(t))
			if !isTier(t) {
				return fmt.Errorf("tier %q, want one of %s", t, strings.Join(Tiers, ", "))
			}
			if slices.Contains(a.Labels, t) {
				return fmt.Errorf("tier %q given twice", t)
			}
			a.Labels = append(a.Labels, t)
		}
		return nil
	}
	if strings.EqualFold(s, HeldValue) {
		// One value: the model's own, which Apply restores.
		a.Held, a.Values = true, []float64{0}
		return nil
	}
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("range %q: %q is not a number", s, p)
			}
			v[i] = x
		}
		start, stop, step := v[0], v[1], v[2]
		if step <= 0 || stop < start {
			return fmt.Errorf("range %q: want START:STOP:STEP with START <= STOP and STEP > 0", s)
		}
		count := math.Floor((stop-start)/step+1e-9) + 1
		if !(count <= 10_000) {
			return fmt.Errorf("range %q: %g values, at most 10000", s, count)
		}
		n := int(count)
		for i := 0; i < n; i++ {
			a.Values = append(a.Values, roundGrid(start+float64(i)*step))
		}
		if n > 1 {
			a.Step = step
		}
	} else {
		for _, p := range strings.Split(s, "|") {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%q is not a number (want START:STOP:STEP or A|B|C)", p)
			}
			a.Values = append(a.Values, x)
		}
		slices.Sort(a.Values)
		a.Values = slices.Compact(a.Values)
	}
	lo, hi := a.Values[0], a.Values[len(a.Values)-1]
	switch a.Param {
	case ParamP, ParamR:
		if lo < 0 || hi > 1 {
			return fmt.Errorf("%s values must be in [0, 1]", a.Param)
		}
	case ParamK, ParamTheta:
		if lo < 0 {
			return fmt.Errorf("%s values must not be negative", a.Param)
		}
	case ParamFanOut:
		if lo <= 0 {
			return errors.New("fanout values must be positive")
		}
	}
	return nil
}

// roundGrid removes the float noise of start+i·step (0.30000000000000004).
func roundGrid(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 10, 64), 64)
	return r
}

// check verifies the axis's target against the model.
func (a *Axis) check(m *cascade.Model) error {
	switch a.Param {
	case ParamP, ParamR, ParamFanOut:
		n := 0
		for i := range m.Edges {
			if edgeMatches(m, &m.Edges[i], a.Target) && (a.Param != ParamR || m.Edges[i].Retry != nil) {
				n++
			}
		}
		if a.Param == ParamR && a.Target == "" {
			for i := range m.Entries {
				if m.Entries[i].Retry != nil {
					n++
				}
			}
		}
		if n == 0 {
			if a.Param == ParamR {
				return fmt.Errorf("%s: no edge or entry with a retry policy to set", a.Name())
			}
			return fmt.Errorf("%s: no edge of the model matches %q", a.Name(), a.Target)
		}
	case ParamK, ParamTheta:
		if a.Target != "" && m.Node(a.Target) == nil {
			return fmt.Errorf("%s: no node %q in the model", a.Name(), a.Target)
		}
	}
	return nil
}

// edgeMatches reports whether edge e is one that target names: every
// edge (""), a class, or FROM->TO.
func edgeMatches(m *cascade.Model, e *cascade.Edge, target string) bool {
	switch target {
	case "":
		return true
	case ClassSync:
		return !e.Async
	case ClassAsync:
		return e.Async
	case ClassVirtual:
		n := m.Node(e.To)
		return n != nil && n.Virtual
	}
	return target == e.From+"->"+e.To
}

// edgeRank says how specific target is: an edge beats a class, a class
// beats every edge.
func edgeRank(target string) int {
	switch target {
	case "":
		return 0
	case ClassSync, ClassAsync, ClassVirtual:
		return 1
	}
	return 2
}

// fromCentre is how far point i lies from the model's own values: the
// sum over numeric axes with a centre of the distance in steps (in value
// over the axis's range when it has no step).
func (g *Grid) fromCentre(i int) float64 {
	c := g.Coords(i)
	var d float64
	for a := range g.Axes {
		ax := &g.Axes[a]
		if !ax.Numeric() || !ax.HasCentre || len(ax.Values) < 2 {
			continue
		}
		span := ax.Step
		if span <= 0 {
			span = ax.Values[len(ax.Values)-1] - ax.Values[0]
		}
		if span > 0 {
			d += math.Abs(ax.Values[c[a]]-ax.Centre) / span
		}
	}
	return d
}
