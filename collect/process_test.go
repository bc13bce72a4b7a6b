package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"cascade"
)

// proc is a cascade binary running as a subprocess.
type proc struct {
	cmd    *exec.Cmd
	addr   string // http://host:port once it listens
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error // of Wait, once exited
}

// startProc runs the cascade binary with args and, when listen is true,
// waits until it says where it listens. The process is killed at the end
// of the test if it is still running.
func startProc(t *testing.T, listen bool, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(cascadeBinary(t), args...), exited: make(chan struct{})}
	p.cmd.SysProcAttr = childAttr()
	p.cmd.Stdout = &p.stdout
	errPipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "collect: listening on "); ok {
				a, _, _ = strings.Cut(a, " ")
				addr <- "http://" + a
			}
		}
		io.Copy(io.Discard, errPipe)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	if listen {
		select {
		case p.addr = <-addr:
		case <-p.exited:
			t.Fatalf("cascade %v exited before listening: %v\n%s", args, p.err, p.stderrText())
		case <-time.After(30 * time.Second):
			t.Fatalf("cascade %v did not listen within 30s\n%s", args, p.stderrText())
		}
	}
	return p
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("cascade did not exit within 60s\n%s", p.stderrText())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

// pusher sends traces of spansPer spans from several goroutines until
// stopped, recording which trace ids were acknowledged and which sent.
type pusher struct {
	mu         sync.Mutex
	acked      map[uint64]bool
	sent       map[uint64]bool
	next       atomic.Uint64
	stop       context.CancelFunc
	wg         sync.WaitGroup
	client     *http.Client
	firstAcked chan struct{}
	once       sync.Once
}

func startPusher(t *testing.T, addr string, clients, spansPer int, firstID uint64) *pusher {
	ctx, cancel := context.WithCancel(context.Background())
	ps := &pusher{
		acked: map[uint64]bool{}, sent: map[uint64]bool{}, stop: cancel,
		client:     &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}},
		firstAcked: make(chan struct{}),
	}
	ps.next.Store(firstID - 1)
	for range clients {
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			for ctx.Err() == nil {
				id := ps.next.Add(1)
				body := protoBody(t, testTraces(id, spansPer, "pusher"))
				ps.mu.Lock()
				ps.sent[id] = true
				ps.mu.Unlock()
				code, _, _, err := post(ctx, ps.client, addr+pathTraces, contentTypeProto, "", body)
				switch {
				case err != nil:
					time.Sleep(5 * time.Millisecond) // the server is gone or going
				case code == http.StatusOK:
					ps.mu.Lock()
					ps.acked[id] = true
					n := len(ps.acked)
					ps.mu.Unlock()
					if n >= 20 {
						ps.once.Do(func() { close(ps.firstAcked) })
					}
				case code == http.StatusTooManyRequests:
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return ps
}

// waitAcked waits until 20 requests were acknowledged.
func (ps *pusher) waitAcked(t *testing.T) {
	t.Helper()
	select {
	case <-ps.firstAcked:
	case <-time.After(30 * time.Second):
		t.Fatal("fewer than 20 requests acknowledged in 30s")
	}
}

// finish stops the clients and returns the acknowledged and sent ids.
func (ps *pusher) finish() (acked, sent map[uint64]bool) {
	ps.stop()
	ps.wg.Wait()
	ps.client.CloseIdleConnections()
	return ps.acked, ps.sent
}

// checkAckedStored checks that every acknowledged trace is in the dataset
// whole, and that every stored trace was sent.
func checkAckedStored(t *testing.T, out string, acked, sent map[uint64]bool, spansPer int, also ...uint64) {
	t.Helper()
	counts := traceCounts(t, out)
	for _, id := range also {
		acked[id], sent[id] = true, true
	}
	for id := range acked {
		require.Equal(t, spansPer, counts[traceHex(id)], "acknowledged trace %d", id)
	}
	sentHex := map[string]bool{}
	for id := range sent {
		sentHex[traceHex(id)] = true
	}
	for h, n := range counts {
		require.True(t, sentHex[h], "stored trace %s was never sent", h)
		require.Equal(t, spansPer, n, "trace %s", h)
	}
	t.Logf("%d traces acknowledged, %d sent, %d stored", len(acked), len(sent), len(counts))
}

// TestProcessKill9 kills a receiving cascade collect with SIGKILL while
// clients push, then finalizes: every acknowledged span is in the
// dataset, and the dataset from before the crash was intact meanwhile.
func TestProcessKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	const spansPer = 20
	out := filepath.Join(t.TempDir(), "ds")

	// A dataset from an earlier, cleanly stopped run.
	p := startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", out)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	code, _, _, err := post(context.Background(), c, p.addr+pathTraces, contentTypeProto, "", protoBody(t, testTraces(1, spansPer, "before")))
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t), p.stderrText())

	p = startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", out, "--queue", "16", "--segment-size", "64KiB")
	ps := startPusher(t, p.addr, 8, spansPer, 1000)
	ps.waitAcked(t)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t)
	acked, sent := ps.finish()

	// The crash left the earlier dataset as it was, and the segments.
	require.Equal(t, map[string]int{traceHex(1): spansPer}, traceCounts(t, out))
	segs, _, err := listSegments(out + ".collect")
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	// A power cut could also tear the last write: append half a frame.
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	frame := appendFrame(nil, encodeRecord(nil, &batch{spans: readSpansSlice(t, testTraces(999, 3, "torn"))}))
	_, err = f.Write(frame[:len(frame)/2])
	require.NoError(t, err)
	require.NoError(t, f.Close())

	fin := startProc(t, false, "collect", "--out", out, "--finalize", "-o", "json")
	require.Equal(t, 0, fin.wait(t), fin.stderrText())
	require.Contains(t, fin.stderrText(), "discarded")
	var res Result
	require.NoError(t, json.Unmarshal(fin.stdout.Bytes(), &res), fin.stdout.String())
	// The half frame, and whatever the kill itself cut short: a SIGKILL
	// can end a write(2) to a file part way, leaving a torn frame that was
	// never synced, so never acknowledged.
	require.GreaterOrEqual(t, res.DiscardedBytes, int64(len(frame)/2))
	t.Logf("finalize: %d segments, %d bytes discarded (%d appended)", res.Segments, res.DiscardedBytes, len(frame)/2)
	checkAckedStored(t, out, acked, sent, spansPer, 1)
	require.NoDirExists(t, out+".collect")
}

// readSpansSlice decodes a pdata trace into rows, as the receiver does.
func readSpansSlice(t *testing.T, td ptrace.Traces) []cascade.Span {
	t.Helper()
	b := protoBody(t, td)
	d, err := decodeBody(signalTraces, encodingProto, b, nil)
	require.NoError(t, err)
	return d.batch.spans
}

// TestProcessSIGTERM stops a receiving cascade collect with SIGTERM while
// clients push: it drains, finalizes and exits 0, with every acknowledged
// span in the dataset.
func TestProcessSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	const spansPer = 10
	out := filepath.Join(t.TempDir(), "ds")
	p := startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", out, "--queue", "8")
	ps := startPusher(t, p.addr, 8, spansPer, 1)
	ps.waitAcked(t)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t), p.stderrText())
	acked, sent := ps.finish()
	require.Contains(t, p.stderrText(), "collect: stopped: acknowledged")
	require.Contains(t, p.stdout.String(), "spans")
	checkAckedStored(t, out, acked, sent, spansPer)
	require.NoDirExists(t, out+".collect")
}
