package fit

import (
	"fmt"
	"math"
	"slices"
	"time"

	"cascade"
	"cascade/replay"
)

// evaluator replays grid points through the observation windows and
// scores them.
type evaluator struct {
	cfg     Config
	grid    *Grid
	base    *cascade.Model
	windows []Window
	rcfg    []replay.Config
	weight  [][]float64 // per window, per node of the window: 0 when not in the model
	wscale  []float64   // per window: its roots ÷ the mean roots of a window
	// gate judges the latency of constant-tier points (see admit.go).
	gate *gate
}

func newEvaluator(cfg Config, g *Grid, base *cascade.Model, windows []Window) *evaluator {
	ev := &evaluator{cfg: cfg, grid: g, base: base, windows: windows}
	ev.gate = newGate(g, base, windows, float64(cfg.Tick)/1e6)
	inModel := map[string]bool{}
	for i := range base.Nodes {
		inModel[base.Nodes[i].Name] = true
	}
	for _, w := range windows {
		rc := replay.DefaultConfig()
		rc.Seed, rc.Seeds, rc.Tick = cfg.Seed, cfg.Seeds, cfg.Tick
		rc.Duration = time.Duration(w.LengthMS*1e6) + cfg.Drain
		rc.Window = rc.Duration
		rc.Observed = w.Arrivals
		if len(rc.Observed) == 0 {
			rc.Traffic = &cascade.Traffic{Kind: cascade.TrafficObserved}
		}
		if l := base.Load; l != nil && l.Shape == cascade.LoadClosed && l.Clients > 0 {
			// Clients that wait for their answers: replaying the instants
			// they sent at as an open load would send the next request
			// whether or not the model answered the last, so a model a
			// little slower than the system queues without bound. The
			// same clients, thinking as they did, load the model as they
			// loaded the system.
			rc.Observed = nil
			rc.Traffic = &cascade.Traffic{Kind: cascade.TrafficClosed, Users: l.Clients, ThinkMS: l.ThinkMS, DurationMS: w.LengthMS}
		}
		ev.rcfg = append(ev.rcfg, rc)
		wt := make([]float64, len(w.Nodes))
		var sum float64
		for j, n := range w.Nodes {
			if inModel[n.Name] {
				wt[j] = math.Sqrt(float64(n.Requests) + 1)
				sum += wt[j]
			}
		}
		for j := range wt {
			if sum > 0 {
				wt[j] /= sum
			}
		}
		ev.weight = append(ev.weight, wt)
	}
	var roots float64
	for _, w := range windows {
		roots += float64(w.Roots)
	}
	for _, w := range windows {
		sc := 1.0
		if roots > 0 {
			sc = float64(w.Roots) * float64(len(windows)) / roots
		}
		ev.wscale = append(ev.wscale, sc)
	}
	return ev
}

// simNode is what replay gave for one node of a window, averaged over
// the seeds.
type simNode struct {
	Calls    float64
	Failures float64
	P50MS    float64
	P95MS    float64
	P99MS    float64
	Queue    float64
}

// errRunaway marks a point whose replay ran away (see replay.ErrRunaway):
// its loss is +Inf.
var errRunaway = replay.ErrRunaway

// simulate replays model m through window w with every seed and returns
// the simulated values of the window's nodes, in the order of
// windows[w].Nodes.
func (ev *evaluator) simulate(m *cascade.Model, w int) ([]simNode, error) {
	win := &ev.windows[w]
	rc := ev.rcfg[w]
	e, err := replay.NewEngine(m, rc)
	if err != nil {
		return nil, err
	}
	out := make([]simNode, len(win.Nodes))
	k := float64(max(1, ev.cfg.Seeds))
	stretch := float64(rc.Duration) / 1e6 / math.Max(win.LengthMS, 1)
	for s := 0; s < max(1, ev.cfg.Seeds); s++ {
		r := e.Run(rc.Seed + uint64(s))
		if r.Counts.Aborted {
			return nil, fmt.Errorf("seed %d: %w", r.Seed, errRunaway)
		}
		i := 0
		for j := range win.Nodes {
			for i < len(r.Nodes) && r.Nodes[i].Name < win.Nodes[j].Name {
				i++
			}
			if i == len(r.Nodes) || r.Nodes[i].Name != win.Nodes[j].Name {
				continue
			}
			n := &r.Nodes[i]
			o := &out[j]
			o.Calls += float64(n.Calls) / k
			o.Failures += float64(n.Failures) / k
			o.P50MS += n.LatencyP50MS / k
			o.P95MS += n.LatencyP95MS / k
			o.P99MS += n.LatencyP99MS / k
			o.Queue += n.QueueMean * stretch / k
		}
	}
	return out, nil
}

