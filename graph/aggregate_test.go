package graph_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
	"cascade/internal/testutil"
)

// connectorDataset writes what the servicegraph and spanmetrics
// connectors would have exported for the bundled HotROD capture, as
// Prometheus text, and ingests it into a dataset of metrics only.
func connectorDataset(tb testing.TB, cfg testutil.ConnectorConfig) string {
	tb.Helper()
	f, err := os.Open(filepath.Join(repoData, "hotrod-baseline/traces-otlp.json.gz"))
	require.NoError(tb, err)
	defer f.Close()
	dir := tb.TempDir()
	var buf bytes.Buffer
	require.NoError(tb, testutil.ConnectorSeries(&buf, f, cfg))
	prom := filepath.Join(dir, "connectors.prom")
	require.NoError(tb, os.WriteFile(prom, buf.Bytes(), 0o644))
	icfg := ingest.DefaultConfig()
	icfg.Metrics = []string{prom}
	icfg.Out = filepath.Join(dir, "dataset")
	_, err = ingest.Run(context.Background(), icfg)
	require.NoError(tb, err)
	return icfg.Out
}

func readSamples(dir string) cascade.SampleSource {
	return func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(dir, fn) }
}

// CompareAggregate returns per-edge and per-node lines comparing an
// aggregate-built model with a trace-built one, and the largest relative
// difference of the rates and failure rates both hold.
func compareModels(traces, agg *cascade.Model) (lines []string, worst float64) {
	rel := func(a, b float64) float64 {
		if a == b {
			return 0
		}
		return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
	}
	for _, te := range traces.Edges {
		var ae *cascade.Edge
		for i := range agg.Edges {
			if agg.Edges[i].From == te.From && agg.Edges[i].To == te.To {
				ae = &agg.Edges[i]
			}
		}
		if ae == nil {
			lines = append(lines, fmt.Sprintf("edge %s → %s: traces %d calls, aggregates none", te.From, te.To, te.Observed.Calls))
			continue
		}
		tr := float64(te.Observed.Calls) / (float64(traces.Source.EndNS-traces.Source.StartNS) / 1e9)
		ar := float64(ae.Observed.Calls) / (float64(agg.Source.EndNS-agg.Source.StartNS) / 1e9)
		worst = max(worst, rel(tr, ar), math.Abs(te.Observed.ErrorRate-ae.Observed.ErrorRate))
		lines = append(lines, fmt.Sprintf("edge %s → %s: calls %d / %d, rate %.3f / %.3f /s (%.2f%%), errors %.4f / %.4f, fan-out %.3f / %.3f, p50 %.1f / %.1f ms, p99 %.1f / %.1f ms",
			te.From, te.To, te.Observed.Calls, ae.Observed.Calls, tr, ar, 100*rel(tr, ar), te.Observed.ErrorRate, ae.Observed.ErrorRate,
			te.FanOut.MeanValue(), ae.FanOut.MeanValue(), te.Observed.LatencyP50MS, ae.Observed.LatencyP50MS, te.Observed.LatencyP99MS, ae.Observed.LatencyP99MS))
	}
	for _, ae := range agg.Edges {
		found := false
		for _, te := range traces.Edges {
			found = found || (te.From == ae.From && te.To == ae.To)
		}
		if !found {
			lines = append(lines, fmt.Sprintf("edge %s → %s: aggregates %d calls, traces none", ae.From, ae.To, ae.Observed.Calls))
		}
	}
	for _, tn := range traces.Nodes {
		an := agg.Node(tn.Name)
		if an == nil {
			lines = append(lines, fmt.Sprintf("node %s: aggregates none", tn.Name))
			continue
		}
		worst = max(worst, rel(tn.Observed.RatePerSec, an.Observed.RatePerSec), math.Abs(tn.Observed.ErrorRate-an.Observed.ErrorRate))
		lines = append(lines, fmt.Sprintf("node %s: requests %d / %d, rate %.3f / %.3f /s (%.2f%%), errors %.4f / %.4f, p50 %.1f / %.1f ms",
			tn.Name, tn.Observed.Requests, an.Observed.Requests, tn.Observed.RatePerSec, an.Observed.RatePerSec,
			100*rel(tn.Observed.RatePerSec, an.Observed.RatePerSec), tn.Observed.ErrorRate, an.Observed.ErrorRate, tn.Observed.LatencyP50MS, an.Observed.LatencyP50MS))
	}
	return lines, worst
}

