package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Report is what a fit found: the best point overall and per tier, the
// loss surface around the best point, how far the fit moved from what
// the model held, the per-node errors in sample and on held-out windows,
// and the logistic regression beside the grid's values.
type Report struct {
	// Seed and Seeds are the replay seeds every point was scored with,
	// and TickMS the replay's clock resolution (refined by
	// Config.TickCheck): with them Loss scores a model as the fit did.
	Seed   uint64  `json:"seed"`
	Seeds  int     `json:"seeds"`
	TickMS float64 `json:"tick_ms"`
	// Grid is the grid searched (a specification ParseGrid reads back);
	// Points is its size and Evaluated the points replayed.
	Grid      string `json:"grid"`
	Points    int    `json:"points"`
	Evaluated int    `json:"evaluated"`
	// Search is "exhaustive" or "refine" (coarse-to-fine).
	Search string `json:"search"`
	// Weights are the loss terms' weights.
	Weights Weights `json:"weights"`
	// Windows are the windows fitted, with the calibrated model's loss.
	Windows []WindowSummary `json:"windows"`
	// Best is the best point over all tiers; Tiers the best point of
	// each tier, in the grid's tier order.
	Best  PointResult   `json:"best"`
	Tiers []PointResult `json:"tiers,omitempty"`
	// Moved says how far the best point is from the model's own values.
	Moved []Move `json:"moved,omitempty"`
	// Surface describes the loss around the best point, axis by axis.
	Surface []SurfaceAxis `json:"surface"`
	// Plane is the loss over two numeric axes around the best point;
	// nil when the grid has fewer than two numeric axes of two or more
	// values.
	Plane *LossPlane `json:"plane,omitempty"`
	// Calibrated is the point the calibrated model holds, its loss, and
	// whether the fit kept the model as it came.
	Calibrated Calibration `json:"calibrated"`
	// Nodes are the calibrated model's per-node errors over every window
	// (in sample).
	Nodes []NodeError `json:"nodes"`
	// Holdout are the back-tests: each window fitted without it (by the
	// search that chose the calibrated point) and predicted;
	// HoldoutNodes sums their per-node errors.
	Holdout      []HoldoutResult `json:"holdout,omitempty"`
	HoldoutNodes []NodeError     `json:"holdout_nodes,omitempty"`
	// Logistic is the regression cross-check; nil when the observations
	// have no calls.
	Logistic *Logistic `json:"logistic,omitempty"`
	// Base lists the overload bases scaled to the nodes' own failures.
	Base []BaseChange `json:"base,omitempty"`
	// Notes say how observations were read; Warnings what deserves a
	// look (a best point on the grid's edge, a flat parameter).
	Notes    []string `json:"notes,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// WindowSummary describes one fitted window.
type WindowSummary struct {
	Index    int     `json:"index"`
	Start    string  `json:"start"`
	LengthMS float64 `json:"length_ms"`
	Roots    int     `json:"roots"`
	Requests int64   `json:"requests"`
	// Loss is the window's loss under the calibrated model.
	Loss float64 `json:"loss"`
}

// Calibration is what the calibrated model holds. Where the surface
// finds a p or r axis flat, the best point's value on it is a guess and
// the other axes were chosen jointly with that guess, so the fit holds
// the flat axes at the model's own values and searches the other axes
// again (Grid, its points Evaluated): the calibrated model is always a
// point the fit replayed. The fit then keeps the model as it came
// (Kept) unless the calibrated point beats it in sample and, with
// back-tests, predicts the held-out windows no worse.
type Calibration struct {
	// Held names the axes held at the model's values; Grid is the grid
	// searched with them held and Evaluated its points replayed (empty
	// and 0 when none is held: the best point is the calibrated one).
	Held      []string `json:"held,omitempty"`
	Grid      string   `json:"grid,omitempty"`
	Evaluated int      `json:"evaluated,omitempty"`
	// Values is the calibrated point ("model" on held axes), whether or
	// not it was kept.
	Values Point `json:"values"`
	// Loss is the loss of the model written, summed over the windows:
	// Loss(the model) with the report's seeds and tick gives it exactly.
	// Uncalibrated is the model's as it came.
	Loss         float64 `json:"loss"`
	Uncalibrated float64 `json:"uncalibrated_loss"`
	// Backtest sums the held-out windows' losses at the points fitted
	// without them; BacktestUncalibrated the model's as it came on the
	// same windows. Both are 0 without back-tests.
	Backtest             float64 `json:"backtest_loss,omitempty"`
	BacktestUncalibrated float64 `json:"backtest_uncalibrated_loss,omitempty"`
	// Kept, when not empty, says why the calibrated model is the model
	// as it came ("uncalibrated: …"), with only Model.Fit added.
	Kept string `json:"kept,omitempty"`

	sumFit, sumUnc float64
}

// backtest adds a held-out window's losses: at the point fitted without
// it, and of the uncalibrated model.
func (c *Calibration) backtest(fitted, unc float64) {
	c.sumFit += fitted
	c.sumUnc += unc
	c.Backtest, c.BacktestUncalibrated = finite(c.sumFit), finite(c.sumUnc)
}

// keep decides whether the uncalibrated model is kept: when the
// calibrated point's loss in sample (cal) does not beat the uncalibrated
// model's (unc), or when back-tests predict the held-out windows worse
// than the uncalibrated model does.
func (c *Calibration) keep(cal, unc float64) {
	c.Uncalibrated = finite(unc)
	switch {
	case !(cal < unc):
		c.Kept = fmt.Sprintf("uncalibrated: no point beat the uncalibrated model in sample (loss %s, uncalibrated %s)", fmtF(finite(cal)), fmtF(finite(unc)))
	case c.sumFit > c.sumUnc:
		c.Kept = fmt.Sprintf("uncalibrated: no point beat the uncalibrated model on the holdout (back-test loss %s, uncalibrated %s)", fmtF(c.Backtest), fmtF(c.BacktestUncalibrated))
	}
}

// PointResult is a grid point and its loss summed over the windows.
type PointResult struct {
	Index  int     `json:"index"`
	Values Point   `json:"values"`
	Loss   float64 `json:"loss"`
	// Breaks lists the node latency measures the point's replay misses
	// beyond the admissible bounds while the nodes' observed
	// distributions keep them (a constant tier only): a point that
	// breaks one is not admissible (see Report.Warnings).
	Breaks []Break `json:"breaks,omitempty"`
}

// Value returns the point's value on the named axis, or "".
func (p *PointResult) Value(axis string) string { return p.Values.Value(axis) }

// Move is how far the best point moved from the model's value on one
// axis: Best − Centre, also in grid steps.
type Move struct {
	Axis   string  `json:"axis"`
	Centre float64 `json:"centre"`
	Source string  `json:"source"`
	Best   float64 `json:"best"`
	Delta  float64 `json:"delta"`
	Steps  float64 `json:"steps,omitempty"`
}

// SurfaceAxis describes the loss around the best point along one axis:
// the relative loss increase one value down and one up (absent at the
// grid's edge), the curvature d²L/dx², the profile along the whole axis
// and the flat range around the best, and whether the axis is
// identifiable: every neighbour raises the loss by at least
// Config.FlatTolerance. For the tier axis, Gap is the relative increase
// from the best tier to the next best.
type SurfaceAxis struct {
	Axis      string   `json:"axis"`
	Value     string   `json:"value"`
	Minus     *float64 `json:"minus,omitempty"`
	Plus      *float64 `json:"plus,omitempty"`
	Gap       *float64 `json:"gap,omitempty"`
	Curvature float64  `json:"curvature,omitempty"`
	// Low and High bound the values around the best whose loss is
	// within the tolerance of the best's: the parameter's flat range.
	// Profile is the relative loss increase at each value of the axis,
	// the others held at the best point.
	Low          string    `json:"low,omitempty"`
	High         string    `json:"high,omitempty"`
	Profile      []float64 `json:"profile,omitempty"`
	Identifiable bool      `json:"identifiable"`
	Verdict      string    `json:"verdict"`
}

// LossPlane is the loss surface as a map: the loss over two numeric axes
// of the grid, every other axis (the tier included) held at the best
// point. The two axes are those whose profile rises most from the best
// (the best-identified ones); every cell is replayed, in a
// coarse-to-fine search too.
type LossPlane struct {
	// X and Y name the axes; XValues and YValues are their values.
	X       string    `json:"x"`
	Y       string    `json:"y"`
	XValues []float64 `json:"x_values"`
	YValues []float64 `json:"y_values"`
	// Loss[i][j] is the relative loss increase over the best point at
	// (XValues[j], YValues[i]): 0 at the best.
	Loss [][]float64 `json:"loss"`
	// BestX and BestY index the best point's values.
	BestX int `json:"best_x"`
	BestY int `json:"best_y"`
}

// HoldoutResult is one back-test: the grid fitted on every window but
// Window, and Window predicted at that fit's best point.
type HoldoutResult struct {
	Window int   `json:"window"`
	Index  int   `json:"index"`
	Values Point `json:"values"`
	// Loss is the held-out window's loss at the point fitted without
	// it; InSample its loss at the calibrated point (fitted with every
	// window); Uncalibrated the model's as it came.
	Loss         float64     `json:"loss"`
	InSample     float64     `json:"in_sample"`
	Uncalibrated float64     `json:"uncalibrated"`
	Nodes        []NodeError `json:"nodes"`
}

// BaseChange is a node's overload base scaled to its own failures (the
// failed requests that called no failed request), so that replay does
// not count propagated failures twice.
type BaseChange struct {
	Node  string  `json:"node"`
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	Share float64 `json:"own_share"`
}

// Summary is what the calibrated model keeps of the fit (Model.Fit): the
// report without its per-window and per-node detail. Its fields mean
// what the Report's of the same name mean; Windows lists the fitted
// windows' numbers and Nodes the back-test's per-node errors.
type Summary struct {
	Seed       uint64         `json:"seed"`
	Seeds      int            `json:"seeds"`
	TickMS     float64        `json:"tick_ms"`
	Grid       string         `json:"grid"`
	Search     string         `json:"search"`
	Points     int            `json:"points"`
	Evaluated  int            `json:"evaluated"`
	Windows    []int          `json:"windows"`
	Best       PointResult    `json:"best"`
	Calibrated Calibration    `json:"calibrated"`
	Tiers      []PointResult  `json:"tiers,omitempty"`
	Surface    []SurfaceAxis  `json:"surface"`
	Holdout    []HoldoutBrief `json:"holdout,omitempty"`
	Logistic   *LogisticBrief `json:"logistic,omitempty"`
	Moved      []Move         `json:"moved,omitempty"`
	Base       []BaseChange   `json:"base,omitempty"`
	Warnings   []string       `json:"warnings,omitempty"`
	Weights    Weights        `json:"weights"`
	Nodes      []NodeErrBrief `json:"holdout_nodes,omitempty"`
}

// HoldoutBrief is a back-test in the model's fit summary.
type HoldoutBrief struct {
	Window       int     `json:"window"`
	Loss         float64 `json:"loss"`
	InSample     float64 `json:"in_sample"`
	Uncalibrated float64 `json:"uncalibrated"`
}

// LogisticBrief is the regression in the model's fit summary.
type LogisticBrief struct {
	Calls         int           `json:"calls"`
	Failures      int           `json:"failures"`
	Coefficients  []Coefficient `json:"coefficients,omitempty"`
	NodeLoadSlope float64       `json:"node_load_slope,omitempty"`
}

// NodeErrBrief is a node's back-test error in the model's fit summary.
type NodeErrBrief struct {
	Node     string  `json:"node"`
	FailErr  float64 `json:"fail_err"`
	P50Err   float64 `json:"p50_err"`
	P99Err   float64 `json:"p99_err"`
	CallsErr float64 `json:"calls_err"`
}

// summary builds the model's fit summary from the report.
func (r *Report) summary() *Summary {
	s := &Summary{
		Seed: r.Seed, Seeds: r.Seeds, TickMS: r.TickMS, Grid: r.Grid, Calibrated: r.Calibrated, Search: r.Search, Points: r.Points,
		Evaluated: r.Evaluated, Best: r.Best, Tiers: r.Tiers, Surface: r.Surface, Moved: r.Moved,
		Base: r.Base, Warnings: r.Warnings, Weights: r.Weights,
	}
	for _, w := range r.Windows {
		s.Windows = append(s.Windows, w.Index)
	}
	for _, h := range r.Holdout {
		s.Holdout = append(s.Holdout, HoldoutBrief{Window: h.Window, Loss: h.Loss, InSample: h.InSample, Uncalibrated: h.Uncalibrated})
	}
	for _, n := range r.HoldoutNodes {
		s.Nodes = append(s.Nodes, NodeErrBrief{Node: n.Node, FailErr: n.FailErr, P50Err: n.P50Err, P99Err: n.P99Err, CallsErr: n.CallsErr})
	}
	if lg := r.Logistic; lg != nil {
		s.Logistic = &LogisticBrief{Calls: lg.Calls, Failures: lg.Failures, Coefficients: lg.Coefficients, NodeLoadSlope: lg.NodeLoadSlope}
	}
	return s
}

func sortNodeErrors(rows []NodeError) {
	slices.SortFunc(rows, func(a, b NodeError) int { return strings.Compare(a.Node, b.Node) })
}

// finite returns x, or the largest float for ±Inf and NaN (JSON has no
// infinity): a loss that large means the replay ran away.
func finite(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return math.MaxFloat64
	}
	return round6(x)
}
