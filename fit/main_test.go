package fit_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if datasets.root != "" {
			os.RemoveAll(datasets.root)
		}
		os.Exit(code)
	}))
}

// repoData is the shared real test data, relative to this package.
const repoData = "../testdata"

var datasets struct {
	mu   sync.Mutex
	root string
	dirs map[string]string
}

// ingested ingests files of ../testdata into a dataset once per test
// binary and returns its directory.
func ingested(tb testing.TB, name string, files ...string) string {
	tb.Helper()
	datasets.mu.Lock()
	defer datasets.mu.Unlock()
	if dir, ok := datasets.dirs[name]; ok {
		return dir
	}
	if datasets.root == "" {
		root, err := os.MkdirTemp("", "cascade-fit-test-")
		require.NoError(tb, err)
		datasets.root, datasets.dirs = root, map[string]string{}
	}
	cfg := ingest.DefaultConfig()
	for _, f := range files {
		cfg.Traces = append(cfg.Traces, filepath.Join(repoData, f))
	}
	cfg.Out = filepath.Join(datasets.root, name)
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(tb, err)
	datasets.dirs[name] = cfg.Out
	return cfg.Out
}

func hotrodDataset(tb testing.TB) string {
	return ingested(tb, "hotrod", "hotrod-baseline/traces-otlp.json.gz")
}

func trainTicketDataset(tb testing.TB) string {
	return ingested(tb, "trainticket", "nezha-trainticket/trace/08_43_trace.csv.gz")
}

func spansOf(dir string) cascade.SpanSource {
	return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
}

// buildModel builds the model of a dataset as cascade graph does.
func buildModel(tb testing.TB, dir string, level graph.Level) *graph.Result {
	tb.Helper()
	cfg := graph.DefaultConfig()
	cfg.Level = level
	res, err := graph.Build(context.Background(), cfg, spansOf(dir), nil)
	require.NoError(tb, err)
	return res
}
