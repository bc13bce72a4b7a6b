package collect

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"cascade"
	"cascade/dataset"
)

// TestE2ENotify runs the notification chain of testdata/notify against a
// real RabbitMQ (Debian's rabbitmq-server, with rabbitmq_prometheus enabled
// offline), exporting OTLP/HTTP to cascade collect, with a real Prometheus
// scraping the broker, read back with cascade collect --from prometheus:
// once in the before mode (seed 002 §5.3's settings) and once in the after
// mode (the fix), CASCADE_E2E_NOTIFY_RUNS times each (default 1). Each run
// has a broker of its own, started from nothing, whose memory watermark is
// set to its idle memory plus CASCADE_E2E_NOTIFY_HEADROOM_MIB (default
// 65 MiB), so the memory alarm is reachable.
//
// It checks each run's recording (the chain's services and queues, every
// process span linked to a recorded publish span, the broker's series of
// every queue) and the contrast the fix is meant to make: before sees the
// memory alarm, after does not, and after's flows succeed more
// (CASCADE_E2E_NOTIFY_STRICT=0 leaves the contrast out). With
// CASCADE_E2E_NOTIFY_OUT set to a directory, it keeps there each mode's
// runs as testdata/notify-before and testdata/notify-after hold them
// (notify-MODE for the first, notify-MODE-seedN for the others: a sample
// of whole flows as OTLP JSON, every one with
// CASCADE_E2E_NOTIFY_KEEP_EVERY=1, the broker's series as query_range
// JSON, the app's measured.json), the table of every run's figures
// (measured.md) and each seed's prediction (prediction-seedN.md).
//
//	CASCADE_E2E_NOTIFY=1 CASCADE_E2E_NOTIFY_APP=/path/notify \
//	CASCADE_E2E_PROMETHEUS=/path/prometheus \
//	    go test ./collect -run TestE2ENotify -v -timeout 30m
//
// CASCADE_E2E_RABBITMQ names the directory of rabbitmq-server, rabbitmqctl
// and rabbitmq-plugins (default /usr/lib/rabbitmq/bin, Debian's: the
// scripts themselves, not the /usr/sbin wrappers, which switch to the
// rabbitmq user).
const (
	envE2ENotify  = "CASCADE_E2E_NOTIFY"
	envNotifyApp  = "CASCADE_E2E_NOTIFY_APP"
	envRabbitMQ   = "CASCADE_E2E_RABBITMQ"
	envNotifyRuns = "CASCADE_E2E_NOTIFY_RUNS"
	// envNotifySeed is the first run's seed (default notifySeed); run i
	// has seed first + i. A round held out from the choices made on
	// earlier seeds starts elsewhere.
	envNotifySeed  = "CASCADE_E2E_NOTIFY_SEED"
	envNotifyOut   = "CASCADE_E2E_NOTIFY_OUT"
	envNotifyEvery = "CASCADE_E2E_NOTIFY_KEEP_EVERY"
	// envNotifyStrict=0 stops asserting the contrast the fix is meant
	// to make (before reaches the memory alarm, after does not, after's
	// flows succeed more) and that rank calls nothing a win on the
	// healthy run, asserted by default: they held on every run measured
	// (docs/validation.md).
	envNotifyStrict = "CASCADE_E2E_NOTIFY_STRICT"
	// envNotifyVariants lists changes to before run live too, each a
	// what-if the before model predicts (notifyVariant): for example
	// "db-slots=8", rights' database with 8 slots, rank's "rights 4→8
	// slots". Comma-separated; none by default.
	envNotifyVariants = "CASCADE_E2E_NOTIFY_VARIANTS"
)

// envNotifyHeadroom is the broker's memory watermark above its idle
// memory, in MiB (default 65: with no watermark in the way, seed 1's
// before peaked 82 MiB above idle and after 49; the broker's memory
// follows the message rate as much as the messages held).
// notifySeed is the default first seed of the live runs. Seed 10's
// before stormed into the memory alarm on all three of its runs (42-54%
// of its flows succeeded, the alarm on for 11-18 s) and its after never
// came near it (peak 120-123 of 134 MiB). Seed 1's before, the default
// until then, sat at the edge: on one run in seven it did not storm at
// all (100% success, memory peak 133 of 134 MiB), and the contrast the
// test asserts is the testbed's, not cascade's.
const notifySeed = 10

