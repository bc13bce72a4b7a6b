package rank

import (
	"fmt"
	"math"
	"strings"

	"cascade"
	"cascade/replay"
)

// Tolerance bounds how far the model's replay of the capture may stray
// from it and still be trusted to rank changes: the bounds a prediction
// is held to in docs/validation.md.
type Tolerance struct {
	// P50 and P99 bound a node's latency gap, relative to the observed.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// ErrorPP bounds the gap of a node's error rate, in percentage
	// points.
	ErrorPP float64 `json:"error_pp"`
}

// DefaultTolerance is p50 within 15% and errors within 3 pp, the bounds
// an in-sample replay is held to in docs/validation.md, and p99 within
// 50%, the bound of a predicted one: a p99 near a bottleneck's capacity
// moves by tens of percent with a few percent of load.
func DefaultTolerance() Tolerance { return Tolerance{P50: 0.15, P99: 0.5, ErrorPP: 3} }

// The fewest observed requests at a node for its p50 and error rate to be
// compared, and for its p99: a p99 read from fewer is its largest few
// values, and says little.
const (
	fitMinRequests    = 20
	fitMinRequestsP99 = 100
)

// Fit is how well the model's replay matches the capture it was read
// from: the baseline's replays under the observed traffic beside each
// node's observed latency and errors.
type Fit struct {
	// Regime names the traffic of the replays.
	Regime string `json:"regime"`
	// Nodes counts the nodes compared (observed requests at least 20,
	// and replayed calls).
	Nodes int `json:"nodes"`
	// P50, P99 and ErrorPP are the largest gaps, in absolute value, at
	// the nodes within the tolerance for that measure: relative for
	// latency, percentage points for errors.
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	ErrorPP float64 `json:"error_pp"`
	// Off lists the gaps beyond the tolerance, largest first within a
	// node's order.
	Off       []Miss    `json:"off,omitempty"`
	Tolerance Tolerance `json:"tolerance"`
}

// Miss is one measure of one node beyond the tolerance.
type Miss struct {
	Node    string `json:"node"`
	Measure string `json:"measure"` // p50, p99 or errors
	// Gap is replayed − observed: relative for p50 and p99, in
	// percentage points for errors.
	Gap float64 `json:"gap"`
	// Observed and Replayed are the two values: milliseconds, or the
	// error rate in percent.
	Observed float64 `json:"observed"`
	Replayed float64 `json:"replayed"`
}

// Within reports whether every gap is within the tolerance.
func (f *Fit) Within() bool { return f == nil || len(f.Off) == 0 }

// String is the fit in a sentence: "replay matches the capture within
// 1% p50, 11% p99 and 0.1 pp errors at all 6 nodes", with what is off.
func (f *Fit) String() string {
	if f == nil {
		return "not compared"
	}
	if f.Nodes == 0 {
		return "not compared: no node has enough observed requests"
	}
	off := map[string]bool{}
	for _, m := range f.Off {
		off[m.Node] = true
	}
	at := fmt.Sprintf("at all %d nodes", f.Nodes)
	if len(off) > 0 {
		at = fmt.Sprintf("at %d of %d nodes", f.Nodes-len(off), f.Nodes)
	}
	s := fmt.Sprintf("replay matches the capture within %s p50, %s p99 and %s errors %s",
		pctText(f.P50), pctText(f.P99), ppText(f.ErrorPP), at)
	if len(f.Off) == 0 {
		return s
	}
	var parts []string
	for _, m := range f.Off {
		parts = append(parts, m.String())
	}
	return s + "; except " + strings.Join(parts, ", ") +
		fmt.Sprintf(" (beyond %s p50, %s p99, %s errors: no change is called a win or worse)",
			pctText(f.Tolerance.P50), pctText(f.Tolerance.P99), ppText(f.Tolerance.ErrorPP))
}

