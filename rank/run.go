package rank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"cascade"
	"cascade/replay"
)

// Report is what Run found: the baseline, every candidate scored against
// it, the best compatible set, the capacity curve and the metastability
// check. Same model, configuration and seeds give the same Report at any
// parallelism.
type Report struct {
	// Model is the model's name.
	Model string `json:"model"`
	// Objective ranks the rows.
	Objective Objective `json:"objective"`
	// Seeds are the seeds every candidate and the baseline replayed.
	Seeds []uint64 `json:"seeds"`
	// DurationMS is each replay's time of arrivals, DrainMS the time it
	// ran on after them for the work in flight to end (a root request
	// still out then is unfinished, not a success), TickMS its tick.
	DurationMS float64 `json:"duration_ms"`
	DrainMS    float64 `json:"drain_ms,omitempty"`
	TickMS     float64 `json:"tick_ms"`
	// TickNote says how the tick check (Config.TickCheck) refined the
	// tick, empty when it kept it or did not run.
	TickNote string `json:"tick_note,omitempty"`
	// Regimes are the traffics each candidate ran under: the normal one,
	// then the surge (when Config.SurgeFactor > 0).
	Regimes []Regime `json:"regimes"`
	// Baseline summarises the baseline per regime.
	Baseline []*replay.Summary `json:"baseline"`
	// Rows are the candidates, ranked: wins by gain, then not enough
	// data, no measurable effect, worse and failed.
	Rows []Row `json:"rows"`
	// Set is the best compatible set of wins, tried together; nil when
	// nothing wins.
	Set *Set `json:"set,omitempty"`
	// Capacity is the capacity curve; nil when not swept.
	Capacity *CapacityCurve `json:"capacity,omitempty"`
	// Metastability is the surge check; nil without a surge regime.
	Metastability *Metastability `json:"metastability,omitempty"`
	// Resampled reports that each seed replayed its own draw of the
	// parameters read from the capture (Config.Resample): the intervals
	// and the noise floor carry the data's uncertainty with the replay's
	// noise.
	Resampled bool `json:"resampled,omitempty"`
	// Fit is how well the baseline, replayed under the observed traffic,
	// matches what the capture measured at each node; nil when the
	// ranking's traffic is not the observed one or the model holds no
	// observations. When a gap is beyond its tolerance no row is a win or
	// worse: each such row is OffCapture.
	Fit *Fit `json:"fit,omitempty"`
	// Basis is the data the model rests on; nil for a model not built
	// from traces (by hand, or from aggregated series). When its Thin is
	// set no row is a win or worse: each such row is NotEnoughData.
	Basis *Basis `json:"basis,omitempty"`
	// NoiseFloor is the baseline's seed-to-seed standard deviation of
	// the objective (in the units of a row's Objective): a change must
	// move the objective by more than this, beyond its interval excluding
	// zero, to be a win or worse.
	NoiseFloor float64 `json:"noise_floor"`
	// Flows reports that the baseline's replays count flows (the model
	// has message queues or async edges): the objective then reads a
	// flow's success, goodput and p99 in place of the root request's
	// (ObjectiveMetric), and the effects add the flow metrics.
	Flows bool `json:"flows,omitempty"`
}

// ObjectiveMetric returns the metric the report's objective read (as
// named in the effects), "" for the composite.
func (r *Report) ObjectiveMetric() string { return r.Objective.ScoredMetric(r.Flows) }

// Regime is one traffic the candidates run under.
type Regime struct {
	// Name describes the traffic ("observed rates (Poisson 3.33/s)",
	// "surge ×2 from 20 s for 20 s").
	Name string `json:"name"`
	// Traffic is the replay's traffic; nil means the model's entry rates.
	Traffic *cascade.Traffic `json:"traffic,omitempty"`
}

