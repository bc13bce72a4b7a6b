// Package testutil holds helpers shared by the project's tests: golden
// files regenerated with -update, the check that Markdown tables are
// whole, and the switch for the long suites (CASCADE_LONG). It imports
// no package of the module but the root, so that every package's tests
// can use it (datasets built from the fixture shapes are
// internal/shapetest's).
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
	GoldenFile(t, filepath.Join("testdata", name+".golden"), got)
}

// GoldenFile is Golden for a file at path: a fixture that other tests
// read, kept where they read it.
func GoldenFile(t testing.TB, path string, got []byte) {
	t.Helper()
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
