package rank

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"cascade"
	"cascade/replay"
)

// PartialKind is the PartialHeader.Kind of a ranking's partial result.
const PartialKind = "rank"

// Partial is one shard's part of a ranking (RunShard), and what Merge
// joins. It holds the ranking's config, the hash of its model, and the
// shard's replays of the candidates; shard 0's file holds the model too,
// so that a merge needs nothing but the partials. docs/shard.md
// describes the file (Encode, DecodePartial).
type Partial struct {
	replay.PartialHeader
	// Source names the model as the caller read it (a file name), for
	// the report; rank does not read it.
	Source string
	// Config is the ranking's config, without parallelism, progress or
	// shard.
	Config Config
	// Model is the model ranked, and Prefix what the ranking replayed
	// before the candidates; both nil in a partial of a shard other than
	// 0 read from its file.
	Model  *cascade.Model
	Prefix *Prefix
	// Replays are the shard's replays, in unit order (candidate, regime,
	// seed).
	Replays []Replay
	// File names the file the partial was read from, for the errors of
	// Merge; set by the caller that read it.
	File string
}

// Replay is one work unit of a sharded ranking: one candidate replayed
// under one regime with one seed, its result or the error that stopped
// it.
type Replay struct {
	// Candidate is the candidate's position in the order Run derives
	// them (the user's scenarios last); Regime 0 is the normal traffic,
	// 1 the surge.
	Candidate int `json:"candidate"`
	Regime    int `json:"regime"`
	// Seed is the replay's seed.
	Seed   uint64         `json:"seed"`
	Result *replay.Result `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// Prefix is what a ranking replays before its candidates, which are
// derived from it: the tick the tick check chose, the baseline's replays
// and the capacity sweep. Every shard replays it; shard 0's partial
// carries it, so that the merge does not.
type Prefix struct {
	// Tick and TickNote are the tick check's (Config.TickCheck); Ticked
	// says it ran.
	Ticked   bool          `json:"ticked,omitempty"`
	Tick     time.Duration `json:"tick_ns,omitempty"`
	TickNote string        `json:"tick_note,omitempty"`
	// Baseline are the baseline's replays, per regime and seed.
	Baseline [][]*replay.Result `json:"baseline"`
	// Capacity is the capacity curve and Low the replays of its lowest
	// load; nil when the ranking does not sweep.
	Capacity *CapacityCurve   `json:"capacity,omitempty"`
	Low      []*replay.Result `json:"low,omitempty"`
}

// MergeOptions are a merge's settings that do not change its result.
type MergeOptions struct {
	// Parallel bounds the replays run at once (those the merge runs
	// itself: the best set's); 0 means GOMAXPROCS.
	Parallel int
	// Progress is Config.Progress.
	Progress func(done, total int64)
}

// errShardDone unwinds a sharded run once its part is replayed.
var errShardDone = errors.New("rank: shard done")

// sharding splits the candidates' replays. Its work units are the
// replays of every candidate (in the order Run derives them, the user's
// scenarios last) under every regime with every seed, numbered in that
// order; unit u is shard u mod N's. A shard replays its units and stops;
// a merge takes every unit from the partials (parts, by shard index),
// puts each candidate's results back together, and goes on to score,
// rank and try the best set.
type sharding struct {
	shard   replay.Shard
	replays []Replay
	units   int
	parts   []*Partial
	// prefix is what the shard replayed before its units, or in a merge
	// what shard 0's partial carries.
	prefix *Prefix
	// given says the prefix is taken, not replayed: in a merge from
	// shard 0's partial, in a shard from a prepared prefix (Prepare);
	// from names that file for errors. prepare says the run replays the
	// prefix alone (Prepare).
	given   bool
	from    string
	prepare bool
}

// refineTick is the ranking's tick check, taken from shard 0's partial
// in a merge.
func (sh *sharding) refineTick(ctx context.Context, cfg Config, m *cascade.Model, normal Regime) (time.Duration, string, error) {
	if sh != nil && sh.given {
		if !sh.prefix.Ticked {
			return 0, "", fmt.Errorf("%w: %s: the prefix carries no tick check", replay.ErrPartials, sh.from)
		}
		return sh.prefix.Tick, sh.prefix.TickNote, nil
	}
	tick, note, err := refineTick(ctx, cfg, m, normal)
	if sh != nil {
		sh.prefix.Ticked, sh.prefix.Tick, sh.prefix.TickNote = true, tick, note
	}
	return tick, note, err
}

// baseline replays the baseline, or takes it from shard 0's partial in a
// merge.
func (sh *sharding) baseline(ctx context.Context, rn *replay.Batch, m *cascade.Model, regimes []Regime) ([][]*replay.Result, error) {
	if sh != nil && sh.given {
		b := sh.prefix.Baseline
		if len(b) != len(regimes) {
			return nil, fmt.Errorf("%w: %s: the prefix carries a baseline of %d regimes, not %d", replay.ErrPartials, sh.from, len(b), len(regimes))
		}
		for r := range b {
			if len(b[r]) != len(rn.Seeds(&replay.BatchJob{})) || slices.Contains(b[r], nil) {
				return nil, fmt.Errorf("%w: %s: the prefix carries a baseline of %d seeds, not %d", replay.ErrPartials, sh.from, len(b[r]), len(rn.Seeds(&replay.BatchJob{})))
			}
		}
		return b, nil
	}
	res, err := runOne(ctx, rn, m, regimes)
	if sh != nil {
		sh.prefix.Baseline = res
	}
	return res, err
}

// capacity sweeps the load, or takes the sweep from shard 0's partial in
// a merge.
func (sh *sharding) capacity(ctx context.Context, rn *replay.Batch, m *cascade.Model, cfg Config) (*CapacityCurve, []*replay.Result, error) {
	if sh != nil && sh.given {
		if sh.prefix.Capacity == nil {
			return nil, nil, fmt.Errorf("%w: %s: the prefix carries no capacity sweep", replay.ErrPartials, sh.from)
		}
		return sh.prefix.Capacity, sh.prefix.Low, nil
	}
	c, low, err := capacity(ctx, rn, m, cfg)
	if sh != nil {
		sh.prefix.Capacity, sh.prefix.Low = c, low
	}
	return c, low, err
}

// run replays jobs (job i is candidate cand[i]'s, under regime reg[i]):
// all of them unsharded, a shard's units, or none, taking them from the
// partials.
func (sh *sharding) run(ctx context.Context, rn *replay.Batch, jobs []replay.BatchJob, cand, reg []int) ([][]*replay.Result, []error, error) {
	if sh == nil {
		return rn.Run(ctx, jobs)
	}
	// Unit numbers: job i's seed k is unit first[i]+k.
	first := make([]int, len(jobs))
	seeds := make([][]uint64, len(jobs))
	maxSeeds := 0
	for i := range jobs {
		first[i] = sh.units
		seeds[i] = rn.Seeds(&jobs[i])
		sh.units += len(seeds[i])
		maxSeeds = max(maxSeeds, len(seeds[i]))
	}
	if sh.parts == nil {
		return nil, nil, sh.replay(ctx, rn, jobs, cand, reg, first, seeds, maxSeeds)
	}
	return sh.take(jobs, cand, reg, first, seeds)
}

// replay runs a shard's units: for each seed position, the jobs whose
// unit at that position is the shard's, on a runner whose first seed is
// that seed (a job's seed k replays alike on any engine: replay.Engine.Run
// resets it).
func (sh *sharding) replay(ctx context.Context, rn *replay.Batch, jobs []replay.BatchJob, cand, reg, first []int, seeds [][]uint64, maxSeeds int) error {
	owned := 0
	for u := range sh.units {
		if sh.shard.Owns(u) {
			owned++
		}
	}
	rn.Plan(owned)
	for k := range maxSeeds {
		var batch []replay.BatchJob
		var at []int
		for i := range jobs {
			if k < len(seeds[i]) && sh.shard.Owns(first[i]+k) {
				j := jobs[i]
				j.Seeds = 1
				batch, at = append(batch, j), append(at, i)
			}
		}
		if len(batch) == 0 {
			continue
		}
		set := rn.Settings()
		set.Seed = seeds[at[0]][k]
		set.Progress = nil
		res, errs, err := replay.NewBatch(set).Run(ctx, batch)
		if err != nil {
			return err
		}
		for b, i := range at {
			r := Replay{Candidate: cand[i], Regime: reg[i], Seed: seeds[i][k]}
			if errs[b] != nil {
				r.Error = errs[b].Error()
			} else {
				r.Result = res[b][0]
			}
			sh.replays = append(sh.replays, r)
			rn.Done()
		}
	}
	slices.SortFunc(sh.replays, func(a, b Replay) int {
		return cmp.Or(cmp.Compare(a.Candidate, b.Candidate), cmp.Compare(a.Regime, b.Regime), cmp.Compare(a.Seed, b.Seed))
	})
	return errShardDone
}

// take puts every job's results together from the partials' units: a
// job's error is that of its first seed to fail, as when it replays in
// one piece (it stops there).
func (sh *sharding) take(jobs []replay.BatchJob, cand, reg, first []int, seeds [][]uint64) ([][]*replay.Result, []error, error) {
	count := len(sh.parts)
	type key struct {
		cand, reg int
		seed      uint64
	}
	given := make([]map[key]Replay, count)
	for p, part := range sh.parts {
		if part.Units != sh.units {
			return nil, nil, fmt.Errorf("%w: %s: %d replays to share out, this merge plans %d (written by another version of cascade?)", replay.ErrPartials, part.File, part.Units, sh.units)
		}
		given[p] = map[key]Replay{}
		for _, r := range part.Replays {
			given[p][key{r.Candidate, r.Regime, r.Seed}] = r
		}
	}
	res := make([][]*replay.Result, len(jobs))
	errs := make([]error, len(jobs))
	for i := range jobs {
		res[i] = make([]*replay.Result, len(seeds[i]))
		for k, s := range seeds[i] {
			p := (first[i] + k) % count
			kk := key{cand[i], reg[i], s}
			r, ok := given[p][kk]
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s: the replay of candidate %d under regime %d with seed %d (shard %d/%d's) missing", replay.ErrPartials, sh.parts[p].File, cand[i], reg[i], s, p, count)
			}
			delete(given[p], kk)
			switch {
			case errs[i] != nil:
			case r.Error != "":
				errs[i], res[i] = errors.New(r.Error), nil
			case r.Result == nil:
				return nil, nil, fmt.Errorf("%w: %s: the replay of candidate %d under regime %d with seed %d has neither a result nor an error", replay.ErrPartials, sh.parts[p].File, cand[i], reg[i], s)
			default:
				res[i][k] = r.Result
			}
		}
	}
	for p, rest := range given {
		if len(rest) > 0 {
			k := slices.MinFunc(slices.Collect(maps.Keys(rest)), func(a, b key) int {
				return cmp.Or(cmp.Compare(a.cand, b.cand), cmp.Compare(a.reg, b.reg), cmp.Compare(a.seed, b.seed))
			})
			return nil, nil, fmt.Errorf("%w: %s: the replay of candidate %d under regime %d with seed %d is not shard %d/%d's", replay.ErrPartials, sh.parts[p].File, k.cand, k.reg, k.seed, p, count)
		}
	}
	return res, errs, nil
}

// RunShard replays shard cfg.Shard's part of the ranking Run would run
// with the same inputs: of the candidates' replays, numbered candidate by
// candidate (in the order Run derives them), regime by regime and seed by
// seed, those whose number is the shard's index modulo the shard count.
// The tick check, the baseline and the capacity sweep, which the
// candidates are derived from, run in every shard, and shard 0's partial
// carries them (Prefix). Merge joins the partials of every shard into the
// very report Run returns, byte for byte, at any shard count.
func RunShard(ctx context.Context, m *cascade.Model, cfg Config) (*Partial, error) {
	if !cfg.Shard.Sharded() {
		return nil, fmt.Errorf("shard: %w", replay.ErrBadShard)
	}
	h, err := header(m, cfg, PartialKind)
	if err != nil {
		return nil, err
	}
	h.Shard = cfg.Shard
	p := &Partial{PartialHeader: h, Config: partialConfig(cfg), Model: m}
	sh := &sharding{shard: cfg.Shard, prefix: &Prefix{}}
	if cfg.Prefix != nil {
		if err := checkPrefix(cfg.Prefix, h); err != nil {
			return nil, err
		}
		sh.prefix, sh.given, sh.from = cfg.Prefix.Prefix, true, "the prepared prefix"
	}
	cfg.Shard, cfg.Prefix = replay.Shard{}, nil
	if _, err := runRank(ctx, m, cfg, sh); !errors.Is(err, errShardDone) {
		if err == nil {
			err = errors.New("rank: the ranking ended before its candidates' replays")
		}
		return nil, err
	}
	p.Units, p.Replays, p.Prefix = sh.units, sh.replays, sh.prefix
	return p, nil
}

// Merge joins the partial results of every shard of one ranking
// (RunShard) into its report: the same Report, byte for byte once
// encoded, as Run's on the same inputs. It checks that the partials
// belong together (replay.CheckPartials: same inputs, config, unit and
// shard counts, every shard once) and that each holds exactly its
// shard's replays, and names the file where one does not. The merge
// takes the tick check, the baseline and the capacity sweep from shard
// 0's partial and the candidates' replays from all of them; of its own
// it replays only the best set.
func Merge(ctx context.Context, parts []*Partial, opt MergeOptions) (*Report, error) {
	hs := make([]replay.PartialHeader, len(parts))
	files := make([]string, len(parts))
	for i, p := range parts {
		if p.File == "" {
			p.File = fmt.Sprintf("partial %d", i+1)
		}
		hs[i], files[i] = p.PartialHeader, p.File
	}
	order, err := replay.CheckPartials(hs, files)
	if err != nil {
		return nil, err
	}
	if k := hs[0].Kind; k != PartialKind {
		return nil, fmt.Errorf("%w: %s: a %s partial, not a ranking's", replay.ErrPartials, files[0], k)
	}
	sh := &sharding{}
	for _, i := range order {
		sh.parts = append(sh.parts, parts[i])
	}
	p0 := sh.parts[0]
	if p0.Model == nil || p0.Prefix == nil {
		return nil, fmt.Errorf("%w: %s: shard 0's partial carries no model or prefix", replay.ErrPartials, p0.File)
	}
	sh.prefix, sh.given, sh.from = p0.Prefix, true, p0.File
	cfg := p0.Config
	cfg.Parallel, cfg.Progress = opt.Parallel, opt.Progress
	return runRank(ctx, p0.Model, cfg, sh)
}

// partialConfig is cfg as a partial records it: none of what leaves the
// result alone.
func partialConfig(cfg Config) Config {
	cfg.Parallel, cfg.Progress, cfg.Shard = 0, nil, replay.Shard{}
	return cfg
}

// partialWire is a Partial as its file holds it.
type partialWire struct {
	replay.PartialHeader
	Source  string          `json:"source,omitempty"`
	Config  Config          `json:"config"`
	Model   json.RawMessage `json:"model,omitempty"`
	Prefix  *Prefix         `json:"prefix,omitempty"`
	Replays []Replay        `json:"replays"`
}

// Encode returns the partial as its file holds it: one JSON document
// with a trailing newline.
func (p *Partial) Encode() ([]byte, error) {
	w := partialWire{PartialHeader: p.PartialHeader, Source: p.Source, Config: p.Config, Replays: p.Replays}
	if p.Shard.Index == 0 {
		// Shard 0 carries the model for the merge; the others its hash
		// alone.
		var err error
		if w.Model, err = json.Marshal(p.Model); err != nil {
			return nil, fmt.Errorf("encode model: %w", err)
		}
		w.Prefix = p.Prefix
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode partial: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodePartial reads a ranking's partial result strictly (unknown
// fields are errors) and checks that its model is the one its header's
// hash names.
func DecodePartial(data []byte) (*Partial, error) {
	var w partialWire
	if err := replay.DecodeStrict(data, &w); err != nil {
		return nil, err
	}
	if err := w.PartialHeader.Check(PartialKind, "a ranking's"); err != nil {
		return nil, err
	}
	p := &Partial{PartialHeader: w.PartialHeader, Source: w.Source, Config: w.Config, Replays: w.Replays, Prefix: w.Prefix}
	switch {
	case p.Shard.Index != 0 && (w.Model != nil || w.Prefix != nil):
		return nil, fmt.Errorf("shard %s carries a model or prefix: only shard 0's partial does", p.Shard)
	case p.Shard.Index != 0:
		return p, nil
	case w.Model == nil || w.Prefix == nil:
		return nil, errors.New("shard 0's partial carries no model or prefix (the merge reads them from it)")
	case replay.Hash(w.Model) != w.InputsHash:
		return nil, errors.New("the model it holds does not match its inputs hash (the file was changed)")
	}
	var err error
	if p.Model, err = cascade.DecodeModel(w.Model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return p, nil
}
