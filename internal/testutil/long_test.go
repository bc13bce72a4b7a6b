package testutil

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLongSuitesRun holds the long suites to being run somewhere: every
// package whose tests call Long or LongRun is in .ci/run's CASCADE_LONG=1
// command, which runs after the default go test ./..., and the README
// gives that same command beside go test ./....
func TestLongSuitesRun(t *testing.T) {
	const root = treeRoot
	var want []string
	// This package defines the switch, so its own tests name it.
	own := func(dir string) bool { return dir == filepath.Join(root, "internal", "testutil") }
	eachTestFile(t, own, func(dir string, src []byte) {
		if strings.Contains(string(src), "testutil.Long(") || strings.Contains(string(src), "testutil.LongRun(") {
			if pkg := "./" + dir; !slices.Contains(want, pkg) {
				want = append(want, pkg)
			}
		}
	})
	require.NotEmpty(t, want, "no test calls testutil.Long or testutil.LongRun")

	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	lines := strings.Split(string(ci), "\n")
	def := slices.Index(lines, "go test ./...")
	require.GreaterOrEqual(t, def, 0, ".ci/run does not run the README's go test ./...")
	var cmd string
	for _, l := range lines[def+1:] {
		if strings.HasPrefix(l, LongEnv+"=1 go test ") {
			cmd = l
			break
		}
	}
	require.NotEmpty(t, cmd, ".ci/run runs no %s=1 go test after go test ./...", LongEnv)
	got := strings.Fields(cmd)
	for _, pkg := range want {
		require.Contains(t, got, pkg, "%s has long suites that .ci/run's %q leaves out", pkg, cmd)
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), cmd, "the README does not give .ci/run's long-suite command")
}