func TestAggregateHotRODAgainstTraces(t *testing.T) {
	traces := build(t, hotrodDataset(t, "otlp"), graph.LevelService)
	dir := connectorDataset(t, testutil.ConnectorConfig{})
	agg, err := graph.BuildAggregates(context.Background(), graph.DefaultConfig(), readSamples(dir))
	require.NoError(t, err)
	lines, worst := compareModels(traces.Model, agg.Model)
	t.Logf("traces / aggregates:\n%s\nworst %.4f", strings.Join(lines, "\n"), worst)
	require.Less(t, worst, 0.05, "rates and failure rates within 5%%")
	// The edges the series cannot hold: into callees that report their
	// work as client spans, which no server span answers.
	var missing []string
	for _, l := range lines {
		if strings.HasSuffix(l, "aggregates none") {
			missing = append(missing, l)
		}
	}
	require.Equal(t, []string{"edge customer → mysql: traces 300 calls, aggregates none", "edge driver → redis-manual: traces 4050 calls, aggregates none"}, missing)
	require.Len(t, agg.Model.Edges, len(traces.Model.Edges)-2)
	require.Len(t, agg.Model.Nodes, len(traces.Model.Nodes))
	var buf bytes.Buffer
	require.NoError(t, graph.WriteTable(&buf, agg))
	t.Log(buf.String())
}

// connectorFixture is the committed prom-text fixture: the connectors'
// series for the one-trace sample of the HotROD capture (span histograms
// in seconds), gzip-compressed (ingest reads it so), regenerated with
// -update.
const connectorFixture = "testdata/connectors-hotrod.prom.gz"

func TestAggregateFixture(t *testing.T) {
	f, err := os.Open(filepath.Join(repoData, "hotrod-baseline/sample-trace-otlp.json"))
	require.NoError(t, err)
	defer f.Close()
	var buf bytes.Buffer
	require.NoError(t, testutil.ConnectorSeries(&buf, f, testutil.ConnectorConfig{SpanUnit: "s"}))
	if testutil.Updating() {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, err := zw.Write(buf.Bytes())
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		require.NoError(t, os.WriteFile(connectorFixture, gz.Bytes(), 0o644))
	}
	zf, err := os.Open(connectorFixture)
	require.NoError(t, err)
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	require.NoError(t, err)
	want, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, string(want), buf.String(), "%s is stale: run go test ./graph -run TestAggregateFixture -update", connectorFixture)

	icfg := ingest.DefaultConfig()
	icfg.Metrics = []string{connectorFixture}
	icfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err = ingest.Run(context.Background(), icfg)
	require.NoError(t, err)
	cfg := graph.DefaultConfig()
	cfg.Dataset = connectorFixture
	res, err := graph.BuildAggregates(context.Background(), cfg, readSamples(icfg.Out))
	require.NoError(t, err)
	data, err := cascade.EncodeModel(res.Model)
	require.NoError(t, err)
	_, err = cascade.DecodeModel(data)
	require.NoError(t, err)
	testutil.Golden(t, "aggregate-hotrod.json", data)
	var table bytes.Buffer
	require.NoError(t, graph.WriteTable(&table, res))
	testutil.Golden(t, "aggregate-hotrod.table", table.Bytes())
}

func TestRefineWithAggregates(t *testing.T) {
	traces := build(t, hotrodDataset(t, "otlp"), graph.LevelService)
	dir := connectorDataset(t, testutil.ConnectorConfig{})
	// An edge and a node no trace showed (sampling left them out).
	extra := []cascade.Sample{
		{Time: traces.Model.Source.StartNS, Metric: "traces_service_graph_request_total", Labels: `client="route",server="geo"`, Value: 0},
		{Time: traces.Model.Source.EndNS, Metric: "traces_service_graph_request_total", Labels: `client="route",server="geo"`, Value: 600},
	}
	samples := func(fn func(*cascade.Sample) error) error {
		if err := readSamples(dir)(fn); err != nil {
			return err
		}
		return graph.Samples(extra)(fn)
	}
	agg, err := graph.BuildAggregates(context.Background(), graph.DefaultConfig(), samples)
	require.NoError(t, err)
	before, err := cascade.EncodeModel(traces.Model)
	require.NoError(t, err)

	res := graph.Refine(traces, agg)
	m := res.Model
	require.Equal(t, cascade.FromBoth, m.Source.From)
	require.Len(t, m.Edges, len(traces.Model.Edges)+1)
	for _, te := range traces.Model.Edges {
		found := false
		for _, e := range m.Edges {
			if e.From == te.From && e.To == te.To {
				found = true
				require.Equal(t, te.Observed, e.Observed, "traces win on %s → %s", e.From, e.To)
				require.Equal(t, te.FanOut, e.FanOut)
			}
		}
		require.True(t, found, "%s → %s", te.From, te.To)
	}
	geo := m.Node("geo")
	require.NotNil(t, geo)
	require.True(t, geo.Virtual)
	var added *cascade.Edge
	for i := range m.Edges {
		if m.Edges[i].To == "geo" {
			added = &m.Edges[i]
		}
	}
	require.NotNil(t, added)
	require.Equal(t, cascade.Inferred, added.Provenance["fan_out"])
	require.InDelta(t, 0.2, added.FanOut.MeanValue(), 1e-9, "600 calls over route's 3000 requests")
	require.Contains(t, strings.Join(m.Source.Notes, "\n"), "nodes geo; edges route → geo")
	require.Len(t, res.Nodes, len(m.Nodes))
	require.NoError(t, m.Validate())
	// The trace-built result is left as it was.
	after, err := cascade.EncodeModel(traces.Model)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}
