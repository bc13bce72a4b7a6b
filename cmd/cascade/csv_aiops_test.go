package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// aiopsCSVMap is the --csv-map that docs/csv.md and ingest --help give
// for the AIOps challenge's span CSVs.
const aiopsCSVMap = "trace_id=trace_id,span_id=span_id,parent_span_id=parent_span,service=cmdb_id," +
	"operation=operation_name,start=timestamp:us,duration=duration:us,status_code=status_code,strip_pod_suffix=true"

// TestIngestAIOpsSpanCSV ingests an AIOps-layout span CSV (µs times, a
// status_code column of gRPC and HTTP codes) with the documented mapping
// and checks the spans, their errors and their durations.
func TestIngestAIOpsSpanCSV(t *testing.T) {
	// The mapping tested is the one the docs give.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "csv.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), aiopsCSVMap)
	_, help, _ := runCascade(t, "", "ingest", "--help")
	require.Contains(t, strings.Join(strings.Fields(strings.ReplaceAll(help, "\\\n", "")), ""), aiopsCSVMap)

	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr := runCascade(t, "", "ingest", "testdata/aiops/trace_span.csv", "--csv-map", aiopsCSVMap, "--out", out)
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	require.NotContains(t, stderr, "warning")

	var spans []cascade.Span
	require.NoError(t, dataset.ReadSpans(out, func(s *cascade.Span) error {
		spans = append(spans, *s)
		return nil
	}))
	require.Len(t, spans, 24)
	errs, roots := map[string]int{}, 0
	services := map[string]bool{}
	for _, s := range spans {
		if s.Status == cascade.StatusError {
			errs[fmt.Sprintf("%s %d", s.Service, s.StatusCode)]++
		}
		if s.ParentSpanID == "" {
			roots++
		}
		services[s.Service] = true
		require.NotEqual(t, cascade.StatusUnset, s.Status, "span %s", s.SpanID)
	}
	require.Equal(t, 6, roots)
	// Two UNAVAILABLE (14) cart calls and two HTTP 500 front ends; the
	// NOT_FOUND (5) is the caller's fault and no error.
	require.Equal(t, map[string]int{"cartservice 14": 2, "frontend 500": 1, "frontend2 500": 1}, errs)
	require.Equal(t, map[string]bool{"frontend": true, "frontend2": true, "cartservice": true,
		"productcatalogservice": true, "currencyservice": true}, services)

	// Times and durations are µs: the first row starts at
	// 1647705600361234 µs and lasts 41222 µs.
	var first cascade.Span
	for _, s := range spans {
		if s.SpanID == "5a1b000000001eef" {
			first = s
		}
	}
	require.Equal(t, int64(1647705600361234000), first.Start)
	require.Equal(t, int64(41222000), first.Duration)
	require.Equal(t, "frontend-0", first.Instance)
	require.Equal(t, int32(200), first.StatusCode)
}
