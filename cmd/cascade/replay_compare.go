package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"cascade"
	"cascade/internal/numfmt"
	"cascade/replay"
)

// replayRun is what `cascade replay` replayed: the what-if's replays
// (or the model's, when there is no what-if), the baseline's on the same
// seeds when there is a what-if, and the capture's own figures.
type replayRun struct {
	// Model is the model file, as given.
	Model string
	// Cfg is the what-if's configuration.
	Cfg replay.Config
	// WhatIf are the what-if's replays in seed order; Baseline the
	// baseline's, nil without a what-if.
	WhatIf, Baseline []*replay.Result
	// Compare summarises both and their paired differences.
	Compare *replay.Comparison
	// Observed are the capture's figures (observedFigures), by metric
	// name; Entries the entry nodes they are of.
	Observed map[string]float64
	Entries  []string
}

// replayComparison is the JSON of the comparison: the capture's figures
// and, with a what-if, the baseline's and the what-if's summaries and
// their paired differences.
type replayComparison struct {
	// Observed are the capture's figures of the headline metrics, by the
	// metrics' names; only those the capture has.
	Observed map[string]float64 `json:"observed,omitempty"`
	*replay.Comparison
}

// comparisonJSON is the "comparison" key of the JSON output: nil when
// there is nothing to compare (no what-if and no observations), so that
// the output of a replay of a model not built from a capture is as it was.
func (r *replayRun) comparisonJSON() *replayComparison {
	switch {
	case r.Baseline != nil:
		return &replayComparison{Observed: r.Observed, Comparison: r.Compare}
	case len(r.Observed) > 0:
		return &replayComparison{Observed: r.Observed}
	}
	return nil
}

