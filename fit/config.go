package fit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cascade/replay"
)

// Config is what a user sets for one fit. Set by `cascade fit` flags;
// DefaultConfig gives the defaults.
type Config struct {
	// Grid is the grid specification (see ParseGrid). Default empty,
	// which means DefaultGrid: p = 0.01:0.5:0.01, r around the observed
	// re-activation, k = 0:2:0.5, theta = 0.6:1.2:0.2, the four tiers
	// and fanout = 1.
	Grid string
	// Window is the width of an observation window. Default 1 minute;
	// zero means the default. When the dataset's time range is shorter
	// than two windows, the whole range is one window.
	Window time.Duration
	// Windows selects the windows fitted: "all" (default; empty means
	// all), "auto" (the busiest window of each day when the data covers
	// two days or more, else the Busiest windows with the most root
	// requests), or a comma-separated list of window numbers counted
	// from 0 at the dataset's start ("0,2,5").
	Windows string
	// Busiest is how many windows "auto" picks from a single day.
	// Default 5; zero means the default.
	Busiest int
	// Holdout is how many windows are back-tested: each is left out in
	// turn, the grid is fitted on the others, and the left-out window is
	// predicted. The windows with the most root requests are chosen.
	// Default 5; zero means none; a negative value means every window.
	// At least two windows are needed.
	Holdout int
	// Tier restricts the service tier: "p50", "p95", "p99", "mean",
	// "tiers" or "empirical" replaces the grid's tier axis by that one
	// tier; "all" (default; empty means all) keeps the grid's.
	Tier string
	// Search is "exhaustive" (every point of the grid), "refine"
	// (coarse-to-fine: a coarse sub-grid, then compass search with
	// halving steps from its best points) or "auto" (default; empty
	// means auto): exhaustive up to Exhaustive points, refine above.
	Search string
	// Exhaustive is the largest grid that "auto" searches point by
	// point. Default 2,000; zero means the default.
	Exhaustive int
	// Starts is how many of the coarse sub-grid's best points (per tier)
	// the refinement starts from. Default 3; zero means the default.
	Starts int
	// Parallel bounds how many grid points are replayed at once.
	// Default 0, which means GOMAXPROCS. The result does not depend on it.
	Parallel int
	// Seed is the first replay seed; Seeds is how many seeds (Seed,
	// Seed+1, …) every grid point is replayed with in every window. The
	// same seeds serve every point (common random numbers), so the loss
	// surface is smooth and the fit deterministic. Defaults 1 and 1;
	// zero means the default.
	Seed  uint64
	Seeds int
	// Tick is the replay's clock resolution. Default 1 ms; zero means
	// the default.
	Tick time.Duration
	// TickCheck, when true, refines Tick before the search as
	// replay.RefineTick does, on the model under its observed load
	// (four seeds, as long as the windows up to a minute), and says so in
	// the report's notes. DefaultConfig sets it; the CLI turns it off
	// when --tick is given.
	TickCheck bool
	// Drain is how long each window's replay runs past its last arrival,
	// so that its requests finish. Default 10 s; zero means the default.
	Drain time.Duration
	// Weights weigh the terms of the loss. Default all 1; a zero weight
	// drops its term.
	Weights Weights
	// FlatTolerance is the relative loss increase at ±1 grid step below
	// which a parameter counts as not identifiable (flat). Default 0.01;
	// zero means the default.
	FlatTolerance float64
	// LogitSample bounds the calls kept (a uniform sample) for the
	// logistic regression. Default 50,000; zero means the default.
	LogitSample int
	// Shard, when set (Count > 0), makes the fit one shard of several:
	// RunShard replays the shard's part of the grid and Merge joins the
	// parts (see RunShard). Default zero: the whole fit. Run rejects it.
	Shard replay.Shard `json:"-"`
	// Progress, when not nil, is called as grid points finish with the
	// points done and the points planned so far (the plan grows while a
	// refinement runs). Calls come from one goroutine at a time.
	Progress func(done, total int64) `json:"-"`
}

