package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// nezhaKeys counts, independently of the decoder, the (trace, span) pairs
// of Nezha CSV files: rows, distinct pairs and distinct traces.
func nezhaKeys(t *testing.T, paths ...string) (rows, distinct, traces int) {
	t.Helper()
	pairs, tr := map[string]bool{}, map[string]bool{}
	for _, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<20)
		for first := true; sc.Scan(); first = false {
			if first {
				continue
			}
			f := strings.SplitN(sc.Text(), ",", 3)
			rows++
			pairs[f[0]+"/"+f[1]] = true
			tr[f[0]] = true
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return rows, len(pairs), len(tr)
}

func TestRunDeduplicatesAcrossFiles(t *testing.T) {
	// Consecutive Nezha minutes overlap: the same spans appear in both.
	files := []string{
		repoTestdata("nezha-onlineboutique", "trace", "05_19_trace.csv.gz"),
		repoTestdata("nezha-onlineboutique", "trace", "05_20_trace.csv.gz"),
	}
	rows, distinct, traces := nezhaKeys(t, files...)
	require.Greater(t, rows, distinct, "the fixture must overlap")

	cfg := DefaultConfig()
	cfg.Traces = files
	cfg.Out = filepath.Join(t.TempDir(), "ds")
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.EqualValues(t, distinct, sum.Spans)
	require.EqualValues(t, rows-distinct, sum.DuplicateSpans)
	require.EqualValues(t, traces, sum.Traces)
	require.Len(t, sum.Services, 10)
	require.Contains(t, sum.Inferred, "status: not recorded by format (nezha CSV)")

	// What was stored is what the summary says.
	var n int64
	seen := map[string]bool{}
	require.NoError(t, dataset.ReadSpans(cfg.Out, func(s *cascade.Span) error {
		n++
		k := s.TraceID + "/" + s.SpanID
		require.False(t, seen[k], "duplicate %s stored", k)
		seen[k] = true
		return nil
	}))
	require.Equal(t, sum.Spans, n)
}

// TestRunSpillIsDeterministic checks that sorting in many spilled runs
// gives the same file, byte for byte, as sorting in memory.
func TestRunSpillIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [][]byte
	for _, runRows := range []int{0, 997} {
		cfg := DefaultConfig()
		cfg.Traces = []string{repoTestdata("hotrod-baseline", "traces-otlp.json.gz")}
		cfg.Metrics = []string{repoTestdata("hotrod-baseline", "prometheus")}
		cfg.RunRows = runRows
		cfg.Out = filepath.Join(dir, fmt.Sprint(runRows))
		sum, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		require.EqualValues(t, 11850, sum.Spans)
		require.EqualValues(t, 20591, sum.Samples)
		for _, name := range []string{dataset.SpansFile, dataset.MetricsFile} {
			b, err := os.ReadFile(filepath.Join(cfg.Out, name))
			require.NoError(t, err)
			files = append(files, b)
		}
	}
	require.True(t, bytes.Equal(files[0], files[2]), "spans.parquet differs with spilling")
	require.True(t, bytes.Equal(files[1], files[3]), "metrics.parquet differs with spilling")
}

const badJaeger = `{"data":[{"traceID":"00000000000000000000000000000001","spans":[
{"traceID":"00000000000000000000000000000001","spanID":"0000000000000001","operationName":"a","startTime":1000,"duration":5,"processID":"p1"},
{"traceID":"00000000000000000000000000000001","spanID":"","operationName":"b","startTime":1001,"duration":2,"processID":"p1"},
{"traceID":"00000000000000000000000000000001","spanID":"0000000000000003","operationName":"c","startTime":"x","duration":2,"processID":"p1"}
],"processes":{"p1":{"serviceName":"svc"}}}]}`

func TestRunInvalidRecords(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(in, []byte(badJaeger), 0o644))

	tests := []struct {
		name      string
		skip      bool
		maxErrors int
		wantErr   []string
		wantSpans int64
	}{
		{name: "fail with every position", maxErrors: 20, wantErr: []string{"bad.json (byte ", "data[0].spans[1]", "data[0].spans[2]"}},
		{name: "stop after max-errors", maxErrors: 1, wantErr: []string{"data[0].spans[1]", "(and 1 more)"}},
		{name: "skip-invalid counts by reason", skip: true, maxErrors: 20, wantSpans: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Traces = []string{in}
			cfg.Out = filepath.Join(t.TempDir(), "ds")
			cfg.SkipInvalid = tc.skip
			cfg.MaxErrors = tc.maxErrors
			sum, err := Run(context.Background(), cfg)
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				for _, w := range tc.wantErr {
					require.Contains(t, err.Error(), w)
				}
				_, statErr := os.Stat(cfg.Out)
				require.True(t, os.IsNotExist(statErr), "a failed run must not leave a dataset")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantSpans, sum.Spans)
			require.Equal(t, map[string]int64{"bad trace or span id": 1, "bad timestamp": 1}, sum.Skipped)
		})
	}
}

func TestRunFailureKeepsPreviousDataset(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ds")
	cfg := DefaultConfig()
	cfg.Traces = []string{repoTestdata("hotrod-baseline", "sample-trace-otlp.json")}
	cfg.Out = out
	_, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(out, dataset.SpansFile))
	require.NoError(t, err)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(badJaeger), 0o644))
	cfg.Traces = []string{bad}
	_, err = Run(context.Background(), cfg)
	require.Error(t, err)
	after, err := os.ReadFile(filepath.Join(out, dataset.SpansFile))
	require.NoError(t, err)
	require.Equal(t, before, after)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "only the dataset and the bad input remain")
}

func TestRunStdinAndCancel(t *testing.T) {
	raw, err := os.ReadFile(repoTestdata("hotrod-baseline", "traces-jaeger-legacy.json.gz"))
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Traces = []string{"-"}
	cfg.Stdin = bytes.NewReader(raw)
	cfg.Out = filepath.Join(t.TempDir(), "ds")
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.EqualValues(t, 11850, sum.Spans)
	require.Equal(t, FormatJaegerJSON, sum.Inputs[0].Format)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg.Stdin = bytes.NewReader(raw)
	cfg.Out = filepath.Join(t.TempDir(), "ds2")
	_, err = Run(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	_, statErr := os.Stat(cfg.Out)
	require.True(t, os.IsNotExist(statErr))
}

func TestConfigValidate(t *testing.T) {
	c := Config{Format: "nope", LogFormat: "otlp-json", MaxErrors: -1}
	err := c.Validate()
	require.Error(t, err)
	for _, w := range []string{"out:", "traces, metrics, logs:", "format:", `log-format: "otlp-json": unknown format`, "max-errors:"} {
		require.Contains(t, err.Error(), w)
	}
}
