package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"cascade"
	quantile7 "cascade/internal/quantile"
	"cascade/replay"
)

// ErrNoTraces is returned when a dataset holds no span, so there is no
// window to fit.
var ErrNoTraces = errors.New("no traces")

// Observations are what a dataset shows in its observation windows: the
// targets of the fit.
type Observations struct {
	// Level is the model's node level: "service" or "operation".
	Level string `json:"level"`
	// StartNS is the first trace's start (Unix ns); windows are counted
	// from it. EndNS is the last trace's start.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// WindowMS is the windows' width; Total counts the windows in the
	// dataset's range.
	WindowMS float64 `json:"window_ms"`
	Total    int     `json:"total_windows"`
	// Windows are the windows selected, in time order.
	Windows []Window `json:"windows"`
	// StatusFromTraces reports that no span records a status (Nezha
	// CSV): failures are then the evidence of truncated traces.
	StatusFromTraces bool `json:"status_from_traces,omitempty"`
	// Own counts, per node, failed requests and those that called no
	// failed request (the node's own failures), over the windows.
	Own []OwnFailures `json:"own,omitempty"`
	// Calls are a uniform sample of calls with their load features, for
	// the logistic regression.
	Calls []Call `json:"-"`
	// Notes say what was inferred or left out.
	Notes []string `json:"notes,omitempty"`
}

// Window is one observation window.
type Window struct {
	// Index is the window's number from the dataset's start.
	Index int `json:"index"`
	// StartNS is the window's start (Unix ns); LengthMS its length.
	StartNS  int64   `json:"start_ns"`
	LengthMS float64 `json:"length_ms"`
	// Arrivals are the window's root requests, from its start: what the
	// fit replays.
	Arrivals []replay.Arrival `json:"-"`
	// Roots counts the arrivals.
	Roots int `json:"roots"`
	// Nodes are what the window showed per node, sorted by name.
	Nodes []NodeObs `json:"nodes"`
}