// String says the miss in words: "mysql p99 1241 ms observed, 14000 ms
// replayed (+1028%)".
func (m Miss) String() string {
	if m.Measure == "errors" {
		return fmt.Sprintf("%s errors %.1f%% observed, %.1f%% replayed (%+.1f pp)", m.Node, m.Observed, m.Replayed, m.Gap)
	}
	return fmt.Sprintf("%s %s %s observed, %s replayed (%+.0f%%)", m.Node, m.Measure, msShort(m.Observed), msShort(m.Replayed), 100*m.Gap)
}

func pctText(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

func ppText(x float64) string { return fmt.Sprintf("%.1f pp", x) }

func msShort(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.3g s", ms/1000)
	}
	return fmt.Sprintf("%.3g ms", ms)
}

// FitOf compares runs (replays of m under its observed traffic) with the
// nodes' observed latency and errors, judged by tol. A latency gap of
// less than tickMS is no gap: the replay draws durations in whole ticks.
// It is nil when m holds no observations.
func FitOf(m *cascade.Model, runs []*replay.Result, regime string, tol Tolerance, tickMS float64) *Fit {
	f := &Fit{Regime: regime, Tolerance: tol}
	seen := false
	for i := range m.Nodes {
		n := &m.Nodes[i]
		ob := n.Observed
		if ob == nil {
			continue
		}
		if n.Queue != nil {
			// A queue's observed time is its publishes' (the broker's
			// confirm), the replay's its messages' wait: not the same
			// measure.
			continue
		}
		seen = true
		if ob.Requests < fitMinRequests {
			continue
		}
		// A call its caller gave up on fails at the caller; the node's
		// own span, which the capture's error rate reads, ends as its
		// work does.
		var calls, fails int64
		var p50, p99 float64
		for _, r := range runs {
			for j := range r.Nodes {
				if no := &r.Nodes[j]; no.Name == n.Name {
					calls += no.Calls
					fails += no.Failures
					if j < len(r.NodeCounts) && r.NodeCounts[j].Name == n.Name {
						fails -= r.NodeCounts[j].Timeouts
					}
					p50 += no.LatencyP50MS
					p99 += no.LatencyP99MS
				}
			}
		}
		fails = max(fails, 0)
		if calls == 0 || len(runs) == 0 {
			continue
		}
		k := float64(len(runs))
		p50, p99 = p50/k, p99/k
		f.Nodes++
		f.judge(n.Name, "p50", ob.LatencyP50MS, p50, tol.P50, tickMS, &f.P50)
		if ob.Requests >= fitMinRequestsP99 {
			f.judge(n.Name, "p99", ob.LatencyP99MS, p99, tol.P99, tickMS, &f.P99)
		}
		rate := float64(fails) / float64(calls)
		gap := 100 * (rate - ob.ErrorRate)
		if math.Abs(gap) > tol.ErrorPP {
			f.Off = append(f.Off, Miss{Node: n.Name, Measure: "errors", Gap: round3(gap), Observed: round3(100 * ob.ErrorRate), Replayed: round3(100 * rate)})
		} else {
			f.ErrorPP = max(f.ErrorPP, round3(math.Abs(gap)))
		}
	}
	if !seen {
		return nil
	}
	return f
}

// judge compares one latency of one node: a gap within bound raises the
// largest seen, one beyond it is a miss.
func (f *Fit) judge(node, measure string, obs, rep, bound, tickMS float64, largest *float64) {
	if !(obs > 0) {
		return
	}
	if math.Abs(rep-obs) <= tickMS {
		return // within the replay's resolution
	}
	gap := (rep - obs) / obs
	if math.Abs(gap) > bound {
		f.Off = append(f.Off, Miss{Node: node, Measure: measure, Gap: round3(gap), Observed: round3(obs), Replayed: round3(rep)})
		return
	}
	*largest = max(*largest, round3(math.Abs(gap)))
}

// OffCapture: the interval would make the change a win or worse, but the
// model's replay of the capture strays from it beyond the tolerance
// (Report.Fit): an answer from a model that misses what it was read from
// is not trusted.
const OffCapture Verdict = "model off its capture"

// distrust turns every win and worse into OffCapture.
func distrust(rows []Row) {
	for i := range rows {
		if rows[i].Verdict == Win || rows[i].Verdict == Worse {
			rows[i].Verdict = OffCapture
		}
	}
}