// observedFigures are the capture's own figures of the replay's headline
// metrics, from the entry nodes' observations: the offered rate, the
// success rate and goodput (from their error rates), and the latency
// quantiles when there is a single entry node (the quantiles of several
// do not add up to the whole's). Empty when an entry node has no
// observations (a model not built from a capture).
func observedFigures(m *cascade.Model) (fig map[string]float64, entries []string) {
	var rate, good float64
	var requests, failed float64
	var obs *cascade.NodeObserved
	for _, e := range m.Entries {
		if contains(entries, e.Node) {
			continue
		}
		n := m.Node(e.Node)
		if n == nil || n.Observed == nil || n.Observed.Requests == 0 {
			return nil, nil
		}
		entries = append(entries, e.Node)
		o := n.Observed
		obs = o
		rate += o.RatePerSec
		good += o.RatePerSec * (1 - o.ErrorRate)
		requests += float64(o.Requests)
		failed += float64(o.Requests) * o.ErrorRate
	}
	if len(entries) == 0 {
		return nil, nil
	}
	fig = map[string]float64{
		"offered_per_sec": round6(rate),
		"goodput_per_sec": round6(good),
		"success_rate":    round6(1 - failed/requests),
	}
	if len(entries) == 1 && obs.LatencyP50MS > 0 {
		fig["latency_p50_ms"] = obs.LatencyP50MS
		fig["latency_p95_ms"] = obs.LatencyP95MS
		fig["latency_p99_ms"] = obs.LatencyP99MS
	}
	return fig, entries
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// unit is how a metric's values are written.
type unit int

const (
	unitRate       unit = iota // requests per second: 3.33 req/s
	unitSignedRate             // a growth per second: +0.56 req/s
	unitShare                  // a share: 99.52%, its differences in points
	unitCount                  // requests: 196 req
	unitMS                     // milliseconds: 1,458 ms
	unitCalls                  // calls per root request: 9.374 calls/root
)

// compareRows are the rows of the comparison table: the headline
// metrics by their names in replay.Summary, as labelled and written.
var compareRows = []struct {
	name, label string
	unit        unit
}{
	{"offered_per_sec", "offered", unitRate},
	{"success_rate", "success rate", unitShare},
	{"goodput_per_sec", "goodput", unitRate},
	{"unfinished", "unfinished", unitCount},
	{"backlog_per_sec", "backlog growth", unitSignedRate},
	{"latency_p50_ms", "latency p50", unitMS},
	{"latency_p95_ms", "latency p95", unitMS},
	{"latency_p99_ms", "latency p99", unitMS},
	{"amplification", "amplification", unitCalls},
	{"retry_share", "retry share", unitShare},
	{"zombie_share", "zombie share", unitShare},
	{"rejected_share", "rejected share", unitShare},
	{"flow_success_rate", "flow success", unitShare},
	{"flow_p50_ms", "flow p50", unitMS},
	{"flow_p99_ms", "flow p99", unitMS},
}

// replayTable writes the replay as text or Markdown: the header (model,
// scenario, seeds, duration, roots, load), one table of the headline
// metrics with the observed, baseline and what-if columns and the
// difference, or the observed and replayed ones, the same for one seed
// or many, and the what-if's nodes.
func replayTable(w io.Writer, md bool, r *replayRun) error {
	if err := replayHeader(w, md, r); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := compareTable(w, md, r); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nodeTable(w, md, r)
}

// replayHeader writes the labelled lines above the table.
func replayHeader(w io.Writer, md bool, r *replayRun) error {
	cfg, n := r.Cfg, len(r.WhatIf)
	whatIf := r.Baseline != nil
	tw := newTable(w, md, 0)
	fmt.Fprintf(tw, "model\t%s\n", r.Model)
	scen := r.WhatIf[0].Scenario
	if whatIf {
		scen += " (the what-if), against the model as it is (the baseline)"
	}
	fmt.Fprintf(tw, "scenario\t%s\n", scen)
	paired := ""
	if whatIf {
		paired = ", the same for both (common random numbers)"
	}
	if n == 1 {
		fmt.Fprintf(tw, "seed\t%d%s\n", r.WhatIf[0].Seed, paired)
	} else {
		fmt.Fprintf(tw, "seeds\t%d to %d (%d)%s\n", r.WhatIf[0].Seed, r.WhatIf[n-1].Seed, n, paired)
	}
	fmt.Fprintf(tw, "duration\t%s\n", durationLine(cfg))
	runs := []struct {
		label string
		rs    []*replay.Result
	}{{"", r.WhatIf}}
	if whatIf {
		runs = []struct {
			label string
			rs    []*replay.Result
		}{{", baseline", r.Baseline}, {", what-if", r.WhatIf}}
	}
	if n == 1 {
		for _, run := range runs {
			o := run.rs[0]
			fmt.Fprintf(tw, "roots%s\t%s offered (%.2f/s), %s succeeded, %s failed, %s unfinished (queued or in flight at the end)\n",
				run.label, group(o.Roots), o.OfferedRate, group(o.Succeeded), group(o.Counts.Failed), group(o.Unfinished))
		}
		for _, run := range runs {
			fmt.Fprintf(tw, "load%s\t%s\n", run.label, loadLine(&run.rs[0].Outcome))
		}
		for _, run := range runs {
			if o := run.rs[0]; o.Flows > 0 || o.FlowsUnfinished > 0 {
				fmt.Fprintf(tw, "flows%s\t%s succeeded of %d started (%d unfinished)\n", run.label, pct(o.FlowSuccessRate), o.Flows+o.FlowsUnfinished, o.FlowsUnfinished)
			}
		}
		for _, run := range runs {
			o := run.rs[0]
			c := &o.Counts
			if c.Zombies > 0 || c.Cancelled > 0 {
				fmt.Fprintf(tw, "zombies%s\t%s zombie, %s cancelled attempts\n", run.label, group(c.Zombies), group(c.Cancelled))
			}
			if rej := c.RejectedQueue + c.RejectedBreaker + c.RejectedLimit; rej > 0 {
				shed := ""
				if c.Shed > 0 {
					shed = fmt.Sprintf(", low priority shed %d", c.Shed)
				}
				fmt.Fprintf(tw, "rejected%s\tqueue %d, breaker %d, rate limit %d%s\n", run.label, c.RejectedQueue, c.RejectedBreaker, c.RejectedLimit, shed)
			}
			if c.LowRoots > 0 {
				// A priority split's classes; the high class is the rest.
				hs, hf := c.Succeeded-c.LowSucceeded, c.Failed-c.LowFailed
				fmt.Fprintf(tw, "priority%s\thigh %s success of %d roots, low %s of %d\n", run.label,
					pct(ratio(hs, hs+hf)), c.Roots-c.LowRoots, pct(ratio(c.LowSucceeded, c.LowSucceeded+c.LowFailed)), c.LowRoots)
			}
			if c.Degraded > 0 {
				fmt.Fprintf(tw, "degraded%s\t%d failed calls answered by a fallback (counted as successes)\n", run.label, c.Degraded)
			}
		}
		for _, run := range runs {
			fmt.Fprintf(tw, "collapse%s\t%s\n", run.label, msOrNone(run.rs[0].CollapseAtMS))
		}
		for _, run := range runs {
			fmt.Fprintf(tw, "recover%s\t%s\n", run.label, msOrNone(run.rs[0].RecoverMS))
		}
		return tw.Flush()
	}
	sums := []*replay.Summary{r.Compare.WhatIf}
	if whatIf {
		sums = []*replay.Summary{r.Compare.Baseline, r.Compare.WhatIf}
	}
	for i, run := range runs {
		fmt.Fprintf(tw, "collapsed%s\t%d of %d\n", run.label, sums[i].Collapsed, n)
	}
	for i, run := range runs {
		fmt.Fprintf(tw, "overloaded%s\t%d of %d (a backlog that grew beyond chance and was still there at the end)\n", run.label, sums[i].Overloaded, n)
	}
	return tw.Flush()
}

// compareTable writes the headline metrics, one row each: observed,
// then baseline, what-if and their difference with its interval, or,
// without a what-if, replayed with its interval; then what the columns
// are.
func compareTable(w io.Writer, md bool, r *replayRun) error {
	c, n := r.Compare, len(r.WhatIf)
	whatIf := c.Baseline != nil
	tw := newTable(w, md, tabwriter.AlignRight)
	switch {
	case whatIf && n == 1:
		fmt.Fprintln(tw, header(md, "metric\tobserved\tbaseline\twhat-if\tΔ what-if − baseline (one seed: no interval)\t"))
	case whatIf:
		fmt.Fprintln(tw, header(md, "metric\tobserved\tbaseline\twhat-if\tΔ what-if − baseline [95%]\t"))
	default:
		fmt.Fprintln(tw, header(md, "metric\tobserved\treplayed\t95% interval\t"))
	}
	for _, row := range compareRows {
		est := c.WhatIf.Metric(row.name)
		if est.Name == "" {
			continue // a flow metric of a model without flows
		}
		obs := "-"
		if v, ok := r.Observed[row.name]; ok {
			obs = formatValue(v, row.unit)
		}
		if whatIf {
			d := c.Delta(row.name)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", row.label, obs, estimateCell(c.Baseline.Metric(row.name), row.unit, n),
				estimateCell(est, row.unit, n), deltaCell(d, row.unit, n))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", row.label, obs, estimateCell(est, row.unit, n), intervalCell(est, row.unit, n))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w, md, 0)
	if len(r.Observed) > 0 {
		fmt.Fprintf(tw, "observed\tthe capture's, at its entry %s and its own load, whatever load the replay was given; - where it has no such figure\n", strings.Join(r.Entries, ", "))
	} else {
		fmt.Fprintf(tw, "observed\tnone: the model holds no observations of its entries (it was not built from a capture)\n")
	}
	mean := ""
	if n > 1 {
		mean = fmt.Sprintf("the mean over %d seeds; ", n)
	}
	fmt.Fprintf(tw, "replayed\t%ssuccess is succeeded ÷ offered (an unfinished request is not a success); latency from the first attempt, of the successes, - when nothing succeeded\n", mean)
	switch {
	case whatIf && n == 1:
		fmt.Fprintf(tw, "Δ\twhat-if − baseline on the same seed; its 95%% interval needs --seeds 2 or more\n")
	case whatIf:
		fmt.Fprintf(tw, "Δ\twhat-if − baseline, paired seed by seed: the mean of the differences and its 95%% interval (Student's t); shares differ in percentage points (pp)\n")
	case n == 1:
		fmt.Fprintf(tw, "interval\tthe 95%% interval of the mean over seeds needs --seeds 2 or more\n")
	default:
		fmt.Fprintf(tw, "interval\tthe 95%% interval of the mean over the seeds (Student's t)\n")
	}
	return tw.Flush()
}

// nodeTable writes the what-if's nodes (the first seed's, with several).
func nodeTable(w io.Writer, md bool, r *replayRun) error {
	res := r.WhatIf[0]
	if r.Baseline != nil || len(r.WhatIf) > 1 {
		which := "the replay's"
		if r.Baseline != nil {
			which = "the what-if's"
		}
		tw := newTable(w, md, 0)
		fmt.Fprintf(tw, "nodes\t%s, seed %d\n", which, res.Seed)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := newTable(w, md, tabwriter.AlignRight)
	// "saturated or failing" is the replay's infected, in the words of
	// docs/glossary.md: from when, and for how long in all.
	fmt.Fprintln(tw, header(md, "node\tcalls\tfailures\trejected\tutil\tqueue mean\tqueue max\tp50 ms\tp99 ms\tsaturated or failing\t"))
	for _, n := range res.Nodes {
		inf := "-"
		if n.Infected {
			inf = fmt.Sprintf("from %.1f s, %.1f s in all", n.InfectedAtMS/1000, n.InfectedForMS/1000)
		}
		p50, p99 := "-", "-"
		if n.Calls > 0 {
			p50, p99 = groupFloat(n.LatencyP50MS, 1), groupFloat(n.LatencyP99MS, 1)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.2f\t%d\t%s\t%s\t%s\t\n", n.Name, n.Calls, n.Failures,
			n.Rejected, pct(n.Utilisation), n.QueueMean, n.QueueMax, p50, p99, inf)
	}
	return tw.Flush()
}

// estimateCell is a metric's value (its mean over the seeds) with its
// unit; - when no seed had one, and how many did when not all.
func estimateCell(e replay.Estimate, u unit, n int) string {
	if e.Undefined >= n {
		return "-"
	}
	s := formatValue(e.Mean, u)
	if e.Undefined > 0 {
		s += fmt.Sprintf(" (%d of %d seeds)", n-e.Undefined, n)
	}
	return s
}

// intervalCell is a metric's 95% interval over the seeds; - with one
// seed or no value.
func intervalCell(e replay.Estimate, u unit, n int) string {
	if n-e.Undefined < 2 {
		return "-"
	}
	return intervalText(e.Low, e.High, e.Mean, u)
}

// deltaCell is a paired difference with its unit and 95% interval.
func deltaCell(d replay.Difference, u unit, n int) string {
	if d.Pairs == 0 {
		return "-"
	}
	lo, hi, ok := d.Interval()
	if !ok {
		if n == 1 {
			return formatDelta(d.Mean, u, math.Abs(d.Mean)) // the header says there is no interval
		}
		return formatDelta(d.Mean, u, math.Abs(d.Mean)) + fmt.Sprintf(" (%d of %d seeds: no interval)", d.Pairs, n)
	}
	scale := max(math.Abs(d.Mean), math.Abs(lo), math.Abs(hi))
	s := formatDelta(d.Mean, u, scale) + " [" + signedNumber(lo, u, scale) + ", " + signedNumber(hi, u, scale) + "]"
	if d.Pairs < n {
		s += fmt.Sprintf(" (%d of %d seeds)", d.Pairs, n)
	}
	return s
}

// intervalText writes [low, high] with the unit after it.
func intervalText(lo, hi, mean float64, u unit) string {
	switch u {
	case unitShare:
		return "[" + pct(lo) + ", " + pct(hi) + "]"
	case unitMS:
		d := msDecimals(max(math.Abs(lo), math.Abs(hi), math.Abs(mean)))
		return "[" + msNumber(lo, d) + ", " + msNumber(hi, d) + "] ms"
	case unitSignedRate:
		return "[" + signed(groupFloat(lo, 2)) + ", " + signed(groupFloat(hi, 2)) + "] req/s"
	case unitRate:
		return "[" + groupFloat(lo, 2) + ", " + groupFloat(hi, 2) + "] req/s"
	case unitCount:
		return "[" + countNumber(lo) + ", " + countNumber(hi) + "] req"
	default:
		return "[" + groupFloat(lo, 3) + ", " + groupFloat(hi, 3) + "] calls/root"
	}
}

// formatValue writes a value with its unit.
func formatValue(x float64, u unit) string {
	switch u {
	case unitShare:
		return pct(x)
	case unitMS:
		return msNumber(x, msDecimals(x)) + " ms"
	case unitRate:
		return groupFloat(x, 2) + " req/s"
	case unitSignedRate:
		return signed(groupFloat(zero(x), 2)) + " req/s"
	case unitCount:
		return countNumber(x) + " req"
	default:
		return groupFloat(x, 3) + " calls/root"
	}
}

// formatDelta writes a difference, signed, with its unit: shares in
// percentage points; scale sets the precision of milliseconds.
func formatDelta(x float64, u unit, scale float64) string {
	s := signedNumber(x, u, scale)
	switch u {
	case unitShare:
		return s + " pp"
	case unitMS:
		return s + " ms"
	case unitRate, unitSignedRate:
		return s + " req/s"
	case unitCount:
		return s + " req"
	default:
		return s + " calls/root"
	}
}

// signedNumber writes a difference without its unit, signed.
func signedNumber(x float64, u unit, scale float64) string {
	x = zero(x)
	switch u {
	case unitShare:
		return signed(groupFloat(zero(round6(100*x)), 2))
	case unitMS:
		return signed(msNumber(x, msDecimals(scale)))
	case unitRate, unitSignedRate:
		return signed(groupFloat(x, 2))
	case unitCount:
		return signed(countNumber(x))
	default:
		return signed(groupFloat(x, 3))
	}
}

// signed puts a + before a number that has no sign; one that reads as
// zero has none ("0.00", not "-0.00" or "+0.00").
func signed(s string) string {
	s = numfmt.NoNegZero(s)
	if strings.HasPrefix(s, "-") || strings.Trim(s, "0.,") == "" {
		return s
	}
	return "+" + s
}

// msDecimals is the precision of a time of about x ms: whole
// milliseconds from 100 ms, tenths from 10 ms, hundredths below.
func msDecimals(x float64) int {
	switch x = math.Abs(x); {
	case x >= 100:
		return 0
	case x >= 10:
		return 1
	}
	return 2
}

// msNumber writes milliseconds with d decimals and thousands grouped.
func msNumber(x float64, d int) string { return groupFloat(x, d) }

// groupFloat writes x with d decimals, its thousands separated by
// commas: 15,719.25; never an exponent, never -0.
func groupFloat(x float64, d int) string {
	s := strconv.FormatFloat(x, 'f', d, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if neg && strings.Trim(s, "0.") == "" {
		neg = false // -0.00
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// countNumber writes a count, or a mean of counts to a tenth.
func countNumber(x float64) string {
	if x == math.Trunc(x) {
		return groupFloat(x, 0)
	}
	return groupFloat(x, 1)
}

// group writes a count with its thousands separated by commas.
func group(n int64) string { return groupFloat(float64(n), 0) }
