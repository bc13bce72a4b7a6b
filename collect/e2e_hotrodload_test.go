package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// TestE2EHotRODLoad holds the replay's overload figures to HotROD itself
// (issue 37). It captures HotROD live, through cascade collect, under the
// closed-loop load of the bundled capture (CASCADE_E2E_CONCURRENCY
// clients, default 5, for CASCADE_E2E_LOAD_SECONDS, default 60), builds
// that capture's model as cascade analyze does (graph and fit), and then,
// for each factor of CASCADE_E2E_LOAD_FACTORS (default "2,3"), drives a
// fresh HotROD open-loop at that multiple of the baseline's measured rate
// (Poisson arrivals for the same seconds, the n-th run's drawn from seed
// n, then the model's default drain, replay.DrainFor) and replays the
// baseline's model at the same rate (Poisson, the same seconds, default
// drain, CASCADE_E2E_LOAD_SEEDS seeds, default 8). Both are counted
// alike: success is succeeded ÷ offered, a request not answered by the
// end of the drain is unfinished, latencies are of the succeeded
// requests, and a run is overloaded when its backlog (offered minus ended
// per second over the second half of the arrivals) grew beyond
// 3·sqrt(offered + ended) and requests were still out at the end.
//
// The baseline is captured live, not read from testdata/hotrod-baseline:
// the drain's factor and the overload test were chosen on the bundled
// capture, and issue 37's targets are for captures no constant was
// chosen on; a live baseline is also the same binary, machine, collector
// and moment as the loaded runs it predicts.
//
// Each run is also replayed at its own arrival times (the live run's
// send times as a scenario's observed traffic): the same requests
// offered, so what differs is the model's error, not the arrivals' draw.
//
// It prints the table and asserts that the live and the replayed
// overload verdicts agree (the replay's: a majority of its seeds), at
// the rate and at the run's own arrivals. Issue 37's targets (success
// within 5 pp, p50 within 25%, p99 within 50%) are reported, not
// asserted: the live machine's load moves them. With CASCADE_E2E_LOAD_OUT
// set to a directory, it writes there the baseline capture (OTLP JSON),
// its model (model.json, as the replays read it), each live run's
// requests (load-Nx.tsv) and arrival times as a scenario
// (load-Nx.arrivals.json), and the table (table.md).
//
//	CASCADE_E2E_HOTROD_LOAD=1 CASCADE_E2E_HOTROD=/path/hotrod \
//	    go test ./collect -run TestE2EHotRODLoad -v -timeout 20m
const (
	envE2ELoad     = "CASCADE_E2E_HOTROD_LOAD"
	envLoadSeconds = "CASCADE_E2E_LOAD_SECONDS"
	envLoadFactors = "CASCADE_E2E_LOAD_FACTORS"
	envLoadSeeds   = "CASCADE_E2E_LOAD_SEEDS"
	envLoadOut     = "CASCADE_E2E_LOAD_OUT"
)

// Issue 37's targets for a loaded run predicted from the baseline.
const (
	targetSuccess = 0.05 // absolute (5 pp)
	targetP50     = 0.25 // relative
	targetP99     = 0.50 // relative
)