// Row is one candidate scored against the baseline.
type Row struct {
	// Rank is the candidate's place among the wins, from 1; 0 for the
	// others.
	Rank int `json:"rank,omitempty"`
	// Candidate is the change.
	Candidate Candidate `json:"candidate"`
	// Verdict says where the objective's interval lies against zero.
	Verdict Verdict `json:"verdict"`
	// Objective is the paired difference on the objective (candidate −
	// baseline, averaged over the regimes; relative for the composite),
	// with its 95% interval over the seeds.
	Objective Interval `json:"objective"`
	// Gain is Objective.Mean signed so that positive is better.
	Gain float64 `json:"gain"`
	// Effects are the paired differences per metric and regime.
	Effects []Effect `json:"effects,omitempty"`
	// Cost is the load shed and the latency added.
	Cost Cost `json:"cost"`
	// Why names the mechanism: the per-node quantity that changes most.
	Why string `json:"why,omitempty"`
	// WhyAtBroker reports that Why is a broker's or a queue's own change
	// (its memory alarm, its lost messages): what the change does at the
	// broker.
	WhyAtBroker bool `json:"why_at_broker,omitempty"`
	// Recovered counts the surge regime's seeds whose goodput recovered
	// after the surge; −1 without a surge regime.
	Recovered int `json:"recovered_seeds"`
	// Error says why a failed candidate could not be replayed.
	Error string `json:"error,omitempty"`
}

// ErrNoEntries is returned for a model whose entries offer no traffic to
// sweep.
var ErrNoEntries = errors.New("the model's entries have no rate to sweep")

// Run ranks remediations for the model: it replays the baseline and
// every candidate (derived ones and Config.Scenarios) over the same seeds
// under the normal traffic and a surge, scores each against the baseline
// with paired 95% intervals, and tries the best compatible set together.
func Run(ctx context.Context, m *cascade.Model, cfg Config) (*Report, error) {
	if cfg.Shard.Sharded() {
		return nil, fmt.Errorf("shard %s: RunShard runs a shard's part, Merge joins them", cfg.Shard)
	}
	if cfg.Prefix != nil {
		return nil, errors.New("prefix: a prepared prefix is for the shards of a ranking (RunShard)")
	}
	return runRank(ctx, m, cfg, nil)
}

// runRank is Run, with the candidates' replays sharded when sh is not
// nil (see sharding). It runs in phases, each a method of ranking that
// leaves its part of the report for the next.
func runRank(ctx context.Context, m *cascade.Model, cfg Config, sh *sharding) (*Report, error) {
	rk, err := newRanking(m, cfg, sh)
	if err != nil {
		return nil, err
	}
	rk.setRegimes()
	if err := rk.checkTick(ctx); err != nil {
		return nil, err
	}
	rk.batch = replay.NewBatch(rk.cfg.Batch())
	if err := rk.replayBaseline(ctx); err != nil {
		return nil, err
	}
	low, err := rk.sweepCapacity(ctx)
	if err != nil {
		return nil, err
	}
	if rk.sh != nil && rk.sh.prepare {
		return nil, errPrepared
	}
	ev := evidence(rk.base, rk.bres, rk.rep.Capacity, low, totalRate(rk.base, rk.cfg))
	cands := rk.candidates(ev)
	runs, errs, err := rk.replayCandidates(ctx, cands)
	if err != nil {
		return nil, err
	}
	ranked := rk.scoreRows(cands, runs, errs)
	if err := rk.tryBestSet(ctx, ranked); err != nil {
		return nil, err
	}
	rk.checkMetastability()
	return rk.rep, nil
}

// ranking is one run of the ranking: its settled configuration and
// model, and what its phases have found so far.
type ranking struct {
	cfg Config
	sh  *sharding
	// m is the model as given, base with its own scenarios applied.
	m, base *cascade.Model
	// autoDrain is set when the drain is each model's own (Config.Drain
	// was 0), observed when the normal traffic is the observed one.
	autoDrain, observed bool
	regimes             []Regime
	tickNote            string
	batch               *replay.Batch
	// bres holds the baseline's replays per regime.
	bres [][]*replay.Result
	rep  *Report
}

