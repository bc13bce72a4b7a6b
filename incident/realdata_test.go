package incident

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
)

// nezha ingests Nezha trace files into a dataset and returns its span
// source.
func nezha(t *testing.T, files ...string) func(func(*cascade.Span) error) error {
	t.Helper()
	cfg := ingest.DefaultConfig()
	cfg.Traces = files
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(t, err)
	return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(cfg.Out, fn) }
}

func utc(s string) int64 {
	ts, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return ts.UnixNano()
}

// TestNezhaOnlineBoutique: currencyservice cpu_contention injected at
// 2022-08-22 05:18:09 UTC. The bundled minutes start seven seconds after
// the injection, so the "normal" first windows are already the incident's
// first moments; the contention grows, and currencyservice (as its
// callers see it) is still the first to leave its range.
func TestNezhaOnlineBoutique(t *testing.T) {
	src := nezha(t, "../testdata/nezha-onlineboutique/trace/05_19_trace.csv.gz",
		"../testdata/nezha-onlineboutique/trace/05_20_trace.csv.gz")
	cfg := DefaultConfig()
	inc, err := RootCause(context.Background(), src, nil, nil, cfg)
	require.NoError(t, err)
	injected := utc("2022-08-22 05:18:09")
	require.Greater(t, inc.StartNS+int64(cfg.Window), injected, "the files begin after the injection")
	require.Equal(t, "currencyservice", inc.Origins[0], "%+v", inc.Nodes)
	require.Len(t, inc.Origins, 3)
}

// TestNezhaTrainTicket: ts-contacts "return" injected at 2023-01-29
// 08:43:04 UTC (inject_time; the list's inject_timestamp is 8 h off).
// The bundled minute ends four seconds later, so the incident is not in
// it: what changes there is not the fault, and the test only checks that
// the minute is read and judged.
func TestNezhaTrainTicket(t *testing.T) {
	src := nezha(t, "../testdata/nezha-trainticket/trace/08_43_trace.csv.gz")
	inc, err := RootCause(context.Background(), src, nil, nil, DefaultConfig())
	require.NoError(t, err)
	injected := utc("2023-01-29 08:43:04")
	require.Less(t, inc.StartNS, injected)
	require.Less(t, inc.EndNS-injected, int64(10*time.Second), "at most one window after the injection")
	require.Greater(t, len(inc.Nodes), 20)
	for _, n := range inc.Nodes {
		require.Len(t, n.Series, int((inc.EndNS-inc.StartNS)/int64(10*time.Second)))
	}
}

func loadModel(t testing.TB, path string) *cascade.Model {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m, err := cascade.DecodeModel(b)
	require.NoError(t, err)
	return m
}
