package testutil

import (
	"os"
	"testing"
)

// LongEnv names the switch for the long suites. `go test ./...` runs a
// small, fixed subset of each long matrix (every shape, fault kind and
// place still meets the incident pass somewhere) so that it finishes in
// a few minutes on two cores; with CASCADE_LONG=1 every case runs, as
// .ci/run does after the default run.
const LongEnv = "CASCADE_LONG"

// LongRun reports whether the long suites run: CASCADE_LONG is set to
// anything but the empty string.
func LongRun() bool { return os.Getenv(LongEnv) != "" }

// Long skips t, naming the switch, unless the long suites run. A suite
// whose default run keeps some of its cases calls it for the others.
func Long(t testing.TB) {
	t.Helper()
	if !LongRun() {
		t.Skip("a long case: the default run keeps a subset of this suite; " + LongEnv + "=1 runs it")
	}
}