// newRanking checks the configuration and settles the model and the
// drain.
func newRanking(m *cascade.Model, cfg Config, sh *sharding) (*ranking, error) {
	if cfg.Objective == "" {
		cfg.Objective = ObjectiveGoodput
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _, err := replay.Apply(m)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	// The drain, unless given, is the model's own; a candidate whose
	// policy makes work wait longer gets its own (see
	// replay.BatchJob.Drain).
	auto := cfg.Drain == 0
	if auto {
		cfg.Drain = replay.DrainFor(base)
	}
	return &ranking{cfg: cfg, sh: sh, m: m, base: base, autoDrain: auto}, nil
}

// setRegimes settles the normal traffic and the regimes: the observed
// traffic is the load the traces showed, closed-loop clients when they
// waited for their answers, else Poisson arrivals at the entries' rates.
func (rk *ranking) setRegimes() {
	rk.observed = rk.cfg.Traffic == nil
	if rk.observed {
		rk.cfg.Traffic = rk.base.ObservedTraffic()
	}
	rk.regimes = regimesOf(rk.base, rk.cfg)
	if rk.observed && rk.cfg.Traffic != nil {
		rk.regimes[0].Name = "observed " + rk.regimes[0].Name
	}
}

// checkTick refines the tick (Config.TickCheck).
func (rk *ranking) checkTick(ctx context.Context) error {
	if !rk.cfg.TickCheck {
		return nil
	}
	var err error
	if rk.cfg.Tick, rk.tickNote, err = rk.sh.refineTick(ctx, rk.cfg, rk.base, rk.regimes[0]); err != nil {
		return fmt.Errorf("tick check: %w", err)
	}
	return nil
}

// replayBaseline replays the baseline under every regime and starts the
// report: its header, the fit check and the baseline's summaries.
func (rk *ranking) replayBaseline(ctx context.Context) error {
	bres, err := rk.sh.baseline(ctx, rk.batch, rk.base, rk.regimes)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	cfg := rk.cfg
	rep := &Report{
		Model:      rk.base.Name,
		Objective:  cfg.Objective,
		Seeds:      rk.batch.Seeds(&replay.BatchJob{}),
		DurationMS: float64(cfg.Duration) / 1e6,
		DrainMS:    float64(max(cfg.Drain, 0)) / 1e6,
		TickMS:     float64(cfg.Tick) / 1e6,
		TickNote:   rk.tickNote,
		Resampled:  cfg.Resample,
		Regimes:    rk.regimes,
		Basis:      BasisOf(rk.m),
		Flows:      flowsIn(bres),
	}
	if rk.observed && cfg.FitCheck {
		rep.Fit = FitOf(rk.base, bres[0], rk.regimes[0].Name, DefaultTolerance(), rep.TickMS)
	}
	for r := range rk.regimes {
		s := replay.Summarize(bres[r])
		s.Scenario = rk.regimes[r].Name
		rep.Baseline = append(rep.Baseline, s)
	}
	rk.bres, rk.rep = bres, rep
	return nil
}

// sweepCapacity sweeps the capacity curve (Config.Capacity) into the
// report and returns the replays at its lowest load.
func (rk *ranking) sweepCapacity(ctx context.Context) ([]*replay.Result, error) {
	if !rk.cfg.Capacity || totalRate(rk.base, rk.cfg) <= 0 {
		return nil, nil
	}
	curve, low, err := rk.sh.capacity(ctx, rk.batch, rk.base, rk.cfg)
	if err != nil {
		return nil, err
	}
	rk.rep.Capacity = curve
	return low, nil
}

// candidates returns the derived candidates the evidence calls for
// (Config.Derive) and the user's, their names made unique.
func (rk *ranking) candidates(ev *Evidence) []Candidate {
	var cands []Candidate
	if rk.cfg.Derive {
		cands = Derive(rk.base, ev, rk.cfg.LatencyTargetMS)
	}
	for i, s := range rk.cfg.Scenarios {
		cands = append(cands, userCandidate(s, i))
	}
	uniqueNames(cands)
	return cands
}

// replayCandidates applies every candidate to the model, then replays
// them all at once under every regime. runs[i] holds candidate i's
// replays per regime, nil when its scenario did not apply; errs[i] says
// what failed it.
func (rk *ranking) replayCandidates(ctx context.Context, cands []Candidate) (runs [][][]*replay.Result, errs []error, err error) {
	var jobs []replay.BatchJob
	var jobCand, jobRegime []int
	first := make([]int, len(cands))
	errs = make([]error, len(cands))
	for i := range cands {
		first[i] = -1
		cm, _, err := replay.Apply(rk.base, cands[i].Scenario)
		if err != nil {
			errs[i] = err
			continue
		}
		first[i] = len(jobs)
		var drain time.Duration
		if rk.autoDrain {
			drain = replay.DrainFor(cm)
		}
		for r := range rk.regimes {
			jobs = append(jobs, replay.BatchJob{Model: cm, Traffic: rk.regimes[r].Traffic, Drain: drain})
			jobCand, jobRegime = append(jobCand, i), append(jobRegime, r)
		}
	}
	res, jobErrs, err := rk.sh.run(ctx, rk.batch, jobs, jobCand, jobRegime)
	if err != nil {
		return nil, nil, err
	}
	runs = make([][][]*replay.Result, len(cands))
	for i := range cands {
		if first[i] >= 0 {
			n := len(rk.regimes)
			runs[i] = res[first[i] : first[i]+n]
			errs[i] = errors.Join(jobErrs[first[i] : first[i]+n]...)
		}
	}
	return runs, errs, nil
}

// scoreRows scores every candidate against the baseline into the report's
// rows, ranked, and returns the replays of each row in their order (nil
// for a failed one).
func (rk *ranking) scoreRows(cands []Candidate, runs [][][]*replay.Result, errs []error) [][][]*replay.Result {
	rep := rk.rep
	rep.NoiseFloor = math.Round(baselineSpread(rk.cfg.Objective, rk.bres)*1e6) / 1e6
	rows := make([]Row, len(cands))
	for i := range cands {
		rows[i] = score(rk.base, rk.cfg.Objective, rep.NoiseFloor, rk.regimes, cands[i], rk.bres, runs[i], errs[i])
	}
	if rep.Basis != nil && rep.Basis.Thin != "" {
		abstain(rows)
	}
	if !rep.Fit.Within() {
		distrust(rows)
	}
	order := rankRows(rows)
	rep.Rows = make([]Row, len(rows))
	ranked := make([][][]*replay.Result, len(rows))
	for i, j := range order {
		rep.Rows[i] = rows[j]
		if rows[j].Verdict != Failed {
			ranked[i] = runs[j]
		}
	}
	return ranked
}

// tryBestSet tries the best compatible set of wins together.
func (rk *ranking) tryBestSet(ctx context.Context, ranked [][][]*replay.Result) error {
	var err error
	rk.rep.Set, err = bestSet(ctx, rk.batch, rk.base, rk.cfg, rk.rep.NoiseFloor, rk.regimes, rk.bres, rk.rep.Rows, ranked)
	return err
}

// checkMetastability checks the surge regime, when there is one.
func (rk *ranking) checkMetastability() {
	if len(rk.regimes) > 1 {
		rk.rep.Metastability = metastability(rk.regimes[1], rk.cfg, rk.bres[1], rk.rep.Rows)
	}
}

// runOne replays one model under every regime.
func runOne(ctx context.Context, rn *replay.Batch, m *cascade.Model, regimes []Regime) ([][]*replay.Result, error) {
	jobs := make([]replay.BatchJob, len(regimes))
	for r := range regimes {
		jobs[r] = replay.BatchJob{Model: m, Traffic: regimes[r].Traffic}
	}
	res, errs, err := rn.Run(ctx, jobs)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}

// score compares one candidate's replays with the baseline's.
func score(m *cascade.Model, o Objective, floor float64, regimes []Regime, c Candidate, base, cand [][]*replay.Result, err error) Row {
	row := Row{Candidate: c, Recovered: -1}
	if err != nil {
		row.Verdict, row.Error = Failed, err.Error()
		row.Cost.Text = "-"
		return row
	}
	row.Objective = tInterval(objectiveDiffs(o, base, cand))
	row.Verdict, row.Gain = judge(o, row.Objective, floor)
	row.Effects = effects(regimes, base, cand)
	row.Cost = costOf(m, regimes, row.Effects, base, cand)
	row.Why, row.WhyAtBroker = mechanism(m, o, row.Verdict, regimes, base, cand)
	if len(regimes) > 1 {
		row.Recovered = recovered(cand[1])
	}
	return row
}

// rankRows returns the order of rows: wins by gain (highest first), the
// wins that are product changes after the others, then not enough data,
// no measurable effect, worse and failed; ties keep the candidates'
// order. It numbers the wins.
func rankRows(rows []Row) []int {
	class := map[Verdict]int{Win: 0, NotEnoughData: 2, OffCapture: 2, NoEffect: 3, Worse: 4, Failed: 5}
	classOf := func(r *Row) int {
		if r.Verdict == Win && productChange(&r.Candidate) {
			return 1
		}
		return class[r.Verdict]
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := &rows[order[a]], &rows[order[b]]
		if ca, cb := classOf(ra), classOf(rb); ca != cb {
			return ca < cb
		}
		return ra.Gain > rb.Gain
	})
	n := 0
	for _, i := range order {
		if rows[i].Verdict == Win {
			n++
			rows[i].Rank = n
		}
	}
	return order
}

