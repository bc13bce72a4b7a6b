package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cascade"
	"cascade/incident"
	"cascade/report"
	"cascade/testdata/shapes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const hotrod = "../testdata/hotrod-baseline"

// small is the default configuration on the HotROD capture with a smaller
// ranking and fit, for speed.
func small(out string, parallel int) Config {
	cfg := DefaultConfig()
	cfg.Inputs = []string{filepath.Join(hotrod, "traces-otlp.json.gz")}
	cfg.Metrics = []string{filepath.Join(hotrod, "prometheus")}
	cfg.Out = out
	cfg.Rank.Seeds = 2
	cfg.Rank.Duration = 10e9
	cfg.Rank.CapacityPoints = 6
	cfg.Rank.Parallel = parallel
	cfg.Fit.Grid = "p=0.01|0.1|0.3,k=0:2:1,tier=p50|p99"
	cfg.Incident.Seeds = 2
	cfg.MinRoots = 0
	return cfg
}

func TestRunHotROD(t *testing.T) {
	out := t.TempDir()
	a, err := Run(context.Background(), small(out, 0))
	require.NoError(t, err)

	// Every file it lists is there and not empty.
	want := []string{"dataset/spans.parquet", "dataset/metrics.parquet", ModelFile, CalibratedFile, JSONFile, MarkdownFile, HTMLFile}
	require.Equal(t, want, a.Files)
	for _, f := range a.Files {
		fi, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		require.Positive(t, fi.Size(), f)
	}
	// The stages ran on the capture: six services, a fit, a ranking with
	// the capacity curve, the incident read, a timeline.
	require.Equal(t, int64(11850), a.Dataset.Spans)
	require.Len(t, a.Dataset.Services, 6)
	require.NotNil(t, a.Fit)
	require.NotNil(t, a.Rank)
	require.NotNil(t, a.Rank.Capacity)
	require.NotNil(t, a.Incident)
	require.NotNil(t, a.Timeline)
	require.Len(t, a.Timeline.Baseline.GoodputPerSec, 10)
	require.Equal(t, uint64(1), a.Seed)

	// The capture beside the model: a row per node, the replays the
	// ranking's baseline (the entry's p50 is the roots' within a tick or
	// two), the capture's timeline as long as the replay's, and the
	// operating point at the observed entry rate.
	o := a.Observed
	require.NotNil(t, o)
	require.Len(t, o.Nodes, 6)
	require.Equal(t, a.Rank.Seeds, o.Seeds)
	require.Equal(t, a.Rank.Regimes[0].Name, o.Regime)
	for _, n := range o.Nodes {
		if n.Node == "frontend" {
			require.InDelta(t, a.Rank.Baseline[0].Metric("latency_p50_ms").Mean, n.Replayed.P50MS, 5)
		}
		if n.Node == "redis-manual" {
			require.InDelta(t, 0.185, n.Observed.ErrorRate, 0.001)
			require.NotNil(t, n.Gap.ErrorPP)
		}
	}
	require.NotNil(t, o.Timeline)
	require.Equal(t, len(o.Timeline.Observed.RequestsPerSec), len(o.Timeline.Replayed.RequestsPerSec))
	require.GreaterOrEqual(t, len(o.Timeline.Observed.RequestsPerSec), 20)
	require.InDelta(t, 3.33, o.Point.OfferedPerSec, 0.01)

	// The models read back; the calibrated one holds the fit.
	for _, f := range []string{ModelFile, CalibratedFile} {
		b, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		m, err := cascade.DecodeModel(b)
		require.NoError(t, err, f)
		require.Len(t, m.Nodes, 6, f)
	}
	// report.json is the document returned.
	b, err := os.ReadFile(filepath.Join(out, JSONFile))
	require.NoError(t, err)
	var back report.Analysis
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, a.Rank.Rows[0].Candidate.Name, back.Rank.Rows[0].Candidate.Name)
}