// NodeObs is what one window showed of one node: its requests (spans that
// start work in the node, retries included, in traces whose root started
// in the window), their failures, their latency quantiles, and the mean
// queue depth where a metric gives one.
type NodeObs struct {
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	Failures int64  `json:"failures"`
	// Own counts the failures that called no failed request: the node's
	// own (see OwnFailures).
	Own   int64   `json:"own,omitempty"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	// QueueDepth is the window's mean queue depth (the sum over
	// instances, averaged over the metric's timestamps); HasQueue says
	// whether a queue_depth metric named the node's service.
	QueueDepth float64 `json:"queue_depth,omitempty"`
	HasQueue   bool    `json:"has_queue,omitempty"`
}

// OwnFailures counts a node's failed requests and, of those, the ones
// that called no failed request.
type OwnFailures struct {
	Node   string `json:"node"`
	Failed int64  `json:"failed"`
	Own    int64  `json:"own"`
}

// Call is one call (a request with a caller) and the load around it.
type Call struct {
	// UpstreamLoad and NodeLoad are the caller's and the callee's load ρ
	// (requests in flight ÷ capacity, averaged over the second the call
	// started in); ArrivalRate is root requests per second in that
	// second; Attempt is 1 for a first attempt.
	UpstreamLoad float64
	NodeLoad     float64
	ArrivalRate  float64
	Attempt      float64
	// Failed reports whether the call failed.
	Failed bool
}

// loadBin is the width of the bins in which the logistic regression's
// loads and arrival rates are measured.
const loadBin = int64(time.Second)

// reservoirSize bounds the latencies kept per node and window.
const reservoirSize = 4096

// Observe reads a dataset twice (spans grouped by trace; samples may be
// nil) and returns its observation windows for model m: the first pass
// finds the time range and each trace's start (its root span's, else its
// earliest span's), the second measures the selected windows. A trace
// belongs to the window its start falls in.
func Observe(ctx context.Context, cfg Config, m *cascade.Model, spans cascade.SpanSource, samples cascade.SampleSource) (*Observations, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	obs := &Observations{Level: "service"}
	if m.Source != nil && m.Source.Level == "operation" {
		obs.Level = "operation"
	}
	// Pass 1: trace starts and whether spans record a status.
	var (
		starts    []int64
		hasStatus bool
		cur       []byte
		tStart    int64
		tRoot     int64
		hasRoot   bool
		n         int
	)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		if hasRoot {
			tStart = tRoot
		}
		starts = append(starts, tStart)
	}
	err := spans(func(s *cascade.Span) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if s.Status != cascade.StatusUnset && s.Status != "" {
			hasStatus = true
		}
		if len(cur) == 0 || string(cur) != s.TraceID {
			flush()
			cur = append(cur[:0], s.TraceID...)
			tStart, hasRoot = s.Start, false
		}
		tStart = min(tStart, s.Start)
		if s.IsRoot() && !s.Delivered() && (!hasRoot || s.Start < tRoot) {
			tRoot, hasRoot = s.Start, true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	flush()
	if len(starts) == 0 {
		return nil, ErrNoTraces
	}
	obs.StatusFromTraces = !hasStatus
	obs.StartNS, obs.EndNS = slices.Min(starts), slices.Max(starts)
	width := int64(cfg.Window)
	rng := obs.EndNS - obs.StartNS
	if rng < 2*width {
		width = rng + 1
	}
	obs.Total = int(rng/width) + 1
	obs.WindowMS = float64(width) / 1e6
	counts := make([]int, obs.Total)
	for _, t := range starts {
		counts[(t-obs.StartNS)/width]++
	}
	sel, err := selectWindows(cfg, counts, obs.StartNS, width)
	if err != nil {
		return nil, err
	}
	// Pass 2: measure the selected windows.
	acc := newObserver(cfg, m, obs, width, sel)
	err = spans(func(s *cascade.Span) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		acc.add(s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	acc.flush()
	if samples != nil {
		if err := samples(func(s *cascade.Sample) error { acc.addSample(s); return nil }); err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
	}
	acc.finish()
	return obs, nil
}

// selectWindows returns the window numbers to measure, ascending.
func selectWindows(cfg Config, counts []int, start, width int64) ([]int, error) {
	list, _ := parseWindowList(cfg.Windows)
	var out []int
	switch {
	case list == nil:
		for i, c := range counts {
			if c > 0 {
				out = append(out, i)
			}
		}
	case len(list) == 1 && list[0] == -1:
		out = busiest(counts, start, width, cfg.Busiest)
	default:
		for _, w := range list {
			if w >= len(counts) {
				return nil, fmt.Errorf("windows: window %d does not exist (the dataset has %d)", w, len(counts))
			}
			out = append(out, w)
		}
		slices.Sort(out)
		out = slices.Compact(out)
	}
	if len(out) == 0 {
		return nil, errors.New("windows: none selected holds a trace")
	}
	return out, nil
}

// busiest picks the window with the most traces of each UTC day when the
// windows cover two days or more, else the k windows with the most
// traces; ties go to the earlier window.
func busiest(counts []int, start, width int64, k int) []int {
	day := func(i int) int64 { return (start + int64(i)*width) / int64(24*time.Hour) }
	var out []int
	if day(len(counts)-1) > day(0) {
		best := map[int64]int{}
		for i, c := range counts {
			if b, ok := best[day(i)]; c > 0 && (!ok || c > counts[b]) {
				best[day(i)] = i
			}
		}
		for _, i := range best {
			out = append(out, i)
		}
	} else {
		idx := make([]int, 0, len(counts))
		for i, c := range counts {
			if c > 0 {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return counts[idx[a]] > counts[idx[b]] })
		out = idx[:min(k, len(idx))]
	}
	slices.Sort(out)
	return out
}

// quantile is the quantile every stage uses (type 7).
func quantile(sorted []float64, q float64) float64 { return quantile7.Type7(sorted, q) }

// roundMS rounds milliseconds to the microsecond, as graph does.
func roundMS(x float64) float64 { return math.Round(x*1000) / 1000 }

// round6 rounds to 6 significant digits, so JSON output is short and
// stable.
func round6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 6-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