func TestE2EHotRODLoad(t *testing.T) {
	if os.Getenv(envE2ELoad) != "1" {
		t.Skip("SKIPPED: HotROD under open-loop load runs only with " + envE2ELoad +
			"=1 (.ci/e2e.sh sets it, after building HotROD)")
	}
	hotrod := os.Getenv(envHotROD)
	require.NotEmpty(t, hotrod, envHotROD+" must name the HotROD binary")
	seconds, clients := envInt(t, envLoadSeconds, 60), envInt(t, envConcurrency, 5)
	seeds := envInt(t, envLoadSeeds, 8)
	factors := loadFactors(t)
	d := time.Duration(seconds) * time.Second
	keep := os.Getenv(envLoadOut)
	if keep != "" {
		require.NoError(t, os.MkdirAll(keep, 0o755))
	}
	ctx := context.Background()
	began := time.Now()
	cascadeBinary(t)

	// The baseline: the bundled capture's closed loop, live.
	spans := captureHotROD(t, hotrod, fixChange{name: "baseline"}, clients, d)
	base := measureRoots(spans)
	baseRate := float64(base.Roots) / d.Seconds()
	t.Logf("baseline: %d spans, %d /dispatch roots in %s: %.2f/s, p50 %.1f ms, p99 %.1f ms, success %.1f%% (total %.0fs)",
		len(spans), base.Roots, d, baseRate, base.P50, base.P99, 100*base.Success, time.Since(began).Seconds())
	bm := loadModel(ctx, t, spans, keep)
	drain := replay.DrainFor(bm)
	entryRate := 0.0
	for _, e := range bm.Entries {
		entryRate += e.RatePerSec
	}
	t.Logf("baseline model: entry rate %.2f/s, default drain %s (total %.0fs)", entryRate, drain, time.Since(began).Seconds())

	// The loaded runs, live, one after the other.
	var runs []*openLoad
	for i, f := range factors {
		rate := math.Round(f*baseRate*100) / 100
		start := time.Now()
		// Each run draws its own arrival times (seeds 1, 2, …): one
		// schedule for all would make the runs' draws one draw.
		l, rootSpans := loadHotROD(t, hotrod, rate, d, drain, uint64(i+1))
		runs = append(runs, l)
		m := l.figures(time.Second)
		t.Logf("%g× (%.2f/s): %s; lag at most %s; %+v; root spans of the succeeded: %s (%.0fs; total %.0fs)",
			f, rate, l.statuses(), l.lag.Round(time.Millisecond), m, rootSpans,
			time.Since(start).Seconds(), time.Since(began).Seconds())
		if keep != "" {
			require.NoError(t, os.WriteFile(filepath.Join(keep, loadName(f)+".tsv"), l.tsv(), 0o644))
		}
	}

	// The predictions, from the baseline's model alone.
	res := &loadResult{base: base, baseRate: baseRate, drain: drain, seeds: seeds}
	var err error
	start := time.Now()
	res.baseIn, err = fixReplay(ctx, bm, nil)
	require.NoError(t, err)
	for i, f := range factors {
		l := runs[i]
		row := loadRow{factor: f, load: l, measured: l.figures(time.Second)}
		if row.predicted, err = loadReplay(ctx, bm, poissonTraffic(bm, l.rate), d, seeds); err != nil {
			t.Fatal(err)
		}
		if row.same, err = loadReplay(ctx, bm, l.traffic(), d, seeds); err != nil {
			t.Fatal(err)
		}
		res.rows = append(res.rows, row)
		if keep != "" {
			scen, err := json.MarshalIndent(cascade.Scenario{Name: loadName(f) + " live arrivals", Traffic: l.traffic()}, "", " ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(keep, loadName(f)+".arrivals.json"), scen, 0o644))
		}
	}
	var b bytes.Buffer
	res.markdown(&b)
	t.Logf("HotROD under open-loop load, live against the replay of the baseline's model (%d seeds; %.0fs; total %.0fs):\n%s",
		seeds, time.Since(start).Seconds(), time.Since(began).Seconds(), b.String())
	if keep != "" {
		require.NoError(t, os.WriteFile(filepath.Join(keep, "table.md"), b.Bytes(), 0o644))
	}
	for _, r := range res.rows {
		for _, p := range []loadPrediction{r.predicted, r.same} {
			require.Equal(t, r.measured.Overloaded, p.overloaded(),
				"%g× (%s): live overloaded %v (backlog %+.2f/s, %d unfinished), replay overloaded in %d of %d seeds",
				r.factor, p.arrivals, r.measured.Overloaded, r.measured.BacklogPerSec, r.measured.Unfinished, p.Overloaded, p.Seeds)
		}
	}
}

// loadFactors reads CASCADE_E2E_LOAD_FACTORS: multiples of the baseline's
// rate, comma-separated.
func loadFactors(t *testing.T) []float64 {
	s := os.Getenv(envLoadFactors)
	if s == "" {
		s = "2,3"
	}
	var fs []float64
	for _, p := range strings.Split(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		require.NoError(t, err, envLoadFactors)
		require.Positive(t, f, envLoadFactors)
		fs = append(fs, f)
	}
	return fs
}

func loadName(f float64) string { return "load-" + strconv.FormatFloat(f, 'g', -1, 64) + "x" }

// loadModel builds the baseline's model as cascade analyze does and
// returns it as model.json holds it (encoded and read back, so that
// `cascade replay model.json` replays the very same model); with keep,
// it writes the capture and model.json there.
func loadModel(ctx context.Context, t *testing.T, spans []cascade.Span, keep string) *cascade.Model {
	t.Helper()
	m, err := fixModel(ctx, "baseline", spans, nil)
	require.NoError(t, err)
	b, err := cascade.EncodeModel(m)
	require.NoError(t, err)
	m, err = cascade.DecodeModel(b)
	require.NoError(t, err)
	if keep != "" {
		require.NoError(t, os.WriteFile(filepath.Join(keep, "model.json"), b, 0o644))
		require.NoError(t, writeOTLPJSON(filepath.Join(keep, "baseline.otlp.json.gz"), spans))
	}
	return m
}

// loadHotROD runs cascade collect and HotROD in its default
// configuration, drives it open-loop at rate for d (then the drain), and
// returns the load and a line on the root spans of the succeeded
// requests, read back from the capture (a check on the client's clock).
func loadHotROD(t *testing.T, hotrod string, rate float64, d, drain time.Duration, seed uint64) (*openLoad, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "dataset")
	col := startProc(t, true, "collect", "--listen", "127.0.0.1:0", "--out", out, "-o", "json")
	ports := freePorts(t, 4)
	hot := startChild(t, "hotrod", filepath.Join(dir, "hotrod.log"),
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.addr}, hotrod, "all",
		"--frontend-service-hostname", "127.0.0.1", "--frontend-service-port", ports[0],
		"--customer-service-hostname", "127.0.0.1", "--customer-service-port", ports[1],
		"--driver-service-hostname", "127.0.0.1", "--driver-service-port", ports[2],
		"--route-service-hostname", "127.0.0.1", "--route-service-port", ports[3])
	feURL := "http://127.0.0.1:" + ports[0]
	waitHTTP(t, feURL+"/", hot)

	l := openLoop(t, feURL, rate, d, drain, seed)
	// HotROD is stopped with its backlog: the requests still out were
	// cancelled at the cutoff, and what it still works on is not counted.
	time.Sleep(4 * time.Second)
	require.NoError(t, col.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, col.wait(t), col.stderrText())
	stopChild(t, hot)

	roots := map[string]cascade.Span{}
	for _, s := range readDataset(t, out) {
		if s.IsRoot() && s.Operation == "/dispatch" {
			roots[s.TraceID] = s
		}
	}
	var lat []float64
	missing := 0
	for i := range l.reqs {
		r := &l.reqs[i]
		if !r.ok() {
			continue
		}
		s, ok := roots[r.trace]
		if !ok {
			missing++
			continue
		}
		lat = append(lat, float64(s.Duration)/1e6)
	}
	slices.Sort(lat)
	return l, fmt.Sprintf("%d recorded (%d not), p50 %.1f ms, p99 %.1f ms", len(lat), missing, quantile(lat, 0.5), quantile(lat, 0.99))
}

