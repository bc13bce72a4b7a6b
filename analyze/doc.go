// Package analyze runs cascade end to end on a capture: ingest, the call
// graph, the fit of its coefficients, the ranking of remediations with
// the capacity curve and metastability, the incident's origin, and a
// replay of the baseline beside the best change over time. It writes the
// models and three renderings of one report.Analysis: report.json for
// programs, report.md to paste into a postmortem and report.html, a
// self-contained page with its charts, that opens offline.
//
// Nothing here analyses anything itself: each step is its stage's entry
// point (ingest.Run, graph.Build, fit.Run, incident.Investigate, rank.Run,
// replay.Replay) with the configuration the user gave, so `cascade
// analyze` finds exactly what the stage commands would. It adds two
// things: the baseline replayed again for each model value the capture
// does not show (a pool's sharing, a retry limit), at the value it does
// show, so the report says whether the answer rests on a default; and,
// in one more pass over the spans, a few trace ids for the reader to
// open (report.Examples: the slowest, those with errors, those through
// the origin). The defaults are chosen to finish in seconds on a capture
// like the bundled HotROD one (DefaultConfig says which).
//
// Every stage replays with the seeds from Config.Rank.Seed on; the
// outputs are byte-identical for the same inputs and configuration at any
// parallelism. Each file is written to a temporary file and renamed into
// place, so a failed run leaves the files of the last good one.
package analyze
