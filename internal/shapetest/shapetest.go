// Package shapetest builds datasets from the fixture shapes of
// cascade/testdata/shapes for the stages' tests, ingested as `cascade
// ingest` does. It is apart from internal/testutil because it imports
// ingest, whose own tests use testutil.
package shapetest

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
	"cascade/testdata/shapes"
)

// Dataset generates the capture cfg selects (cascade/testdata/shapes),
// writes it as the OTLP JSON file a Collector would, ingests it with
// ingest.Run as `cascade ingest` does, and returns the dataset's directory
// and the generator's truth. Datasets live in a temporary directory of
// the test. With cfg.Logs, the generator's log CSV is written beside the
// capture and ingested into the dataset's logs.parquet.
func Dataset(tb testing.TB, cfg shapes.Config) (string, *shapes.Truth) {
	tb.Helper()
	data, truth, err := shapes.Generate(cfg)
	require.NoError(tb, err)
	dir := tb.TempDir()
	name := fmt.Sprintf("%s-slow-%s.json", cfg.Shape, cfg.Slow)
	if cfg.Format == shapes.NezhaCSV {
		name = strings.TrimSuffix(name, ".json") + ".csv"
	}
	file := filepath.Join(dir, name)
	require.NoError(tb, os.WriteFile(file, data, 0o644))
	icfg := ingest.DefaultConfig()
	icfg.Traces = []string{file}
	if truth.Logs != nil {
		logs := filepath.Join(dir, strings.TrimSuffix(name, filepath.Ext(name))+"_log.csv")
		require.NoError(tb, os.WriteFile(logs, truth.Logs, 0o644))
		icfg.Logs = []string{logs}
	}
	icfg.Out = filepath.Join(dir, "dataset")
	_, err = ingest.Run(context.Background(), icfg)
	require.NoError(tb, err)
	return icfg.Out, truth
}

// Outcome is what a capture's root requests did: the share that succeeded
// and the p50 and p99 of the successful ones (ms), as replay measures
// them.
type Outcome struct{ Success, P50, P99 float64 }

// CaptureOutcome reads a dataset's root spans into their Outcome.
func CaptureOutcome(tb testing.TB, dir string) Outcome {
	tb.Helper()
	var ok []float64
	roots := 0
	require.NoError(tb, dataset.ReadSpans(dir, func(s *cascade.Span) error {
		if s.IsRoot() {
			roots++
			if s.Status != cascade.StatusError {
				ok = append(ok, float64(s.Duration)/1e6)
			}
		}
		return nil
	}))
	require.NotEmpty(tb, ok, "no successful root request in %s", dir)
	slices.Sort(ok)
	q := func(p float64) float64 { return ok[int(math.Round(p*float64(len(ok)-1)))] }
	return Outcome{Success: float64(len(ok)) / float64(roots), P50: q(0.5), P99: q(0.99)}
}
