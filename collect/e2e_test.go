package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"cascade"
	"cascade/dataset"
)

// The end-to-end test runs a real traced application, HotROD (the Jaeger
// project's demo), exporting OTLP/HTTP to cascade collect, and a real
// Prometheus scraping it, read back with cascade collect --from
// prometheus. It needs their binaries, which .ci/e2e.sh builds and caches,
// so it runs only when CASCADE_E2E=1:
//
//	CASCADE_E2E=1 CASCADE_E2E_HOTROD=/path/hotrod CASCADE_E2E_PROMETHEUS=/path/prometheus \
//	    go test ./collect -run TestE2EHotROD -v -timeout 15m
//
// Optional: CASCADE_E2E_REQUESTS (default 300), CASCADE_E2E_CONCURRENCY
// (default 5), CASCADE_E2E_OUT (a directory to keep the dataset in).
const (
	envE2E         = "CASCADE_E2E"
	envHotROD      = "CASCADE_E2E_HOTROD"
	envPrometheus  = "CASCADE_E2E_PROMETHEUS"
	envRequests    = "CASCADE_E2E_REQUESTS"
	envConcurrency = "CASCADE_E2E_CONCURRENCY"
	envOut         = "CASCADE_E2E_OUT"
)

// hotrodServices are the six services a HotROD dispatch touches.
var hotrodServices = []string{"customer", "driver", "frontend", "mysql", "redis-manual", "route"}

