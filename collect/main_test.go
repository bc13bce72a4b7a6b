package collect

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds the cascade binary that the process tests build once.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cascade-collect-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

var build struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// cascadeBinary builds cmd/cascade with go build, once per test binary,
// and returns its path.
func cascadeBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.path = filepath.Join(binDir, "cascade")
		cmd := exec.Command("go", "build", "-o", build.path, "../cmd/cascade")
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build ../cmd/cascade: %v\n%s", build.err, build.out)
	}
	return build.path
}
