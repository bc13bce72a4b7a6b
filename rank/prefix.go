package rank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cascade"
	"cascade/replay"
)

// PrefixKind is the PartialHeader.Kind of a ranking's prepared prefix
// (Prepare).
const PrefixKind = "rank-prefix"

// ErrPrefix is returned by RunShard for a prepared prefix of another
// model or config.
var ErrPrefix = errors.New("the prefix is not this ranking's")

// errPrepared unwinds a ranking once its prefix is replayed (Prepare).
var errPrepared = errors.New("rank: prefix prepared")

// Prepared is a ranking's prefix replayed once, for its shards to share
// (Config.Prefix): the tick check, the baseline and the capacity sweep,
// which every shard would otherwise replay itself before its part of the
// candidates. Its header names the model and config it was replayed for
// (InputsHash, ConfigHash, as a shard's partial does); a shard given a
// prefix of another model or config refuses it. Shard and Units are
// zero.
type Prepared struct {
	replay.PartialHeader
	Prefix *Prefix `json:"prefix"`
}

// Prepare replays the prefix of the ranking Run would run with the same
// inputs: the tick check, the baseline and the capacity sweep, and
// nothing of the candidates. Given to each shard (Config.Prefix), it
// spares the shards that work; their partials, and the merge, are byte
// for byte what they are without it.
func Prepare(ctx context.Context, m *cascade.Model, cfg Config) (*Prepared, error) {
	if cfg.Shard.Sharded() || cfg.Prefix != nil {
		return nil, errors.New("prepare: give neither a shard nor a prefix (Prepare replays the prefix the shards share)")
	}
	h, err := header(m, cfg, PrefixKind)
	if err != nil {
		return nil, err
	}
	sh := &sharding{prefix: &Prefix{}, prepare: true}
	if _, err := runRank(ctx, m, cfg, sh); !errors.Is(err, errPrepared) {
		if err == nil {
			err = errors.New("rank: the ranking ended before its prefix was replayed")
		}
		return nil, err
	}
	return &Prepared{PartialHeader: h, Prefix: sh.prefix}, nil
}

// header is the header of a ranking's file of kind for m and cfg: the
// hashes of the model and of the config as a partial records it, which
// a shard's partial and a prefix of the same ranking share.
func header(m *cascade.Model, cfg Config, kind string) (replay.PartialHeader, error) {
	h := replay.PartialHeader{Format: replay.PartialFormat, Version: replay.PartialVersion, Kind: kind}
	mb, err := json.Marshal(m)
	if err != nil {
		return h, fmt.Errorf("encode model: %w", err)
	}
	cb, err := json.Marshal(partialConfig(cfg))
	if err != nil {
		return h, fmt.Errorf("encode config: %w", err)
	}
	h.InputsHash, h.ConfigHash = replay.Hash(mb), replay.Hash(cb)
	return h, nil
}

// Encode returns the prefix as its file holds it: one JSON document with
// a trailing newline.
func (p *Prepared) Encode() ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode prefix: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodePrepared reads a ranking's prepared prefix strictly (unknown
// fields are errors).
func DecodePrepared(data []byte) (*Prepared, error) {
	h, err := replay.PeekPartial(data)
	if err != nil {
		return nil, err
	}
	if err := h.Check(PrefixKind, "a ranking's prefix (rank --prepare)"); err != nil {
		return nil, err
	}
	var p Prepared
	if err := replay.DecodeStrict(data, &p); err != nil {
		return nil, err
	}
	if p.Prefix == nil || p.Prefix.Baseline == nil {
		return nil, errors.New("it carries no prefix (prefix.baseline)")
	}
	return &p, nil
}

// checkPrefix checks that prefix p was prepared for the ranking whose
// partial's header is want.
func checkPrefix(p *Prepared, want replay.PartialHeader) error {
	switch {
	case p.InputsHash != want.InputsHash:
		return fmt.Errorf("%w: it was prepared for another model (%s, this one %s)", ErrPrefix, p.InputsHash, want.InputsHash)
	case p.ConfigHash != want.ConfigHash:
		return fmt.Errorf("%w: it was prepared with other settings (%s, these %s): give the shards the flags it was prepared with", ErrPrefix, p.ConfigHash, want.ConfigHash)
	}
	return nil
}
