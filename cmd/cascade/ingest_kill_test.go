//go:build unix

package main

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIngestHelperProcess is the cascade process TestIngestKilled kills:
// started as a child of the test binary, it runs the command line in
// CASCADE_INGEST_HELPER_ARGS (split on tabs) as the cascade binary would.
func TestIngestHelperProcess(t *testing.T) {
	args := os.Getenv("CASCADE_INGEST_HELPER_ARGS")
	if args == "" {
		t.Skip("a helper: TestIngestKilled runs it")
	}
	os.Exit(run(strings.Split(args, "\t"), os.Stdin, os.Stdout, os.Stderr))
}

// TestIngestKilled kills a real `cascade ingest` with SIGKILL half-way
// through its input, as kill -9 or the kernel's OOM killer do, over a
// dataset an earlier ingest wrote: that dataset is left whole, byte for
// byte, and the next ingest into the same --out removes what the killed
// run left, says so, and replaces the dataset with a whole new one.
func TestIngestKilled(t *testing.T) {
	const td = "../../testdata/"
	out := filepath.Join(t.TempDir(), "ds")
	code, _, stderr := runCascade(t, "", "ingest", td+"hotrod-baseline/sample-trace-otlp.json", "--out", out)
	require.Equal(t, exitOK, code, stderr)
	before := treeSums(t, out)

	// The killed run reads stdin, which gets half of a trace file and
	// never ends: the process is alive, mid-input, when it is killed.
	input, err := os.ReadFile(td + "zipkin/hotrod-traces.json")
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIngestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CASCADE_INGEST_HELPER_ARGS="+strings.Join([]string{"ingest", "-", "--out", out}, "\t"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	require.NoError(t, cmd.Start())
	_, err = stdin.Write(input[:len(input)/2])
	require.NoError(t, err)
	temp := waitTemp(t, out, cmd.Process.Pid)
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()

	require.Equal(t, before, treeSums(t, out), "the dataset the killed run was replacing")
	_, err = os.Stat(temp)
	require.NoError(t, err, "the killed run's temporary directory")

	code, _, stderr = runCascade(t, "", "ingest", td+"zipkin/hotrod-traces.json", "--out", out)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "cascade: note: removed a temporary dataset left by an interrupted run: "+temp)
	_, err = os.Stat(temp)
	require.True(t, os.IsNotExist(err), "temporary directory: %v", err)
	after := treeSums(t, out)
	require.NotEqual(t, before, after, "the new ingest replaced the dataset")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".*"))
	require.NoError(t, err)
	require.Empty(t, left, "nothing beside the dataset")
	code, _, stderr = runCascade(t, "", "graph", out, "--out", filepath.Join(t.TempDir(), "model.json"))
	require.Equal(t, exitOK, code, "the new dataset reads whole: %s", stderr)
}

// waitTemp waits until the ingest with pid has made its temporary
// directory beside out (its owner file names it) and returns it.
func waitTemp(t *testing.T, out string, pid int) string {
	t.Helper()
	owner := []byte("pid " + strconv.Itoa(pid) + "\n")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, ".cascade-owner")); err == nil && strings.HasPrefix(string(b), string(owner)) {
				return d
			}
		}
	}
	t.Fatalf("the ingest (pid %d) made no temporary directory beside %s", pid, out)
	return ""
}

// treeSums maps each file under dir to its SHA-256.
func treeSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = sha256.Sum256(b)
		return nil
	}))
	require.NotEmpty(t, sums)
	return sums
}
