package rank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cascade"
	"cascade/replay"
)

// PartialKind is the PartialHeader.Kind of a ranking's partial result.
const PartialKind = "rank"

// Partial is one shard's part of a ranking (RunShard), and what Merge
// joins. It holds the ranking's inputs (the model and the config), so
// that a merge needs nothing but the partials, and the replays of the
// shard's candidates. docs/shard.md describes the file (Encode,
// DecodePartial).
type Partial struct {
	replay.PartialHeader
	// Source names the model as the caller read it (a file name), for
	// the report; rank does not read it.
	Source string
	// Config is the ranking's config, without parallelism, progress or
	// shard.
	Config Config
	// Model is the model ranked.
	Model *cascade.Model
	// Jobs are the shard's candidates' replays, one per candidate and
	// regime, in candidate then regime order.
	Jobs []JobResult
	// File names the file the partial was read from, for the errors of
	// Merge; set by the caller that read it.
	File string
}

// Candidates counts the candidates the partial holds replays of (a
// candidate whose scenario does not apply has none).
func (p *Partial) Candidates() int {
	n := 0
	for i, j := range p.Jobs {
		if i == 0 || j.Candidate != p.Jobs[i-1].Candidate {
			n++
		}
	}
	return n
}

// JobResult is one candidate's replays under one regime, a result per
// seed, or the error that stopped them.
type JobResult struct {
	Candidate int              `json:"candidate"`
	Regime    int              `json:"regime"`
	Results   []*replay.Result `json:"results,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// MergeOptions are a merge's settings that do not change its result.
type MergeOptions struct {
	// Parallel bounds the replays run at once (those the merge runs
	// itself: the tick check, the baseline, the capacity sweep and the
	// best set); 0 means GOMAXPROCS.
	Parallel int
	// Progress is Config.Progress.
	Progress func(done, total int64)
}

// errShardDone unwinds a sharded run once its part is replayed.
var errShardDone = errors.New("rank: shard done")

// sharding splits the candidates' replays: candidate c (in the order
// Run derives them, the user's scenarios last) is shard c mod N's, with
// every regime and seed of it. A shard replays its candidates and stops;
// a merge takes every candidate's replays from the partials (parts, by
// shard index) and goes on to score, rank and try the best set.
type sharding struct {
	shard replay.Shard
	jobs  []JobResult
	units int
	parts []*Partial
}

// run replays jobs (job i is candidate cand[i]'s, under regime reg[i])
// of the n candidates: all of them unsharded, a shard's part, or none,
// taking them from the partials.
func (sh *sharding) run(ctx context.Context, rn *runner, jobs []job, cand, reg []int, n int) ([][]*replay.Result, []error, error) {
	if sh == nil {
		return rn.run(ctx, jobs)
	}
	sh.units = n
	if sh.parts == nil {
		var own []job
		var at []int
		for i := range jobs {
			if sh.shard.Owns(cand[i]) {
				own = append(own, jobs[i])
				at = append(at, i)
			}
		}
		res, errs, err := rn.run(ctx, own)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range at {
			jr := JobResult{Candidate: cand[i], Regime: reg[i], Results: res[k]}
			if errs[k] != nil {
				jr.Error = errs[k].Error()
			}
			sh.jobs = append(sh.jobs, jr)
		}
		return nil, nil, errShardDone
	}
	count := len(sh.parts)
	given := make([]map[[2]int]JobResult, count)
	for p, part := range sh.parts {
		if part.Units != n {
			return nil, nil, fmt.Errorf("%w: %s: %d candidates, this merge derives %d (written by another version of cascade?)", replay.ErrPartials, part.File, part.Units, n)
		}
		given[p] = map[[2]int]JobResult{}
		for _, jr := range part.Jobs {
			given[p][[2]int{jr.Candidate, jr.Regime}] = jr
		}
	}
	res := make([][]*replay.Result, len(jobs))
	errs := make([]error, len(jobs))
	for i := range jobs {
		p := cand[i] % count
		k := [2]int{cand[i], reg[i]}
		jr, ok := given[p][k]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s: the replays of candidate %d under regime %d (shard %d/%d's) missing", replay.ErrPartials, sh.parts[p].File, cand[i], reg[i], p, count)
		}
		delete(given[p], k)
		if jr.Error != "" {
			errs[i] = errors.New(jr.Error)
			continue
		}
		if want := len(rn.seeds(&jobs[i])); len(jr.Results) != want {
			return nil, nil, fmt.Errorf("%w: %s: candidate %d under regime %d has %d results for %d seeds", replay.ErrPartials, sh.parts[p].File, cand[i], reg[i], len(jr.Results), want)
		}
		res[i] = jr.Results
	}
	for p, rest := range given {
		for k := range rest {
			return nil, nil, fmt.Errorf("%w: %s: candidate %d under regime %d is not shard %d/%d's", replay.ErrPartials, sh.parts[p].File, k[0], k[1], p, count)
		}
	}
	return res, errs, nil
}

// RunShard replays shard cfg.Shard's part of the ranking Run would run
// with the same inputs: the candidates whose position, in the order Run
// derives them, is the shard's index modulo the shard count, under every
// regime and seed. The tick check, the baseline and the capacity sweep,
// which the candidates are derived from, run in every shard. Merge joins
// the partials of every shard into the very report Run returns, byte for
// byte, at any shard count.
func RunShard(ctx context.Context, m *cascade.Model, cfg Config) (*Partial, error) {
	if !cfg.Shard.Sharded() {
		return nil, fmt.Errorf("shard: %w", replay.ErrBadShard)
	}
	p := &Partial{PartialHeader: replay.PartialHeader{
		Format: replay.PartialFormat, Version: replay.PartialVersion, Kind: PartialKind, Shard: cfg.Shard,
	}}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode model: %w", err)
	}
	p.Config = partialConfig(cfg)
	cb, err := json.Marshal(p.Config)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	p.InputsHash, p.ConfigHash = replay.Hash(mb), replay.Hash(cb)
	p.Model = m
	sh := &sharding{shard: cfg.Shard}
	cfg.Shard = replay.Shard{}
	if _, err := runRank(ctx, m, cfg, sh); !errors.Is(err, errShardDone) {
		if err == nil {
			err = errors.New("rank: the ranking ended before its candidates' replays")
		}
		return nil, err
	}
	p.Units, p.Jobs = sh.units, sh.jobs
	return p, nil
}

// Merge joins the partial results of every shard of one ranking
// (RunShard) into its report: the same Report, byte for byte once
// encoded, as Run's on the same inputs. It checks that the partials
// belong together (replay.CheckPartials: same inputs, config, unit and
// shard counts, every shard once) and that each holds exactly its
// shard's candidates, and names the file where one does not. The merge
// replays the tick check, the baseline and the capacity sweep again (the
// candidates are derived from them) and the best set, and no candidate.
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
	Source string          `json:"source,omitempty"`
	Config Config          `json:"config"`
	Model  json.RawMessage `json:"model"`
	Jobs   []JobResult     `json:"jobs"`
}

// Encode returns the partial as its file holds it: one JSON document
// with a trailing newline.
func (p *Partial) Encode() ([]byte, error) {
	mb, err := json.Marshal(p.Model)
	if err != nil {
		return nil, fmt.Errorf("encode model: %w", err)
	}
	b, err := json.Marshal(partialWire{PartialHeader: p.PartialHeader, Source: p.Source, Config: p.Config, Model: mb, Jobs: p.Jobs})
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
	if w.Format != replay.PartialFormat {
		return nil, fmt.Errorf("format %q, want %q (not a partial result)", w.Format, replay.PartialFormat)
	}
	if w.Version != replay.PartialVersion {
		return nil, fmt.Errorf("partial format version %d, this cascade reads version %d", w.Version, replay.PartialVersion)
	}
	if w.Kind != PartialKind {
		return nil, fmt.Errorf("a %s partial, not a ranking's", w.Kind)
	}
	if replay.Hash(w.Model) != w.InputsHash {
		return nil, errors.New("the model it holds does not match its inputs hash (the file was changed)")
	}
	m, err := cascade.DecodeModel(w.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return &Partial{PartialHeader: w.PartialHeader, Source: w.Source, Config: w.Config, Model: m, Jobs: w.Jobs}, nil
}
