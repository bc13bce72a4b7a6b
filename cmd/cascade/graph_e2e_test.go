package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/internal/testutil"
)

// The service-graph end-to-end test: the series the servicegraph and
// spanmetrics connectors would have exported for the bundled HotROD
// capture (testutil.ConnectorSeries, OpenMetrics) are loaded into a real
// Prometheus with promtool's backfill, and cascade graph --from
// prometheus=URL must build the same edges, call rates and failure rates
// (within 5%) as cascade graph of the capture's traces. It needs the
// Prometheus and promtool binaries, which .ci/e2e.sh fetches (the Debian
// package), so it runs only when CASCADE_E2E=1:
//
//	CASCADE_E2E=1 CASCADE_E2E_PROMETHEUS=/path/prometheus CASCADE_E2E_PROMTOOL=/path/promtool \
//	    go test ./cmd/cascade -run TestE2EServiceGraph -v
const (
	envE2E        = "CASCADE_E2E"
	envPrometheus = "CASCADE_E2E_PROMETHEUS"
	envPromtool   = "CASCADE_E2E_PROMTOOL"
)

// connectorTTL is the servicegraph store TTL the series are made with (the
// connector's default): the last edges are recorded that long after the
// last span ends.
const connectorTTL = 2 * time.Second

func TestE2EServiceGraph(t *testing.T) {
	if os.Getenv(envE2E) != "1" {
		t.Skip("SKIPPED: the live-Prometheus service-graph test runs only with " + envE2E +
			"=1 (.ci/e2e.sh sets it, after fetching Prometheus)")
	}
	prometheus := os.Getenv(envPrometheus)
	require.NotEmpty(t, prometheus, envPrometheus+" must name the Prometheus binary")
	promtool := os.Getenv(envPromtool)
	if promtool == "" {
		promtool = filepath.Join(filepath.Dir(prometheus), "promtool")
	}
	dir := t.TempDir()

	// 1. The trace-built model of the capture.
	traceModel := filepath.Join(dir, "traces.json")
	code, _, stderr := runCLI(t, "graph", hotrodOTLP, "--out", traceModel, "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	traces := readModelT(t, traceModel)

	// 2. The connectors' series for the same spans, backfilled into a
	// Prometheus TSDB.
	f, err := os.Open(hotrodOTLP)
	require.NoError(t, err)
	var om bytes.Buffer
	require.NoError(t, testutil.ConnectorSeries(&om, f, testutil.ConnectorConfig{OpenMetrics: true, StoreTTL: connectorTTL}))
	f.Close()
	omFile := filepath.Join(dir, "connectors.om")
	require.NoError(t, os.WriteFile(omFile, om.Bytes(), 0o644))
	tsdb := filepath.Join(dir, "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", omFile, tsdb).CombinedOutput()
	require.NoError(t, err, "promtool: %s", out)
	t.Logf("promtool: %s", lastLines(string(out), 3))

	// 3. Prometheus on the backfilled TSDB, on a free loopback port.
	port := freePort(t)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("global:\n  scrape_interval: 15s\n"), 0o644))
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	defer logFile.Close()
	prom := exec.Command(prometheus, "--config.file="+cfgFile, "--storage.tsdb.path="+tsdb,
		"--storage.tsdb.retention.time=100y", "--web.listen-address=127.0.0.1:"+port)
	prom.Stdout, prom.Stderr = logFile, logFile
	require.NoError(t, prom.Start())
	exited := make(chan struct{})
	go func() { prom.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Stop the Prometheus this test started, by its PID.
		_ = prom.Process.Kill()
		<-exited
	})
	url := "http://127.0.0.1:" + port
	waitReady(t, url+"/-/ready", exited, logFile.Name())

	// 4. cascade graph --from prometheus=URL over the capture's range, at
	// the connectors' 1 s flush, and with the traces too.
	start := time.Unix(0, traces.Source.StartNS).Truncate(time.Second).Add(-time.Second)
	end := time.Unix(0, traces.Source.EndNS).Add(connectorTTL + 5*time.Second)
	pull := []string{"--from", "prometheus=" + url,
		"--start", start.UTC().Format(time.RFC3339Nano), "--end", end.UTC().Format(time.RFC3339Nano), "--step", "1s"}
	aggModel := filepath.Join(dir, "aggregates.json")
	code, _, stderr = runCLI(t, append([]string{"graph", "--out", aggModel}, pull...)...)
	require.Equal(t, exitOK, code, stderr)
	agg := readModelT(t, aggModel)
	require.Equal(t, cascade.FromAggregates, agg.Source.From)

	// 5. The comparison. servicegraph pairs a client span with its
	// server span; HotROD's mysql and redis-manual report their work as
	// client spans of their own, which no server span answers, so the
	// connector cannot name their callers: those two edges are the only
	// ones the traces have and the series cannot.
	lines, worst, missing, extra := compareModels(traces, agg)
	t.Logf("trace-built / aggregate-built model (from Prometheus):\n%s", strings.Join(lines, "\n"))
	require.Equal(t, []string{"customer → mysql", "driver → redis-manual"}, missing, "edges only the traces hold")
	require.Empty(t, extra, "edges only the series hold")
	require.Less(t, worst, 0.05, "call and failure rates within 5%%")
	for _, n := range traces.Nodes {
		require.NotNil(t, agg.Node(n.Name), "node %s", n.Name)
	}

	// 6. Traces and series together: the traces win, so the model has
	// the trace-built edges.
	both := filepath.Join(dir, "both.json")
	code, _, stderr = runCLI(t, append([]string{"graph", hotrodOTLP, "--out", both}, pull...)...)
	require.Equal(t, exitOK, code, stderr)
	refined := readModelT(t, both)
	require.Equal(t, cascade.FromBoth, refined.Source.From)
	require.Equal(t, len(traces.Edges), len(refined.Edges))
	for i := range traces.Edges {
		require.Equal(t, traces.Edges[i].From+" → "+traces.Edges[i].To, refined.Edges[i].From+" → "+refined.Edges[i].To)
		require.Equal(t, traces.Edges[i].Observed.Calls, refined.Edges[i].Observed.Calls)
	}
}

