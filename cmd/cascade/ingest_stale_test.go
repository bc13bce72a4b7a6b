//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIngestRemovesStaleTemp: the temporary directory of an ingest killed
// with SIGKILL (here a process that was killed so, named in its owner
// file) is removed by the next ingest into the same --out, with a note on
// stderr; one whose process lives is left.
func TestIngestRemovesStaleTemp(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	killed := exec.Command(sleep, "60")
	require.NoError(t, killed.Start())
	require.NoError(t, killed.Process.Kill())
	killed.Wait()
	host, _ := os.Hostname()
	tests := []struct {
		name    string
		pid     int
		removed bool
	}{
		{name: "owner killed", pid: killed.Process.Pid, removed: true},
		{name: "owner running", pid: os.Getpid()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			temp := filepath.Join(dir, ".ds.tmp-12345")
			require.NoError(t, os.Mkdir(temp, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(temp, ".cascade-owner"), fmt.Appendf(nil, "pid %d\nhost %s\n", tc.pid, host), 0o644))
			code, _, stderr := runCascade(t, "", "ingest", "testdata/newcomer/trace.json", "--out", filepath.Join(dir, "ds"))
			require.Equal(t, exitOK, code, stderr)
			want := ""
			if tc.removed {
				want = fmt.Sprintf("cascade: note: removed a temporary dataset left by an interrupted run: %s\n", temp)
			}
			require.Equal(t, want, stderr)
			_, err := os.Stat(temp)
			require.Equal(t, tc.removed, os.IsNotExist(err), "temporary directory: %v", err)
		})
	}
}
