package fit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"cascade"
	"cascade/replay"
)

// PartialKind is the PartialHeader.Kind of a fit's partial result.
const PartialKind = "fit"

// Partial is one shard's part of a fit (RunShard), and what Merge joins.
// It holds the fit's config, the hash of its inputs, and the losses of
// the grid points the shard replayed; shard 0's file holds the inputs too
// (the model and the observations), so that a merge needs nothing but the
// partials. docs/shard.md describes the file (Encode, DecodePartial).
type Partial struct {
	replay.PartialHeader
	// Config is the fit's config, with the defaults filled in and no
	// parallelism, progress or shard.
	Config Config
	// Model is the model fitted, Observations what it is fitted to; nil
	// in a partial of a shard other than 0 read from its file.
	Model        *cascade.Model
	Observations *Observations
	// Points are the grid points the shard replayed, by index.
	Points []PointLoss
	// File names the file the partial was read from, for the errors of
	// Merge; set by the caller that read it.
	File string
}

// PointLoss is one grid point a shard replayed: its loss per window and,
// for a point the latency gate judges, its replay's P50 and P99 per window
// and node (nil for a window whose replay ran away).
type PointLoss struct {
	Index int
	Loss  []float64
	Lat   [][][2]float64
}

// MergeOptions are a merge's settings that do not change its result.
type MergeOptions struct {
	// Parallel bounds the replays run at once (those the merge runs
	// itself: the refinement, the refit, the back-tests and the
	// calibrated model's windows); 0 means GOMAXPROCS.
	Parallel int
	// Progress is Config.Progress.
	Progress func(done, total int64)
}

// errShardDone unwinds a sharded run once its part is replayed.
var errShardDone = errors.New("fit: shard done")

// sharding splits the first batch of grid points a fit replays: every
// point of an exhaustive search, or the coarse sub-grid of a refine
// search. Point k of the batch (in index order) is shard k mod N's. A
// shard replays its points and stops (points); a merge takes every
// point from the partials (parts, by shard index) and goes on: the rest
// of the search, which depends on these losses, runs in the merge.
type sharding struct {
	shard  replay.Shard
	points []PointLoss
	units  int
	parts  []*Partial
}

// batch runs the sharded batch todo (sorted, none known) on s.
func (sh *sharding) batch(ctx context.Context, s *searcher, todo []int) error {
	sh.units = len(todo)
	if sh.parts == nil {
		var own []int
		for k, i := range todo {
			if sh.shard.Owns(k) {
				own = append(own, i)
			}
		}
		if err := s.eval(ctx, own); err != nil {
			return err
		}
		for _, i := range own {
			sh.points = append(sh.points, PointLoss{Index: i, Loss: s.cache[i], Lat: s.lat[i]})
		}
		return errShardDone
	}
	n := len(sh.parts)
	given := make([]map[int]PointLoss, n)
	for p, part := range sh.parts {
		if part.Units != len(todo) {
			return fmt.Errorf("%w: %s: %d grid points in the sharded batch, this merge plans %d (written by another version of cascade?)", replay.ErrPartials, part.File, part.Units, len(todo))
		}
		given[p] = make(map[int]PointLoss, len(part.Points))
		for _, pt := range part.Points {
			if len(pt.Loss) != len(s.ev.windows) || pt.Lat != nil && len(pt.Lat) != len(s.ev.windows) {
				return fmt.Errorf("%w: %s: point %d has %d losses for %d windows", replay.ErrPartials, part.File, pt.Index, len(pt.Loss), len(s.ev.windows))
			}
			given[p][pt.Index] = pt
		}
	}
	for k, i := range todo {
		p := k % n
		pt, ok := given[p][i]
		if !ok {
			return fmt.Errorf("%w: %s: grid point %d (shard %d/%d's) missing", replay.ErrPartials, sh.parts[p].File, i, p, n)
		}
		delete(given[p], i)
		s.cache[i] = pt.Loss
		if pt.Lat != nil {
			s.lat[i] = pt.Lat
		}
	}
	for p, rest := range given {
		if len(rest) > 0 {
			i := slices.Min(slices.Collect(maps.Keys(rest)))
			return fmt.Errorf("%w: %s: grid point %d is not shard %d/%d's", replay.ErrPartials, sh.parts[p].File, i, p, n)
		}
	}
	s.planned += int64(len(todo))
	s.done += int64(len(todo))
	if s.progress != nil {
		s.progress(s.done, s.planned)
	}
	return nil
}

