package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// seriesFixture holds the servicegraph and spanmetrics series of the
// one-trace HotROD sample (graph's unit-test fixture).
const seriesFixture = "../../graph/testdata/connectors-hotrod.prom.gz"

func TestGraphFromSeriesFile(t *testing.T) {
	// The series alone: the model from aggregates.
	code, stdout, stderr := runCLI(t, "graph", "--metrics", seriesFixture, "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	m, err := cascade.DecodeModel([]byte(stdout))
	require.NoError(t, err)
	require.Equal(t, cascade.FromAggregates, m.Source.From)
	require.Equal(t, "frontend", m.Entries[0].Node)
	require.Len(t, m.Edges, 3)
	require.Equal(t, cascade.Inferred, m.Edges[0].Provenance["fan_out"])
	require.NotEmpty(t, m.Source.Notes)

	// With the capture's traces: the traces win.
	code, stdout, stderr = runCLI(t, "graph", hotrodOTLP, "--metrics", seriesFixture, "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	both, err := cascade.DecodeModel([]byte(stdout))
	require.NoError(t, err)
	require.Equal(t, cascade.FromBoth, both.Source.From)
	require.Len(t, both.Edges, 5)
	require.NotNil(t, both.Load, "the traces' load shape is kept")
}

// TestGraphFromPrometheusAPI serves the fixture's series from a stand-in
// for the Prometheus query_range API and reads them with --from.
func TestGraphFromPrometheusAPI(t *testing.T) {
	type series struct {
		labels map[string]string
		values [][2]string
	}
	byKey := map[string]*series{}
	var keys []string
	f, err := os.Open(seriesFixture)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	data := string(raw)
	require.NoError(t, err)
	label := regexp.MustCompile(`([a-zA-Z_]+)="([^"]*)"`)
	for _, line := range strings.Split(data, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexByte(line, '{')
		j := strings.LastIndexByte(line, '}')
		fields := strings.Fields(line[j+1:])
		key := line[:j+1]
		s := byKey[key]
		if s == nil {
			s = &series{labels: map[string]string{"__name__": line[:i]}}
			for _, m := range label.FindAllStringSubmatch(line[i+1:j], -1) {
				s.labels[m[1]] = m[2]
			}
			byKey[key] = s
			keys = append(keys, key)
		}
		ms, err := strconv.ParseInt(fields[1], 10, 64)
		require.NoError(t, err)
		s.values = append(s.values, [2]string{fmt.Sprintf("%d.%03d", ms/1000, ms%1000), fields[0]})
	}
	sort.Strings(keys)
	// answer is a query_range answer holding the series whose names
	// start with prefix.
	answer := func(prefix string) []byte {
		var result []map[string]any
		for _, k := range keys {
			s := byKey[k]
			if !strings.HasPrefix(s.labels["__name__"], prefix) {
				continue
			}
			vals := make([][]any, len(s.values))
			for i, v := range s.values {
				vals[i] = []any{json.Number(v[0]), v[1]}
			}
			result = append(result, map[string]any{"metric": s.labels, "values": vals})
		}
		b, err := json.Marshal(result)
		require.NoError(t, err)
		// In Prometheus' own key order.
		return fmt.Appendf(nil, `{"status":"success","data":{"resultType":"matrix","result":%s}}`, b)
	}
	var queries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query_range" {
			http.NotFound(w, r)
			return
		}
		queries.Add(1)
		prefix := "traces_span"
		if strings.Contains(r.URL.Query().Get("query"), "service_graph") {
			prefix = "traces_service_graph"
		}
		w.Write(answer(prefix))
	}))
	defer srv.Close()

	code, stdout, stderr := runCLI(t, "graph", "--from", "prometheus="+srv.URL,
		"--start", "2026-12-02T11:48:16Z", "--end", "2026-12-02T11:48:25Z", "--step", "1s", "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, int64(2), queries.Load(), "one query_range per series family")
	m, err := cascade.DecodeModel([]byte(stdout))
	require.NoError(t, err)
	require.Equal(t, cascade.FromAggregates, m.Source.From)
	require.Equal(t, "prometheus="+srv.URL, m.Source.Dataset)
	code, stdout, stderr = runCLI(t, "graph", "--metrics", seriesFixture, "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	mf, err := cascade.DecodeModel([]byte(stdout))
	require.NoError(t, err)
	require.Equal(t, len(mf.Edges), len(m.Edges))
	for i := range m.Edges {
		require.Equal(t, mf.Edges[i].Observed.Calls, m.Edges[i].Observed.Calls)
	}

	// The same answers saved as prom-api files.
	dir := t.TempDir()
	sg, sm := filepath.Join(dir, "servicegraph.json"), filepath.Join(dir, "spanmetrics.json")
	require.NoError(t, os.WriteFile(sg, answer("traces_service_graph"), 0o644))
	require.NoError(t, os.WriteFile(sm, answer("traces_span"), 0o644))
	// A query_range answer does not say where its range began: --start
	// does, so that series first seen later count from zero.
	code, stdout, stderr = runCLI(t, "graph", "--metrics", sg, "--metrics", sm, "--start", "2026-12-02T11:48:16Z", "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	ma, err := cascade.DecodeModel([]byte(stdout))
	require.NoError(t, err)
	require.Equal(t, len(mf.Edges), len(ma.Edges))
	for i := range ma.Edges {
		require.Equal(t, mf.Edges[i].Observed.Calls, ma.Edges[i].Observed.Calls)
	}

	// An unreachable server fails naming it.
	srv.Close()
	code, _, stderr = runCLI(t, "graph", "--from", "prometheus="+srv.URL, "--attempts", "1")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, "prometheus "+srv.URL+"/api/v1/query_range")
}
