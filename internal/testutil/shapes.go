package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/ingest"
	"cascade/testdata/shapes"
)

// ShapeDataset generates the capture cfg selects (cascade/testdata/shapes),
// writes it as the OTLP JSON file a Collector would, ingests it with
// ingest.Run as `cascade ingest` does, and returns the dataset's directory
// and the generator's truth. Datasets live in a temporary directory of
// the test.
func ShapeDataset(tb testing.TB, cfg shapes.Config) (string, *shapes.Truth) {
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
	icfg.Out = filepath.Join(dir, "dataset")
	_, err = ingest.Run(context.Background(), icfg)
	require.NoError(tb, err)
	return icfg.Out, truth
}
