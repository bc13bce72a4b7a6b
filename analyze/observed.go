package analyze

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"cascade"
	"cascade/graph"
	"cascade/rank"
	"cascade/replay"
	"cascade/report"
)

// maxObservedReplay bounds the replay beside the capture's timeline when
// the ranking's replays are shorter: a longer capture is shown up to it.
const maxObservedReplay = time.Hour

// observed sets the capture (g, as the graph read it) beside the replays
// of the model m that the ranking rep made of it: each node's measures,
// the entries over time, and the operating point.
func observed(ctx context.Context, g *graph.Result, m *cascade.Model, cfg rank.Config, rep *rank.Report) (*report.Observed, error) {
	if rep == nil || len(rep.Regimes) == 0 || len(rep.Seeds) == 0 {
		return nil, nil
	}
	base, _, err := replay.Apply(m)
	if err != nil {
		return nil, err
	}
	o := &report.Observed{Regime: rep.Regimes[0].Name, Seeds: rep.Seeds, DurationMS: rep.DurationMS,
		Tolerance: report.DefaultTolerance()}
	rc := replay.DefaultConfig()
	rc.Duration = time.Duration(rep.DurationMS * 1e6)
	rc.Tick = time.Duration(rep.TickMS * 1e6)
	rc.Window, rc.Tier, rc.Traffic = cfg.Window, cfg.Tier, rep.Regimes[0].Traffic
	// A node's measures are of the arrivals' time, as the capture's are
	// of its own: no drain, whose calls would count against no time.
	rc.Drain = -1
	if o.Nodes, err = nodeFits(ctx, g.Model, base, rc, rep.Seeds, o.Tolerance); err != nil {
		return nil, err
	}
	o.Point = operatingPoint(g.Model)
	if o.Timeline, err = entryTimeline(ctx, g, base, rc, rep.Seeds[0]); err != nil {
		return nil, err
	}
	return o, nil
}

// nodeFits replays the model over the seeds as the ranking's baseline
// did and sets each node's measures beside the capture's (obs, the model
// as built from the traces). Nodes the capture did not measure are left
// out.
func nodeFits(ctx context.Context, obs, m *cascade.Model, rc replay.Config, seeds []uint64, tol report.Tolerance) ([]report.NodeFit, error) {
	e, err := replay.NewEngine(m, rc)
	if err != nil {
		return nil, err
	}
	runs := make([]*replay.Result, len(seeds))
	for i, s := range seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		runs[i] = e.Run(s)
	}
	secs := rc.Duration.Seconds()
	var out []report.NodeFit
	for i := range obs.Nodes {
		on := &obs.Nodes[i]
		mn := m.Node(on.Name)
		if on.Observed == nil || mn == nil {
			continue
		}
		f := report.NodeFit{Node: on.Name}
		if mn.Concurrency > 0 {
			f.Slots = mn.Concurrency * max(mn.Replicas, 1)
		}
		ob := on.Observed
		f.Observed = report.NodeMeasures{P50MS: ob.LatencyP50MS, P99MS: ob.LatencyP99MS, ErrorRate: ob.ErrorRate,
			PerSec: ob.RatePerSec, InFlight: ob.MeanInFlight}
		if f.Slots > 0 {
			f.Observed.Utilisation = round6(min(1, ob.MeanInFlight/float64(f.Slots)))
		}
		var calls, fails int64
		var r report.NodeMeasures
		for _, run := range runs {
			no, nc := nodeOf(run, on.Name)
			if no == nil {
				continue
			}
			calls += no.Calls
			fails += no.Failures
			r.P50MS += no.LatencyP50MS
			r.P99MS += no.LatencyP99MS
			r.Utilisation += no.Utilisation
			if nc != nil && secs > 0 {
				r.InFlight += float64(no.Calls) / secs * nc.LatencyMeanMS / 1e3
			}
		}
		k := float64(len(runs))
		r.P50MS, r.P99MS = round6(r.P50MS/k), round6(r.P99MS/k)
		r.InFlight, r.Utilisation = round6(r.InFlight/k), round6(r.Utilisation/k)
		if f.Slots == 0 {
			r.Utilisation = 0
		}
		if calls > 0 {
			r.ErrorRate = round6(float64(fails) / float64(calls))
		}
		if secs > 0 {
			r.PerSec = round6(float64(calls) / (k * secs))
		}
		f.Replayed, f.ReplayedCalls = r, calls
		f.Compare(tol)
		out = append(out, f)
	}
	return out, nil
}

// nodeOf returns a replay's outcome and counts of the node named.
func nodeOf(r *replay.Result, name string) (*cascade.NodeOutcome, *replay.NodeCounts) {
	var no *cascade.NodeOutcome
	var nc *replay.NodeCounts
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			no = &r.Nodes[i]
		}
	}
	for i := range r.NodeCounts {
		if r.NodeCounts[i].Name == name {
			nc = &r.NodeCounts[i]
		}
	}
	return no, nc
}

