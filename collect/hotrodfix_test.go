package collect

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"cascade"
	"cascade/analyze"
	"cascade/dataset"
	"cascade/fit"
	"cascade/graph"
	"cascade/ingest"
	"cascade/internal/testutil"
	"cascade/replay"
)

// HotROD's configuration changes, predicted from the baseline (issue 24).
//
// HotROD v1.76.0 has a flag for each change: --fix-route-worker-pool-size
// (default 3: the frontend's pool of workers calling route),
// --fix-disable-db-conn-mutex (default false: a lock serialises every
// mysql query) and --fix-db-query-delay (default 300ms: the mean of the
// mysql sleep). Each change is captured live under the same closed-loop
// load as the baseline (TestE2EHotRODFix) and predicted by replaying the
// baseline's model with the change as a scenario patch: a model choice
// made on a change's capture would be reported against that capture, so
// none is.

// Bounds of issue 24: a change's prediction against its own measurement,
// and a capture's in-sample replay against the capture.
const (
	boundP50       = 0.15 // relative
	boundP99       = 0.25 // relative
	boundSuccess   = 0.03 // absolute (3 pp)
	boundInP50     = 0.05 // relative
	boundInSuccess = 0.02 // absolute (2 pp)
)

// The database change: the lock removed and the mean query delay from
// HotROD's 300ms to 100ms (the value Jaeger's HotROD tutorial uses).
const (
	dbDelayOld = 300 * time.Millisecond
	dbDelayNew = 100 * time.Millisecond
)

// fixChange is one HotROD configuration: its flags, and the scenario
// patch that says the same thing to the baseline's model.
type fixChange struct {
	name  string
	flags []string
	scen  *cascade.Scenario // nil for the baseline
}

// fixChanges lists the baseline and the three changes, in table order.
func fixChanges() []fixChange {
	scale := strconv.FormatFloat(float64(dbDelayNew)/float64(dbDelayOld), 'g', -1, 64)
	pool := json.RawMessage(`{"pool": 100}`)
	db := json.RawMessage(`{"pool": null, "service_ms": {"scale": ` + scale + `}}`)
	dbName := "mysql lock removed, query " + dbDelayOld.String() + "→" + dbDelayNew.String()
	dbFlags := []string{"--fix-disable-db-conn-mutex", "--fix-db-query-delay=" + dbDelayNew.String()}
	return []fixChange{
		{name: "baseline"},
		{
			name:  "pool",
			flags: []string{"--fix-route-worker-pool-size=100"},
			scen:  &cascade.Scenario{Name: "route pool 3→100", Nodes: map[string]json.RawMessage{"route": pool}},
		},
		{
			name:  "db",
			flags: dbFlags,
			scen:  &cascade.Scenario{Name: dbName, Nodes: map[string]json.RawMessage{"mysql": db}},
		},
		{
			name:  "both",
			flags: append([]string{"--fix-route-worker-pool-size=100"}, dbFlags...),
			scen: &cascade.Scenario{Name: "route pool 3→100, " + dbName, Nodes: map[string]json.RawMessage{
				"route": pool, "mysql": db,
			}},
		},
	}
}

// rootFigures are the figures of a capture's /dispatch root spans, or of
// a replay's root requests: latency quantiles of the successful ones (a
// replay measures those), the success rate and the goodput.
type rootFigures struct {
	Roots      int
	P50, P99   float64 // ms
	Success    float64 // share
	Throughput float64 // successful roots per second
}

