package fit

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat"
)

// Logistic is the cross-check of seed 002, section 3.1: a logistic
// regression of per-call failure on load features,
//
//	P(call fails) = σ(β₀ + β₁·upstream load + β₂·node load + β₃·arrival rate + β₄·attempt)
//
// fitted by maximum likelihood with a small L2 penalty (λ = 1e-4 on the
// standardised features, intercept unpenalised) with gonum's BFGS.
type Logistic struct {
	// Calls counts the calls fitted (a uniform sample), Failures those
	// that failed.
	Calls    int `json:"calls"`
	Failures int `json:"failures"`
	// Coefficients are per unit of each raw feature, intercept first.
	Coefficients []Coefficient `json:"coefficients,omitempty"`
	// LogLik is the fitted log-likelihood, NullLogLik that of the
	// intercept alone; PseudoR2 is McFadden's 1 − LogLik/NullLogLik.
	LogLik     float64 `json:"log_lik,omitempty"`
	NullLogLik float64 `json:"null_log_lik,omitempty"`
	PseudoR2   float64 `json:"pseudo_r2,omitempty"`
	// NodeLoadSlope is the marginal effect of the node's load on the
	// failure probability at the features' means, β₂·P̄(1−P̄): the
	// counterpart of the overload slope k.
	NodeLoadSlope float64 `json:"node_load_slope,omitempty"`
	// Note says why there are no coefficients, when there are none.
	Note string `json:"note,omitempty"`
}

// Coefficient is one term of the regression.
type Coefficient struct {
	Feature string `json:"feature"`
	// Estimate is per unit of the raw feature; StdErr its standard error
	// (from the inverse Hessian), Z = Estimate/StdErr, OddsRatio =
	// exp(Estimate).
	Estimate  float64 `json:"estimate"`
	StdErr    float64 `json:"stderr"`
	Z         float64 `json:"z"`
	OddsRatio float64 `json:"odds_ratio"`
	// Mean and SD describe the feature over the calls.
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// Features of the regression, in order.
var logitFeatures = []string{"upstream_load", "node_load", "arrival_rate", "attempt"}

const logitL2 = 1e-4

// FitLogistic fits the regression to calls. A feature that does not vary
// is left out (its coefficient is 0).
func FitLogistic(calls []Call) (*Logistic, error) {
	lg := &Logistic{Calls: len(calls), Failures: countFailures(calls)}
	if note := nothingToRegress(lg); note != "" {
		lg.Note = note
		return lg, nil
	}
	ds := newLogitDesign(calls)
	pbar := float64(lg.Failures) / float64(ds.n)
	res, err := ds.minimise(pbar)
	if res == nil {
		return nil, err
	}
	b := res.X
	se, haveCov := ds.standardErrors(b)
	coef := ds.rawCoefficients(b, se)
	lg.Coefficients = coef
	ds.setLikelihoods(lg, b, pbar)
	lg.NodeLoadSlope = nodeLoadSlope(coef, b)
	if !haveCov {
		lg.Note = "the Hessian is not positive definite: standard errors unknown"
	}
	return lg, nil
}

// countFailures counts the calls that failed, the regression's ones.
func countFailures(calls []Call) int {
	failures := 0
	for _, c := range calls {
		if c.Failed {
			failures++
		}
	}
	return failures
}

// nothingToRegress says why lg cannot be fitted (no calls, or all of one
// outcome), or "" when it can.
func nothingToRegress(lg *Logistic) string {
	switch {
	case lg.Calls == 0:
		return "no calls"
	case lg.Failures == 0:
		return "no call failed: nothing to regress"
	case lg.Failures == lg.Calls:
		return "every call failed: nothing to regress"
	}
	return ""
}

// logitDesign is the regression's data: the raw features with their
// means and standard deviations, and the standardised design matrix of
// the features that vary, which the fit works on.
type logitDesign struct {
	n, d  int         // calls; columns of x (intercept and varying features)
	raw   [][]float64 // raw[j][i] is feature j of call i
	y     []float64   // 1 for a failed call, else 0
	cols  []int       // the features that vary, the columns of x after the intercept
	means []float64
	sds   []float64
	x     []float64 // row-major, intercept first
}

// newLogitDesign reads the features of calls and standardises those that
// vary, so the penalty weighs each alike and BFGS is well conditioned.
func newLogitDesign(calls []Call) *logitDesign {
	n := len(calls)
	raw := make([][]float64, len(logitFeatures))
	for j := range raw {
		raw[j] = make([]float64, n)
	}
	y := make([]float64, n)
	for i, c := range calls {
		raw[0][i], raw[1][i], raw[2][i], raw[3][i] = c.UpstreamLoad, c.NodeLoad, c.ArrivalRate, c.Attempt
		if c.Failed {
			y[i] = 1
		}
	}
	// Standardise the features that vary.
	var cols []int
	means := make([]float64, len(raw))
	sds := make([]float64, len(raw))
	for j := range raw {
		means[j], sds[j] = stat.MeanStdDev(raw[j], nil)
		if sds[j] > 1e-12 {
			cols = append(cols, j)
		}
	}
	d := len(cols) + 1
	x := make([]float64, n*d) // row-major, intercept first
	for i := 0; i < n; i++ {
		x[i*d] = 1
		for k, j := range cols {
			x[i*d+k+1] = (raw[j][i] - means[j]) / sds[j]
		}
	}
	return &logitDesign{n: n, d: d, raw: raw, y: y, cols: cols, means: means, sds: sds, x: x}
}

// nll is the penalised negative log-likelihood per call at b, the
// objective BFGS minimises; it fills grad with its gradient when grad is
// not nil.
func (ds *logitDesign) nll(b []float64, grad []float64) float64 {
	n, d, x, y := ds.n, ds.d, ds.x, ds.y
	var f float64
	if grad != nil {
		clear(grad)
	}
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		var z float64
		for k := range row {
			z += row[k] * b[k]
		}
		// log(1+e^z) − y·z, computed stably.
		f += softplus(z) - y[i]*z
		if grad != nil {
			r := sigmoid(z) - y[i]
			for k := range row {
				grad[k] += r * row[k]
			}
		}
	}
	f /= float64(n)
	for k := 1; k < d; k++ {
		f += logitL2 / 2 * b[k] * b[k]
	}
	if grad != nil {
		for k := range grad {
			grad[k] /= float64(n)
			if k > 0 {
				grad[k] += logitL2 * b[k]
			}
		}
	}
	return f
}

