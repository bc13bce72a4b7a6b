package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sync/errgroup"

	"cascade"
)

// ErrRunaway is returned when a replay stops early because the calls in
// flight keep multiplying (fan-out on a cycle of the graph) past what
// memory allows.
var ErrRunaway = errors.New("calls in flight multiply without bound (fan-out on a cycle?)")

// Run replays the model once with seed and returns what it measured.
// Same model, configuration and seed give the same Result.
func (e *Engine) Run(seed uint64) *Result {
	e.take()
	e.reset(seed)
	e.startTraffic()
	e.loop()
	r := e.result()
	e.give()
	return r
}

// Replay replays the model once with cfg.Seed.
func Replay(m *cascade.Model, cfg Config) (*Result, error) {
	e, err := NewEngine(m, cfg)
	if err != nil {
		return nil, err
	}
	r := e.Run(e.cfg.Seed)
	if r.Counts.Aborted {
		return nil, fmt.Errorf("seed %d: %w", r.Seed, ErrRunaway)
	}
	return r, nil
}

// RunSeeds replays the model with seeds cfg.Seed … cfg.Seed+cfg.Seeds−1,
// up to cfg.Parallel at once, and returns the results in seed order; the
// results do not depend on the parallelism.
func RunSeeds(ctx context.Context, m *cascade.Model, cfg Config) ([]*Result, error) {
	k := max(1, cfg.Seeds)
	par := cfg.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	par = min(par, k)
	// Validate once, before starting workers; the first worker uses
	// this engine.
	first, err := NewEngine(m, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]*Result, k)
	g, ctx := errgroup.WithContext(ctx)
	next := indices(ctx, g, k)
	for w := 0; w < par; w++ {
		e := first
		g.Go(func() error {
			if w > 0 {
				var err error
				if e, err = NewEngine(m, cfg); err != nil {
					return err
				}
			}
			for i := range next {
				if err := ctx.Err(); err != nil {
					return err
				}
				out[i] = e.Run(cfg.Seed + uint64(i))
				if out[i].Counts.Aborted {
					return fmt.Errorf("seed %d: %w", out[i].Seed, ErrRunaway)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
