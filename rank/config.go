package rank

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cascade"
	"cascade/replay"
)

// Objective names the metric that ranks candidates.
type Objective string

// Objectives.
const (
	// ObjectiveSuccess is the success rate of root requests (higher is
	// better).
	ObjectiveSuccess Objective = "success"
	// ObjectiveGoodput is successful root requests per second (higher is
	// better).
	ObjectiveGoodput Objective = "goodput"
	// ObjectiveP99 is the p99 latency of successful root requests (lower
	// is better).
	ObjectiveP99 Objective = "p99"
	// ObjectiveAmplification is calls per root request (lower is better).
	ObjectiveAmplification Objective = "amplification"
	// ObjectiveSpread is the time-averaged number of infected nodes
	// (lower is better).
	ObjectiveSpread Objective = "spread"
	// ObjectiveComposite is the mean of the five metrics' relative
	// changes, each signed so that positive is better.
	ObjectiveComposite Objective = "composite"
)

// Objectives lists the objectives in a fixed order.
var Objectives = []Objective{ObjectiveSuccess, ObjectiveGoodput, ObjectiveP99,
	ObjectiveAmplification, ObjectiveSpread, ObjectiveComposite}

// ParseObjective returns the objective named s; empty means goodput.
func ParseObjective(s string) (Objective, error) {
	if s == "" {
		return ObjectiveGoodput, nil
	}
	for _, o := range Objectives {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("objective %q: want success, goodput, p99, amplification, spread or composite", s)
}

// Config is how Run ranks remediations. Set by users through `cascade
// rank` flags; DefaultConfig gives the defaults.
type Config struct {
	// Objective ranks the candidates; default goodput. Empty means
	// goodput.
	Objective Objective
	// Seed is the first seed; default 1. Every replay of every candidate
	// uses the seeds Seed … Seed+Seeds−1, the baseline's own (common
	// random numbers), so differences are paired seed by seed.
	Seed uint64
	// Seeds is how many seeds each candidate is replayed with; default
	// 8, at least 2 (an interval needs two).
	Seeds int
	// Parallel bounds the replays run at once; 0 means GOMAXPROCS. The
	// report does not depend on it.
	Parallel int
	// Duration is the time over which each replay's root requests
	// arrive; default 60 s. The CLI makes it at least the capture's own
	// length (cascade.ModelSource.Length).
	Duration time.Duration
	// Drain is how long each replay runs on after its arrivals, as
	// replay.Config.Drain: 0, the default, means the model's own
	// (replay.DrainFor), and a negative value none. A root request still
	// out at the end counts against success.
	Drain time.Duration
	// Tick is the replay clock's resolution; default 1 ms.
	Tick time.Duration
	// TickCheck, when true, first replays the baseline under the normal
	// traffic at Tick and at a tenth of it and, while the root requests'
	// p50 or p99 moves by more than 5%, refines Tick ten times (down to
	// 10 µs) before anything else is replayed: every drawn duration
	// rounds to whole ticks, keeping its mean but not its spread, so a
	// coarse tick misshapes a model of services shorter than a few ticks.
	// Report.TickNote says what moved.
	// Default true; the CLI turns it off when --tick is given.
	TickCheck bool
	// Window is the replay's metric window (spread, collapse, recovery);
	// default 1 s.
	Window time.Duration
	// Tier selects the service tier as replay.Config.Tier does; empty
	// keeps each node's service distribution.
	Tier string
	// Traffic is the normal traffic; nil means Poisson arrivals at the
	// model's observed entry rates.
	Traffic *cascade.Traffic
	// SurgeFactor multiplies the normal traffic for the middle third of
	// the duration in the surge regime; default 2. Zero means no surge
	// regime (and no metastability check).
	SurgeFactor float64
	// LatencyTargetMS is the latency target W of the bounded-queue
	// candidates (queue = ⌈λ·W⌉ − slots); 0 means twice each node's
	// observed p99.
	LatencyTargetMS float64
	// Resample, when true, replays each seed over its own draw of the
	// parameters the model read from its capture (service times, failure
	// and propagation probabilities, entry rates, each from its sampling
	// distribution given the requests behind it), the same draw for the
	// baseline and every candidate: the intervals then carry the data's
	// uncertainty, not only the replay's noise. Default true.
	Resample bool
	// FitCheck, when true, compares the baseline's replays under the
	// observed traffic with what the capture measured at each node
	// (Report.Fit), and a model whose gaps pass the tolerance calls no
	// change a win or worse. Default true; turn it off for a model that
	// was changed on purpose since it was read (a what-if).
	FitCheck bool
	// Derive, when true, derives candidates from the model; default
	// true. False ranks the user's scenarios alone.
	Derive bool
	// Capacity, when true, sweeps offered load for the capacity curve,
	// its knee and collapse point; default true. The entry rate-limit
	// candidate needs the knee.
	Capacity bool
	// CapacityPoints is the number of load points of the sweep, from
	// CapacityMin to CapacityMax times the normal rate; default 12 from
	// 0.25 to 3.
	CapacityPoints int
	CapacityMin    float64
	CapacityMax    float64
	// CapacitySeeds is how many seeds each load point is replayed with;
	// 0 means Seeds.
	CapacitySeeds int
	// MaxSet bounds how many ranked wins the compatible-set search tries
	// to add; default 6.
	MaxSet int
	// Scenarios are the user's candidates, ranked with the derived ones.
	// They must not set traffic: every candidate runs under the same
	// traffic.
	Scenarios []*cascade.Scenario
	// Shard, when set (Count > 0), makes the ranking one shard of
	// several: RunShard replays the shard's share of the candidates'
	// replays and Merge joins the parts (see RunShard). Default zero: the
	// whole ranking. Run rejects it.
	Shard replay.Shard `json:"-"`
	// Prefix, with Shard, is the ranking's prefix replayed once
	// (Prepare): the shard takes its tick check, baseline and capacity
	// sweep from it instead of replaying them. It must have been
	// prepared for the same model and config. Run and Prepare reject it.
	Prefix *Prepared `json:"-"`
	// Progress, when set, is called after each replay with the replays
	// done and planned so far; calls are serialised.
	Progress func(done, total int64) `json:"-"`
}

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{
		Objective:      ObjectiveGoodput,
		Seed:           1,
		Seeds:          8,
		Duration:       60 * time.Second,
		Tick:           time.Millisecond,
		TickCheck:      true,
		Window:         time.Second,
		SurgeFactor:    2,
		Derive:         true,
		FitCheck:       true,
		Resample:       true,
		Capacity:       true,
		CapacityPoints: 12,
		CapacityMin:    0.25,
		CapacityMax:    3,
		MaxSet:         6,
	}
}