func TestE2EHotROD(t *testing.T) {
	if os.Getenv(envE2E) != "1" {
		t.Skip("SKIPPED: the HotROD + Prometheus end-to-end test runs only with " + envE2E +
			"=1 (.ci/e2e.sh sets it, after building HotROD and fetching Prometheus)")
	}
	hotrod, prometheus := os.Getenv(envHotROD), os.Getenv(envPrometheus)
	require.NotEmpty(t, hotrod, envHotROD+" must name the HotROD binary")
	require.NotEmpty(t, prometheus, envPrometheus+" must name the Prometheus binary")
	requests, concurrency := envInt(t, envRequests, 300), envInt(t, envConcurrency, 5)
	dir := t.TempDir()
	out := filepath.Join(dir, "hotrod")
	if keep := os.Getenv(envOut); keep != "" {
		out = keep
		require.NoError(t, os.RemoveAll(out))
		require.NoError(t, os.RemoveAll(out+".collect"))
	}
	began := time.Now()
	phase := func(name string, since time.Time) {
		t.Logf("%-40s %6.1fs (total %6.1fs)", name, time.Since(since).Seconds(), time.Since(began).Seconds())
	}

	// 1. cascade collect, the OTLP/HTTP endpoint.
	start := time.Now()
	cascadeBinary(t)
	phase("build cascade", start)
	col := startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", out, "-o", "json")

	// 2. HotROD, every service on loopback, exporting to collect.
	ports := freePorts(t, 5)
	fe := ports[0]
	hot := startChild(t, "hotrod", filepath.Join(dir, "hotrod.log"), []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.addr},
		hotrod, "all",
		"--frontend-service-hostname", "127.0.0.1", "--frontend-service-port", fe,
		"--customer-service-hostname", "127.0.0.1", "--customer-service-port", ports[1],
		"--driver-service-hostname", "127.0.0.1", "--driver-service-port", ports[2],
		"--route-service-hostname", "127.0.0.1", "--route-service-port", ports[3])
	feURL := "http://127.0.0.1:" + fe
	waitHTTP(t, feURL+"/", hot)

	// 3. Prometheus, scraping HotROD's /metrics every second.
	promURL := "http://127.0.0.1:" + ports[4]
	promCfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(promCfg, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: hotrod
    static_configs:
      - targets: ['127.0.0.1:%s']
`, fe), 0o644))
	prom := startChild(t, "prometheus", filepath.Join(dir, "prometheus.log"), nil, prometheus,
		"--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+ports[4])
	waitHTTP(t, promURL+"/-/ready", prom)
	phase("start collect, HotROD, Prometheus", start)

	// 4. The load: closed-loop clients sending /dispatch requests.
	start = time.Now()
	loadStart := time.Now()
	traces := dispatch(t, feURL, requests, concurrency)
	loadEnd := time.Now()
	phase(fmt.Sprintf("load: %d dispatches, %d clients", requests, concurrency), start)

	// HotROD's SDK exports every second and Prometheus scrapes every
	// second: give both time to catch up with the end of the load.
	time.Sleep(4 * time.Second)
	start = time.Now()
	require.NoError(t, col.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, col.wait(t), col.stderrText())
	var received Result
	require.NoError(t, json.Unmarshal(col.stdout.Bytes(), &received), col.stdout.String())
	phase("stop collect (drain, finalize)", start)

	// 5. Read Prometheus back into the same dataset.
	start = time.Now()
	pull := startProc(t, false, "collect", "--out", out, "-o", "json",
		"--from", "prometheus="+promURL,
		"--query", `{__name__=~"hotrod_.+"}`,
		"--query", `dispatch_rate=sum(rate(hotrod_http_requests_total{endpoint="/dispatch"}[5s]))`,
		"--start", loadStart.Add(-5*time.Second).UTC().Format(time.RFC3339Nano),
		"--end", time.Now().UTC().Format(time.RFC3339Nano),
		"--step", "1s")
	require.Equal(t, 0, pull.wait(t), pull.stderrText())
	var pulled Result
	require.NoError(t, json.Unmarshal(pull.stdout.Bytes(), &pulled), pull.stdout.String())
	phase("pull from Prometheus", start)
	stopChild(t, hot)
	stopChild(t, prom)

	// 6. What was recorded.
	t.Logf("collect: acknowledged %d requests, %d spans; dataset %d spans in %d traces; prometheus: %d samples",
		received.Receiver.Requests, received.Receiver.Spans, pulled.Summary.Spans, pulled.Summary.Traces, pulled.Pull.Samples)
	require.Equal(t, received.Receiver.Spans, received.Summary.Spans+received.Summary.DuplicateSpans, "acknowledged == stored")
	require.Equal(t, received.Summary.Spans, pulled.Summary.Spans, "the pull kept every span")
	checkHotROD(t, out, traces)
	checkHotRODMetrics(t, out, traces, loadStart, loadEnd)
	phase("end-to-end", began)
}

// dispatched is one /dispatch request: its trace id (from HotROD's
// traceresponse header) and whether HotROD answered 200.
type dispatched struct {
	trace string
	ok    bool
}

// dispatch sends n GET /dispatch requests from c closed-loop clients.
// HotROD fails a dispatch with 500 when the driver's FindNearest passes
// the frontend's one-second deadline (the driver works on: zombie work,
// recorded all the same), which a busy machine and concurrent dispatches
// make happen, or when one driver's three GetDriver attempts all fail. A
// quarter of the dispatches may fail so; the rest must succeed.
func dispatch(t *testing.T, base string, n, c int) []dispatched {
	out := closedLoop(t, base, c, func(k int) bool { return k < n })
	failed := 0
	for _, d := range out {
		if !d.ok {
			failed++
		}
	}
	t.Logf("%d of %d dispatches answered 500 (FindNearest past the frontend's 1s deadline, or three failed GetDriver attempts)", failed, n)
	require.LessOrEqual(t, failed, n/4, "at most a quarter of the dispatches fail")
	return out
}

// closedLoop sends GET /dispatch requests from c closed-loop clients (each
// sends its next request when the last answers, without thinking), the
// customers in turn, while more(k) says request k is to be sent, and
// returns them in the order they were numbered.
func closedLoop(t *testing.T, base string, c int, more func(k int) bool) []dispatched {
	customers := []string{"123", "567", "392", "731"}
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var out []dispatched
	i := 0
	var g errgroup.Group
	for range c {
		g.Go(func() error {
			for {
				mu.Lock()
				k := i
				goOn := more(k)
				if goOn {
					i++
				}
				mu.Unlock()
				if !goOn {
					return nil
				}
				resp, err := client.Get(base + "/dispatch?customer=" + customers[k%len(customers)])
				if err != nil {
					return fmt.Errorf("dispatch %d: %w", k, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError {
					return fmt.Errorf("dispatch %d: %s", k, resp.Status)
				}
				// traceresponse: 00-<trace id>-<span id>-01
				parts := strings.Split(resp.Header.Get("traceresponse"), "-")
				if len(parts) != 4 || len(parts[1]) != 32 {
					return fmt.Errorf("dispatch %d (%s): traceresponse %q", k, resp.Status, resp.Header.Get("traceresponse"))
				}
				mu.Lock()
				if k >= len(out) {
					out = append(out, make([]dispatched, k+1-len(out))...)
				}
				out[k] = dispatched{trace: parts[1], ok: resp.StatusCode == http.StatusOK}
				mu.Unlock()
			}
		})
	}
	require.NoError(t, g.Wait())
	return out
}

// checkHotROD checks the recorded spans: HotROD's six services, every
// dispatch's trace with its root, the fan-out of about ten route calls per
// dispatch, and failed redis GetDriver calls followed by repeats.
func checkHotROD(t *testing.T, out string, load []dispatched) {
	type spanRow struct {
		id, parent, service, op string
		kind                    cascade.SpanKind
		status                  cascade.Status
		start                   int64
		end                     int64
	}
	byTrace := map[string][]spanRow{}
	services := map[string]int{}
	require.NoError(t, dataset.ReadSpans(out, func(s *cascade.Span) error {
		tr := strings.Clone(s.TraceID)
		byTrace[tr] = append(byTrace[tr], spanRow{
			id: strings.Clone(s.SpanID), parent: strings.Clone(s.ParentSpanID), service: strings.Clone(s.Service),
			op: strings.Clone(s.Operation), kind: s.Kind, status: s.Status, start: s.Start, end: s.End(),
		})
		services[strings.Clone(s.Service)]++
		return nil
	}))
	t.Logf("spans by service: %v", services)
	for _, svc := range hotrodServices {
		require.Positive(t, services[svc], "service %s recorded", svc)
	}

	var routeCalls, succeeded, failed, retried, getDriver int
	for _, d := range load {
		tr := d.trace
		rows := byTrace[tr]
		require.NotEmpty(t, rows, "dispatch trace %s recorded", tr)
		byID := map[string]spanRow{}
		for _, r := range rows {
			byID[r.id] = r
		}
		root := 0
		for _, r := range rows {
			if r.parent == "" {
				root++
				require.Equal(t, "frontend", r.service, "trace %s root", tr)
				require.Equal(t, "/dispatch", r.op, "trace %s root", tr)
			}
			// frontend -> route: a frontend client span whose child is a
			// route server span.
			if d.ok && r.service == "route" && r.kind == cascade.KindServer {
				if p, ok := byID[r.parent]; ok && p.service == "frontend" {
					routeCalls++
				}
			}
		}
		require.Equal(t, 1, root, "trace %s has one root", tr)
		if d.ok {
			succeeded++
		}
		// Retries: redis GetDriver calls under one driver span, in start
		// order; a failed call followed by another is a retry.
		calls := map[string][]spanRow{}
		for _, r := range rows {
			if r.service == "redis-manual" && r.op == "GetDriver" {
				calls[r.parent] = append(calls[r.parent], r)
				getDriver++
			}
		}
		for _, cs := range calls {
			slices.SortFunc(cs, func(a, b spanRow) int { return int(a.start - b.start) })
			for i, c := range cs {
				if c.status == cascade.StatusError {
					failed++
					if i+1 < len(cs) && cs[i+1].start >= c.end {
						retried++
					}
				}
			}
		}
	}
	fanout := float64(routeCalls) / float64(succeeded)
	t.Logf("%d dispatch traces; frontend->route %.2f calls per successful dispatch; GetDriver %d calls, %d failed, %d of them followed by a repeat",
		len(load), fanout, getDriver, failed, retried)
	require.InDelta(t, 10, fanout, 1.5, "frontend->route fan-out per successful dispatch")
	require.Positive(t, failed, "some GetDriver calls fail")
	require.GreaterOrEqual(t, float64(retried), 0.8*float64(failed), "failed GetDriver calls are retried")
}

// checkHotRODMetrics checks the series read from Prometheus: HotROD's
// request counter for /dispatch reached the number of dispatches, and the
// rate expression was stored under its name.
func checkHotRODMetrics(t *testing.T, out string, load []dispatched, loadStart, loadEnd time.Time) {
	var ok2xx, failed5xx float64
	var rate, hotrod int
	metrics := map[string]bool{}
	require.NoError(t, dataset.ReadSamples(out, func(s *cascade.Sample) error {
		metrics[strings.Clone(s.Metric)] = true
		if strings.HasPrefix(s.Metric, "hotrod_") {
			hotrod++
			if s.Service != "hotrod" {
				return fmt.Errorf("sample of %s has service %q, want the job's name", s.Metric, s.Service)
			}
		}
		if s.Metric == "hotrod_http_requests_total" && strings.Contains(s.Labels, `endpoint="/dispatch"`) {
			switch {
			case strings.Contains(s.Labels, `status_code="2xx"`):
				ok2xx = max(ok2xx, s.Value)
			case strings.Contains(s.Labels, `status_code="5xx"`):
				failed5xx = max(failed5xx, s.Value)
			}
		}
		if s.Metric == "dispatch_rate" && s.Time >= loadStart.UnixNano() && s.Time <= loadEnd.UnixNano() {
			rate++
		}
		return nil
	}))
	var wantOK, wantFailed float64
	for _, d := range load {
		if d.ok {
			wantOK++
		} else {
			wantFailed++
		}
	}
	t.Logf("%d hotrod_* samples of %d metrics; /dispatch counters reached %g (2xx) and %g (5xx); %d dispatch_rate points during the load",
		hotrod, len(metrics), ok2xx, failed5xx, rate)
	require.Positive(t, hotrod)
	require.Equal(t, wantOK, ok2xx, `hotrod_http_requests_total{endpoint="/dispatch",status_code="2xx"} counts every dispatch answered 200`)
	require.Equal(t, wantFailed, failed5xx, `hotrod_http_requests_total{endpoint="/dispatch",status_code="5xx"} counts every dispatch answered 500`)
	require.Positive(t, rate, "the named rate expression was stored")
}

// child is a process the end-to-end test started.
type child struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// startChild starts a program with its output in logPath; it is stopped
// (SIGTERM, then SIGKILL) at the end of the test, by its PID.
func startChild(t *testing.T, name, logPath string, env []string, path string, args ...string) *child {
	t.Helper()
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	c := &child{name: name, cmd: exec.Command(path, args...), log: logPath, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.SysProcAttr = childAttr()
	require.NoError(t, c.cmd.Start(), "start %s", name)
	t.Logf("started %s (pid %d)", name, c.cmd.Process.Pid)
	go func() {
		c.err = c.cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	t.Cleanup(func() {
		stopChild(t, c)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	return c
}

// stopChild stops a child by its PID: SIGTERM, then SIGKILL after 10s.
func stopChild(t *testing.T, c *child) {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
	t.Logf("stopped %s (pid %d)", c.name, c.cmd.Process.Pid)
}

// waitHTTP waits until url answers 200, failing if the child exits first
// or 60s pass.
func waitHTTP(t *testing.T, url string, c *child) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-c.exited:
			b, _ := os.ReadFile(c.log)
			t.Fatalf("%s exited before %s answered: %v\n%s", c.name, url, c.err, b)
		case <-ctx.Done():
			t.Fatalf("%s did not answer within 60s: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []string {
	var ports []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		ports = append(ports, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}
