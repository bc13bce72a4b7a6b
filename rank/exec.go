package rank

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cascade"
	"cascade/replay"
)

// job is one model under one traffic, replayed over the run's seeds.
type job struct {
	model   *cascade.Model
	traffic *cascade.Traffic
	seeds   int // 0 means Config.Seeds
	// drain, when longer than Config.Drain, replaces it: a candidate
	// whose own policy makes work wait longer (a delay queue) gets the
	// time to finish it. Negative means none (the fit check's replays).
	drain  time.Duration
	series bool // keep per-node time series
}

// runner replays jobs in parallel. Results go into slices by job index, so
// what a caller sees does not depend on the parallelism.
type runner struct {
	cfg Config
	mu  struct {
		sync.Mutex
		done, total int64
	}
}

func newRunner(cfg Config) *runner { return &runner{cfg: cfg} }

// plan announces n more replays to the progress callback.
func (r *runner) plan(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.total += int64(n)
}

func (r *runner) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.done++
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.mu.done, r.mu.total)
	}
}

// seeds returns the seeds a job replays.
func (r *runner) seeds(j *job) []uint64 {
	k := j.seeds
	if k <= 0 {
		k = r.cfg.Seeds
	}
	out := make([]uint64, k)
	for i := range out {
		out[i] = r.cfg.Seed + uint64(i)
	}
	return out
}

func (r *runner) replayConfig(j *job) replay.Config {
	c := replay.DefaultConfig()
	c.Seed = r.cfg.Seed
	c.Duration = r.cfg.Duration
	c.Drain = r.cfg.Drain // 0: the job's model's own; negative: none
	switch {
	case j.drain < 0:
		c.Drain = -1
	case c.Drain > 0:
		c.Drain = max(c.Drain, j.drain)
	}
	c.Tick = r.cfg.Tick
	c.Window = r.cfg.Window
	c.Tier = r.cfg.Tier
	c.Traffic = j.traffic
	c.Series = j.series
	return c
}

// run replays every job over its seeds, up to Config.Parallel replays at
// once. out[i] holds job i's results in seed order, or nil when the job
// failed; errs[i] says why. The error is the context's, if it ended.
func (r *runner) run(ctx context.Context, jobs []job) (out [][]*replay.Result, errs []error, err error) {
	out = make([][]*replay.Result, len(jobs))
	errs = make([]error, len(jobs))
	total := 0
	for i := range jobs {
		total += len(r.seeds(&jobs[i]))
	}
	r.plan(total)
	par := r.cfg.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	par = max(1, min(par, len(jobs)))
	g, ctx := errgroup.WithContext(ctx)
	next := make(chan int)
	g.Go(func() error {
		defer close(next)
		for i := range jobs {
			select {
			case next <- i:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for w := 0; w < par; w++ {
		g.Go(func() error {
			for i := range next {
				res, err := r.runJob(ctx, &jobs[i])
				if ctx.Err() != nil {
					return ctx.Err()
				}
				out[i], errs[i] = res, err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// runJob replays one job over its seeds on one engine, or, when the
// parameters are resampled (Config.Resample), on one engine per seed,
// each over the seed's draw of the model.
func (r *runner) runJob(ctx context.Context, j *job) ([]*replay.Result, error) {
	seeds := r.seeds(j)
	var e *replay.Engine
	var err error
	if !r.cfg.Resample {
		e, err = replay.NewEngine(j.model, r.replayConfig(j))
	} else {
		// Check the model as given once: a draw only rescales it.
		err = j.model.Validate()
	}
	if err != nil {
		for range seeds {
			r.tick()
		}
		return nil, err
	}
	res := make([]*replay.Result, len(seeds))
	for i, s := range seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.cfg.Resample {
			if e, err = replay.NewEngine(resample(j.model, s), r.replayConfig(j)); err != nil {
				for range seeds[i:] {
					r.tick()
				}
				return nil, err
			}
		}
		res[i] = e.Run(s)
		r.tick()
		if res[i].Counts.Aborted {
			for range seeds[i+1:] {
				r.tick()
			}
			return nil, fmt.Errorf("seed %d: %w", s, replay.ErrRunaway)
		}
	}
	return res, nil
}