// Validate reports every problem with the configuration, each naming its
// field.
func (c *Config) Validate() error {
	var errs []error
	if _, err := ParseObjective(string(c.Objective)); err != nil {
		errs = append(errs, err)
	}
	if c.Seeds < 2 {
		errs = append(errs, fmt.Errorf("seeds: %d, want at least 2 (an interval needs two)", c.Seeds))
	}
	if err := c.Shard.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Parallel < 0 {
		errs = append(errs, fmt.Errorf("parallel: %d is negative", c.Parallel))
	}
	if c.Duration <= 0 || c.Tick <= 0 || c.Window <= 0 {
		errs = append(errs, errors.New("duration, tick and window must be positive"))
	}
	if c.SurgeFactor < 0 {
		errs = append(errs, fmt.Errorf("surge factor: %g is negative", c.SurgeFactor))
	}
	if c.LatencyTargetMS < 0 {
		errs = append(errs, fmt.Errorf("latency target: %g ms is negative", c.LatencyTargetMS))
	}
	if c.Capacity {
		if c.CapacityPoints < 3 {
			errs = append(errs, fmt.Errorf("capacity points: %d, want at least 3", c.CapacityPoints))
		}
		if !(c.CapacityMin > 0 && c.CapacityMax > c.CapacityMin) {
			errs = append(errs, fmt.Errorf("capacity range: [%g, %g], want 0 < min < max", c.CapacityMin, c.CapacityMax))
		}
		if c.CapacitySeeds < 0 {
			errs = append(errs, fmt.Errorf("capacity seeds: %d is negative", c.CapacitySeeds))
		}
	}
	if c.MaxSet < 0 {
		errs = append(errs, fmt.Errorf("max set: %d is negative", c.MaxSet))
	}
	for i, s := range c.Scenarios {
		if s == nil {
			errs = append(errs, fmt.Errorf("scenarios[%d]: nil", i))
		} else if s.Traffic != nil {
			errs = append(errs, fmt.Errorf("scenarios[%d] (%s): sets traffic; rank replays every candidate under the same traffic (use --traffic)", i, s.Name))
		}
	}
	return errors.Join(errs...)
}