// windowLoss scores window w's simulated values against its observations:
// for each node of the model, weighted by √(requests + 1) (normalised
// over the window's nodes), and the window by its roots ÷ the mean roots
// of a window (a window holding a few traces cut off at the data's edge
// counts little),
//
//	failure: (2·asin√f_sim − 2·asin√f_obs)²        (variance-stabilised rates)
//	latency: ½·Σ_{q=P50,P99} ln²((q_sim + δ)/(q_obs + δ))   (δ = one tick; only with requests)
//	volume:  ln²((calls_sim + 1)/(requests_obs + 1))
//	queue:   ln²((depth_sim + 1)/(depth_obs + 1))    (where a metric gives depth)
//
// each times its weight in Config.Weights.
func (ev *evaluator) windowLoss(w int, sim []simNode) float64 {
	win := &ev.windows[w]
	wt := ev.weight[w]
	W := ev.cfg.Weights
	delta := float64(ev.cfg.Tick) / 1e6
	var loss float64
	for j := range win.Nodes {
		if wt[j] == 0 {
			continue
		}
		o, s := &win.Nodes[j], &sim[j]
		t := nodeTerms(o, s, delta)
		loss += wt[j] * (W.Failure*t.failure + W.Latency*t.latency + W.Volume*t.volume + W.Queue*t.queue)
	}
	return ev.wscale[w] * loss
}

// terms are one node's loss terms before weighting.
type terms struct{ failure, latency, volume, queue float64 }

func nodeTerms(o *NodeObs, s *simNode, delta float64) terms {
	var t terms
	fo := rate(float64(o.Failures), float64(o.Requests))
	fs := rate(s.Failures, s.Calls)
	d := 2*math.Asin(math.Sqrt(fs)) - 2*math.Asin(math.Sqrt(fo))
	t.failure = d * d
	if o.Requests > 0 {
		a := math.Log((s.P50MS + delta) / (o.P50MS + delta))
		b := math.Log((s.P95MS + delta) / (o.P95MS + delta))
		c := math.Log((s.P99MS + delta) / (o.P99MS + delta))
		t.latency = (a*a + b*b + c*c) / 3
	}
	v := math.Log((s.Calls + 1) / (float64(o.Requests) + 1))
	t.volume = v * v
	if o.HasQueue {
		q := math.Log((s.Queue + 1) / (o.QueueDepth + 1))
		t.queue = q * q
	}
	return t
}

func rate(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Min(1, a/b)
}

// point replays grid point idx through every window and returns its loss
// per window (+Inf for a window whose replay ran away) and, for a point
// the gate judges (a constant tier), its simulated latencies.
func (ev *evaluator) point(idx int) ([]float64, latSims, error) {
	l, lat, err := ev.modelEval(ev.grid.Apply(ev.base, idx), ev.gate.gated(ev.grid, idx))
	if err != nil {
		return nil, nil, fmt.Errorf("point %d, %w", idx, err)
	}
	return l, lat, nil
}

// modelLoss replays model m through every window and returns its loss
// per window; +Inf for a window whose replay ran away.
func (ev *evaluator) modelLoss(m *cascade.Model) ([]float64, error) {
	l, _, err := ev.modelEval(m, false)
	return l, err
}

// modelEval is modelLoss, with m's simulated P50 and P99 per window and
// node when lat is set (nil for a window whose replay ran away).
func (ev *evaluator) modelEval(m *cascade.Model, lat bool) ([]float64, latSims, error) {
	out := make([]float64, len(ev.windows))
	var ls latSims
	if lat {
		ls = make(latSims, len(ev.windows))
	}
	for w := range ev.windows {
		sim, err := ev.simulate(m, w)
		if err != nil {
			if isRunaway(err) {
				out[w] = math.Inf(1)
				continue
			}
			return nil, nil, fmt.Errorf("window %d: %w", ev.windows[w].Index, err)
		}
		out[w] = ev.windowLoss(w, sim)
		if lat {
			ls[w] = make([][2]float64, len(sim))
			for j := range sim {
				ls[w][j] = [2]float64{sim[j].P50MS, sim[j].P99MS}
			}
		}
	}
	return out, ls, nil
}

// setReference replays the gate's reference (every node at its observed
// distribution) when the grid has a constant tier to judge.
func (ev *evaluator) setReference() error {
	gt := ev.gate
	if gt.tierAxis < 0 || !slices.ContainsFunc(ev.grid.Axes[gt.tierAxis].Labels, constantTier) {
		return nil
	}
	_, ls, err := ev.modelEval(reference(ev.base), true)
	if err != nil {
		return fmt.Errorf("reference replay: %w", err)
	}
	gt.ref = ls
	return nil
}

// Loss scores model m as it stands against the observation windows, the
// way Run scores a grid point: each window replayed with Config.Seeds
// seeds from Config.Seed at Config.Tick (Run's refined tick is in the
// report's TickMS), scored by the loss of docs/fit.md ("Scoring a point"),
// summed over the windows as Report.Calibrated.Loss is (rounded to six
// decimals; the largest float when a replay ran away). The calibrated
// model Run returns scores its Report.Calibrated.Loss exactly.
func Loss(cfg Config, m *cascade.Model, obs *Observations) (float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	cfg = cfg.withDefaults()
	if err := m.Validate(); err != nil {
		return 0, fmt.Errorf("model: %w", err)
	}
	if obs == nil || len(obs.Windows) == 0 {
		return 0, ErrNoWindows
	}
	ev := newEvaluator(cfg, &Grid{}, m, obs.Windows)
	l, err := ev.modelLoss(m)
	if err != nil {
		return 0, err
	}
	return finite(objective(l, -1)), nil
}