// measureRoots reads the figures from the /dispatch root spans: latency
// over the successful ones, throughput as the success rate times the
// rate the roots were sent at, from the first start to the last. (The
// successful roots over the time to the last end, as before, counted
// the end of the capture, where the clients that had sent their last
// request idled, as time without answers: 3.25/s for the baseline's
// 3.34/s; the replay's goodput is a steady rate.)
func measureRoots(spans []cascade.Span) rootFigures {
	var ok []float64
	var f rootFigures
	first, last := int64(math.MaxInt64), int64(math.MinInt64) // starts
	for i := range spans {
		s := &spans[i]
		if !s.IsRoot() || s.Service != "frontend" || s.Operation != "/dispatch" {
			continue
		}
		f.Roots++
		first, last = min(first, s.Start), max(last, s.Start)
		if s.Status != cascade.StatusError {
			ok = append(ok, float64(s.Duration)/1e6)
		}
	}
	if f.Roots == 0 {
		return f
	}
	slices.Sort(ok)
	f.P50, f.P99 = quantile(ok, 0.50), quantile(ok, 0.99)
	f.Success = float64(len(ok)) / float64(f.Roots)
	if last > first {
		f.Throughput = f.Success * float64(f.Roots-1) / (float64(last-first) / 1e9)
	}
	return f
}

// quantile is the q-quantile of sorted xs, interpolated between ranks.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	h := q * float64(len(xs)-1)
	i := int(h)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// fixModel builds the model of a capture as cascade analyze does: the
// graph, then the fit, each with analyze's defaults and seed. samples
// are the capture's metric points; nil for none.
func fixModel(ctx context.Context, name string, spans []cascade.Span, samples []cascade.Sample) (*cascade.Model, error) {
	cfg := analyze.DefaultConfig()
	src := graph.Spans(spans)
	var ssrc cascade.SampleSource
	if samples != nil {
		ssrc = graph.Samples(samples)
	}
	gcfg := cfg.Graph
	gcfg.Dataset = name
	g, err := graph.Build(ctx, gcfg, src, ssrc)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", name, err)
	}
	fcfg := cfg.Fit
	fcfg.Seed, fcfg.Parallel = cfg.Rank.Seed, 2
	obs, err := fit.Observe(ctx, fcfg, g.Model, src, ssrc)
	if err != nil {
		return nil, fmt.Errorf("fit %s: %w", name, err)
	}
	res, err := fit.Run(ctx, fcfg, g.Model, obs)
	if errors.Is(err, fit.ErrNoWindows) {
		return g.Model, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fit %s: %w", name, err)
	}
	return res.Model, nil
}

// fixReplay replays m with the scenario (nil: none) as cascade analyze's
// ranking replays a candidate: the model's observed load (HotROD's
// closed-loop clients and their think time), analyze's seeds, tick and
// tick check, and a duration that sees analyze's MinRoots root requests
// at the observed rate.
func fixReplay(ctx context.Context, m *cascade.Model, scen *cascade.Scenario) (rootFigures, error) {
	cfg := analyze.DefaultConfig()
	pm, traffic, err := replay.Apply(m, scen)
	if err != nil {
		return rootFigures{}, err
	}
	if traffic == nil {
		traffic = pm.ObservedTraffic()
	}
	rate := 0.0
	for _, e := range m.Entries {
		rate += e.RatePerSec
	}
	d := cfg.Rank.Duration
	if rate > 0 && rate*d.Seconds() < float64(cfg.MinRoots) {
		d = min(cfg.MaxDuration, max(d, time.Duration(float64(cfg.MinRoots)/rate*float64(time.Second)).Round(time.Minute)))
	}
	rc := replay.DefaultConfig()
	rc.Seed, rc.Seeds, rc.Parallel = cfg.Rank.Seed, cfg.Rank.Seeds, 2
	rc.Duration, rc.Tick, rc.Window = d, cfg.Rank.Tick, max(cfg.Rank.Window, (d/600).Round(time.Second))
	rc.Traffic = traffic
	if scen != nil {
		rc.Scenario = scen.Name
	}
	if cfg.Rank.TickCheck {
		if rc.Tick, _, err = replay.RefineTick(ctx, pm, rc); err != nil {
			return rootFigures{}, err
		}
	}
	res, err := replay.RunSeeds(ctx, pm, rc)
	if err != nil {
		return rootFigures{}, err
	}
	sum := replay.Summarize(res)
	var roots int64
	for _, r := range res {
		roots += r.Roots
	}
	return rootFigures{
		Roots:      int(roots),
		P50:        sum.Metric("latency_p50_ms").Mean,
		P99:        sum.Metric("latency_p99_ms").Mean,
		Success:    sum.Metric("success_rate").Mean,
		Throughput: sum.Metric("goodput_per_sec").Mean,
	}, nil
}