// tsv writes the load's requests: index, customer, sent (s from the
// load's start), ended (1 or 0), HTTP status, latency (s), trace id,
// transport error.
func (l *openLoad) tsv() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# open loop: %.2f/s Poisson (seed %d) for %s, drain %s\n", l.rate, l.seed, l.d, l.drain)
	fmt.Fprintln(&b, "index\tcustomer\tsent_s\tended\tstatus\tlatency_s\ttrace\terror")
	for i := range l.reqs {
		r := &l.reqs[i]
		ended := 0
		if r.ended {
			ended = 1
		}
		fmt.Fprintf(&b, "%d\t%s\t%.6f\t%d\t%d\t%.6f\t%s\t%s\n", i, r.customer, r.at.Seconds(), ended, r.status,
			r.took.Seconds(), r.trace, r.err)
	}
	return b.Bytes()
}

// loadPrediction is the replay of the baseline's model at a rate: means
// over the seeds, and how many seeds were overloaded.
type loadPrediction struct {
	arrivals                string
	Seeds                   int
	Roots, Unfinished       float64 // per seed
	Success                 float64
	SuccessLow, SuccessHigh float64 // its 95% interval over the seeds
	P50, P99                float64 // ms
	BacklogPerSec           float64
	Overloaded              int // seeds
	DrainMS                 float64
	Tick                    time.Duration
}