func readModelT(t *testing.T, path string) *cascade.Model {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m, err := cascade.DecodeModel(data)
	require.NoError(t, err)
	return m
}

// compareModels lines up a trace-built and an aggregate-built model: a
// line per edge and node with both figures, the largest relative
// difference of the call rates, request rates and failure rates both
// hold, and the edges only one of them has.
func compareModels(traces, agg *cascade.Model) (lines []string, worst float64, missing, extra []string) {
	rel := func(a, b float64) float64 {
		if a == b {
			return 0
		}
		return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
	}
	secs := func(m *cascade.Model) float64 { return float64(m.Source.EndNS-m.Source.StartNS) / 1e9 }
	find := func(m *cascade.Model, from, to string) *cascade.Edge {
		for i := range m.Edges {
			if m.Edges[i].From == from && m.Edges[i].To == to {
				return &m.Edges[i]
			}
		}
		return nil
	}
	for _, te := range traces.Edges {
		ae := find(agg, te.From, te.To)
		if ae == nil {
			missing = append(missing, te.From+" → "+te.To)
			lines = append(lines, fmt.Sprintf("edge %s → %s: %d calls / not in the series", te.From, te.To, te.Observed.Calls))
			continue
		}
		tr, ar := float64(te.Observed.Calls)/secs(traces), float64(ae.Observed.Calls)/secs(agg)
		worst = max(worst, rel(tr, ar), rel(te.Observed.ErrorRate, ae.Observed.ErrorRate))
		lines = append(lines, fmt.Sprintf("edge %s → %s: calls %d / %d, rate %.3f / %.3f per s (%.2f%%), failed %.4f / %.4f, fan-out %.3f / %.3f, p50 %.1f / %.1f ms, p99 %.1f / %.1f ms",
			te.From, te.To, te.Observed.Calls, ae.Observed.Calls, tr, ar, 100*rel(tr, ar), te.Observed.ErrorRate, ae.Observed.ErrorRate,
			te.FanOut.MeanValue(), ae.FanOut.MeanValue(), te.Observed.LatencyP50MS, ae.Observed.LatencyP50MS, te.Observed.LatencyP99MS, ae.Observed.LatencyP99MS))
	}
	for _, ae := range agg.Edges {
		if find(traces, ae.From, ae.To) == nil {
			extra = append(extra, ae.From+" → "+ae.To)
			lines = append(lines, fmt.Sprintf("edge %s → %s: not in the traces / %d calls", ae.From, ae.To, ae.Observed.Calls))
		}
	}
	for _, tn := range traces.Nodes {
		an := agg.Node(tn.Name)
		if an == nil {
			lines = append(lines, fmt.Sprintf("node %s: not in the series", tn.Name))
			continue
		}
		worst = max(worst, rel(tn.Observed.RatePerSec, an.Observed.RatePerSec), rel(tn.Observed.ErrorRate, an.Observed.ErrorRate))
		lines = append(lines, fmt.Sprintf("node %s: requests %d / %d, rate %.3f / %.3f per s (%.2f%%), failed %.4f / %.4f, p50 %.1f / %.1f ms",
			tn.Name, tn.Observed.Requests, an.Observed.Requests, tn.Observed.RatePerSec, an.Observed.RatePerSec,
			100*rel(tn.Observed.RatePerSec, an.Observed.RatePerSec), tn.Observed.ErrorRate, an.Observed.ErrorRate,
			tn.Observed.LatencyP50MS, an.Observed.LatencyP50MS))
	}
	return lines, worst, missing, extra
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// waitReady polls url until it answers 200, the process exits, or a
// minute passes.
func waitReady(t *testing.T, url string, exited <-chan struct{}, log string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
		case <-exited:
			b, _ := os.ReadFile(log)
			t.Fatalf("prometheus exited before %s answered:\n%s", url, b)
		case <-ctx.Done():
			t.Fatalf("%s did not answer within a minute: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