// fixRow is one change in the table: what HotROD measured, what the
// baseline's model predicted, and the in-sample replay of the change's
// own model (its fidelity, not a prediction).
type fixRow struct {
	change              fixChange
	measured, predicted rootFigures
	inSample            rootFigures
}

// fixResult is the whole comparison.
type fixResult struct {
	rows []fixRow
}

// predictFixes builds the baseline's model from caps["baseline"] alone
// and replays each change on it; each capture's own model is replayed
// in sample. caps maps a change's name to its capture's spans; changes
// without a capture are left out.
func predictFixes(ctx context.Context, caps map[string][]cascade.Span) (*fixResult, error) {
	base, ok := caps["baseline"]
	if !ok {
		return nil, errors.New("no baseline capture")
	}
	bm, err := fixModel(ctx, "baseline", base, nil)
	if err != nil {
		return nil, err
	}
	r := &fixResult{}
	for _, c := range fixChanges() {
		spans, ok := caps[c.name]
		if !ok {
			continue
		}
		row := fixRow{change: c, measured: measureRoots(spans)}
		if row.predicted, err = fixReplay(ctx, bm, c.scen); err != nil {
			return nil, fmt.Errorf("%s: predict: %w", c.name, err)
		}
		own := bm
		if c.name != "baseline" {
			if own, err = fixModel(ctx, c.name, spans, nil); err != nil {
				return nil, err
			}
		}
		if row.inSample, err = fixReplay(ctx, own, nil); err != nil {
			return nil, fmt.Errorf("%s: in-sample replay: %w", c.name, err)
		}
		r.rows = append(r.rows, row)
	}
	return r, nil
}

func relErr(pred, meas float64) float64 {
	if meas == 0 {
		return math.Inf(1)
	}
	return pred/meas - 1
}

// predictionOK reports whether the row's prediction is within issue 24's
// bounds.
func (r fixRow) predictionOK() bool {
	return math.Abs(relErr(r.predicted.P50, r.measured.P50)) <= boundP50 &&
		math.Abs(relErr(r.predicted.P99, r.measured.P99)) <= boundP99 &&
		math.Abs(r.predicted.Success-r.measured.Success) <= boundSuccess
}

// inSampleOK reports whether the row's in-sample replay is within the
// bounds.
func (r fixRow) inSampleOK() bool {
	return math.Abs(relErr(r.inSample.P50, r.measured.P50)) <= boundInP50 &&
		math.Abs(r.inSample.Success-r.measured.Success) <= boundInSuccess
}

// markdown writes the table: per change, measured / predicted and the
// error for p50, p99 (ms), success and throughput, whether the
// prediction is within the bounds, and the in-sample replay's p50 error
// and success gap.
func (r *fixResult) markdown(w io.Writer) {
	fmt.Fprintln(w, "| change | roots | p50 ms meas / pred (err) | p99 ms meas / pred (err) | success meas / pred (gap) | throughput /s meas / pred (err) | within 15% / 25% / 3 pp | in-sample p50 err, success gap |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, row := range r.rows {
		m, p, in := row.measured, row.predicted, row.inSample
		name := row.change.name
		if s := row.change.scen; s != nil {
			name += " (" + s.Name + ")"
		}
		yes := map[bool]string{true: "yes", false: "**no**"}
		fmt.Fprintf(w, "| %s | %d | %.0f / %.0f (%+.1f%%) | %.0f / %.0f (%+.1f%%) | %.1f%% / %.1f%% (%+.1f pp) | %.2f / %.2f (%+.1f%%) | %s | %+.1f%%, %+.1f pp (%s) |\n",
			name, m.Roots,
			m.P50, p.P50, 100*relErr(p.P50, m.P50),
			m.P99, p.P99, 100*relErr(p.P99, m.P99),
			100*m.Success, 100*p.Success, 100*(p.Success-m.Success),
			m.Throughput, p.Throughput, 100*relErr(p.Throughput, m.Throughput),
			yes[row.predictionOK()],
			100*relErr(in.P50, m.P50), 100*(in.Success-m.Success), yes[row.inSampleOK()])
	}
}