// notifyHealthyRate is the healthy run's load, events/s: half the app's
// default 25, so rights (two queries an event, 100 queries/s) is 25%
// busy, 50% under rank's ×2 surge, and nothing fails for want of it.
const notifyHealthyRate = 12.5

const envNotifyHeadroom = "CASCADE_E2E_NOTIFY_HEADROOM_MIB"

func TestE2ENotify(t *testing.T) {
	if os.Getenv(envE2ENotify) != "1" {
		t.Skip("SKIPPED: the RabbitMQ notification chain's end-to-end test runs only with " + envE2ENotify +
			"=1 (.ci/e2e-notify.sh sets it, after building testdata/notify and installing rabbitmq-server)")
	}
	app, prometheus, rabbit := notifyBinaries(t)
	runs, every := envInt(t, envNotifyRuns, 1), envInt(t, envNotifyEvery, 10)
	seed0 := envInt(t, envNotifySeed, notifySeed)
	headroom := int64(envInt(t, envNotifyHeadroom, 65)) << 20
	keep := os.Getenv(envNotifyOut)
	cascadeBinary(t)

	var all []notifyRun
	for i := range runs {
		for _, mode := range []string{"before", "after"} {
			start := time.Now()
			r := runNotify(t, app, prometheus, rabbit, mode, uint64(seed0+i), headroom)
			m := r.measured
			t.Logf("%s run %d (seed %d): %d events, success %.2f%%, p50 %.0f ms, p99 %.0f ms, peak ready %v, alarm %v (%.0fs), memory peak %.0f MiB of %.0f; %d spans (%.0fs)",
				mode, i+1, m.Seed, m.Events, 100*m.FlowSuccessRate, m.FlowP50MS, m.FlowP99MS, peaks(m), m.MemoryAlarm, m.MemoryAlarmSeconds,
				float64(m.BrokerMemoryPeak)/(1<<20), float64(m.BrokerMemoryLimit)/(1<<20), r.traces.SpanCount(), time.Since(start).Seconds())
			checkNotifyRun(t, r)
			if keep != "" {
				name := "notify-" + mode
				if i > 0 || seed0 != notifySeed {
					name += fmt.Sprintf("-seed%d", seed0+i)
				}
				keepNotify(t, filepath.Join(keep, name), r, every)
			}
			all = append(all, r)
		}
	}
	var variants []notifyRun
	if v := os.Getenv(envNotifyVariants); v != "" {
		for i := range runs {
			for _, name := range strings.Split(v, ",") {
				if _, err := notifyVariant(nil, name); err != nil {
					t.Fatalf("%s: %v", envNotifyVariants, err)
				}
				r := runNotify(t, app, prometheus, rabbit, "before", uint64(seed0+i), headroom, "-"+name)
				r.variant = name
				m := r.measured
				t.Logf("before with %s, run %d (seed %d): success %.2f%%, p50 %.0f ms, alarm %v (%.0fs)", name, i+1, m.Seed, 100*m.FlowSuccessRate, m.FlowP50MS, m.MemoryAlarm, m.MemoryAlarmSeconds)
				if keep != "" {
					keepNotify(t, filepath.Join(keep, fmt.Sprintf("notify-before-%s-seed%d", strings.ReplaceAll(name, "=", "-"), m.Seed)), r, every)
				}
				variants = append(variants, r)
			}
		}
	}
	// A healthy run of the chain: the fixed chain at half the load, so
	// that rights stays below 50% busy even under rank's ×2 surge
	// (notifyHealthyRate). Rank on its model should call nothing a win.
	healthy := runNotify(t, app, prometheus, rabbit, "after", uint64(seed0), headroom, fmt.Sprintf("-rate=%g", notifyHealthyRate))
	checkNotifyRun(t, healthy)
	hm := healthy.measured
	t.Logf("healthy run (after at %g events/s, seed %d): %d events, success %.2f%%, p50 %.0f ms, alarm %v", notifyHealthyRate, hm.Seed, hm.Events, 100*hm.FlowSuccessRate, hm.FlowP50MS, hm.MemoryAlarm)
	if keep != "" {
		keepNotify(t, filepath.Join(keep, "notify-healthy"), healthy, every)
	}
	hmodel, err := notifyModel(t.Context(), "notify-healthy", healthy.capture(t))
	require.NoError(t, err)
	wins, rows, err := notifyWins(t.Context(), hmodel, hm.Rate)
	require.NoError(t, err)
	t.Logf("rank on the healthy run's model (its measured rate): %d wins of %d rows %v", len(wins), rows, wins)

	var b bytes.Buffer
	notifyTable(&b, all)
	t.Logf("the notification chain, measured:\n%s", b.String())
	if keep != "" {
		require.NoError(t, os.WriteFile(filepath.Join(keep, "measured.md"), b.Bytes(), 0o644))
	}
	// Issue 26's prediction, on the captures of every trace: the before
	// model alone, replayed with the fix, against after's measurement.
	// Logged (and kept), not asserted: docs/validation.md says where the
	// bounds stand.
	for i := 0; i+1 < len(all); i += 2 {
		before, after := all[i].capture(t), all[i+1].capture(t)
		p, err := predictNotify(t.Context(), before, after)
		require.NoError(t, err, "predict after from before (seed %d)", before.Measured.Seed)
		var pb bytes.Buffer
		p.markdown(&pb)
		t.Logf("after predicted from before (seed %d, every trace):\n%s", before.Measured.Seed, pb.String())
		if keep != "" {
			name := fmt.Sprintf("prediction-seed%d.md", before.Measured.Seed)
			require.NoError(t, os.WriteFile(filepath.Join(keep, name), pb.Bytes(), 0o644))
		}
		var vs []notifyRun
		for _, v := range variants {
			if v.measured.Seed == before.Measured.Seed {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			var vb bytes.Buffer
			if err := predictVariants(t.Context(), &vb, before, vs); err != nil {
				// A what-if the model cannot express is a finding, not
				// a broken run.
				fmt.Fprintf(&vb, "\nnot predicted: %v\n", err)
			}
			t.Logf("what-ifs on before predicted from before (seed %d, every trace):\n%s", before.Measured.Seed, vb.String())
			if keep != "" {
				name := fmt.Sprintf("variants-seed%d.md", before.Measured.Seed)
				require.NoError(t, os.WriteFile(filepath.Join(keep, name), vb.Bytes(), 0o644))
			}
		}
	}
	if os.Getenv(envNotifyStrict) == "0" {
		return
	}
	for i := 0; i+1 < len(all); i += 2 {
		before, after := all[i].measured, all[i+1].measured
		require.True(t, before.MemoryAlarm, "before (seed %d): the retry storm reaches the memory alarm", before.Seed)
		require.False(t, after.MemoryAlarm, "after (seed %d): no memory alarm", after.Seed)
		require.Greater(t, after.FlowSuccessRate, before.FlowSuccessRate, "seed %d: the fix raises the flows' success", before.Seed)
	}
	// Issue 26: on a healthy run of the chain rank calls nothing a win
	// (0 of 13–14 rows on every run so far: docs/validation.md).
	require.Empty(t, wins, "rank on the healthy run's model calls these wins")
}

// capture reads the run's dataset as a capture of every trace.
func (r notifyRun) capture(t *testing.T) notifyCapture {
	t.Helper()
	return notifyCapture{Measured: r.measured, Traces: r.traces, Spans: readDataset(t, r.dataset), Samples: readDatasetSamples(t, r.dataset)}
}

// notifyRun is one recorded run.
type notifyRun struct {
	mode     string
	variant  string // a change to the mode (notifyVariant), or ""
	measured notifyMeasured
	traces   ptrace.Traces // every span the app exported, as sent
	dataset  string        // cascade collect's dataset (spans and the broker's series)
	prom     []byte        // the broker's series, query_range JSON
}

// runNotify starts a broker, cascade collect (behind a proxy that keeps
// each OTLP request as sent) and Prometheus, runs the app in mode to the
// end, pulls the series and stops everything.
func runNotify(t *testing.T, app, prometheus, rabbit, mode string, seed uint64, headroom int64, extra ...string) notifyRun {
	t.Helper()
	dir := t.TempDir()
	r := notifyRun{mode: mode, dataset: filepath.Join(dir, "dataset")}
	mq := startRabbitMQ(t, rabbit, filepath.Join(dir, "rabbitmq"), headroom)

	col := startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", r.dataset, "-o", "json")
	rec := &otlpRecorder{target: col.addr + "/v1/traces"}
	proxy := httptest.NewServer(rec)
	defer proxy.Close()

	promPort := freePorts(t, 1)[0]
	promURL := "http://127.0.0.1:" + promPort
	promCfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(promCfg, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rabbitmq
    static_configs:
      - targets: ['127.0.0.1:%s']
`, mq.promPort), 0o644))
	prom := startChild(t, "prometheus", filepath.Join(dir, "prometheus.log"), nil, prometheus,
		"--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+promPort)
	waitHTTP(t, promURL+"/-/ready", prom)

	measured := filepath.Join(dir, "measured.json")
	began := time.Now()
	c := startChild(t, "notify "+mode, filepath.Join(dir, "notify.log"),
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + proxy.URL},
		app, append([]string{"-mode", mode, "-seed", strconv.FormatUint(seed, 10),
			"-amqp", mq.amqpURL, "-metrics-url", mq.metricsURL, "-out", measured}, extra...)...)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Minute):
		t.Fatalf("notify %s did not finish within 5 minutes", mode)
	}
	b, _ := os.ReadFile(c.log)
	require.NoError(t, c.err, "notify %s:\n%s", mode, b)
	b, err := os.ReadFile(measured)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &r.measured))
	time.Sleep(3 * time.Second) // Prometheus' last scrapes

	require.NoError(t, col.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, col.wait(t), col.stderrText())
	r.traces = rec.traces(t)

	start, end := began.Add(-5*time.Second).UTC().Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano)
	pull := startProc(t, false, "collect", "--out", r.dataset, "-o", "json",
		"--from", "prometheus="+promURL, "--query", notifyQuery,
		"--start", start, "--end", end, "--step", "1s")
	require.Equal(t, 0, pull.wait(t), pull.stderrText())
	r.prom = queryRange(t, promURL, notifyQuery, start, end)
	stopChild(t, prom)
	mq.stop(t)
	return r
}

// notifyQuery selects the broker's series a capture keeps: per queue
// (ready, unacked, consumers, published, redelivered, ...), each
// channel's prefetch, memory, the watermark and the alarms.
const notifyQuery = `{__name__=~"rabbitmq_(queue_.+|channel_prefetch|process_resident_memory_bytes|resident_memory_limit_bytes|alarms_.+|connections|channels|global_messages_.+)"}`

// queryRange fetches a query_range answer from Prometheus as it comes.
func queryRange(t *testing.T, base, query, start, end string) []byte {
	t.Helper()
	v := url.Values{"query": {query}, "start": {start}, "end": {end}, "step": {"1s"}}
	resp, err := http.Get(base + "/api/v1/query_range?" + v.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return b
}

// otlpRecorder forwards OTLP/HTTP trace requests to cascade collect and
// keeps each body it acknowledged.
type otlpRecorder struct {
	target string
	mu     sync.Mutex
	bodies [][]byte
}

func (o *otlpRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, o.target, bytes.NewReader(b))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err == nil {
				b, err = io.ReadAll(zr)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		o.mu.Lock()
		o.bodies = append(o.bodies, b)
		o.mu.Unlock()
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(rb)
}

// traces merges every kept request into one Traces.
func (o *otlpRecorder) traces(t *testing.T) ptrace.Traces {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := ptrace.NewTraces()
	for i, b := range o.bodies {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
		require.NoError(t, err, "OTLP request %d", i)
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	return all
}

// rabbitMQ is a broker the test started, in a directory of its own.
type rabbitMQ struct {
	bin, dir   string
	env        []string
	amqpURL    string
	metricsURL string
	promPort   string
	server     *child
}

// startRabbitMQ starts a RabbitMQ node with its files under dir and
// rabbitmq_prometheus enabled (offline), waits for it, then sets its
// memory watermark to its idle memory plus headroom bytes.
func startRabbitMQ(t *testing.T, bin, dir string, headroom int64) *rabbitMQ {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ports := freePorts(t, 4)
	mq := &rabbitMQ{bin: bin, dir: dir, promPort: ports[1],
		amqpURL:    "amqp://guest:guest@127.0.0.1:" + ports[0] + "/",
		metricsURL: "http://127.0.0.1:" + ports[1] + "/metrics"}
	// The node's memory is Erlang's own count (not the RSS, which the
	// allocators keep high after a burst), so the alarm clears when the
	// queues drain. Queue series are per queue and refreshed every second.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), fmt.Appendf(nil, `listeners.tcp.default = 127.0.0.1:%s
prometheus.tcp.port = %s
prometheus.return_per_object_metrics = true
collect_statistics_interval = 1000
vm_memory_calculation_strategy = erlang
vm_memory_high_watermark.absolute = 4GB
`, ports[0], ports[1]), 0o644))
	mq.env = []string{
		"HOME=" + dir, // the Erlang cookie
		"RABBITMQ_NODENAME=cascade" + ports[0] + "@localhost",
		"RABBITMQ_NODE_PORT=" + ports[0],
		"RABBITMQ_DIST_PORT=" + ports[2],
		"ERL_EPMD_PORT=" + ports[3],
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(dir, "log"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(dir, "rabbitmq"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_PID_FILE=" + filepath.Join(dir, "pid"),
	}
	mq.ctl(t, "rabbitmq-plugins", "enable", "--offline", "rabbitmq_prometheus")
	mq.server = startChild(t, "rabbitmq-server", filepath.Join(dir, "server.log"), mq.env,
		filepath.Join(bin, "rabbitmq-server"))
	t.Cleanup(func() { mq.stop(t) })
	// await_startup fails at once while the node is up but rabbit is
	// not yet booting: ask again until it answers, or two minutes pass.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := mq.run("rabbitmqctl", "await_startup", "--timeout", "120")
		if err == nil {
			break
		}
		select {
		case <-mq.server.exited:
			t.Fatalf("rabbitmq-server exited while starting: %v\n%s", mq.server.err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("rabbitmqctl await_startup: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
	waitHTTP(t, mq.metricsURL, mq.server)
	time.Sleep(2 * time.Second)
	idle := mq.metric(t, "rabbitmq_process_resident_memory_bytes")
	limit := int64(idle) + headroom
	mq.ctl(t, "rabbitmqctl", "set_vm_memory_high_watermark", "absolute", strconv.FormatInt(limit, 10))
	t.Logf("rabbitmq: idle memory %.0f MiB, watermark %.0f MiB", idle/(1<<20), float64(limit)/(1<<20))
	return mq
}

// ctl runs one of the broker's command-line tools against the node.
func (mq *rabbitMQ) ctl(t *testing.T, tool string, args ...string) {
	t.Helper()
	out, err := mq.run(tool, args...)
	require.NoError(t, err, "%s %s:\n%s", tool, strings.Join(args, " "), out)
}

func (mq *rabbitMQ) run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(mq.bin, tool), args...)
	cmd.Env = append(os.Environ(), mq.env...)
	cmd.Dir = mq.dir
	return cmd.CombinedOutput()
}

// metric reads one unlabelled sample of the broker's /metrics.
func (mq *rabbitMQ) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(mq.metricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err, line)
			return f
		}
	}
	t.Fatalf("%s: no %s", mq.metricsURL, name)
	return 0
}

// stop stops the node (rabbitmqctl stop, which waits for it), then its
// process by PID should it linger.
func (mq *rabbitMQ) stop(t *testing.T) {
	select {
	case <-mq.server.exited:
		return
	default:
	}
	if out, err := mq.run("rabbitmqctl", "stop"); err != nil {
		t.Logf("rabbitmqctl stop: %v\n%s", err, out)
	}
	stopChild(t, mq.server)
	// The node and the tools started an epmd daemon on the node's own
	// ERL_EPMD_PORT, detached from the test; with no node left it stops
	// when asked.
	cmd := exec.Command("epmd", "-kill")
	cmd.Env = append(os.Environ(), mq.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("epmd -kill: %v\n%s", err, out)
	}
}

// checkNotifyRun checks a run's recording: its services and queues, the
// links from process to publish spans, and the broker's series in the
// dataset.
func checkNotifyRun(t *testing.T, r notifyRun) {
	t.Helper()
	m := r.measured
	require.Equal(t, r.mode, m.Mode)
	require.Positive(t, m.Events)
	require.Equal(t, m.Events, m.Succeeded+m.Rejected+m.TaskFailed+m.Unfinished)
	s := summariseNotify(r.traces)
	t.Logf("%s: services %v, publish %v, process %v, %d linked, %d unlinked, %d retries, %d via x-death, %d failed",
		r.mode, s.services, s.publish, s.process, s.linked, s.unlinked, s.retries, s.deaths, s.errors)
	for _, q := range m.Tasks {
		require.Positive(t, s.publish[q], "%s: publish spans to %s", r.mode, q)
		require.Positive(t, s.process[q], "%s: process spans of %s", r.mode, q)
	}
	// The exporter drops nothing at this rate: every process span's link
	// names a publish span that was recorded.
	require.Positive(t, s.linked)
	require.LessOrEqual(t, s.unlinked, s.linked/100, "%s: process spans linked to no recorded publish span", r.mode)
	spans := readDataset(t, r.dataset)
	require.Equal(t, r.traces.SpanCount(), len(spans), "%s: cascade collect stored every span sent", r.mode)
	var ready int
	samples := map[string]bool{}
	require.NoError(t, readSamplesFn(r.dataset, func(metric, labels string) {
		if metric == "rabbitmq_queue_messages_ready" {
			ready++
			for _, q := range m.Tasks {
				if containsLabel(labels, "queue", q) {
					samples[q] = true
				}
			}
		}
	}))
	require.Len(t, samples, len(m.Tasks), "%s: rabbitmq_queue_messages_ready of each queue in the dataset", r.mode)
}

// peaks is a run's peak ready messages by queue, for the log.
func peaks(m notifyMeasured) string {
	var parts []string
	for _, q := range sortedKeys(m.Queues) {
		parts = append(parts, fmt.Sprintf("%s=%d", q, m.Queues[q].PeakReady))
	}
	return strings.Join(parts, " ")
}

// notifyTable writes every run's measured figures as a Markdown table.
func notifyTable(w io.Writer, runs []notifyRun) {
	fmt.Fprintln(w, "| mode | seed | events | flow success | p50 completion | p99 completion | peak ready (rights / points) | retries (rights / points) | memory alarm | broker memory peak / watermark |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		m := r.measured
		alarm := "no"
		if m.MemoryAlarm {
			alarm = fmt.Sprintf("yes (%.0f s)", m.MemoryAlarmSeconds)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.2f%% | %.0f ms | %.0f ms | %d / %d | %d / %d | %s | %.0f / %.0f MiB |\n",
			m.Mode, m.Seed, m.Events, 100*m.FlowSuccessRate, m.FlowP50MS, m.FlowP99MS,
			m.Queues["rights"].PeakReady, m.Queues["points"].PeakReady,
			m.Queues["rights"].Retried, m.Queues["points"].Retried, alarm,
			float64(m.BrokerMemoryPeak)/(1<<20), float64(m.BrokerMemoryLimit)/(1<<20))
	}
}

// keepNotify writes a run as a kept capture: the whole flows of every
// every-th event (the gateway's trace and every consumer trace linked to
// it, through the retries) as OTLP JSON, the broker's series and the
// measured figures; then reads it back.
func keepNotify(t *testing.T, dir string, r notifyRun, every int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, notifyPromDir), 0o755))
	kept := sampleFlows(r.traces, every)
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(kept)
	require.NoError(t, err)
	writeGz(t, filepath.Join(dir, notifyTracesFile), b)
	writeGz(t, filepath.Join(dir, notifyPromDir, "rabbitmq.json.gz"), r.prom)
	m := r.measured
	roots := 0
	eachSpan(kept, func(sp ptrace.Span) {
		if _, ok := sp.Attributes().Get("app.event.id"); ok && sp.ParentSpanID().IsEmpty() {
			roots++
		}
	})
	m.Capture = &notifyCaptureInfo{
		SampleEvery: every, SampleRatio: 1 / float64(every), EventsKept: roots,
		SpansKept: kept.SpanCount(), SpansTotal: r.traces.SpanCount(),
		EventRatePerS: float64(m.Events) / m.Duration, SpanRatePerS: float64(r.traces.SpanCount()) / m.Duration,
		LoadDurationS: m.Duration,
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, notifyMeasuredFile), append(mb, '\n'), 0o644))
	c := loadNotifyCapture(t, dir)
	s := summariseNotify(c.Traces)
	require.Zero(t, s.unlinked, "%s: the kept flows are whole", dir)
	t.Logf("kept %s: every %dth event's flow, %d spans", dir, every, kept.SpanCount())
}

func writeGz(t *testing.T, path string, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// sampleFlows keeps the traces of the flows of every every-th event: the
// gateway's trace of an event whose app.event.id is a multiple of every,
// and, transitively, every trace with a span linked to a kept trace.
func sampleFlows(td ptrace.Traces, every int) ptrace.Traces {
	keep := map[pcommon.TraceID]bool{}
	linksTo := map[pcommon.TraceID][]pcommon.TraceID{} // linked trace -> traces linking to it
	eachSpan(td, func(sp ptrace.Span) {
		if id, ok := sp.Attributes().Get("app.event.id"); ok && sp.ParentSpanID().IsEmpty() && id.Int()%int64(every) == 0 {
			keep[sp.TraceID()] = true
		}
		for i := range sp.Links().Len() {
			l := sp.Links().At(i).TraceID()
			linksTo[l] = append(linksTo[l], sp.TraceID())
		}
	})
	var queue []pcommon.TraceID
	for id := range keep {
		queue = append(queue, id)
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, next := range linksTo[id] {
			if !keep[next] {
				keep[next] = true
				queue = append(queue, next)
			}
		}
	}
	out := ptrace.NewTraces()
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		ors := out.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(ors.Resource())
		ors.SetSchemaUrl(rs.SchemaUrl())
		for j := range rs.ScopeSpans().Len() {
			ss := rs.ScopeSpans().At(j)
			oss := ors.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(oss.Scope())
			for k := range ss.Spans().Len() {
				if sp := ss.Spans().At(k); keep[sp.TraceID()] {
					sp.CopyTo(oss.Spans().AppendEmpty())
				}
			}
		}
	}
	// Drop the resources and scopes left empty.
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	return out
}

func eachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				fn(spans.At(k))
			}
		}
	}
}

// readSamplesFn calls fn with each stored sample's metric and labels.
func readSamplesFn(dir string, fn func(metric, labels string)) error {
	return dataset.ReadSamples(dir, func(s *cascade.Sample) error {
		fn(s.Metric, s.Labels)
		return nil
	})
}

// notifyBinaries returns the notify app, Prometheus and RabbitMQ's bin
// directory the live notify tests run (their environment variables).
func notifyBinaries(t *testing.T) (app, prometheus, rabbit string) {
	t.Helper()
	app, prometheus = os.Getenv(envNotifyApp), os.Getenv(envPrometheus)
	require.NotEmpty(t, app, envNotifyApp+" must name the notify binary (go build in testdata/notify)")
	require.NotEmpty(t, prometheus, envPrometheus+" must name the Prometheus binary")
	rabbit = os.Getenv(envRabbitMQ)
	if rabbit == "" {
		rabbit = "/usr/lib/rabbitmq/bin"
	}
	return app, prometheus, rabbit
}