// overloaded is the replay's verdict: a majority of its seeds.
func (p loadPrediction) overloaded() bool { return 2*p.Overloaded > p.Seeds }

// poissonTraffic is what `cascade replay --arrivals RATE` replays: the
// model's observed traffic turned Poisson at rate.
func poissonTraffic(m *cascade.Model, rate float64) *cascade.Traffic {
	traffic := m.ObservedTraffic()
	if traffic == nil {
		traffic = &cascade.Traffic{}
	}
	traffic.Kind, traffic.RatePerSec = cascade.TrafficPoisson, rate
	return traffic
}

// traffic is the load's own arrivals, its send times, as a scenario's
// observed traffic.
func (l *openLoad) traffic() *cascade.Traffic {
	at := make([]float64, len(l.reqs))
	for i := range l.reqs {
		at[i] = math.Round(float64(l.reqs[i].at)/1e3) / 1e3 // ms, to the µs
	}
	return &cascade.Traffic{Kind: cascade.TrafficObserved, ArrivalsMS: at}
}

// loadReplay replays m as `cascade replay model.json` does with the
// traffic (--arrivals RATE, or a scenario's observed arrivals) and
// --duration d --seeds N: the default drain (DrainFor), the tick
// checked, seeds from 1.
func loadReplay(ctx context.Context, m *cascade.Model, traffic *cascade.Traffic, d time.Duration, seeds int) (loadPrediction, error) {
	cfg := replay.DefaultConfig()
	cfg.Seed, cfg.Seeds, cfg.Parallel = 1, seeds, 2
	cfg.Duration, cfg.Traffic, cfg.Drain = d, traffic, replay.DrainFor(m)
	if err := cfg.Validate(); err != nil {
		return loadPrediction{}, err
	}
	var err error
	if cfg.Tick, _, err = replay.RefineTick(ctx, m, cfg); err != nil {
		return loadPrediction{}, err
	}
	res, err := replay.RunSeeds(ctx, m, cfg)
	if err != nil {
		return loadPrediction{}, err
	}
	sum := replay.Summarize(res)
	p := loadPrediction{
		arrivals:      "Poisson",
		Seeds:         len(res),
		Success:       sum.Metric("success_rate").Mean,
		SuccessLow:    sum.Metric("success_rate").Low,
		SuccessHigh:   sum.Metric("success_rate").High,
		Unfinished:    sum.Metric("unfinished").Mean,
		P50:           sum.Metric("latency_p50_ms").Mean,
		P99:           sum.Metric("latency_p99_ms").Mean,
		BacklogPerSec: sum.Metric("backlog_per_sec").Mean,
		Overloaded:    sum.Overloaded,
		Tick:          cfg.Tick,
	}
	for _, r := range res {
		p.Roots += float64(r.Roots) / float64(len(res))
		p.DrainMS = r.DrainMS
	}
	if traffic.Kind == cascade.TrafficObserved {
		p.arrivals = "the live run's arrivals"
	}
	return p, nil
}