// check asserts the in-sample bounds on the baseline always, and, when
// strict, every bound on every row.
func (r *fixResult) check(t *testing.T, strict bool) {
	t.Helper()
	for _, row := range r.rows {
		m, p, in := row.measured, row.predicted, row.inSample
		if row.change.name == "baseline" || strict {
			require.InDelta(t, 0, relErr(in.P50, m.P50), boundInP50, "%s: in-sample p50 %.1f ms, measured %.1f ms", row.change.name, in.P50, m.P50)
			require.InDelta(t, m.Success, in.Success, boundInSuccess, "%s: in-sample success", row.change.name)
		}
		if strict {
			require.InDelta(t, 0, relErr(p.P50, m.P50), boundP50, "%s: predicted p50 %.1f ms, measured %.1f ms", row.change.name, p.P50, m.P50)
			require.InDelta(t, 0, relErr(p.P99, m.P99), boundP99, "%s: predicted p99 %.1f ms, measured %.1f ms", row.change.name, p.P99, m.P99)
			require.InDelta(t, m.Success, p.Success, boundSuccess, "%s: predicted success", row.change.name)
		}
	}
}

// The small captures kept for the default tests (written by
// TestE2EHotRODFix with CASCADE_E2E_FIX_OUT; testdata/hotrod-fix/SOURCE.md
// says how).
const fixTestdata = "../testdata/hotrod-fix"

// fixCaptureTraces is how many /dispatch traces a kept capture holds.
const fixCaptureTraces = 150

// TestHotRODFixPrediction predicts each captured HotROD change from the
// small baseline capture alone and records the table in
// testdata/hotrod-fix-prediction.golden (-update rewrites it). It asserts
// issue 24's bounds on every change (p50 within 15%, p99 within 25%,
// success within 3 pp) and each capture's in-sample bounds: they hold
// since the retry limit no chain ran out of is read as unknown, the
// timeouts come from the caller's own record and the fit keeps a model it
// cannot beat (before, the combined change was predicted 23.5 pp short).
func TestHotRODFixPrediction(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the HotROD models for about a minute")
	}
	ctx := context.Background()
	caps := keptFixCaptures(t)
	require.Contains(t, caps, "baseline")
	require.Contains(t, caps, "both")
	res, err := predictFixes(ctx, caps)
	require.NoError(t, err)
	var b bytes.Buffer
	res.markdown(&b)
	t.Logf("HotROD changes predicted from %s/baseline.otlp.json.gz (seed 1):\n%s", fixTestdata, b.String())
	testutil.Golden(t, "hotrod-fix-prediction", b.Bytes())
	res.check(t, true)
}

// envStrict turns issue 24's cross-change bounds into assertions in the
// live capture test (the kept captures are always held to them).
const envStrict = "CASCADE_E2E_HOTROD_STRICT"

// keptFixCaptures reads the kept captures of testdata/hotrod-fix, by
// change name; a change without a kept capture is left out.
func keptFixCaptures(t testing.TB) map[string][]cascade.Span {
	t.Helper()
	caps := map[string][]cascade.Span{}
	for _, c := range fixChanges() {
		path := filepath.Join(fixTestdata, c.name+".otlp.json.gz")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		caps[c.name] = readCapture(t, path)
	}
	return caps
}

// readCapture ingests an OTLP JSON capture and returns its spans.
func readCapture(t testing.TB, path string) []cascade.Span {
	t.Helper()
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{path}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(t, err, path)
	return readDataset(t, cfg.Out)
}

// readDataset returns a dataset's spans, in the store's order.
func readDataset(t testing.TB, dir string) []cascade.Span {
	t.Helper()
	var spans []cascade.Span
	require.NoError(t, dataset.ReadSpans(dir, func(s *cascade.Span) error {
		spans = append(spans, s.Clone())
		return nil
	}))
	return spans
}

