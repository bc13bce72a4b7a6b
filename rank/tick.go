package rank

import (
	"context"
	"time"

	"cascade"
	"cascade/replay"
)

// refineTick is replay.RefineTick for the ranking (Config.TickCheck): the
// baseline under the normal traffic, with the run's first seed, duration
// and window.
func refineTick(ctx context.Context, cfg Config, m *cascade.Model, normal Regime) (time.Duration, string, error) {
	rc := newRunner(cfg).replayConfig(&job{traffic: normal.Traffic})
	rc.Parallel = cfg.Parallel
	return replay.RefineTick(ctx, m, rc)
}