// RunShard replays shard cfg.Shard's part of the fit Run would run with
// the same inputs: the grid points of the first batch (every point of an
// exhaustive search, the coarse sub-grid of a refine search) whose
// position in it, in index order, is the shard's index modulo the shard
// count. Merge joins the partials of every shard into the very result
// Run returns, byte for byte, at any shard count.
func RunShard(ctx context.Context, cfg Config, m *cascade.Model, obs *Observations) (*Partial, error) {
	if !cfg.Shard.Sharded() {
		return nil, fmt.Errorf("shard: %w", replay.ErrBadShard)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Partial{PartialHeader: replay.PartialHeader{
		Format: replay.PartialFormat, Version: replay.PartialVersion, Kind: PartialKind, Shard: cfg.Shard,
	}}
	var err error
	if p.InputsHash, p.ConfigHash, err = hashes(cfg, m, obs); err != nil {
		return nil, err
	}
	p.Config = partialConfig(cfg)
	p.Model, p.Observations = m, obs
	sh := &sharding{shard: cfg.Shard}
	cfg.Shard = replay.Shard{}
	if _, err := runFit(ctx, cfg, m, obs, sh); !errors.Is(err, errShardDone) {
		if err == nil {
			err = errors.New("fit: the search ended before its first batch")
		}
		return nil, err
	}
	p.Units, p.Points = sh.units, sh.points
	return p, nil
}

// Merge joins the partial results of every shard of one fit (RunShard)
// into the fit's result: the same Result, byte for byte once encoded, as
// Run's on the same inputs. It checks that the partials belong together
// (replay.CheckPartials: same inputs, config, unit and shard counts,
// every shard once) and that each holds exactly its shard's points, and
// names the file where one does not. It then runs the rest of the fit,
// whose replays depend on the sharded losses, on this machine.
func Merge(ctx context.Context, parts []*Partial, opt MergeOptions) (*Result, error) {
	hs := make([]replay.PartialHeader, len(parts))
	files := make([]string, len(parts))
	for i, p := range parts {
		hs[i], files[i] = p.PartialHeader, p.File
		if files[i] == "" {
			files[i] = fmt.Sprintf("partial %d", i+1)
			p.File = files[i]
		}
	}
	order, err := replay.CheckPartials(hs, files)
	if err != nil {
		return nil, err
	}
	if k := hs[0].Kind; k != PartialKind {
		return nil, fmt.Errorf("%w: %s: a %s partial, not a fit's", replay.ErrPartials, files[0], k)
	}
	sh := &sharding{}
	for _, i := range order {
		sh.parts = append(sh.parts, parts[i])
	}
	p0 := sh.parts[0]
	if p0.Model == nil || p0.Observations == nil {
		return nil, fmt.Errorf("%w: %s: shard 0's partial carries no model or observations", replay.ErrPartials, p0.File)
	}
	cfg := p0.Config
	cfg.Parallel, cfg.Progress = opt.Parallel, opt.Progress
	return runFit(ctx, cfg, p0.Model, p0.Observations, sh)
}

// partialConfig is cfg as a partial records it: defaults filled in, and
// none of what leaves the result alone.
func partialConfig(cfg Config) Config {
	c := cfg.withDefaults()
	c.Parallel, c.Progress, c.Shard = 0, nil, replay.Shard{}
	return c
}

// hashes returns the hashes of a fit's inputs and of its config.
func hashes(cfg Config, m *cascade.Model, obs *Observations) (string, string, error) {
	mb, ob, err := encodeInputs(m, obs)
	if err != nil {
		return "", "", err
	}
	cb, err := json.Marshal(partialConfig(cfg))
	if err != nil {
		return "", "", fmt.Errorf("encode config: %w", err)
	}
	return replay.Hash(mb, ob), replay.Hash(cb), nil
}

// obsWire is Observations with what its JSON form leaves out: each
// window's arrivals and the calls of the logistic regression.
type obsWire struct {
	*Observations
	Arrivals [][]replay.Arrival `json:"arrivals"`
	Calls    []Call             `json:"calls"`
}

func encodeInputs(m *cascade.Model, obs *Observations) ([]byte, []byte, error) {
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encode model: %w", err)
	}
	w := obsWire{Observations: obs, Calls: obs.Calls}
	for i := range obs.Windows {
		w.Arrivals = append(w.Arrivals, obs.Windows[i].Arrivals)
	}
	ob, err := json.Marshal(w)
	if err != nil {
		return nil, nil, fmt.Errorf("encode observations: %w", err)
	}
	return mb, ob, nil
}

// partialWire is a Partial as its file holds it.
type partialWire struct {
	replay.PartialHeader
	Config       Config          `json:"config"`
	Model        json.RawMessage `json:"model,omitempty"`
	Observations json.RawMessage `json:"observations,omitempty"`
	Points       []pointWire     `json:"points"`
}

