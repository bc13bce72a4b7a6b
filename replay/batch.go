package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cascade"
)

// BatchSettings say how a Batch replays its jobs. The stages above
// replay (ranking, an incident's checks) fill them from their own
// configuration.
type BatchSettings struct {
	// Seed is the first seed: a job replays Seed, Seed+1, ….
	Seed uint64
	// Seeds is how many seeds a job replays when it does not say.
	Seeds int
	// Parallel bounds the replays run at once; 0 means GOMAXPROCS.
	// Results do not depend on it.
	Parallel int
	// Duration, Tick, Window and Tier are Config's, for every replay.
	Duration time.Duration
	Tick     time.Duration
	Window   time.Duration
	Tier     string
	// Drain is Config.Drain: 0 means each model's own (DrainFor), and a
	// negative value none. A job may lengthen it (BatchJob.Drain).
	Drain time.Duration
	// Draw, when set, replays each seed on its own engine over
	// Draw(model, seed) (a draw of the model's parameters); nil replays
	// the model as given, on one engine a job.
	Draw func(m *cascade.Model, seed uint64) *cascade.Model
	// Progress, when set, is called after each replay with the replays
	// done and planned so far; calls are serialised.
	Progress func(done, total int64)
}

// BatchJob is one model under one traffic, replayed over a batch's
// seeds.
type BatchJob struct {
	Model   *cascade.Model
	Traffic *cascade.Traffic
	// Seeds is how many seeds the job replays; 0 means
	// BatchSettings.Seeds.
	Seeds int
	// Drain, when longer than BatchSettings.Drain, replaces it: a job
	// whose own policy makes work wait longer (a delay queue) gets the
	// time to finish it. Negative means none.
	Drain time.Duration
	// Series keeps per-node time series in the results.
	Series bool
}

// Batch replays jobs in parallel. Results go into slices by job index,
// so what a caller sees does not depend on the parallelism. One Batch
// may run several lists of jobs; its progress counts them all.
type Batch struct {
	set BatchSettings
	mu  struct {
		sync.Mutex
		done, total int64
	}
}

// NewBatch returns a Batch that replays with s.
func NewBatch(s BatchSettings) *Batch { return &Batch{set: s} }

// Settings returns the settings the batch replays with.
func (b *Batch) Settings() BatchSettings { return b.set }

// Plan announces n more replays to the progress callback.
func (b *Batch) Plan(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.total += int64(n)
}

// Done counts one planned replay as done.
func (b *Batch) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.done++
	if b.set.Progress != nil {
		b.set.Progress(b.mu.done, b.mu.total)
	}
}

// Seeds returns the seeds a job replays.
func (b *Batch) Seeds(j *BatchJob) []uint64 {
	k := j.Seeds
	if k <= 0 {
		k = b.set.Seeds
	}
	out := make([]uint64, k)
	for i := range out {
		out[i] = b.set.Seed + uint64(i)
	}
	return out
}

// Config returns the replay configuration of a job's replays.
func (b *Batch) Config(j *BatchJob) Config {
	c := DefaultConfig()
	c.Seed = b.set.Seed
	c.Duration = b.set.Duration
	c.Drain = b.set.Drain // 0: the job's model's own; negative: none
	switch {
	case j.Drain < 0:
		c.Drain = -1
	case c.Drain > 0:
		c.Drain = max(c.Drain, j.Drain)
	}
	c.Tick = b.set.Tick
	c.Window = b.set.Window
	c.Tier = b.set.Tier
	c.Traffic = j.Traffic
	c.Series = j.Series
	return c
}

// Run replays every job over its seeds, up to BatchSettings.Parallel
// replays at once. out[i] holds job i's results in seed order, or nil
// when the job failed; errs[i] says why. The error is the context's, if
// it ended.
func (b *Batch) Run(ctx context.Context, jobs []BatchJob) (out [][]*Result, errs []error, err error) {
	out = make([][]*Result, len(jobs))
	errs = make([]error, len(jobs))
	total := 0
	for i := range jobs {
		total += len(b.Seeds(&jobs[i]))
	}
	b.Plan(total)
	par := b.set.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	par = max(1, min(par, len(jobs)))
	g, ctx := errgroup.WithContext(ctx)
	next := indices(ctx, g, len(jobs))
	for w := 0; w < par; w++ {
		g.Go(func() error {
			for i := range next {
				res, err := b.runJob(ctx, &jobs[i])
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
// parameters are drawn (BatchSettings.Draw), on one engine per seed,
// each over the seed's draw of the model.
func (b *Batch) runJob(ctx context.Context, j *BatchJob) ([]*Result, error) {
	seeds := b.Seeds(j)
	var e *Engine
	var err error
	if b.set.Draw == nil {
		e, err = NewEngine(j.Model, b.Config(j))
	} else {
		// Check the model as given once: a draw only rescales it.
		err = j.Model.Validate()
	}
	if err != nil {
		for range seeds {
			b.Done()
		}
		return nil, err
	}
	res := make([]*Result, len(seeds))
	for i, s := range seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if b.set.Draw != nil {
			if e, err = NewEngine(b.set.Draw(j.Model, s), b.Config(j)); err != nil {
				for range seeds[i:] {
					b.Done()
				}
				return nil, err
			}
		}
		res[i] = e.Run(s)
		b.Done()
		if res[i].Counts.Aborted {
			for range seeds[i+1:] {
				b.Done()
			}
			return nil, fmt.Errorf("seed %d: %w", s, ErrRunaway)
		}
	}
	return res, nil
}

// indices sends 0 … n−1, in order, on the channel it returns, from a
// goroutine of g that stops early when ctx ends; the channel closes
// after the last.
func indices(ctx context.Context, g *errgroup.Group, n int) <-chan int {
	next := make(chan int)
	g.Go(func() error {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	return next
}