// uniqueNames suffixes repeated candidate names with " (2)", " (3)", ….
func uniqueNames(cs []Candidate) {
	seen := map[string]int{}
	for i := range cs {
		n := cs[i].Name
		seen[n]++
		if k := seen[n]; k > 1 {
			cs[i].Name = fmt.Sprintf("%s (%d)", n, k)
		}
	}
}

// regimesOf returns the normal traffic and, when SurgeFactor > 0, the
// same traffic multiplied by SurgeFactor over the middle third of the
// duration.
func regimesOf(m *cascade.Model, cfg Config) []Regime {
	normal := Regime{Name: describeTraffic(m, cfg.Traffic), Traffic: cfg.Traffic}
	if cfg.SurgeFactor <= 0 {
		return []Regime{normal}
	}
	t := &cascade.Traffic{}
	if cfg.Traffic != nil {
		c := *cfg.Traffic
		c.Surges = append([]cascade.Surge(nil), c.Surges...)
		t = &c
	}
	d := float64(cfg.Duration) / 1e6
	at, dur := round3(d/3), round3(d/3)
	t.Surges = append(t.Surges, cascade.Surge{AtMS: at, ForMS: dur, Factor: cfg.SurgeFactor})
	return []Regime{normal, {
		Name:    fmt.Sprintf("surge ×%s from %s for %s", num(cfg.SurgeFactor), ms(at), ms(dur)),
		Traffic: t,
	}}
}

