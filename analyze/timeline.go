package analyze

import (
	"context"
	"math"
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
	// The charts show the arrivals' time; the drain's idle windows would
	// read as goodput falling to nothing.
	rc.Drain = -1
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
	k := chartWindows(base, tl.WindowMS)
	tl.Baseline = run(base, nodes, tl.WindowMS, k)
	if changed != nil {
		c := run(changed, nodes, tl.WindowMS, k)
		tl.Changed = &c
	}
	tl.WindowMS *= float64(k)
	tl.Clients = clients(reg.Traffic, len(tl.Baseline.OfferedPerSec), tl.WindowMS)
	return tl, nil
}

// Chart windows: the replay's windows are joined, k at a time, until a
// window holds about minChartRoots root requests of the baseline (fewer
// make goodput a comb of 0, 1 and 2 requests a window) or the run is
// maxChartPoints windows long, but never below minChartPoints windows.
const (
	minChartRoots  = 30
	maxChartPoints = 120
	minChartPoints = 20
)

// chartWindows returns how many replay windows make one chart window, a
// round number (1, 2, 5, 10, 15, 20, 30, 60, ...) so that chart windows
// fall on round times.
func chartWindows(r *replay.Result, windowMS float64) int {
	n := len(r.Series.Offered)
	if n == 0 || windowMS <= 0 {
		return 1
	}
	var roots int64
	for _, x := range r.Series.Offered {
		roots += x
	}
	return joinWindows(n, roots)
}

// joinWindows returns how many of n windows holding roots root requests
// in all make one chart window (see chartWindows).
func joinWindows(n int, roots int64) int {
	if n == 0 {
		return 1
	}
	perWindow := float64(roots) / float64(n)
	want := 1
	if perWindow > 0 {
		want = int(math.Ceil(minChartRoots / perWindow))
	}
	want = max(want, (n+maxChartPoints-1)/maxChartPoints)
	want = min(want, max(n/minChartPoints, 1))
	for _, k := range []int{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600} {
		if k >= want {
			return min(k, max(n/minChartPoints, 1))
		}
	}
	return want
}

// clients is the closed-loop traffic's clients per chart window, surges
// included: the offered load of a closed loop, whose arrivals cannot rise
// above what the system serves. Nil for open-loop traffic, whose surge the
// offered rate shows itself.
func clients(t *cascade.Traffic, n int, windowMS float64) []float64 {
	if t == nil || t.Kind != cascade.TrafficClosed || t.Users <= 0 {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		mid := (float64(i) + 0.5) * windowMS
		users := float64(t.Users)
		for _, s := range t.Surges {
			if mid >= s.AtMS && mid < s.AtMS+s.ForMS {
				users = math.Round(users * s.Factor)
			}
		}
		out[i] = users
	}
	return out
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

// run extracts one replay's series, k replay windows to a chart window:
// root requests per second and the named nodes' mean queue depths.
func run(r *replay.Result, nodes []string, windowMS float64, k int) report.TimelineRun {
	perSec := func(xs []int64) []float64 {
		out := make([]float64, 0, (len(xs)+k-1)/k)
		for i := 0; i < len(xs); i += k {
			var sum int64
			j := min(i+k, len(xs))
			for _, x := range xs[i:j] {
				sum += x
			}
			out = append(out, float64(sum)*1000/(windowMS*float64(j-i)))
		}
		return out
	}
	mean := func(xs []float64) []float64 {
		out := make([]float64, 0, (len(xs)+k-1)/k)
		for i := 0; i < len(xs); i += k {
			j := min(i+k, len(xs))
			var sum float64
			for _, x := range xs[i:j] {
				sum += x
			}
			out = append(out, sum/float64(j-i))
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
				q.Depth = mean(n.Series.QueueDepth)
			}
		}
		tr.Queues = append(tr.Queues, q)
	}
	return tr
}
