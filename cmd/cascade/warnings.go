package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"cascade/ingest"
	"cascade/rank"
)

// printWarnings writes the data problems an ingest met to w (stderr), one
// line per kind, aggregated: the count, the first file and position, and
// what was done (kept, dropped, repaired), so that nothing odd goes in
// unremarked even when the summary is not looked at (graph, analyze) or
// is JSON.
func printWarnings(w io.Writer, sum *ingest.Summary) {
	if sum == nil {
		return
	}
	for _, n := range sum.Notices {
		if n.Kind == "empty input" && sum.Spans+sum.Samples+sum.Logs == 0 {
			continue // the run fails with an error that says so
		}
		fmt.Fprintf(w, "cascade: warning: %s\n", n)
	}
}

// printThin warns, in the format of printWarnings, when the model a
// ranking replayed rests on too little data to rank on (rank.Basis.Thin):
// the ranking then calls no change a win or worse.
func printThin(w io.Writer, rep *rank.Report) {
	if rep == nil || rep.Basis == nil || rep.Basis.Thin == "" {
		return
	}
	fmt.Fprintf(w, "cascade: warning: thin data: %s; no change is called a win or worse\n", rep.Basis.Thin)
}

// noSpans is the error for inputs that gave no spans, with the warnings
// that say why (an empty file, a skipped one).
func noSpans(inputs []string, sum *ingest.Summary) error {
	why := ""
	if sum != nil {
		notes := slices.Sorted(maps.Keys(sum.Warnings))
		if sum.Inferred["empty input"] > 0 {
			notes = append([]string{"empty input"}, notes...)
		}
		if len(notes) > 0 {
			why = " (" + strings.Join(notes, "; ") + ")"
		}
	}
	return &ingest.InputError{File: strings.Join(inputs, ", "), Err: fmt.Errorf("no spans in this input%s: %w", why, ingest.ErrNoInput)}
}