// describeTraffic names a traffic in words.
func describeTraffic(m *cascade.Model, t *cascade.Traffic) string {
	switch {
	case t == nil || t.Kind != cascade.TrafficClosed && t.Kind != cascade.TrafficObserved && t.RatePerSec == 0:
		return fmt.Sprintf("observed rates (Poisson %s/s)", num(round3(entryRate(m))))
	case t.Kind == cascade.TrafficClosed:
		return fmt.Sprintf("closed loop, %d users, think %s", t.Users, ms(t.ThinkMS))
	case t.Kind == cascade.TrafficObserved:
		return fmt.Sprintf("observed arrivals (%d)", len(t.ArrivalsMS))
	}
	return fmt.Sprintf("Poisson %s/s", num(round3(t.RatePerSec)))
}

func entryRate(m *cascade.Model) float64 {
	var r float64
	for i := range m.Entries {
		r += m.Entries[i].RatePerSec
	}
	return r
}

// totalRate is the normal traffic's open-loop rate: the traffic's own,
// else the model's entry rates.
func totalRate(m *cascade.Model, cfg Config) float64 {
	if t := cfg.Traffic; t != nil && t.Kind != cascade.TrafficClosed && t.RatePerSec > 0 {
		return t.RatePerSec
	}
	return entryRate(m)
}