// keepTraces returns the spans of n consecutive /dispatch traces, the
// first skip of them (by root start) left out: a contiguous stretch of
// the closed loop.
func keepTraces(spans []cascade.Span, skip, n int) []cascade.Span {
	type root struct {
		trace string
		start int64
	}
	var roots []root
	for i := range spans {
		s := &spans[i]
		if s.IsRoot() && s.Service == "frontend" && s.Operation == "/dispatch" {
			roots = append(roots, root{s.TraceID, s.Start})
		}
	}
	slices.SortFunc(roots, func(a, b root) int {
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.trace, b.trace))
	})
	skip = min(skip, len(roots))
	roots = roots[skip:min(len(roots), skip+n)]
	keep := map[string]bool{}
	for _, r := range roots {
		keep[r.trace] = true
	}
	var out []cascade.Span
	for _, s := range spans {
		if keep[s.TraceID] {
			out = append(out, s)
		}
	}
	return out
}

// writeOTLPJSON writes spans as one gzipped OTLP JSON document, one
// resource per service and instance, spans by trace and start time,
// carrying every field a cascade.Span holds (peer.service, error.type,
// http.response.status_code and http.request.resend_count as
// attributes), so that ingesting it gives the same rows.
func writeOTLPJSON(path string, spans []cascade.Span) error {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b cascade.Span) int {
		return cmp.Or(strings.Compare(a.Service, b.Service), strings.Compare(a.Instance, b.Instance),
			strings.Compare(a.TraceID, b.TraceID), cmp.Compare(a.Start, b.Start), strings.Compare(a.SpanID, b.SpanID))
	})
	td := ptrace.NewTraces()
	var ss ptrace.SpanSlice
	for i := range spans {
		s := &spans[i]
		if i == 0 || s.Service != spans[i-1].Service || s.Instance != spans[i-1].Instance {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", s.Service)
			if s.Instance != "" {
				rs.Resource().Attributes().PutStr("service.instance.id", s.Instance)
			}
			ss = rs.ScopeSpans().AppendEmpty().Spans()
		}
		sp := ss.AppendEmpty()
		var err error
		var tid pcommon.TraceID
		var sid, pid pcommon.SpanID
		if err = decodeHexID(tid[:], s.TraceID); err == nil {
			err = decodeHexID(sid[:], s.SpanID)
		}
		if err == nil && s.ParentSpanID != "" {
			err = decodeHexID(pid[:], s.ParentSpanID)
		}
		if err != nil {
			return fmt.Errorf("span %s of trace %s: %w", s.SpanID, s.TraceID, err)
		}
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetParentSpanID(pid)
		sp.SetName(s.Operation)
		sp.SetKind(map[cascade.SpanKind]ptrace.SpanKind{
			cascade.KindServer: ptrace.SpanKindServer, cascade.KindClient: ptrace.SpanKindClient,
			cascade.KindProducer: ptrace.SpanKindProducer, cascade.KindConsumer: ptrace.SpanKindConsumer,
			cascade.KindInternal: ptrace.SpanKindInternal,
		}[s.Kind])
		sp.SetStartTimestamp(pcommon.Timestamp(s.Start))
		sp.SetEndTimestamp(pcommon.Timestamp(s.End()))
		switch s.Status {
		case cascade.StatusOK:
			sp.Status().SetCode(ptrace.StatusCodeOk)
		case cascade.StatusError:
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		a := sp.Attributes()
		if s.Peer != "" {
			a.PutStr("peer.service", s.Peer)
		}
		if s.ErrorType != "" {
			a.PutStr("error.type", s.ErrorType)
		}
		if s.StatusCode != 0 {
			a.PutInt("http.response.status_code", int64(s.StatusCode))
		}
		if s.ResendCount != 0 {
			a.PutInt("http.request.resend_count", int64(s.ResendCount))
		}
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return err
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, z.Bytes(), 0o644)
}

func decodeHexID(dst []byte, s string) error {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(dst) {
		return fmt.Errorf("id %q: want %d hex bytes", s, len(dst))
	}
	copy(dst, b)
	return nil
}
