package analyze

import (
	"context"
	"slices"

	"cascade"
	"cascade/rank"
	"cascade/replay"
	"cascade/report"
)

// timelineQueues is how many nodes' queues a timeline keeps.
const timelineQueues = 4

// timeline replays the baseline and the best change (the best compatible
// set when it won, else the top-ranked win) once each, with the first
// seed, under the surge when the ranking had one (where a change shows
// most), keeping the per-window series.
func timeline(ctx context.Context, m *cascade.Model, cfg rank.Config, r *rank.Report) (*report.Timeline, error) {
	if len(r.Regimes) == 0 {
		return nil, nil
	}
	reg := r.Regimes[len(r.Regimes)-1]
	rc := replay.DefaultConfig()
	rc.Seed, rc.Duration, rc.Tick, rc.Window, rc.Tier = cfg.Seed, cfg.Duration, cfg.Tick, cfg.Window, cfg.Tier
	rc.Traffic, rc.Series = reg.Traffic, true
	tl := &report.Timeline{Regime: reg.Name, Seed: cfg.Seed, WindowMS: float64(cfg.Window) / 1e6}
	if t := reg.Traffic; t != nil && len(t.Surges) > 0 {
		s := t.Surges[len(t.Surges)-1]
		tl.SurgeFromMS, tl.SurgeToMS = s.AtMS, s.AtMS+s.ForMS
	}
	base, err := replay.Replay(m, rc)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var changed *replay.Result
	if row := best(r); row != nil {
		cm, _, err := replay.Apply(m, row.Candidate.Scenario)
		if err != nil {
			return nil, err
		}
		if changed, err = replay.Replay(cm, rc); err != nil {
			return nil, err
		}
		tl.Change, tl.Description = row.Candidate.Name, row.Candidate.Description
	}
	nodes := deepest(base, changed)
	tl.Baseline = run(base, nodes, tl.WindowMS)
	if changed != nil {
		c := run(changed, nodes, tl.WindowMS)
		tl.Changed = &c
	}
	return tl, nil
}

// best returns the change to show: the compatible set when it is a win,
// else the first-ranked row, else nil.
func best(r *rank.Report) *rank.Row {
	if r.Set != nil && r.Set.Row.Verdict == rank.Win && len(r.Set.Members) > 1 {
		return &r.Set.Row
	}
	for i := range r.Rows {
		if r.Rows[i].Rank == 1 {
			return &r.Rows[i]
		}
	}
	return nil
}

// deepest names the nodes whose queues grew deepest in either run,
// deepest first (ties by name), at most timelineQueues of them, none that
// never queued.
func deepest(rs ...*replay.Result) []string {
	peak := map[string]float64{}
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, n := range r.Nodes {
			if n.Series == nil {
				continue
			}
			for _, q := range n.Series.QueueDepth {
				peak[n.Name] = max(peak[n.Name], q)
			}
		}
	}
	var names []string
	for n, q := range peak {
		if q > 0 {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if peak[a] != peak[b] {
			if peak[a] > peak[b] {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	if len(names) > timelineQueues {
		names = names[:timelineQueues]
	}
	return names
}

// run extracts one replay's series: root requests per second and the
// named nodes' queue depths.
func run(r *replay.Result, nodes []string, windowMS float64) report.TimelineRun {
	perSec := func(xs []int64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = float64(x) * 1000 / windowMS
		}
		return out
	}
	tr := report.TimelineRun{
		OfferedPerSec: perSec(r.Series.Offered),
		GoodputPerSec: perSec(r.Series.Succeeded),
		Queues:        []report.NodeQueue{},
	}
	for _, name := range nodes {
		q := report.NodeQueue{Node: name, Depth: []float64{}}
		for _, n := range r.Nodes {
			if n.Name == name && n.Series != nil {
				q.Depth = n.Series.QueueDepth
			}
		}
		tr.Queues = append(tr.Queues, q)
	}
	return tr
}
