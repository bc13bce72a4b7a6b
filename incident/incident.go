package incident

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cascade"
	"cascade/graph"
)

// Config is how RootCause reads an incident. DefaultConfig
// gives the defaults.
type Config struct {
	// Window is the width of the per-node windows; default 10 s.
	Window time.Duration
	// BaselineWindows is how many windows at the start of the data make
	// each node's normal range; default 3. Ignored when a reference
	// capture is given: all of it is the normal range.
	BaselineWindows int
	// Threshold is the robust z-score from which a window is out of its
	// node's normal range; default 4.
	Threshold float64
	// MinChange is the smallest relative shift of a median that counts,
	// whatever its z-score; default 0.25 (25%).
	MinChange float64
	// MinCount is the fewest requests a window needs to be judged;
	// default 3.
	MinCount int
	// Persist is how many consecutive judged windows must be out of range
	// for a change (fewer at the end of the data); default 2.
	Persist int
	// Slack is how many windows later a callee may change and still
	// explain its caller's change; default 1.
	Slack int
	// Top is the most ranked origins to name; default 3.
	Top int
	// Reservoir bounds the values kept per node and window; default 1024.
	Reservoir int
	// Verify is how many of the first changed nodes (at least Top) the
	// replay check re-ranks by how well their fault, injected into the
	// model, reproduces the other nodes' changes; default 5. Zero skips
	// it, as does a nil model.
	Verify int
	// Slowdown is the relative service-time increase of the
	// infectability replays (0.5: +50%); default 0.5. Zero skips them.
	Slowdown float64
	// Seed, Seeds, Duration, Tick and Parallel drive the infectability
	// replays and the replay check: defaults 1, 4, 30 s, 1 ms,
	// GOMAXPROCS.
	Seed     uint64
	Seeds    int
	Duration time.Duration
	Tick     time.Duration
	Parallel int
}

// DefaultConfig returns the defaults described on
// Config's fields.
func DefaultConfig() Config {
	return Config{
		Window: 10 * time.Second, BaselineWindows: 3, Threshold: 4, MinChange: 0.25, MinCount: 3,
		Persist: 2, Slack: 1, Top: 3, Reservoir: 1024, Verify: 5, Slowdown: 0.5,
		Seed: 1, Seeds: 4, Duration: 30 * time.Second, Tick: time.Millisecond,
	}
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("window: %v, want > 0", c.Window))
	}
	if c.BaselineWindows < 1 || c.MinCount < 1 || c.Persist < 1 || c.Top < 1 || c.Reservoir < 1 {
		errs = append(errs, errors.New("baseline windows, min count, persist, top and reservoir must be at least 1"))
	}
	if c.Threshold <= 0 || c.MinChange < 0 || c.Slack < 0 || c.Slowdown < 0 || c.Verify < 0 {
		errs = append(errs, errors.New("threshold must be positive; min change, slack, verify and slowdown not negative"))
	}
	if (c.Slowdown > 0 || c.Verify > 0) && (c.Seeds < 1 || c.Duration <= 0 || c.Tick <= 0 || c.Parallel < 0) {
		errs = append(errs, errors.New("infectability replays and the replay check need seeds >= 1, a positive duration and tick"))
	}
	return errors.Join(errs...)
}

// Incident is what RootCause found: when each node left its normal
// range, the ranked origins, the path the degradation took, and the
// most infectable node.
type Incident struct {
	// WindowMS is the window width; StartNS and EndNS bound the windows
	// (Unix ns).
	WindowMS float64 `json:"window_ms"`
	StartNS  int64   `json:"start_ns"`
	EndNS    int64   `json:"end_ns"`
	// Baseline says what the normal range was read from.
	Baseline string `json:"baseline"`
	// Nodes are every node: changed ones in origin order, then the rest
	// by name.
	Nodes []NodeChange `json:"nodes"`
	// Origins are the ranked origins, most likely first: the first
	// changed node, then at most Top−1 more that could stand in its
	// place (unexplained, and not a difference from a reference the
	// capture cannot date); see docs/incident.md.
	Origins []string `json:"origins"`
	// Confidence is how far the first origin is ahead of the second:
	// its share of their two scores (1 with no rival, 0.5 a tie).
	Confidence float64 `json:"confidence,omitempty"`
	// Abstained reports that the first origin is not clearly ahead
	// (Confidence below AbstainBelow): no origin stands out, and
	// Origins are only the leading candidates.
	Abstained bool `json:"abstained,omitempty"`
	// Track is how often a first origin at this confidence was right on
	// the validation day; nil without an origin.
	Track *TrackRecord `json:"track,omitempty"`
	// Path is the chain of calls the degradation climbed, from the
	// origin's caller up towards the entry.
	Path []PathStep `json:"path"`
	// Infectable ranks nodes by how far a slowdown of theirs spreads in
	// replay; empty without a model.
	Infectable []Infectability `json:"infectable,omitempty"`
	// Slowdown is the infectability replays' relative service-time
	// increase.
	Slowdown float64 `json:"slowdown,omitempty"`
	// Seeds are the infectability replays' seeds.
	Seeds []uint64 `json:"seeds,omitempty"`
	// Warnings name each signal given that the pass could not judge
	// (logs or metrics without a normal range), and why; empty when
	// every signal given was judged.
	Warnings []string `json:"warnings,omitempty"`
}

