// Package testutil holds helpers shared by the project's tests: golden
// files regenerated with -update, datasets ingested from the fixture
// shapes of cascade/testdata/shapes, and the switch for the long suites
// (CASCADE_LONG).
package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the current output")

// Golden compares got with the file testdata/NAME.golden of the calling
// package, or rewrites the file when the test runs with -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test with -update")
	require.Equal(t, string(want), string(got), "output differs from %s (run with -update to accept)", path)
}

// Updating reports whether the run rewrites golden files.
func Updating() bool { return *update }
