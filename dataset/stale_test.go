//go:build unix

package dataset

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

// TestStaleHelperProcess is the run TestCleanStale kills: started as a
// child of the test binary, it starts the dataset
// CASCADE_STALE_HELPER_OUT names and waits for its stdin, which never
// ends, to end, as an ingest of stdin does.
func TestStaleHelperProcess(t *testing.T) {
	out := os.Getenv("CASCADE_STALE_HELPER_OUT")
	if out == "" {
		t.Skip("a helper: TestCleanStale runs it")
	}
	w, err := NewWriter(out, 0)
	require.NoError(t, err)
	io.Copy(io.Discard, os.Stdin)
	w.Abort()
	t.Fatal("stdin ended")
}

// killedRun starts a dataset writer at out in a child process, waits until its
// temporary directory is there, kills the child with SIGKILL, as kill -9
// or the kernel's OOM killer do, and returns the directory and the dead
// child's pid.
func killedRun(t *testing.T, out string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CASCADE_STALE_HELPER_OUT="+out)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	var dir string
	for deadline := time.Now().Add(30 * time.Second); dir == "" && time.Now().Before(deadline); {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
		for _, d := range dirs {
			if p, _, ok := readOwner(d); ok && p == pid {
				dir = d
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	require.NotEmpty(t, dir, "the child made no temporary directory with its owner file")
	require.True(t, processGone(pid), "pid %d is still there", pid)
	return dir, pid
}

// TestCleanStale: a run removes the temporary directories beside --out
// whose run was killed, says so, and leaves those of runs still going,
// those it cannot judge yet, and anything else (issue 39, item 9).
func TestCleanStale(t *testing.T) {
	// A real run, killed with SIGKILL: its directory, and its pid for
	// the cases below.
	top := t.TempDir()
	killedDir, dead := killedRun(t, filepath.Join(top, "ds"))
	// A process killed and not yet collected by its parent: a zombie,
	// which kill(pid, 0) still finds.
	zombie := exec.Command("sleep", "60")
	require.NoError(t, zombie.Start())
	require.NoError(t, zombie.Process.Kill())
	t.Cleanup(func() { zombie.Wait() })
	for deadline := time.Now().Add(10 * time.Second); runtime.GOOS == "linux" && !exited(zombie.Process.Pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // SIGKILL takes effect a moment later
	}
	host, _ := os.Hostname()
	owner := func(pid int, host string) string { return fmt.Sprintf("pid %d\nhost %s\n", pid, host) }

	tests := []struct {
		name    string
		entry   string // the directory (or file) beside ds
		owner   string // its owner file; "" for none
		file    bool   // entry is a file
		spans   bool   // entry holds spans.parquet
		dataset bool   // ds exists
		after   time.Duration
		want    string // "removed", "kept" or "restored"
		linux   bool   // only where /proc tells a zombie
	}{
		{name: "killed run", entry: ".ds.tmp-1", owner: owner(dead, host), want: "removed"},
		{name: "killed run, not yet collected by its parent", entry: ".ds.tmp-1", owner: owner(zombie.Process.Pid, host), want: "removed", linux: true},
		{name: "run still going", entry: ".ds.tmp-1", owner: owner(os.Getpid(), host), after: 48 * time.Hour, want: "kept"},
		{name: "no owner file, two hours old", entry: ".ds.tmp-1", after: 2 * time.Hour, want: "removed"},
		{name: "no owner file, just made", entry: ".ds.tmp-1", want: "kept"},
		{name: "another host's, two hours old", entry: ".ds.tmp-1", owner: owner(dead, host+"-other"), after: 2 * time.Hour, want: "kept"},
		{name: "another host's, two days old", entry: ".ds.tmp-1", owner: owner(dead, host+"-other"), after: 48 * time.Hour, want: "removed"},
		{name: "a dataset moved aside, the new one in place", entry: ".ds.tmp-1.old", spans: true, dataset: true, after: 2 * time.Hour, want: "removed"},
		{name: "a dataset moved aside, nothing in its place", entry: ".ds.tmp-1.old", spans: true, after: 2 * time.Hour, want: "restored"},
		{name: "a dataset just moved aside", entry: ".ds.tmp-1.old", spans: true, want: "kept"},
		{name: "another dataset's", entry: ".other.tmp-1", owner: owner(dead, host), want: "kept"},
		{name: "not a name ingest gives", entry: ".ds.tmp-x1", owner: owner(dead, host), want: "kept"},
		{name: "a file", entry: ".ds.tmp-1", file: true, after: 48 * time.Hour, want: "kept"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.linux && runtime.GOOS != "linux" {
				t.Skip("no /proc")
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "ds")
			entry := filepath.Join(dir, tc.entry)
			if tc.file {
				require.NoError(t, os.WriteFile(entry, nil, 0o644))
			} else {
				require.NoError(t, os.Mkdir(entry, 0o755))
			}
			if tc.owner != "" {
				require.NoError(t, os.WriteFile(filepath.Join(entry, ownerFile), []byte(tc.owner), 0o644))
			}
			if tc.spans {
				require.NoError(t, os.WriteFile(filepath.Join(entry, SpansFile), []byte("old"), 0o644))
			}
			if tc.dataset {
				require.NoError(t, os.Mkdir(out, 0o755))
			}
			var notes []string
			CleanStale(out, time.Now().Add(tc.after), func(s string) { notes = append(notes, s) })
			_, err := os.Lstat(entry)
			switch tc.want {
			case "kept":
				require.NoError(t, err)
				require.Empty(t, notes)
			case "removed":
				require.ErrorIs(t, err, os.ErrNotExist)
				require.Equal(t, []string{"removed a temporary dataset left by an interrupted run: " + entry}, notes)
			case "restored":
				require.ErrorIs(t, err, os.ErrNotExist)
				b, err := os.ReadFile(filepath.Join(out, SpansFile))
				require.NoError(t, err)
				require.Equal(t, "old", string(b))
				require.Equal(t, []string{"restored " + out + ", which an interrupted run had moved aside to " + entry}, notes)
			}
		})
	}

	// The next run into the killed run's dataset removes its directory
	// (ingest's Run calls CleanStale first), says so, and leaves no other.
	t.Run("next run", func(t *testing.T) {
		var notes []string
		out := filepath.Join(top, "ds")
		CleanStale(out, time.Now(), func(s string) { notes = append(notes, s) })
		w, err := NewWriter(out, 0)
		require.NoError(t, err)
		s := cascade.Span{TraceID: "t", SpanID: "a", Service: "svc", Start: 1, Duration: 1}
		require.NoError(t, w.AddSpan(&s))
		require.NoError(t, w.WriteSpans(func(rows []cascade.Span) []cascade.Span { return rows }))
		require.NoError(t, w.WriteSamples(func(*cascade.Sample) bool { return true }))
		require.NoError(t, w.Publish())
		require.Equal(t, []string{"removed a temporary dataset left by an interrupted run: " + killedDir}, notes)
		left, err := filepath.Glob(filepath.Join(top, ".ds.tmp-*"))
		require.NoError(t, err)
		require.Empty(t, left)
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		require.Equal(t, MetricsFile+" "+SpansFile, strings.Join(names, " "), "no owner file in the dataset")
	})
}