// NodeChange is one node's change point.
type NodeChange struct {
	// Node names the node.
	Node string `json:"node"`
	// Changed reports that the node left its normal range and stayed out.
	Changed bool `json:"changed"`
	// AtNS is the start of the window where it left (Unix ns).
	AtNS int64 `json:"at_ns,omitempty"`
	// Metric is what left its range: latency (the median as callers see
	// it), slow_share (the share slower than the baseline's p95),
	// self_time (the median time outside calls) or error_rate.
	Metric string `json:"metric,omitempty"`
	// Baseline and Value are the metric's normal value and its value in
	// the change window; Z is the robust z-score there.
	Baseline float64 `json:"baseline,omitempty"`
	Value    float64 `json:"value,omitempty"`
	Z        float64 `json:"z,omitempty"`
	// Score ranks the changed nodes that no callee explains: the share
	// of judged windows out of range from the change on, times the
	// change's size (the largest log ratio of the node's latency medians
	// to normal, its own or as a caller sees it, plus its error rise,
	// plus the largest log ratio of a saturation metric to normal).
	Score float64 `json:"score,omitempty"`
	// ReplayFit is how well the node's fault (ReplayFault), injected
	// into the model, reproduces the changes observed at the other nodes
	// in replay: 1 − Σ (replayed − observed)² / Σ observed² over their
	// latency log ratios and error-rate rises, so 1 is a perfect fit and
	// 0 no better than no fault (negative: worse); set for the
	// candidates the replay check replayed (Config.Verify).
	ReplayFit float64 `json:"replay_fit,omitempty"`
	// ReplayFault is the fault the replay check injected at the node, in
	// the model's knobs; empty when it was not replayed.
	ReplayFault string `json:"replay_fault,omitempty"`
	// Evidence lists each metric that left its range from the change
	// on, with its first window.
	Evidence []ChangeEvidence `json:"evidence,omitempty"`
	// ExplainedBy are the changed callees (directly or further down)
	// that changed no later than Slack windows after it: degradation
	// that can have come from below.
	ExplainedBy []string `json:"explained_by,omitempty"`
	// NotOrigin says why a changed node that nothing explains is not
	// named among the origins: "from the start", a difference from the
	// reference with too few of the node's requests before it to date it
	// (a baseline mismatch). (Until issue 38 also "after X", a change
	// more than Slack windows after the first origin X.)
	NotOrigin string `json:"not_origin,omitempty"`
	// Note says why a node could not be judged, if so.
	Note string `json:"note,omitempty"`
	// Series are the node's windows.
	Series []WindowStat `json:"series,omitempty"`
}

// ChangeEvidence is one metric that left its normal range.
type ChangeEvidence struct {
	// Metric names it: latency, self_time, slow_share, error_rate, a
	// call_… metric of calls given to this node, or metric:NAME for a
	// metric sample.
	Metric string `json:"metric"`
	// Normal is the normal value (a median, a share or a rate), and
	// NormalHigh the top of its normal range for the window that left
	// it (Normal plus Threshold standard errors).
	Normal     float64 `json:"normal"`
	NormalHigh float64 `json:"normal_high"`
	// Value is the metric in that window, AtNS its start, Z the
	// largest robust z-score from then on.
	Value float64 `json:"value"`
	AtNS  int64   `json:"at_ns"`
	Z     float64 `json:"z"`
	// For the client−server gap (gap_in, gap_out) and self time
	// (self_time_calls), counted by calls (requests) rather than
	// windows: Value is the median gap (self time) from the onset on,
	// over Calls calls, ValueLow and ValueHigh its 95% confidence
	// interval (order statistics).
	Calls     int     `json:"calls,omitempty"`
	ValueLow  float64 `json:"value_low,omitempty"`
	ValueHigh float64 `json:"value_high,omitempty"`
	// For the log signals (log_errors: requests with an ERROR or FATAL
	// record or a stack line; log_new and log_risen: a template's
	// records; log_stopped: a steady template absent), counted from the
	// onset on: Value is the count, Normal what the normal share brings
	// there, NormalHigh the least count out of range, Calls the count,
	// and Template the template (empty for log_errors).
	Template string `json:"template,omitempty"`
}

// WindowStat is one node's window.
type WindowStat struct {
	// StartNS is the window's start.
	StartNS int64 `json:"start_ns"`
	// Requests and Errors count the requests that started in it.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// P50MS and P99MS are latency quantiles as callers see it; SelfP50MS
	// the median self time.
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	SelfP50MS float64 `json:"self_p50_ms"`
	// Z is the window's largest robust z-score over the metrics (0 when
	// not judged).
	Z float64 `json:"z"`
	// Out reports the window out of the normal range.
	Out bool `json:"out"`
}

