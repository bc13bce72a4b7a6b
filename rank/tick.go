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
	rc := replay.NewBatch(cfg.Batch()).Config(&replay.BatchJob{Traffic: normal.Traffic})
	rc.Parallel = cfg.Parallel
	return replay.RefineTick(ctx, m, rc)
}