// minimise fits the standardised coefficients with BFGS, starting from
// the intercept alone at the failure share pbar.
func (ds *logitDesign) minimise(pbar float64) (*optimize.Result, error) {
	p := optimize.Problem{
		Func: func(b []float64) float64 { return ds.nll(b, nil) },
		Grad: func(grad, b []float64) { ds.nll(b, grad) },
	}
	init := make([]float64, ds.d)
	init[0] = math.Log(pbar / (1 - pbar))
	return optimize.Minimize(p, init, &optimize.Settings{GradientThreshold: 1e-9, MajorIterations: 500}, &optimize.BFGS{})
}

// hessian is the Hessian of the total penalised negative log-likelihood
// at b, whose inverse gives the standard errors.
func (ds *logitDesign) hessian(b []float64) *mat.SymDense {
	n, d, x := ds.n, ds.d, ds.x
	h := mat.NewSymDense(d, nil)
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		var z float64
		for k := range row {
			z += row[k] * b[k]
		}
		w := sigmoid(z) * (1 - sigmoid(z))
		for r := 0; r < d; r++ {
			for c := r; c < d; c++ {
				h.SetSym(r, c, h.At(r, c)+w*row[r]*row[c])
			}
		}
	}
	for k := 1; k < d; k++ {
		h.SetSym(k, k, h.At(k, k)+logitL2*float64(n))
	}
	return h
}

// standardErrors returns the standard error of each standardised
// coefficient at b, NaN for all when the Hessian cannot be inverted, and
// whether it could be.
func (ds *logitDesign) standardErrors(b []float64) (se func(k int) float64, haveCov bool) {
	h := ds.hessian(b)
	var chol mat.Cholesky
	var cov mat.SymDense
	haveCov = chol.Factorize(h)
	if haveCov {
		if err := chol.InverseTo(&cov); err != nil {
			haveCov = false
		}
	}
	se = func(k int) float64 {
		if !haveCov {
			return math.NaN()
		}
		return math.Sqrt(math.Max(0, cov.At(k, k)))
	}
	return se, haveCov
}

// rawCoefficients turns the standardised coefficients b and their
// standard errors back into raw units, intercept first, since a reader
// thinks in loads and rates, not in standard deviations of them.
func (ds *logitDesign) rawCoefficients(b []float64, se func(int) float64) []Coefficient {
	raw, means, sds := ds.raw, ds.means, ds.sds
	b0 := b[0]
	coef := make([]Coefficient, len(raw)+1)
	for j := range raw {
		coef[j+1] = Coefficient{Feature: logitFeatures[j], Mean: means[j], SD: sds[j]}
	}
	for k, j := range ds.cols {
		c := &coef[j+1]
		c.Estimate = b[k+1] / sds[j]
		c.StdErr = se(k+1) / sds[j]
		b0 -= b[k+1] * means[j] / sds[j]
	}
	coef[0] = Coefficient{Feature: "intercept", Estimate: b0, StdErr: se(0)}
	for i := range coef {
		c := &coef[i]
		if c.StdErr > 0 {
			c.Z = c.Estimate / c.StdErr
		}
		c.OddsRatio = math.Exp(c.Estimate)
		for _, f := range []*float64{&c.Estimate, &c.StdErr, &c.Z, &c.OddsRatio, &c.Mean, &c.SD} {
			*f = round6(*f)
		}
	}
	return coef
}

// setLikelihoods sets lg's fitted and null log-likelihoods and McFadden's
// pseudo-R²; the fitted one leaves the penalty out, so it compares with
// the null one.
func (ds *logitDesign) setLikelihoods(lg *Logistic, b []float64, pbar float64) {
	n, d := ds.n, ds.d
	ll := -ds.nll(b, nil) * float64(n)
	for k := 1; k < d; k++ {
		ll += logitL2 / 2 * b[k] * b[k] * float64(n)
	}
	lg.LogLik = round6(ll)
	lg.NullLogLik = round6(float64(lg.Failures)*math.Log(pbar) + float64(n-lg.Failures)*math.Log(1-pbar))
	if lg.NullLogLik != 0 {
		lg.PseudoR2 = round6(1 - lg.LogLik/lg.NullLogLik)
	}
}

// nodeLoadSlope is the marginal effect of node load at the means of the
// features, where the standardised features are all 0 and only the
// intercept b[0] counts.
func nodeLoadSlope(coef []Coefficient, b []float64) float64 {
	zbar := b[0]
	pm := sigmoid(zbar)
	return round6(coef[2].Estimate * pm * (1 - pm))
}

// sigmoid is the logistic function, computed without overflow for
// either sign of z.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// softplus is log(1 + e^z), computed without overflow or loss of
// precision at either end.
func softplus(z float64) float64 {
	if z > 30 {
		return z
	}
	if z < -30 {
		return math.Exp(z)
	}
	return math.Log1p(math.Exp(z))
}