// NodeError compares one node's observed and simulated values, over one
// window or summed over several.
type NodeError struct {
	Node string `json:"node"`
	// Requests are observed; Calls simulated.
	Requests int64   `json:"requests"`
	Calls    float64 `json:"calls"`
	// FailObs and FailSim are failure rates; FailErr is FailSim −
	// FailObs.
	FailObs float64 `json:"fail_obs"`
	FailSim float64 `json:"fail_sim"`
	FailErr float64 `json:"fail_err"`
	// P50, P95 and P99 latency, observed and simulated (ms), and the
	// relative errors sim/obs − 1.
	P50Obs float64 `json:"p50_obs_ms"`
	P50Sim float64 `json:"p50_sim_ms"`
	P50Err float64 `json:"p50_err"`
	P95Obs float64 `json:"p95_obs_ms"`
	P95Sim float64 `json:"p95_sim_ms"`
	P95Err float64 `json:"p95_err"`
	P99Obs float64 `json:"p99_obs_ms"`
	P99Sim float64 `json:"p99_sim_ms"`
	P99Err float64 `json:"p99_err"`
	// CallsErr is Calls/Requests − 1.
	CallsErr float64 `json:"calls_err"`
	// QueueObs and QueueSim are mean queue depths, where observed.
	QueueObs float64 `json:"queue_obs,omitempty"`
	QueueSim float64 `json:"queue_sim,omitempty"`
}

// nodeErrors compares the model's nodes in window w. Latencies and queue
// depths of several windows are request-weighted means.
func nodeErrors(win *Window, sim []simNode, inModel func(string) bool) []NodeError {
	var out []NodeError
	for j := range win.Nodes {
		o, s := &win.Nodes[j], &sim[j]
		if !inModel(o.Name) {
			continue
		}
		out = append(out, NodeError{
			Node: o.Name, Requests: o.Requests, Calls: s.Calls,
			FailObs: rate(float64(o.Failures), float64(o.Requests)), FailSim: rate(s.Failures, s.Calls),
			P50Obs: o.P50MS, P50Sim: s.P50MS, P95Obs: o.P95MS, P95Sim: s.P95MS, P99Obs: o.P99MS, P99Sim: s.P99MS,
			QueueObs: o.QueueDepth, QueueSim: s.Queue,
		})
	}
	for i := range out {
		out[i].finish()
	}
	return out
}

// finish derives the errors and rounds.
func (e *NodeError) finish() {
	e.FailErr = e.FailSim - e.FailObs
	e.P50Err = relErr(e.P50Sim, e.P50Obs)
	e.P95Err = relErr(e.P95Sim, e.P95Obs)
	e.P99Err = relErr(e.P99Sim, e.P99Obs)
	e.CallsErr = relErr(e.Calls, float64(e.Requests))
	for _, f := range []*float64{&e.Calls, &e.FailObs, &e.FailSim, &e.FailErr, &e.P50Obs, &e.P50Sim, &e.P50Err,
		&e.P95Obs, &e.P95Sim, &e.P95Err, &e.P99Obs, &e.P99Sim, &e.P99Err, &e.CallsErr, &e.QueueObs, &e.QueueSim} {
		*f = round6(*f)
	}
}

func relErr(sim, obs float64) float64 {
	if obs == 0 {
		if sim == 0 {
			return 0
		}
		return 1
	}
	return sim/obs - 1
}

// sumNodeErrors merges per-window errors into one row per node:
// requests and calls add up, rates and latencies are request-weighted
// means.
func sumNodeErrors(per [][]NodeError) []NodeError {
	idx := map[string]int{}
	var out []NodeError
	var wsum []float64
	for _, rows := range per {
		for _, r := range rows {
			i, ok := idx[r.Node]
			if !ok {
				i = len(out)
				idx[r.Node] = i
				out = append(out, NodeError{Node: r.Node})
				wsum = append(wsum, 0)
			}
			a := &out[i]
			w := float64(r.Requests)
			a.Requests += r.Requests
			a.Calls += r.Calls
			if w > 0 {
				a.FailObs += w * r.FailObs
				a.P50Obs += w * r.P50Obs
				a.P95Obs += w * r.P95Obs
				a.P99Obs += w * r.P99Obs
				a.FailSim += w * r.FailSim
				a.P50Sim += w * r.P50Sim
				a.P95Sim += w * r.P95Sim
				a.P99Sim += w * r.P99Sim
				a.QueueObs += w * r.QueueObs
				a.QueueSim += w * r.QueueSim
				wsum[i] += w
			}
		}
	}
	for i := range out {
		if w := wsum[i]; w > 0 {
			a := &out[i]
			for _, f := range []*float64{&a.FailObs, &a.P50Obs, &a.P95Obs, &a.P99Obs, &a.FailSim, &a.P50Sim, &a.P95Sim, &a.P99Sim, &a.QueueObs, &a.QueueSim} {
				*f /= w
			}
		}
		out[i].finish()
	}
	sortNodeErrors(out)
	return out
}
