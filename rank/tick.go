package rank

import (
	"context"
	"fmt"
	"math"
	"time"

	"cascade"
	"cascade/replay"
)

// Tick check bounds: the finest tick it refines to, and the move of the
// baseline's root p50 or p99 between a tick and a tenth of it beyond
// which the tick is too coarse.
const (
	finestTick = 10 * time.Microsecond
	tickMove   = 0.05
)

// refineTick returns the tick to replay at (Config.TickCheck) and a note
// saying how it was refined, empty when cfg.Tick stays. It replays the
// baseline under the normal traffic with the run's seeds (at most four)
// at each tick and a tenth of it, and moves on while the root p50 or p99
// moves (see moved).
func refineTick(ctx context.Context, cfg Config, m *cascade.Model, normal Regime) (time.Duration, string, error) {
	cfg.Seeds = min(cfg.Seeds, 4)
	cfg.Progress = nil
	at := func(tick time.Duration) ([]*replay.Result, error) {
		c := cfg
		c.Tick = tick
		res, err := runOne(ctx, newRunner(c), m, []Regime{normal})
		if err != nil {
			return nil, err
		}
		return res[0], nil
	}
	tick := cfg.Tick
	cur, err := at(tick)
	if err != nil {
		return 0, "", err
	}
	first := cur
	for tick/10 >= finestTick {
		fine, err := at(tick / 10)
		if err != nil {
			return 0, "", err
		}
		p50 := func(r *replay.Result) float64 { return r.LatencyP50MS }
		p99 := func(r *replay.Result) float64 { return r.LatencyP99MS }
		if !moved(cur, fine, p50) && !moved(cur, fine, p99) {
			break
		}
		tick, cur = tick/10, fine
	}
	if tick == cfg.Tick {
		return tick, "", nil
	}
	a, b := replay.Summarize(first), replay.Summarize(cur)
	return tick, fmt.Sprintf("tick refined %s → %s: at %s the baseline's p50 and p99 were %s and %s ms, at %s %s and %s ms "+
		"(every drawn duration is rounded up to whole ticks, which slows short services; --tick keeps a tick as given)",
		cfg.Tick, tick, cfg.Tick, num(round3(a.Metric(MetricP50).Mean)), num(round3(a.Metric(MetricP99).Mean)),
		tick, num(round3(b.Metric(MetricP50).Mean)), num(round3(b.Metric(MetricP99).Mean))), nil
}

// moved reports whether a latency moved between replays at a tick (a)
// and a finer one (b) of the same seeds: by more than tickMove, the same
// way, in every seed. A model whose seeds scatter (one that may or may
// not collapse) moves both ways and is not refined for its noise.
func moved(a, b []*replay.Result, get func(*replay.Result) float64) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	sign := 0
	for i := range a {
		x, y := get(a[i]), get(b[i])
		if math.IsNaN(x) || math.IsNaN(y) || math.Abs(x-y) <= tickMove*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
		s := 1
		if y < x {
			s = -1
		}
		if sign != 0 && s != sign {
			return false
		}
		sign = s
	}
	return true
}
