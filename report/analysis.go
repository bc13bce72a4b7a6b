package report

import (
	"cascade"
	"cascade/fit"
	"cascade/incident"
	"cascade/ingest"
	"cascade/rank"
)

// AnalysisVersion is the version of the Analysis document (report.json).
const AnalysisVersion = 1

// Analysis is what `cascade analyze` found, end to end: the dataset it
// read, the model it built and calibrated, the ranked remediations, the
// capacity curve, the incident's origin when asked, and a replay of the
// baseline beside the best change over time. report.json is this
// document; report.md and report.html render it.
type Analysis struct {
	Version int `json:"version"`
	// Inputs are the paths analysed, as given.
	Inputs []string `json:"inputs"`
	// Seed is the first replay seed of every stage.
	Seed uint64 `json:"seed"`
	// Dataset summarises what was ingested.
	Dataset *ingest.Summary `json:"dataset"`
	// Model is the model replayed: the calibrated one when the fit ran,
	// else the one built from the traces.
	Model *cascade.Model `json:"model"`
	// Fit is the calibration; nil when it was skipped.
	Fit *fit.Report `json:"fit,omitempty"`
	// Rank is the ranking, with the capacity curve and metastability.
	Rank *rank.Report `json:"rank"`
	// Incident is the root-cause analysis; nil unless asked for.
	Incident *incident.Incident `json:"incident,omitempty"`
	// Timeline replays the baseline and the best change side by side.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Sensitivity replays the baseline again with each model value the
	// capture does not show (an edge's retry limit no chain reached) at
	// the value it does show; nil when every value is shown.
	Sensitivity []Sensitivity `json:"sensitivity,omitempty"`
	// Observed sets what the capture measured beside the model's replay
	// of it; nil when the ranking did not run.
	Observed *Observed `json:"observed,omitempty"`
	// Examples name traces to open in a trace viewer (Jaeger, by trace
	// id): the slowest requests, the failed ones and, when the incident
	// has an origin, those through it since it changed; nil when the
	// dataset was not read for them.
	Examples *Examples `json:"examples,omitempty"`
	// Files are the files written, relative to the output directory.
	Files []string `json:"files"`
	// Notes say what was chosen on the user's behalf (a stage skipped, a
	// traffic assumed).
	Notes []string `json:"notes,omitempty"`
}

// Timeline is one replay of the baseline and one of the best change (the
// best compatible set when there is one, else the top-ranked win), with
// the same seed and traffic, window by window.
type Timeline struct {
	// Regime names the traffic replayed (the surge when there is one).
	Regime string `json:"regime"`
	Seed   uint64 `json:"seed"`
	// Change and Description name the change replayed; empty when no
	// change won, and Changed is then absent.
	Change      string `json:"change,omitempty"`
	Description string `json:"description,omitempty"`
	// WindowMS is the width of every series' window: the replay's
	// windows joined until a window holds enough requests to chart.
	WindowMS float64 `json:"window_ms"`
	// Clients is the closed-loop traffic's clients per window, surges
	// included (the offered load of a closed loop); absent for open-loop
	// traffic.
	Clients []float64 `json:"clients,omitempty"`
	// SurgeFromMS and SurgeToMS bound the surge, when the regime has one.
	SurgeFromMS float64      `json:"surge_from_ms,omitempty"`
	SurgeToMS   float64      `json:"surge_to_ms,omitempty"`
	Baseline    TimelineRun  `json:"baseline"`
	Changed     *TimelineRun `json:"changed,omitempty"`
}

// TimelineRun is one replay's series: root requests offered and served
// per second, and the queue depth of the nodes whose queues grew most
// (the same nodes, in the same order, in both runs of a Timeline).
type TimelineRun struct {
	OfferedPerSec []float64   `json:"offered_per_sec"`
	GoodputPerSec []float64   `json:"goodput_per_sec"`
	Queues        []NodeQueue `json:"queues"`
}

// NodeQueue is a node's mean queue depth per window.
type NodeQueue struct {
	Node  string    `json:"node"`
	Depth []float64 `json:"depth"`
}

// Examples are a few traces of the dataset to open by id. Each list is
// ordered by duration, longest first, then by trace id (but for what its
// field says), and holds at most ExampleTraces traces; an empty list
// means no trace qualified.
type Examples struct {
	// Slowest are the requests that took longest, root span to end.
	Slowest []TraceExample `json:"slowest"`
	// Failed are the traces with an error span: those whose request
	// failed (its root span did) first, then those with more error
	// spans, then by duration and trace id.
	Failed []TraceExample `json:"failed"`
	// Origin names the incident's most likely origin; empty, with the
	// two lists below, when there is none.
	Origin string `json:"origin,omitempty"`
	// OriginSlowest are the traces through the origin (a span of it, or
	// a call to it) that started at or after its change, by the longest
	// time spent at the origin (OriginMS), then by trace id.
	OriginSlowest []TraceExample `json:"origin_slowest,omitempty"`
	// OriginFailed are the traces through the origin since its change
	// with an error span, as Failed is ordered.
	OriginFailed []TraceExample `json:"origin_failed,omitempty"`
}

// ExampleTraces is the most traces an Examples list holds.
const ExampleTraces = 3

// TraceExample is one trace to open.
type TraceExample struct {
	TraceID string `json:"trace_id"`
	// Root is the root span's service and operation ("frontend GET
	// /dispatch"); empty for a trace without a root span.
	Root string `json:"root,omitempty"`
	// StartNS is the trace's start (Unix ns); DurationMS its root
	// span's duration, or from its first span's start to its last
	// span's end when it has no root.
	StartNS    int64   `json:"start_ns"`
	DurationMS float64 `json:"duration_ms"`
	// ErrorSpans counts the trace's spans with an error status;
	// RootFailed reports that its root span is one of them.
	ErrorSpans int  `json:"error_spans,omitempty"`
	RootFailed bool `json:"root_failed,omitempty"`
	// OriginMS is the longest span at the origin, or call to it, in the
	// trace; set in the origin's lists only.
	OriginMS float64 `json:"origin_ms,omitempty"`
}
