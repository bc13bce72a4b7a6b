package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"cascade/rank"
	"cascade/replay"
)

// checkShardFlags checks rank's flags for sharding: --shard with --out
// and a MODEL; --prepare with --out and a MODEL, without --shard;
// --prefix with --shard.
func checkShardFlags(sh replay.Shard, shard, out, prefix string, prepare, model, incident bool) error {
	switch {
	case prepare && sh.Sharded():
		return usageError{fmt.Errorf("--%s replays what every shard shares: give it without --%s", rankFlagPrepare, rankFlagShard)}
	case prepare && out == "":
		return usageError{fmt.Errorf("--%s: give --%s FILE for the prefix", rankFlagPrepare, rankFlagOut)}
	case prepare && (incident || !model):
		return usageError{fmt.Errorf("--%s replays a MODEL's prefix: give a MODEL, without --%s", rankFlagPrepare, rankFlagIncident)}
	case prefix != "" && !sh.Sharded():
		return usageError{fmt.Errorf("--%s is for a shard's run: give it with --%s INDEX/COUNT", rankFlagPrefix, rankFlagShard)}
	case prepare:
		return nil
	case sh.Sharded() && out == "":
		return usageError{fmt.Errorf("--%s %s: give --%s FILE for the shard's partial result", rankFlagShard, shard, rankFlagOut)}
	case !sh.Sharded() && out != "":
		return usageError{fmt.Errorf("--%s writes a shard's partial result: give it with --%s INDEX/COUNT", rankFlagOut, rankFlagShard)}
	case sh.Sharded() && (incident || !model):
		return usageError{fmt.Errorf("--%s shares out a MODEL's candidates: give a MODEL, without --%s (run it apart)", rankFlagShard, rankFlagIncident)}
	}
	return nil
}

// writePrepared writes a ranking's prepared prefix to path (atomically)
// and says on w what it holds.
func writePrepared(w io.Writer, path string, p *rank.Prepared) error {
	if err := writeShardFile(path, "prefix", p.Encode); err != nil {
		return err
	}
	regimes := len(p.Prefix.Baseline)
	_, err := fmt.Fprintf(w, "rank prefix: the tick check, the baseline under %d traffic(s) and the capacity sweep, written to %s; give it to each shard with --%s %s\n",
		regimes, path, rankFlagPrefix, path)
	return err
}

// readPrepared reads a prepared prefix; a file that is not one is
// invalid input (exit 3), named.
func readPrepared(path string) (*rank.Prepared, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := rank.DecodePrepared(b)
	if err != nil {
		return nil, inputError{fmt.Errorf("%s: %w", path, err)}
	}
	return p, nil
}

// prefixError makes a prefix prepared for another model or flags invalid
// input (exit 3), naming the file.
func prefixError(path string, err error) error {
	if errors.Is(err, rank.ErrPrefix) {
		return inputError{fmt.Errorf("%s: %w", path, err)}
	}
	return err
}
