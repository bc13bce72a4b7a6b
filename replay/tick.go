package replay

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"cascade"
)

// Tick check bounds: the finest tick RefineTick refines to, and the move
// of the root p50 or p99 between a tick and a tenth of it beyond which
// the tick is too coarse.
const (
	FinestTick = 10 * time.Microsecond
	tickMove   = 0.05
)

// RefineTick returns the tick to replay m at and a note saying how it was
// refined, empty when cfg.Tick stays. Drawn durations keep their mean at
// any tick (dither), but not their spread: at a coarse tick a 0.3 ms
// service lasts 0 or 1 ms, and its latency quantiles and its queue are
// not the real ones. RefineTick replays m with cfg (its traffic and
// duration; four seeds from cfg.Seed) at cfg.Tick and at a tenth of it, and
// moves on, down to FinestTick, while the root requests' p50 or p99 moves
// in every seed the same way by more than 5%; a model whose seeds scatter
// (one that may or may not collapse) moves both ways and keeps its tick.
func RefineTick(ctx context.Context, m *cascade.Model, cfg Config) (time.Duration, string, error) {
	cfg.Seeds = 4
	cfg.Series = false
	at := func(tick time.Duration) ([]*Result, error) {
		c := cfg
		c.Tick = tick
		return RunSeeds(ctx, m, c)
	}
	tick := cfg.Tick
	cur, err := at(tick)
	if err != nil {
		return 0, "", err
	}
	first := cur
	p50 := func(r *Result) float64 { return r.LatencyP50MS }
	p99 := func(r *Result) float64 { return r.LatencyP99MS }
	for tick/10 >= FinestTick {
		fine, err := at(tick / 10)
		if err != nil {
			return 0, "", err
		}
		if !moved(cur, fine, p50) && !moved(cur, fine, p99) {
			break
		}
		tick, cur = tick/10, fine
	}
	if tick == cfg.Tick {
		return tick, "", nil
	}
	a, b := Summarize(first), Summarize(cur)
	ms := func(s *Summary, name string) string {
		return strconv.FormatFloat(s.Metric(name).Mean, 'g', 3, 64)
	}
	return tick, fmt.Sprintf("tick refined %s → %s: at %s the baseline's p50 and p99 were %s and %s ms, at %s %s and %s ms "+
		"(drawn durations round to whole ticks, which coarsens short services; --tick keeps a tick as given)",
		cfg.Tick, tick, cfg.Tick, ms(a, "latency_p50_ms"), ms(a, "latency_p99_ms"),
		tick, ms(b, "latency_p50_ms"), ms(b, "latency_p99_ms")), nil
}

// moved reports whether a latency moved between replays at a tick (a)
// and a finer one (b) of the same seeds: by more than tickMove, the same
// way, in every seed.
func moved(a, b []*Result, get func(*Result) float64) bool {
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