// loadRow is one loaded run: measured live, predicted by the replay at
// the rate (Poisson: the prediction) and replayed at the live
// run's own arrival times (the same offered requests: what is left is
// the model's error, not the arrivals' draw).
type loadRow struct {
	factor          float64
	load            *openLoad
	measured        openFigures
	predicted, same loadPrediction
}

// loadResult is the whole comparison: the baseline (measured, and its
// in-sample replay under its own closed loop) and the loaded runs.
type loadResult struct {
	base, baseIn rootFigures
	baseRate     float64
	drain        time.Duration
	seeds        int
	rows         []loadRow
}

// markdown writes the table: the baseline's in-sample line, then per
// loaded run, measured / predicted and the error for success, p50 and
// p99, the unfinished requests, the backlog's growth, the overload
// verdicts, and whether each of issue 37's targets holds.
func (r *loadResult) markdown(w io.Writer) {
	yes := map[bool]string{true: "yes", false: "**no**"}
	over := map[bool]string{true: "overloaded", false: "keeps up"}
	fmt.Fprintln(w, "| load | offered | success meas / pred (gap) | p50 ms meas / pred (err) | p99 ms meas / pred (err) | unfinished meas / pred | backlog growth /s meas / pred | verdict meas / pred (seeds overloaded) | within 5 pp / 25% / 50% |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	b, in := r.base, r.baseIn
	fmt.Fprintf(w, "| 1×, closed loop (baseline, in sample) | %d at %.2f/s | %.1f%% / %.1f%% (%+.1f pp) | %.0f / %.0f (%+.1f%%) | %.0f / %.0f (%+.1f%%) | — | — | — | — |\n",
		b.Roots, r.baseRate, 100*b.Success, 100*in.Success, 100*(in.Success-b.Success),
		b.P50, in.P50, 100*relErr(in.P50, b.P50), b.P99, in.P99, 100*relErr(in.P99, b.P99))
	for _, row := range r.rows {
		m := row.measured
		for _, p := range []loadPrediction{row.predicted, row.same} {
			load := fmt.Sprintf("%g×, Poisson %.2f/s", row.factor, row.load.rate)
			if p.arrivals != "Poisson" {
				load = fmt.Sprintf("%g×, replayed at the live run's %d arrivals", row.factor, m.Offered)
			}
			gap, e50, e99 := p.Success-m.Success, relErr(p.P50, m.P50), relErr(p.P99, m.P99)
			fmt.Fprintf(w, "| %s | %d / %.0f | %.1f%% / %.1f%% (%+.1f pp) | %.0f / %.0f (%+.1f%%) | %.0f / %.0f (%+.1f%%) | %d / %.0f | %+.2f / %+.2f | %s / %s (%d of %d) | %s / %s / %s |\n",
				load, m.Offered, p.Roots,
				100*m.Success, 100*p.Success, 100*gap,
				m.P50, p.P50, 100*e50,
				m.P99, p.P99, 100*e99,
				m.Unfinished, p.Unfinished, m.BacklogPerSec, p.BacklogPerSec,
				over[m.Overloaded], over[p.overloaded()], p.Overloaded, p.Seeds,
				yes[math.Abs(gap) <= targetSuccess], yes[math.Abs(e50) <= targetP50], yes[math.Abs(e99) <= targetP99])
		}
	}
	fmt.Fprintf(w, "\nArrivals for %s, then the drain (%s: replay.DrainFor of the baseline's model); predicted: means over %d seeds.\n",
		r.rowsDuration(), r.drain, r.seeds)
}

func (r *loadResult) rowsDuration() time.Duration {
	if len(r.rows) == 0 {
		return 0
	}
	return r.rows[0].load.d
}