// PathStep is one call the degradation went up: from the callee (whose
// change came first) to its caller.
type PathStep struct {
	// Caller and Callee name the call's ends.
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	// CalleeAtNS and CallerAtNS are when each changed.
	CalleeAtNS int64 `json:"callee_at_ns"`
	CallerAtNS int64 `json:"caller_at_ns"`
	// CallsPerParent and AttemptsPerCall are before (the baseline) and
	// during (from the origin's change) the incident.
	CallsPerParentBefore  float64 `json:"calls_per_parent_before"`
	CallsPerParentDuring  float64 `json:"calls_per_parent_during"`
	AttemptsPerCallBefore float64 `json:"attempts_per_call_before"`
	AttemptsPerCallDuring float64 `json:"attempts_per_call_during"`
}

// RootCause reads an incident from spans grouped by trace (the order of
// dataset.ReadSpans): per node and window the latency as callers see it,
// the self time and the error rate; the change point of each node against
// its normal range (its first windows, or reference when not nil); the
// origin; the path; and, when m is not nil, each node's infectability in
// replay. The method is in docs/incident.md.
func RootCause(ctx context.Context, spans, reference cascade.SpanSource, m *cascade.Model, cfg Config) (*Incident, error) {
	return Investigate(ctx, Input{Spans: spans, Reference: reference, Model: m}, cfg)
}

// Input is what Investigate reads.
type Input struct {
	// Spans are the incident's spans grouped by trace; required.
	Spans cascade.SpanSource
	// Reference, when not nil, is a fault-free capture whose spans make
	// every node's normal range.
	Reference cascade.SpanSource
	// Samples, when not nil, are metric samples (CPU, memory, queue
	// depth, …) joined to the nodes by service; their normal range is
	// the points before the judged windows, and ReferenceSamples' points
	// of the same service and metric when given.
	Samples, ReferenceSamples cascade.SampleSource
	// Logs, when not nil, are the capture's log records (each with its
	// service, severity, trace id and template); ReferenceLogs the
	// reference capture's. Without ReferenceLogs, a Reference gives the
	// logs no normal range: they are not judged, and Incident.Warnings
	// says so.
	Logs, ReferenceLogs LogSource
	// Model, when not nil, adds its edges to the calls seen, marks its
	// serialised nodes, and drives the infectability replays.
	Model *cascade.Model
}

// Investigate is RootCause with metric samples beside the spans.
func Investigate(ctx context.Context, in Input, cfg Config) (*Incident, error) {
	spans, reference, m := in.Spans, in.Reference, in.Model
	if spans == nil {
		return nil, graph.ErrNoSpans
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	width := int64(cfg.Window)
	acc := newSpanAcc(width, cfg.Reservoir, cfg.Seed)
	serialised(m, acc)
	if err := readAll(ctx, spans, acc); err != nil {
		return nil, err
	}
	if len(acc.nodes) == 0 {
		return nil, graph.ErrNoSpans
	}
	var ref *spanAcc
	var sc opScale
	if reference != nil {
		ref = newSpanAcc(width, cfg.Reservoir, cfg.Seed)
		serialised(m, ref)
		if err := readAll(ctx, reference, ref); err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		sc = mixScale(ref, func(*reqRec) bool { return true }, cfg.MinCount)
		ref.fill(sc)
		ref.holdSerial()
	} else {
		lo, _ := acc.windowRange()
		end := lo + int64(cfg.BaselineWindows)
		sc = mixScale(acc, func(r *reqRec) bool { return floorDiv(r.at, acc.width) < end }, cfg.MinCount)
	}
	acc.fill(sc)
	acc.holdSerial()
	var check originCheck
	if m != nil && cfg.Verify > 0 {
		check = func(changes []NodeChange, order, groups []int) ([]int, error) {
			return verifyOrder(ctx, acc, ref, m, cfg, changes, order, groups)
		}
	}
	logs, err := readLogInput(ctx, in, width)
	if err != nil {
		return nil, err
	}
	inc, err := analyse(acc, ref, m, in.Samples, in.ReferenceSamples, logs, cfg, check)
	if err != nil {
		return nil, err
	}
	if m != nil && cfg.Slowdown > 0 {
		if inc.Infectable, inc.Seeds, err = infectability(ctx, m, cfg); err != nil {
			return nil, err
		}
		inc.Slowdown = cfg.Slowdown
	}
	return inc, nil
}

// serialised marks in acc the model's nodes with one proven slot per
// replica and one replica: a lock, which the capture showed serving one
// request at a time.
func serialised(m *cascade.Model, acc *spanAcc) {
	if m == nil {
		return
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Concurrency == 1 && n.Replicas == 1 && n.Observed != nil && n.Observed.CapacityProven {
			acc.serial[n.Name] = true
		}
	}
}

func readAll(ctx context.Context, src cascade.SpanSource, acc *spanAcc) error {
	n := 0
	err := src(func(s *cascade.Span) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		acc.add(s)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read spans: %w", err)
	}
	acc.flush()
	return ctx.Err()
}

// windowRange returns the first and last window index seen.
func (a *spanAcc) windowRange() (lo, hi int64) {
	first := true
	for _, ws := range a.nodes {
		for w := range ws {
			if first || w < lo {
				lo = w
			}
			if first || w > hi {
				hi = w
			}
			first = false
		}
	}
	return lo, hi
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
