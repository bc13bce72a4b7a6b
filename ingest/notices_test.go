package ingest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"cascade"
	"cascade/dataset"

	"github.com/stretchr/testify/require"
)

// TestNoticesAccountForEveryRecord checks that every span read is stored
// or counted as dropped (duplicates, conflicting ids), and that every
// problem has a notice with a count, first file and position and action.
func TestNoticesAccountForEveryRecord(t *testing.T) {
	const wd = "../cmd/cascade/testdata/warn/"
	tests := []struct {
		name    string
		traces  []string
		metrics []string
		kind    string
		count   int64
		pos     string
	}{
		{name: "orphan", traces: []string{wd + "orphan.jsonl"}, kind: noticeOrphan, count: 1, pos: "trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000c1"},
		{name: "duplicate", traces: []string{wd + "duplicate.jsonl"}, kind: noticeDuplicate, count: 1, pos: "trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1"},
		{name: "conflict", traces: []string{wd + "conflict.jsonl"}, kind: noticeConflict, count: 1, pos: "trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1"},
		{name: "clock skew", traces: []string{wd + "skew.jsonl"}, kind: noticeClockSkew, count: 1, pos: "trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000b1"},
		{name: "Jaeger line in OTLP", traces: []string{wd + "jaeger-in-otlp.jsonl"}, kind: noticeNotOTLP, count: 1, pos: "line 2 byte 332"},
		{name: "wrong unit", traces: []string{wd + "us-times.jsonl"}, kind: noticeBadYear, count: 1, pos: "record 1"},
		{name: "duplicate sample", metrics: []string{wd + "prom-dup.json"}, kind: noticeDupSample, count: 1, pos: "series api/ queue_depth{} at 1700000000000000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Traces, c.Metrics, c.Out = tc.traces, tc.metrics, filepath.Join(t.TempDir(), "ds")
			sum, err := Run(context.Background(), c)
			require.NoError(t, err)
			var read, samples int64
			for _, in := range sum.Inputs {
				read += in.Spans
				samples += in.Samples
			}
			require.Equal(t, read, sum.Spans+sum.DuplicateSpans, "spans read = stored + dropped")
			require.Equal(t, samples, sum.Samples+sum.DuplicateSamples, "samples read = stored + dropped")
			var got *Notice
			for i := range sum.Notices {
				if sum.Notices[i].Kind == tc.kind {
					got = &sum.Notices[i]
				}
			}
			require.NotNil(t, got, "notices: %+v", sum.Notices)
			require.Equal(t, tc.count, got.Count)
			require.Equal(t, tc.pos, got.Position)
			require.NotEmpty(t, got.File)
			require.NotEmpty(t, got.Action)
		})
	}
}

// TestUnitHint checks the unit suggested for start times outside the
// plausible years.
func TestUnitHint(t *testing.T) {
	tests := []struct {
		t    int64
		want string
	}{
		{1700000000000000, "kept as read; times look 1000x too small: if the column was read as ns, give it as start:us"},
		{1700000000000, "kept as read; times look 1000000x too small: if the column was read as ns, give it as start:ms"},
		{1700000000, "kept as read; times look 1000000000x too small: if the column was read as ns, give it as start:s"},
		{12, "kept as read"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, unitHint(tc.t), "t=%d", tc.t)
	}
}

// TestNoticeWords checks how each span-id notice reads on stderr and in
// the summary JSON: two spans of one id that differ are called a
// duplicate with different content, the later dropped, while the JSON
// kind stays what programs match (issue 39, item 9).
func TestNoticeWords(t *testing.T) {
	const wd = "../cmd/cascade/testdata/warn/"
	tests := []struct {
		name   string
		file   string
		kind   string // the JSON kind
		line   string // Notice.String()
		stored string // the operation of span a1, as stored
	}{
		{name: "different content", file: "conflict.jsonl",
			kind:   "conflicting span id (same trace and span id, different content)",
			line:   "duplicate span id with different content (same trace and span id): 1, first at ../cmd/cascade/testdata/warn/conflict.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1 (the later span, a different call, was dropped; the first kept)",
			stored: "GET /"},
		{name: "same content", file: "duplicate.jsonl",
			kind:   "duplicate span id (same content)",
			line:   "duplicate span id (same content): 1, first at ../cmd/cascade/testdata/warn/duplicate.jsonl trace 0102030405060708090a0b0c0d0e0f10 span 00000000000000a1 (dropped: the first stored wins)",
			stored: "GET /"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Traces, c.Out = []string{wd + tc.file}, filepath.Join(t.TempDir(), "ds")
			sum, err := Run(context.Background(), c)
			require.NoError(t, err)
			require.Len(t, sum.Notices, 1)
			require.Equal(t, tc.line, sum.Notices[0].String())
			js, err := json.Marshal(sum.Notices[0])
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(js, &got))
			require.Equal(t, tc.kind, got["kind"])
			var ops []string
			require.NoError(t, dataset.ReadSpans(c.Out, func(s *cascade.Span) error {
				ops = append(ops, s.Operation)
				return nil
			}))
			require.Equal(t, []string{tc.stored}, ops)
		})
	}
}
