package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDataProblemWarnings checks that each data problem ingest meets
// prints one "cascade: warning:" line on stderr, with its kind, count,
// first file and position, and what was done, and that the run goes on.
func TestDataProblemWarnings(t *testing.T) {
	const wd = "testdata/warn/"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "orphan spans", args: []string{wd + "orphan.jsonl"},
			want: "cascade: warning: orphan span (parent not in its trace): 1, first at testdata/warn/orphan.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000c1 (kept: starts a request without a caller)\n"},
		{name: "duplicate span ids", args: []string{wd + "duplicate.jsonl"},
			want: "cascade: warning: duplicate span id (same content): 1, first at testdata/warn/duplicate.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1 (dropped: the first stored wins)\n"},
		{name: "span ids repeated by a different call", args: []string{wd + "conflict.jsonl"},
			want: "cascade: warning: duplicate span id with different content (same trace and span id): 1, first at testdata/warn/conflict.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1 (the later span, a different call, was dropped; the first kept)\n"},
		{name: "clock skew", args: []string{wd + "skew.jsonl"},
			want: "cascade: warning: clock skew (span starts before its parent): 1, first at testdata/warn/skew.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000b1 (kept as read)\n"},
		{name: "empty file among others", args: []string{"testdata/newcomer/trace.json", "testdata/newcomer/empty.json"},
			want: "cascade: warning: empty input: 1, first at testdata/newcomer/empty.json byte 0 (nothing read)\n"},
		{name: "duplicate Prometheus series", args: []string{"--metrics", wd + "prom-dup.json"},
			want: "cascade: warning: duplicate metric sample (same series and time): 1, first at testdata/warn/prom-dup.json series api/ queue_depth{} at 1700000000000000000 (dropped: the first stored wins)\n"},
		{name: "Jaeger line in OTLP JSONL", args: []string{wd + "jaeger-in-otlp.jsonl"},
			want: "cascade: warning: JSON line with no resourceSpans, e.g. a Jaeger trace in an OTLP file: 1, first at testdata/warn/jaeger-in-otlp.jsonl line 2 byte 332 (dropped)\n"},
		{name: "times in the wrong unit", args: []string{wd + "us-times.jsonl"},
			want: "cascade: warning: span time outside the years 2000-2100: 1, first at testdata/warn/us-times.jsonl record 1 (kept as read; times look 1000x too small: if the column was read as ns, give it as start:us)\n"},
		{name: "CSV times in µs read as ns", args: []string{wd + "aiops-us.csv", "--csv-map",
			"trace_id=trace_id,span_id=span_id,parent_span_id=parent_span,service=cmdb_id,operation=operation_name,start=timestamp,duration=duration"},
			want: `cascade: warning: span time outside the years 2000-2100: 2, first at testdata/warn/aiops-us.csv line 2 byte 88 column "timestamp" (kept as read; times look 1000x too small: if the column was read as ns, give it as start:us)` + "\n"},
		{name: "CSV duration disagrees with end - start", args: []string{wd + "dur-mismatch.csv", "--csv-map",
			"trace_id=trace,span_id=span,parent_span_id=parent,service=svc,start=ts:us,end=te:us,duration=d:ms"},
			want: `cascade: warning: span duration column disagrees with end - start: 2, first at testdata/warn/dur-mismatch.csv line 2 byte 30 column "d" (kept end - start; the duration column reads 1000x too large: check its unit, or the start and end units)` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"ingest", "--out", filepath.Join(t.TempDir(), "ds")}, tc.args...)
			code, _, stderr := runCascade(t, "", args...)
			require.Equal(t, exitOK, code, "stderr: %s", stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}

// TestWarningsOnGraph checks that graph, which ingests on the way, prints
// the same positioned warning line.
func TestWarningsOnGraph(t *testing.T) {
	code, _, stderr := runCascade(t, "", "graph", "testdata/warn/orphan.jsonl")
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	require.Contains(t, stderr, "cascade: warning: orphan span (parent not in its trace): 1, first at testdata/warn/orphan.jsonl trace ")
}