// ParseTraffic reads the --traffic flag: "observed" (nil: the model's
// observed load, closed-loop clients when its Load is closed, else
// Poisson at its entry rates), "surge:X" (observed, and a surge factor X
// for the surge regime), "closed:USERS,THINK" (closed loop; THINK in ms
// or as a duration) or "RATE" (Poisson at RATE per second, or N/ms).
// surge is 0 unless the flag sets one.
func ParseTraffic(s string) (t *cascade.Traffic, surge float64, err error) {
	switch {
	case s == "" || s == "observed":
		return nil, 0, nil
	case strings.HasPrefix(s, "surge:"):
		x, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimPrefix(s, "surge:"), "x"), 64)
		if err != nil || x <= 0 {
			return nil, 0, fmt.Errorf("traffic %q: want surge:FACTOR with FACTOR > 0", s)
		}
		return nil, x, nil
	case strings.HasPrefix(s, "closed:"):
		users, think, ok := strings.Cut(strings.TrimPrefix(s, "closed:"), ",")
		n, err := strconv.Atoi(users)
		if err != nil || n < 1 || !ok {
			return nil, 0, fmt.Errorf("traffic %q: want closed:USERS,THINK", s)
		}
		ms, err := parseMS(think)
		if err != nil {
			return nil, 0, fmt.Errorf("traffic %q: think time: %w", s, err)
		}
		return &cascade.Traffic{Kind: cascade.TrafficClosed, Users: n, ThinkMS: ms}, 0, nil
	}
	scale := 1.0
	r := s
	switch {
	case strings.HasSuffix(r, "/ms"):
		r, scale = strings.TrimSuffix(r, "/ms"), 1000
	case strings.HasSuffix(r, "/s"):
		r = strings.TrimSuffix(r, "/s")
	}
	v, err := strconv.ParseFloat(r, 64)
	if err != nil || v <= 0 {
		return nil, 0, fmt.Errorf("traffic %q: want observed, surge:X, closed:USERS,THINK or a rate", s)
	}
	return &cascade.Traffic{Kind: cascade.TrafficPoisson, RatePerSec: v * scale}, 0, nil
}

// parseMS reads a duration ("100ms", "1.5s") or plain milliseconds.
func parseMS(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 {
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return float64(d) / 1e6, nil
}

// Batch returns the settings of the ranking's replays: its seeds,
// parallelism, duration, drain, tick, window, tier and progress, each
// seed over its own draw of the model when Resample is set.
func (c *Config) Batch() replay.BatchSettings {
	s := replay.BatchSettings{Seed: c.Seed, Seeds: c.Seeds, Parallel: c.Parallel, Duration: c.Duration,
		Tick: c.Tick, Window: c.Window, Tier: c.Tier, Drain: c.Drain, Progress: c.Progress}
	if c.Resample {
		s.Draw = resample
	}
	return s
}