type pointWire struct {
	Index int          `json:"index"`
	Loss  []exact      `json:"loss"`
	Lat   [][][2]exact `json:"lat,omitempty"`
}

// Encode returns the partial as its file holds it: one JSON document
// with a trailing newline.
func (p *Partial) Encode() ([]byte, error) {
	w := partialWire{PartialHeader: p.PartialHeader, Config: p.Config}
	if p.Shard.Index == 0 {
		// Shard 0 carries the inputs for the merge; the others their
		// hash alone.
		var err error
		if w.Model, w.Observations, err = encodeInputs(p.Model, p.Observations); err != nil {
			return nil, err
		}
	}
	for _, pt := range p.Points {
		pw := pointWire{Index: pt.Index, Loss: exacts(pt.Loss)}
		for _, win := range pt.Lat {
			if win == nil {
				pw.Lat = append(pw.Lat, nil) // a replay that ran away
				continue
			}
			nodes := make([][2]exact, len(win))
			for n, q := range win {
				nodes[n] = [2]exact{exact(q[0]), exact(q[1])}
			}
			pw.Lat = append(pw.Lat, nodes)
		}
		w.Points = append(w.Points, pw)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode partial: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodePartial reads a fit's partial result strictly (unknown fields
// are errors) and checks that its inputs are the ones its header's hash
// names.
func DecodePartial(data []byte) (*Partial, error) {
	var w partialWire
	if err := replay.DecodeStrict(data, &w); err != nil {
		return nil, err
	}
	if err := w.PartialHeader.Check(PartialKind, "a fit's"); err != nil {
		return nil, err
	}
	p := &Partial{PartialHeader: w.PartialHeader, Config: w.Config}
	if err := p.decodeInputs(w.Model, w.Observations); err != nil {
		return nil, err
	}
	for _, pw := range w.Points {
		pt := PointLoss{Index: pw.Index, Loss: floats(pw.Loss)}
		for _, win := range pw.Lat {
			if win == nil {
				pt.Lat = append(pt.Lat, nil)
				continue
			}
			nodes := make([][2]float64, len(win))
			for n, q := range win {
				nodes[n] = [2]float64{float64(q[0]), float64(q[1])}
			}
			pt.Lat = append(pt.Lat, nodes)
		}
		p.Points = append(p.Points, pt)
	}
	return p, nil
}

// decodeInputs reads the model and observations a partial carries:
// shard 0's, which must carry them and match the inputs hash; the other
// shards carry none.
func (p *Partial) decodeInputs(model, obs json.RawMessage) error {
	switch {
	case p.Shard.Index != 0 && (model != nil || obs != nil):
		return fmt.Errorf("shard %s carries inputs: only shard 0's partial does", p.Shard)
	case p.Shard.Index != 0:
		return nil
	case model == nil || obs == nil:
		return errors.New("shard 0's partial carries no model or observations (the merge reads them from it)")
	case replay.Hash(model, obs) != p.InputsHash:
		return errors.New("the model and observations it holds do not match its inputs hash (the file was changed)")
	}
	var err error
	if p.Model, err = cascade.DecodeModel(model); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	var ow obsWire
	ow.Observations = &Observations{}
	if err := replay.DecodeStrict(obs, &ow); err != nil {
		return fmt.Errorf("observations: %w", err)
	}
	if len(ow.Arrivals) != len(ow.Windows) {
		return fmt.Errorf("observations: %d windows, arrivals for %d", len(ow.Windows), len(ow.Arrivals))
	}
	for i := range ow.Windows {
		ow.Windows[i].Arrivals = ow.Arrivals[i]
	}
	ow.Observations.Calls = ow.Calls
	p.Observations = ow.Observations
	return nil
}

// exact is a float64 whose JSON form round-trips exactly, NaN and the
// infinities included (as the strings "NaN", "+Inf" and "-Inf").
type exact float64

// MarshalJSON writes the shortest decimal that reads back as the same
// float64.
func (x exact) MarshalJSON() ([]byte, error) {
	f := float64(x)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (x *exact) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*x = exact(math.NaN())
		return nil
	case `"+Inf"`:
		*x = exact(math.Inf(1))
		return nil
	case `"-Inf"`:
		*x = exact(math.Inf(-1))
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%s: not a number", b)
	}
	*x = exact(f)
	return nil
}

func exacts(fs []float64) []exact {
	out := make([]exact, len(fs))
	for i, f := range fs {
		out[i] = exact(f)
	}
	return out
}

func floats(xs []exact) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return slices.Clip(out)
}
