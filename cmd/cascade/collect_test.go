package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
)

// promServer answers query_range with one series of a point per step, or
// with garbage.
func promServer(t *testing.T, garbage bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if garbage {
			fmt.Fprint(w, "<html>not prometheus</html>")
			return
		}
		q := r.URL.Query()
		start, _ := strconv.ParseFloat(q.Get("start"), 64)
		end, _ := strconv.ParseFloat(q.Get("end"), 64)
		step, _ := strconv.ParseFloat(q.Get("step"), 64)
		var vals []string
		for t := start; t <= end; t += step {
			vals = append(vals, fmt.Sprintf(`[%g,"1"]`, t))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"api"},"values":[%s]}]}}`, strings.Join(vals, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCollectCommand(t *testing.T) {
	prom := promServer(t, false)
	garbage := promServer(t, true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	ln.Close()
	window := []string{"--start", "2026-12-02T11:48:00Z", "--end", "2026-12-02T11:49:00Z", "--step", "1s"}
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{name: "no out", args: []string{"collect"}, code: exitUsage, inStderr: "--out DATASET is required"},
		{name: "argument", args: []string{"collect", "ds"}, code: exitUsage, inStderr: `collect takes no arguments, got "ds"`},
		{name: "bad source", args: []string{"collect", "--from", "zipkin=http://x"}, code: exitUsage, inStderr: `unknown source "zipkin"`},
		{name: "source twice", args: []string{"collect", "--from", "jaeger=http://x", "--from", "jaeger=http://y"}, code: exitUsage, inStderr: "--from jaeger given twice"},
		{name: "prometheus without query", args: append([]string{"collect", "--from", "prometheus=http://x"}, window...), code: exitUsage, inStderr: "query: prometheus needs at least one --query"},
		{name: "jaeger without service", args: append([]string{"collect", "--from", "jaeger=http://x"}, window...), code: exitUsage, inStderr: "service: jaeger needs at least one --service"},
		{name: "bad url", args: []string{"collect", "--from", "prometheus=localhost:9090", "--query", "up"}, code: exitUsage, inStderr: "want an http:// or https:// URL"},
		{name: "listen and from", args: []string{"collect", "--listen", "127.0.0.1:0", "--from", "prometheus=http://x", "--query", "up"}, code: exitUsage, inStderr: "--listen cannot be combined"},
		{name: "start without from", args: []string{"collect", "--start", "now-1h"}, code: exitUsage, inStderr: "--start and --end apply to --from only"},
		{name: "bad start", args: []string{"collect", "--from", "prometheus=http://x", "--query", "up", "--start", "yesterday"}, code: exitUsage, inStderr: `--start: "yesterday"`},
		{name: "start after end", args: []string{"collect", "--from", "prometheus=http://x", "--query", "up", "--start", "now", "--end", "now-1h"}, code: exitUsage, inStderr: "is not before end"},
		{name: "bad size", args: []string{"collect", "--max-request-size", "lots"}, code: exitUsage, inStderr: `"lots": want a positive size`},
		{name: "negative queue", args: []string{"collect", "--queue", "-1"}, code: exitUsage, inStderr: "queue: -1 is negative"},
		{name: "nothing to finalize", args: []string{"collect", "--finalize"}, code: exitFailure, inStderr: "nothing to finalize"},
		{name: "pull prometheus", args: append([]string{"collect", "--from", "prometheus=" + prom.URL, "--query", "up"}, window...), inStdout: "samples                    61", inStderr: `collect: prometheus: query "up": 61 samples`},
		{name: "pull prometheus, Markdown", args: append([]string{"collect", "--from", "prometheus=" + prom.URL, "--query", "up", "-o", "markdown"}, window...), inStdout: "- **samples**: 61\n", inStderr: `collect: prometheus: query "up": 61 samples`},
		{name: "bad output", args: []string{"collect", "-o", "yaml"}, code: exitUsage, inStderr: `--output "yaml": want one of [table json markdown]`},
		{name: "pull garbage", args: append([]string{"collect", "--from", "prometheus=" + garbage.URL, "--query", "up"}, window...), code: exitInvalidData, inStderr: "cascade: prometheus " + garbage.URL + `/api/v1/query_range: query "up": not a Prometheus API answer: answer (byte 1)`},
		{name: "pull unreachable", args: append([]string{"collect", "--from", "prometheus=" + closed, "--query", "up", "--attempts", "2", "--timeout", "1s"}, window...), code: exitFailure, inStderr: "unreachable after 2 attempts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name != "no out" {
				args = append(args, "--out", filepath.Join(t.TempDir(), "ds"))
			}
			code, stdout, stderr := runCascade(t, "", args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			require.Contains(t, stdout, tc.inStdout)
			require.Contains(t, stderr, tc.inStderr)
		})
	}
}

// TestCollectSummaryMarkdown: collect's summary in Markdown is its table
// line for line: the labelled lines a list, the inputs a whole table.
func TestCollectSummaryMarkdown(t *testing.T) {
	prom := promServer(t, false)
	pull := func(output string) string {
		out := filepath.Join(t.TempDir(), "ds")
		code, stdout, stderr := runCascade(t, "", "collect", "--out", out, "-o", output, "--from", "prometheus="+prom.URL,
			"--query", "up", "--start", "2026-12-02T11:48:00Z", "--end", "2026-12-02T11:49:00Z", "--step", "1s")
		require.Equal(t, exitOK, code, stderr)
		return strings.ReplaceAll(stdout, out, "DS")
	}
	table, md := pull("table"), pull("markdown")
	require.Equal(t, 1, testutil.MarkdownTables(t, md))
	require.Contains(t, md, "- **dataset**: DS\n\n| INPUT | FORMAT | SPANS | SAMPLES | SKIPPED |\n|---|---|---|---|---|\n"+
		"| DS.collect/00000001.seg | collect-segment | 0 | 61 | 0 |\n")
	labelled := 0
	for _, line := range strings.Split(table, "\n") {
		label, value, ok := strings.Cut(line, "  ")
		if !ok || strings.ToUpper(line) == line || strings.HasPrefix(line, "DS.collect") {
			continue // not a labelled line: the input table's
		}
		require.Contains(t, md, "- **"+label+"**: "+strings.TrimSpace(value)+"\n")
		labelled++
	}
	require.Equal(t, 17, labelled, table)
}

// TestCollectAddsAndFinalizes pulls twice into one dataset, then finalizes
// with nothing left to add.
func TestCollectAddsAndFinalizes(t *testing.T) {
	prom := promServer(t, false)
	out := filepath.Join(t.TempDir(), "ds")
	pull := func(start, end string) map[string]any {
		code, stdout, stderr := runCascade(t, "", "collect", "--out", out, "-o", "json", "--from", "prometheus="+prom.URL,
			"--query", "up", "--start", start, "--end", end, "--step", "10s")
		require.Equal(t, exitOK, code, stderr)
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		return res
	}
	pull("2026-12-02T11:00:00Z", "2026-12-02T11:01:00Z")
	res := pull("2026-12-02T11:00:30Z", "2026-12-02T11:02:00Z")
	sum := res["summary"].(map[string]any)
	require.EqualValues(t, 13, sum["samples"], "11:00:00 to 11:02:00 every 10s")
	require.EqualValues(t, 4, sum["duplicate_samples"], "11:00:30 to 11:01:00 read twice")
	require.EqualValues(t, 10, res["pull"].(map[string]any)["samples"])

	code, stdout, stderr := runCascade(t, "", "collect", "--out", out, "--finalize")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "nothing to add")
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "now", want: now},
		{in: "now-1h30m", want: now.Add(-90 * time.Minute)},
		{in: "-15m", want: now.Add(-15 * time.Minute)},
		{in: "2026-12-02T11:48:17.5Z", want: time.Date(2026, 12, 2, 11, 48, 17, 5e8, time.UTC)},
		{in: "2026-12-02", want: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		{in: "1796212097", want: time.Unix(1796212097, 0).UTC()},
		{in: "1796212097.25", want: time.Unix(1796212097, 25e7).UTC()},
		{in: "now-soon", err: `"soon" is not a duration`},
		{in: "tomorrow", err: "want RFC 3339"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTime(tc.in, now)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.True(t, tc.want.Equal(got), "got %s", got)
		})
	}
}

func TestSizeFlag(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		str  string
		err  bool
	}{
		{in: "16MiB", want: 16 << 20, str: "16MiB"},
		{in: "64K", want: 64 << 10, str: "64KiB"},
		{in: "1G", want: 1 << 30, str: "1GiB"},
		{in: "1000", want: 1000, str: "1000"},
		{in: "512B", want: 512, str: "512"},
		{in: "0", err: true},
		{in: "-1MiB", err: true},
		{in: "big", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var s sizeFlag
			err := s.Set(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, int64(s))
			require.Equal(t, tc.str, s.String())
		})
	}
}