// operatingPoint is the capture's root requests offered and served per
// second: the entries' observed rates, less their nodes' failures.
func operatingPoint(m *cascade.Model) *report.OperatingPoint {
	var offered, good float64
	for _, e := range m.Entries {
		offered += e.RatePerSec
		fail := 0.0
		if n := m.Node(e.Node); n != nil && n.Observed != nil {
			fail = n.Observed.ErrorRate
		}
		good += e.RatePerSec * (1 - fail)
	}
	if offered <= 0 {
		return nil
	}
	return &report.OperatingPoint{OfferedPerSec: round6(offered), GoodputPerSec: round6(good)}
}

// entryTimeline sets the entry nodes' requests over the capture, in the
// graph's windows, beside one replay of as long (up to
// maxObservedReplay, or the ranking's duration when longer), both joined
// into the same chart windows.
func entryTimeline(ctx context.Context, g *graph.Result, m *cascade.Model, rc replay.Config, seed uint64) (*report.ObservedTimeline, error) {
	var entries []string
	for _, e := range g.Model.Entries {
		if !slices.Contains(entries, e.Node) {
			entries = append(entries, e.Node)
		}
	}
	slices.Sort(entries)
	var infos []*graph.NodeInfo
	for i := range g.Nodes {
		if slices.Contains(entries, g.Nodes[i].Name) && len(g.Nodes[i].Series) > 0 {
			infos = append(infos, &g.Nodes[i])
		}
	}
	if len(infos) == 0 || infos[0].Window <= 0 {
		return nil, nil
	}
	width := infos[0].Window
	start := infos[0].Series[0].StartNS
	end := start
	for _, in := range infos {
		if in.Window != width {
			return nil, nil // windows that do not line up
		}
		start = min(start, in.Series[0].StartNS)
		end = max(end, in.Series[len(in.Series)-1].StartNS+int64(width))
	}
	n := int((end - start) / int64(width))
	tl := &report.ObservedTimeline{Entries: entries, StartNS: start, Seed: seed}
	limit := max(rc.Duration, maxObservedReplay)
	if time.Duration(n)*width > limit {
		keep := int(limit / width)
		tl.Note = fmt.Sprintf("The capture runs %s; the first %s of it are shown, as long as the replay.",
			time.Duration(n)*width, time.Duration(keep)*width)
		n = keep
	}
	if n == 0 {
		return nil, nil
	}
	// The capture's windows.
	reqs, errs, flight := make([]float64, n), make([]float64, n), make([]float64, n)
	var roots int64
	for _, in := range infos {
		for _, w := range in.Series {
			i := int((w.StartNS - start) / int64(width))
			if i < 0 || i >= n {
				continue
			}
			reqs[i] += float64(w.Requests)
			errs[i] += float64(w.Errors)
			flight[i] += w.MeanInFlight
			roots += w.Requests
		}
	}
	// The replay's, as many and as wide.
	rc.Seed, rc.Duration, rc.Window, rc.Series = seed, time.Duration(n)*width, width, true
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := replay.Replay(m, rc)
	if err != nil {
		return nil, err
	}
	rreqs, rerrs, rflight := make([]float64, n), make([]float64, n), make([]float64, n)
	for _, name := range entries {
		no, _ := nodeOf(res, name)
		if no == nil || no.Series == nil {
			continue
		}
		s := no.Series
		for i := 0; i < n && i < len(s.Calls); i++ {
			rreqs[i] += float64(s.Calls[i])
			rerrs[i] += float64(s.Failures[i])
			rflight[i] += s.InFlight[i] + s.QueueDepth[i]
		}
	}
	k := joinWindows(n, roots)
	windowMS := float64(width) / 1e6
	tl.WindowMS = windowMS * float64(k)
	tl.Observed = joinSeries(reqs, errs, flight, k, windowMS)
	tl.Replayed = joinSeries(rreqs, rerrs, rflight, k, windowMS)
	return tl, nil
}

// joinSeries joins windows k at a time: requests and errors per second,
// and the mean latency by Little's law, the mean in flight over the
// requests per second. A last chart window shorter than the others is
// left out: at a capture's end requests are still in flight while few
// start, which Little's law reads as a slow window.
func joinSeries(reqs, errs, flight []float64, k int, windowMS float64) report.Series {
	var s report.Series
	n := len(reqs)
	if k > 1 && n > k {
		n -= n % k
	}
	for i := 0; i < n; i += k {
		j := min(i+k, n)
		var r, e, f float64
		for w := i; w < j; w++ {
			r, e, f = r+reqs[w], e+errs[w], f+flight[w]
		}
		secs := float64(j-i) * windowMS / 1e3
		rate := r / secs
		lat := 0.0
		if rate > 0 {
			lat = f / float64(j-i) / rate * 1e3
		}
		s.RequestsPerSec = append(s.RequestsPerSec, round6(rate))
		s.ErrorsPerSec = append(s.ErrorsPerSec, round6(e/secs))
		s.LatencyMS = append(s.LatencyMS, round6(lat))
	}
	return s
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
