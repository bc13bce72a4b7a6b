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