// Weights weigh the loss terms (see docs/fit.md, "Scoring a point").
type Weights struct {
	// Failure weighs the failure-rate term.
	Failure float64 `json:"failure"`
	// Latency weighs the latency-quantile term (P50 and P99).
	Latency float64 `json:"latency"`
	// Volume weighs the request-count term (retries, fan-out).
	Volume float64 `json:"volume"`
	// Queue weighs the queue-depth term, where metrics give one.
	Queue float64 `json:"queue"`
}

// Defaults of Config.
const (
	DefaultWindow        = time.Minute
	DefaultBusiest       = 5
	DefaultHoldout       = 5
	DefaultExhaustive    = 2000
	DefaultStarts        = 3
	DefaultTick          = time.Millisecond
	DefaultDrain         = 10 * time.Second
	DefaultFlatTolerance = 0.01
	DefaultLogitSample   = 50_000
)

// Search modes.
const (
	SearchAuto       = "auto"
	SearchExhaustive = "exhaustive"
	SearchRefine     = "refine"
)

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{
		Window:        DefaultWindow,
		Windows:       "all",
		Busiest:       DefaultBusiest,
		Holdout:       DefaultHoldout,
		Tier:          "all",
		Search:        SearchAuto,
		Exhaustive:    DefaultExhaustive,
		Starts:        DefaultStarts,
		Seed:          1,
		Seeds:         1,
		Tick:          DefaultTick,
		TickCheck:     true,
		Drain:         DefaultDrain,
		Weights:       Weights{Failure: 1, Latency: 1, Volume: 1, Queue: 1},
		FlatTolerance: DefaultFlatTolerance,
		LogitSample:   DefaultLogitSample,
	}
}

// Validate reports every problem with the config, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("window: %v is negative", c.Window))
	}
	if _, err := parseWindowList(c.Windows); err != nil {
		errs = append(errs, fmt.Errorf("windows: %w", err))
	}
	if c.Busiest < 0 || c.Exhaustive < 0 || c.Starts < 0 || c.Parallel < 0 || c.Seeds < 0 || c.LogitSample < 0 {
		errs = append(errs, errors.New("busiest, exhaustive, starts, parallel, seeds and logit-sample must not be negative"))
	}
	if c.Tier != "" && c.Tier != "all" && !isTier(c.Tier) {
		errs = append(errs, fmt.Errorf("tier: %q, want all or one of %s", c.Tier, strings.Join(Tiers, ", ")))
	}
	switch c.Search {
	case "", SearchAuto, SearchExhaustive, SearchRefine:
	default:
		errs = append(errs, fmt.Errorf("search: %q, want auto, exhaustive or refine", c.Search))
	}
	if c.Tick < 0 || c.Drain < 0 {
		errs = append(errs, errors.New("tick and drain must not be negative"))
	}
	if w := c.Weights; w.Failure < 0 || w.Latency < 0 || w.Volume < 0 || w.Queue < 0 {
		errs = append(errs, errors.New("weights must not be negative"))
	}
	if err := c.Shard.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.FlatTolerance < 0 {
		errs = append(errs, fmt.Errorf("flat-tolerance: %g is negative", c.FlatTolerance))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.Windows == "" {
		c.Windows = d.Windows
	}
	if c.Busiest == 0 {
		c.Busiest = d.Busiest
	}
	if c.Tier == "" {
		c.Tier = d.Tier
	}
	if c.Search == "" {
		c.Search = d.Search
	}
	if c.Exhaustive == 0 {
		c.Exhaustive = d.Exhaustive
	}
	if c.Starts == 0 {
		c.Starts = d.Starts
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.Seeds == 0 {
		c.Seeds = d.Seeds
	}
	if c.Tick == 0 {
		c.Tick = d.Tick
	}
	if c.Drain == 0 {
		c.Drain = d.Drain
	}
	if c.FlatTolerance == 0 {
		c.FlatTolerance = d.FlatTolerance
	}
	if c.LogitSample == 0 {
		c.LogitSample = d.LogitSample
	}
	return c
}

// parseWindowList reads Config.Windows: nil for "all", []int{-1} for
// "auto", else the listed window numbers.
func parseWindowList(s string) ([]int, error) {
	switch s {
	case "", "all":
		return nil, nil
	case "auto":
		return []int{-1}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want all, auto or window numbers (0, 1, …) separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}
