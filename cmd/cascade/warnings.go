package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"cascade/ingest"
)

// printWarnings writes the anomalies an ingest kept to w (stderr), one
// line each with its count, so that nothing odd goes in unremarked even
// when the summary is not looked at (graph, analyze) or is JSON.
func printWarnings(w io.Writer, sum *ingest.Summary) {
	if sum == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(sum.Warnings)) {
		fmt.Fprintf(w, "cascade: warning: %s (%d)\n", k, sum.Warnings[k])
	}
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
