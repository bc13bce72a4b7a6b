package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/dataset"
)

// bigTraceJSON is one OTLP JSON document holding a trace of n spans (span
// i calls spans 8i+1 .. 8i+8) over services resourceSpans elements, each
// dup-th span written twice, each conflict-th written again with another
// name, and a small trace of three spans after it.
func bigTraceJSON(n, services, dup, conflict int) []byte {
	var b strings.Builder
	span := func(trace string, i int, name string) string {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf(`"parentSpanId":"%016x",`, (i-1)/8+1)
		}
		start := 1_767_225_600_000_000_000 + int64(i)*1000
		return fmt.Sprintf(`{"traceId":"%s","spanId":"%016x",%s"name":"%s","kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`,
			trace, i+1, parent, name, start, start+500)
	}
	const big, small = "000000000000000000000000000000b1", "000000000000000000000000000000a1"
	b.WriteString(`{"resourceSpans":[`)
	for svc := range services {
		if svc > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc-%d"}}]},"scopeSpans":[{"scope":{"name":"t"},"spans":[`, svc)
		first := true
		for i := svc; i < n; i += services {
			if !first {
				b.WriteByte(',')
			}
			first = false
			op := fmt.Sprintf("op-%d", i%5)
			b.WriteString(span(big, i, op))
			if dup > 0 && i%dup == dup-1 {
				b.WriteString("," + span(big, i, op))
			}
			if conflict > 0 && i%conflict == conflict-1 {
				b.WriteString("," + span(big, i, op+"-again"))
			}
		}
		if svc == 0 {
			for i := range 3 {
				b.WriteString("," + span(small, i, "small"))
			}
		}
		b.WriteString(`]}]}`)
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// bigTrace is the dataset writer's bigTrace: the rows of one trace in one
// sorted run from which it holds the trace at its size.
const bigTrace = 4096

// TestRunBigTrace ingests a trace bigger than the sort's runs: held in
// memory, spilled in runs that each hold more than bigTrace of its rows
// (counted, so held at its size), and in runs that hold fewer (grown as
// read). The files are the same byte for byte, and its repeats are
// counted the same.
func TestRunBigTrace(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(in, bigTraceJSON(3*bigTrace+123, 3, 997, 1499), 0o644))
	var files [][]byte
	for _, runRows := range []int{0, bigTrace + 500, 1000} {
		cfg := DefaultConfig()
		cfg.Traces = []string{in}
		cfg.RunRows = runRows
		cfg.Out = filepath.Join(dir, fmt.Sprint(runRows))
		sum, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		require.EqualValues(t, 3*bigTrace+123+3, sum.Spans, "runRows %d", runRows)
		require.EqualValues(t, 2, sum.Traces)
		kinds := map[string]int64{}
		for _, n := range sum.Notices {
			kinds[n.Kind] = n.Count
		}
		require.Equal(t, map[string]int64{noticeDuplicate: 12, noticeConflict: 8}, kinds, "runRows %d", runRows)
		b, err := os.ReadFile(filepath.Join(cfg.Out, dataset.SpansFile))
		require.NoError(t, err)
		files = append(files, b)
	}
	require.True(t, bytes.Equal(files[0], files[1]), "spans.parquet differs with the big trace counted in spilled runs")
	require.True(t, bytes.Equal(files[0], files[2]), "spans.parquet differs with the big trace spread thin over runs")
}