func TestRunIsDeterministic(t *testing.T) {
	// The same inputs and seed give byte-identical files at any
	// parallelism, read from raw files or from the dataset written.
	one, two := t.TempDir(), t.TempDir()
	_, err := Run(context.Background(), small(one, 1))
	require.NoError(t, err)
	_, err = Run(context.Background(), small(two, 2))
	require.NoError(t, err)
	for _, f := range []string{ModelFile, CalibratedFile, JSONFile, MarkdownFile, HTMLFile} {
		a, err := os.ReadFile(filepath.Join(one, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(two, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs between --parallel 1 and 2", f)
	}
	// From the dataset: the same models and ranking.
	three := t.TempDir()
	cfg := small(three, 2)
	cfg.Inputs, cfg.Metrics = []string{filepath.Join(one, DatasetDir)}, nil
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, []string{ModelFile, CalibratedFile, JSONFile, MarkdownFile, HTMLFile}, a.Files)
	require.Equal(t, int64(11850), a.Dataset.Spans)
	// The models name their source; the ranking is the same.
	var first report.Analysis
	b, err := os.ReadFile(filepath.Join(one, JSONFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &first))
	x, err := json.Marshal(first.Rank)
	require.NoError(t, err)
	y, err := json.Marshal(a.Rank)
	require.NoError(t, err)
	require.True(t, bytes.Equal(x, y), "the ranking differs when read from the dataset")
}

func TestRunFailureKeepsEarlierReport(t *testing.T) {
	out := t.TempDir()
	_, err := Run(context.Background(), small(out, 0))
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(out, JSONFile))
	require.NoError(t, err)

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}`), 0o644))
	cfg := small(out, 0)
	cfg.Inputs, cfg.Metrics = []string{bad}, nil
	_, err = Run(context.Background(), cfg)
	require.Error(t, err)
	require.Contains(t, err.Error(), "bad.json")
	after, err := os.ReadFile(filepath.Join(out, JSONFile))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "a failed run leaves the last good report")
	_, err = os.Stat(filepath.Join(out, DatasetDir, "spans.parquet"))
	require.NoError(t, err, "and its dataset")

	// An input that reads but holds nothing to analyse fails after its
	// ingest: the last run's dataset, models and reports stay.
	keep := map[string][]byte{}
	for _, f := range []string{JSONFile, ModelFile, CalibratedFile, filepath.Join(DatasetDir, "spans.parquet")} {
		keep[f], err = os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"resourceSpans": []}`), 0o644))
	cfg.Inputs = []string{empty}
	_, err = Run(context.Background(), cfg)
	require.ErrorContains(t, err, "no spans")
	for f, want := range keep {
		got, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s changed by a failed run", f)
	}
	es, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range es {
		require.False(t, strings.HasPrefix(e.Name(), "."), "%s left behind", e.Name())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no input", func(c *Config) { c.Inputs = nil }, "no input"},
		{"no out", func(c *Config) { c.Out = "" }, "no output directory"},
		{"one seed", func(c *Config) { c.Rank.Seeds = 1 }, "seeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := small("x", 0)
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRunNoSpans(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"resourceSpans": []}`), 0o644))
	cfg := small(t.TempDir(), 0)
	cfg.Inputs, cfg.Metrics = []string{empty}, nil
	_, err := Run(context.Background(), cfg)
	require.ErrorContains(t, err, "empty.json: no spans to analyse")
}

func TestStretch(t *testing.T) {
	// A sparse capture's replays run long enough to see MinRoots roots,
	// within MaxDuration; a busy one's keep their duration.
	model := func(rate float64) *cascade.Model {
		return &cascade.Model{Entries: []cascade.Entry{{Node: "a", RatePerSec: rate / 2, Share: 0.5}, {Node: "b", RatePerSec: rate / 2, Share: 0.5}}}
	}
	for _, tc := range []struct {
		name           string
		rate           float64
		minRoots       int
		wantD, wantWin time.Duration
		stretched      bool
	}{
		{"busy", 100, 2000, 0, 0, false},
		{"hotrod", 3.33, 2000, 10 * time.Minute, time.Second, true},
		{"sparse", 0.0947, 2000, 5*time.Hour + 52*time.Minute, 35 * time.Second, true},
		{"capped", 0.01, 2000, 6 * time.Hour, 36 * time.Second, true},
		{"off", 0.01, 0, 0, 0, false},
		{"no entries", 0, 2000, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MinRoots = tc.minRoots
			d, w, ok := stretch(model(tc.rate), cfg)
			require.Equal(t, tc.stretched, ok)
			require.Equal(t, tc.wantD, d)
			require.Equal(t, tc.wantWin, w)
		})
	}
}

// TestRunLogs: --logs goes into the dataset's logs.parquet, and a dataset
// given as the input holds its own logs.
func TestRunLogs(t *testing.T) {
	out := t.TempDir()
	cfg := small(out, 0)
	cfg.NoFit, cfg.NoIncident = true, true
	cfg.Logs = []string{"../testdata/nezha-trainticket/log/09_26_log_head300.csv"}
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Contains(t, a.Files, "dataset/logs.parquet")
	require.Equal(t, int64(300), a.Dataset.Logs)

	cfg = small(t.TempDir(), 0)
	cfg.Inputs, cfg.Metrics = []string{filepath.Join(out, DatasetDir)}, nil
	cfg.Logs = []string{"x.csv"}
	_, err = Run(context.Background(), cfg)
	require.EqualError(t, err, "logs: a dataset holds its logs; ingest them into it")
}

// TestRunLogsIncident: the incident pass reads the dataset's logs. An
// exception visible only in the logs (the generator's Throw, in
// Nezha's CSV without span status) puts its service first, with the
// log evidence; without --logs it goes unseen.
func TestRunLogsIncident(t *testing.T) {
	_, truth, err := shapes.Generate(shapes.Config{Shape: "pairs", Traces: 2400, Format: shapes.NezhaCSV, Logs: true, Throw: "stock"})
	require.NoError(t, err)
	data, _, err := shapes.Generate(shapes.Config{Shape: "pairs", Traces: 2400, Format: shapes.NezhaCSV, Throw: "stock"})
	require.NoError(t, err)
	dir := t.TempDir()
	traces, logs := filepath.Join(dir, "trace.csv"), filepath.Join(dir, "log.csv")
	require.NoError(t, os.WriteFile(traces, data, 0o644))
	require.NoError(t, os.WriteFile(logs, truth.Logs, 0o644))
	for _, withLogs := range []bool{true, false} {
		cfg := small(t.TempDir(), 0)
		cfg.Inputs, cfg.Metrics = []string{traces}, nil
		if withLogs {
			cfg.Logs = []string{logs}
		}
		cfg.NoFit = true
		cfg.Rank.Seeds, cfg.Rank.Duration, cfg.Rank.Capacity = 2, 2e9, false
		a, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		if !withLogs {
			require.Empty(t, a.Incident.Origins)
			continue
		}
		require.NotEmpty(t, a.Incident.Origins)
		require.Equal(t, "stock", a.Incident.Origins[0])
		require.Contains(t, a.Incident.Nodes[0].Metric, "log_")
	}
}

func TestOnsetBeyond(t *testing.T) {
	start := int64(1_700_000_000_000_000_000)
	m := &cascade.Model{Source: &cascade.ModelSource{StartNS: start, EndNS: start + int64(180*time.Second)}}
	inc := &incident.Incident{Origins: []string{"broker"}, Nodes: []incident.NodeChange{
		{Node: "api", Changed: true, AtNS: start + int64(10*time.Second)},
		{Node: "broker", Changed: true, AtNS: start + int64(89*time.Second)},
	}}
	tests := []struct {
		d    time.Duration
		want string
	}{
		{60 * time.Second, "the incident began at broker 1m29s into the capture, beyond the 1m0s the ranking's replays run: they do not reach it (give --duration 1m30s or more)"},
		{180 * time.Second, ""},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, onsetBeyond(inc, m, tc.d), tc.d)
	}
	require.Empty(t, onsetBeyond(&incident.Incident{}, m, time.Second), "no origin")
}
