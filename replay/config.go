package replay

import (
	"errors"
	"fmt"
	"math"
	"time"

	"cascade"
)

// Config is how a replay runs. Set by users through `cascade replay` flags;
// DefaultConfig gives the defaults.
type Config struct {
	// Seed is the first random seed; default 1. Every stream of random
	// numbers derives from it.
	Seed uint64
	// Seeds is how many seeds RunSeeds replays (Seed, Seed+1, …); default
	// 1. Zero means 1.
	Seeds int
	// Parallel bounds how many seeds run at once; 0 means GOMAXPROCS. The
	// output does not depend on it.
	Parallel int
	// Duration is the time over which root requests arrive; default 60 s.
	// Arrivals stop at the traffic's own duration when that is shorter.
	Duration time.Duration
	// Drain is how long the replay runs on after Duration, with no new
	// arrivals, for the work in flight to end. A root request that has
	// not ended by then is unfinished: it counts against the success rate
	// (Outcome.Unfinished). 0, the default, means the model's own
	// (DrainFor); a negative value means none: the replay ends with its
	// arrivals.
	Drain time.Duration
	// Tick is the clock's resolution; default 1 ms. Every drawn duration
	// rounds to a whole number of ticks, keeping its mean (dither) but
	// not its spread: refine it when services last a few ticks.
	Tick time.Duration
	// Window is the length of the metric windows (time series, spread,
	// collapse and recovery); default 1 s.
	Window time.Duration
	// Traffic, when not nil, replaces the arrivals (the scenario's
	// traffic, or the flags'). Nil means Poisson arrivals at the model's
	// entry rates.
	Traffic *cascade.Traffic
	// Observed, when not empty, are the arrival times and entries of
	// observed root requests; they replace Traffic's arrivals. An engine
	// reads them in place when they are in time order, so they must not
	// change while it is in use.
	Observed []Arrival
	// Tier, when set, replaces every node's service distribution by one
	// built from its observed tiers (Node.Tiers): "p50", "p95" or "p99"
	// (constant at that quantile), "tiers" (the piecewise-linear quantile
	// function) or "empirical" (the stored quantile points). Empty keeps
	// Node.Service. Nodes without tiers keep their service.
	Tier string
	// InfectFailureRate is the failure rate in a window from which a node
	// counts as infected; default 0.1.
	InfectFailureRate float64
	// InfectLoad is the mean load ρ in a window from which a node counts
	// as infected; default 2 (every slot busy and, on average, as many
	// calls queued as there are slots).
	InfectLoad float64
	// Series keeps per-node time series in the outcome; default false.
	Series bool
	// Scenario names the scenario in the outcome; empty means "baseline".
	Scenario string
}

// Arrival is one observed root request.
type Arrival struct {
	// AtMS is the arrival time from replay start.
	AtMS float64
	// Entry names the entry node; empty means the first entry.
	Entry string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Seed:              1,
		Seeds:             1,
		Duration:          60 * time.Second,
		Tick:              time.Millisecond,
		Window:            time.Second,
		InfectFailureRate: 0.1,
		InfectLoad:        2,
	}
}

// Tiers accepted by Config.Tier.
var tierNames = []string{"", "p50", "p95", "p99", "tiers", "empirical"}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration: %v, want > 0", c.Duration))
	}
	if c.Tick <= 0 {
		errs = append(errs, fmt.Errorf("tick: %v, want > 0", c.Tick))
	} else if (c.Duration+c.Drain)/c.Tick > 1<<40 {
		errs = append(errs, fmt.Errorf("tick: %v is too fine for duration %v", c.Tick, c.Duration))
	}
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("window: %v, want > 0", c.Window))
	} else if (c.Duration+c.Drain)/c.Window > 1_000_000 {
		errs = append(errs, fmt.Errorf("window: %v gives more than a million windows", c.Window))
	}
	if c.Seeds < 0 || c.Parallel < 0 {
		errs = append(errs, errors.New("seeds and parallel must not be negative"))
	}
	ok := false
	for _, t := range tierNames {
		ok = ok || c.Tier == t
	}
	if !ok {
		errs = append(errs, fmt.Errorf("tier: %q, want p50, p95, p99, tiers or empirical", c.Tier))
	}
	if t := c.Traffic; t != nil {
		errs = append(errs, validateTraffic(t))
	}
	for i, a := range c.Observed {
		if a.AtMS < 0 {
			errs = append(errs, fmt.Errorf("observed[%d]: arrival at %g ms is negative", i, a.AtMS))
			break
		}
	}
	return errors.Join(errs...)
}

func validateTraffic(t *cascade.Traffic) error {
	var errs []error
	switch t.Kind {
	case "", cascade.TrafficPoisson, cascade.TrafficObserved:
	case cascade.TrafficClosed:
		if t.Users < 1 {
			errs = append(errs, fmt.Errorf("traffic.users: %d, closed traffic needs at least 1", t.Users))
		}
	default:
		errs = append(errs, fmt.Errorf("traffic.kind: %q, want poisson, observed or closed", t.Kind))
	}
	if t.RatePerSec < 0 || t.ThinkMS < 0 || t.DurationMS < 0 {
		errs = append(errs, errors.New("traffic: rate_per_sec, think_ms and duration_ms must not be negative"))
	}
	for i, s := range t.Surges {
		if s.Factor < 0 || s.ForMS < 0 || s.AtMS < 0 {
			errs = append(errs, fmt.Errorf("traffic.surges[%d]: at_ms, for_ms and factor must not be negative", i))
		}
	}
	for i, a := range t.ArrivalsMS {
		if a < 0 {
			errs = append(errs, fmt.Errorf("traffic.arrivals_ms[%d]: %g is negative", i, a))
			break
		}
	}
	return errors.Join(errs...)
}

// DrainFor returns the drain a replay of m gets unless told: time for
// the work set off by a root request that arrived at the last moment to
// end, even three times slower than the capture's slowest 1% (the
// highest observed p99 of any node: the entries' for a request and its
// calls, a consumer's for the messages it works), plus every delay a
// queue's redelivery policy makes a failed message wait; or the longest
// an entry's client waits on its deadlines (timeout × attempts) when that
// is longer; and at least a second. A request or a flow still out after
// it is stuck in a backlog, or slower than anything the capture's
// clients waited for: unfinished, not a success. (A what-if that slows
// the system threefold or more loses its last requests to the drain
// too: that is the latency it costs, counted as the clients would.)
func DrainFor(m *cascade.Model) time.Duration {
	var p99, delays float64
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Observed != nil {
			p99 = max(p99, n.Observed.LatencyP99MS)
		}
		if q := n.Queue; q != nil && q.Redelivery == cascade.RedeliverDelay {
			delays += q.DelayMS * float64(max(1, q.MaxDeliveries-1))
		}
	}
	ms := max(1000, 3*p99+delays)
	for _, en := range m.Entries {
		if en.TimeoutMS > 0 {
			attempts := 1
			if en.Retry != nil {
				attempts = max(1, en.Retry.MaxAttempts)
			}
			ms = max(ms, en.TimeoutMS*float64(attempts))
		}
	}
	return time.Duration(math.Ceil(ms)) * time.Millisecond
}