// evidence reads what the baseline showed about each node. Rates and p99
// latencies come from the lowest load of the capacity sweep when there is
// one (a healthy system, rates scaled to the normal root rate), else from
// the normal traffic.
func evidence(m *cascade.Model, bres [][]*replay.Result, curve *CapacityCurve, low []*replay.Result, rate float64) *Evidence {
	ev := &Evidence{
		Queued: map[string]bool{}, Failing: map[string]bool{}, Zombies: map[string]bool{},
		Utilisation: map[string]float64{}, RatePerSec: map[string]float64{}, P99MS: map[string]float64{},
		LatencyMS: map[string]float64{}, QueueFull: map[string]bool{}, BreakerOpened: map[string]bool{},
		QueueMax: map[string]int{},
	}
	for r, rs := range bres {
		for _, res := range rs {
			k := float64(len(rs))
			ev.RateLimited = ev.RateLimited || res.Counts.RejectedLimit > 0
			for i := range res.Nodes {
				n := &res.Nodes[i]
				ev.Queued[n.Name] = ev.Queued[n.Name] || n.QueueMax > 0
				ev.Failing[n.Name] = ev.Failing[n.Name] || n.Failures > 0
				if n.Queue != nil {
					ev.QueueMax[n.Name] = max(ev.QueueMax[n.Name], n.QueueMax)
				}
				if r == 0 {
					ev.Utilisation[n.Name] += n.Utilisation / k
					ev.RatePerSec[n.Name] += float64(n.Calls) / (res.DurationMS / 1000) / k
					ev.P99MS[n.Name] += n.LatencyP99MS / k
				}
			}
			for i := range res.NodeCounts {
				nc := &res.NodeCounts[i]
				ev.Zombies[nc.Name] = ev.Zombies[nc.Name] || nc.Zombies > 0
				ev.BreakerOpened[nc.Name] = ev.BreakerOpened[nc.Name] || nc.BreakerOpened > 0
				if n := m.Node(nc.Name); n != nil && n.QueueCap > 0 && nc.QueueMaxReplica >= n.QueueCap {
					ev.QueueFull[nc.Name] = true
				}
				if r == 0 {
					ev.LatencyMS[nc.Name] += nc.LatencyMeanMS / k
				}
			}
		}
	}
	if curve != nil {
		ev.KneePerSec, ev.CapacityKneePerSec = curve.SafePerSec, curve.KneePerSec
	}
	if len(low) > 0 {
		clear(ev.RatePerSec)
		clear(ev.P99MS)
		k := float64(len(low))
		for _, res := range low {
			for i := range res.Nodes {
				n := &res.Nodes[i]
				if res.Roots > 0 {
					ev.RatePerSec[n.Name] += float64(n.Calls) / float64(res.Roots) * rate / k
				}
				ev.P99MS[n.Name] += n.LatencyP99MS / k
			}
		}
	}
	return ev
}

// productChange reports whether a candidate changes what the system does
// rather than how (a task no longer run): such a change can win only by
// doing less, so it ranks after every other win and joins no best set;
// it is listed for the reader to weigh.
func productChange(c *Candidate) bool { return c.Kind == KindFanOutCut }
