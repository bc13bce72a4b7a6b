//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// endless is stdin that never ends: the same OTLP JSON line over and
// over, until the deadline, when it ends so that a run the signal did
// not stop fails the test instead of hanging it.
type endless struct {
	line     []byte
	off      int
	deadline time.Time
}

func (e *endless) Read(p []byte) (int, error) {
	if time.Now().After(e.deadline) {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	return n, nil
}

// TestInterrupted stops runs in each stage with SIGINT, and one with
// SIGTERM, as Ctrl-C and a service manager do: each says "cascade:
// interrupted", not the "context canceled" of the stage it stopped, and
// exits 130, as the README's table says (issue 39, item 7).
func TestInterrupted(t *testing.T) {
	const model = "../../testdata/replay/seed000.json"
	sample, err := os.ReadFile("../../testdata/hotrod-baseline/sample-trace-otlp.json")
	require.NoError(t, err)
	var line bytes.Buffer
	require.NoError(t, json.Compact(&line, sample))
	line.WriteByte('\n')
	dir := t.TempDir()
	tests := []struct {
		name  string
		sig   syscall.Signal
		args  []string
		stdin bool          // endless stdin
		after time.Duration // the first signal (for a later stage)
	}{
		{name: "ingest reading", sig: syscall.SIGINT, stdin: true,
			args: []string{"ingest", "-", "--format", "otlp-json", "--out", filepath.Join(dir, "ds")}},
		{name: "replay", sig: syscall.SIGINT,
			args: []string{"replay", model, "--seeds", "1000", "--duration", "600s", "--tick", "1ms"}},
		{name: "fit, later", sig: syscall.SIGINT, after: time.Second, // in the grid search, which this grid makes last for minutes
			args: []string{"fit", hotrodOTLP, "--grid", "p=0.001:0.999:0.001,k=0:2:0.01", "--search", "exhaustive", "--tick", "1ms"}},
		{name: "rank", sig: syscall.SIGINT,
			args: []string{"rank", model, "--seeds", "50", "--duration", "600s", "--tick", "1ms"}},
		{name: "analyze, SIGTERM", sig: syscall.SIGTERM,
			args: []string{"analyze", hotrodOTLP, "--out", filepath.Join(dir, "report"), "--seeds", "50", "--duration", "600s"}},
	}
	// The test's own handler keeps a signal that comes after a run has
	// stopped listening from ending the test binary.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(caught)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdin io.Reader = strings.NewReader("")
			if tc.stdin {
				stdin = &endless{line: line.Bytes(), deadline: time.Now().Add(time.Minute)}
			}
			var stdout, stderr bytes.Buffer
			done := make(chan int)
			go func() { done <- run(tc.args, stdin, &stdout, &stderr) }()
			// Signal until the run stops: the first may come before
			// it listens.
			time.Sleep(tc.after)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			timeout := time.After(2 * time.Minute)
			var code int
		wait:
			for {
				select {
				case code = <-done:
					break wait
				case <-tick.C:
					require.NoError(t, syscall.Kill(os.Getpid(), tc.sig))
				case <-timeout:
					t.Fatal("the run did not stop")
				}
			}
			require.Equal(t, exitInterrupted, code, stderr.String())
			require.True(t, strings.HasSuffix(stderr.String(), "cascade: interrupted\n"), "stderr: %s", stderr.String())
			require.NotContains(t, stderr.String(), "context canceled")
			require.Empty(t, stdout.String())
		})
	}
}
