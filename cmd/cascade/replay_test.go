package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/internal/testutil"
	"cascade/replay"
)

const seed000Model = "../../testdata/replay/seed000.json"

// runReplay runs `cascade replay ARGS…` in process.
func runReplay(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"replay"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestReplayGolden(t *testing.T) {
	// The golden file lives with the replay test data:
	// testdata/replay/cli-seed000-seed1.golden at the repository root.
	code, out, stderr := runReplay(t, seed000Model, "--seed", "1", "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	testutil.Golden(t, filepath.Join("..", "..", "..", "testdata", "replay", "cli-seed000-seed1"), []byte(out))
	require.Contains(t, out, `"seed": 1,`)
}

func TestReplayByteIdentical(t *testing.T) {
	for _, args := range [][]string{
		{seed000Model, "--seed", "7"},
		{seed000Model, "--seeds", "3", "--duration", "5s", "--output", "json"},
		{seed000Model, "--seeds", "3", "--duration", "5s", "--parallel", "1"},
	} {
		_, a, _ := runReplay(t, args...)
		_, b, _ := runReplay(t, args...)
		require.Equal(t, a, b, "%v", args)
	}
	_, par1, _ := runReplay(t, seed000Model, "--seeds", "4", "--duration", "5s", "--parallel", "1", "-o", "json")
	_, par4, _ := runReplay(t, seed000Model, "--seeds", "4", "--duration", "5s", "--parallel", "4", "-o", "json")
	require.Equal(t, par1, par4)
}

func TestReplayTable(t *testing.T) {
	code, out, stderr := runReplay(t, seed000Model, "--seed", "3", "--duration", "10s", "--arrivals", "0.12/ms")
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"seed      3\n", "goodput", "zombie share", "server", "collapse", "saturated or failing"} {
		require.Contains(t, out, want)
	}
	// The glossary's words, not the model's (issue 39).
	require.NotContains(t, out, "infected")
	code, out, _ = runReplay(t, seed000Model, "--seeds", "3", "--duration", "5s")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "seeds       1 to 3 (3)")
	require.Contains(t, out, "success rate")
}

func TestReplayScenarioAndFlags(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "cancel.yaml")
	require.NoError(t, os.WriteFile(scen, []byte("name: cancel\nnodes:\n  server: {deadline_propagation: true}\n"), 0o644))
	code, out, stderr := runReplay(t, seed000Model, "--scenario", scen, "--set", "entry.uplink.retry=null",
		"--arrivals", "120", "--duration", "20s", "--surge", "1.5,5s,5s", "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"scenario": "cancel + entry.uplink.retry=null"`)
	require.Contains(t, out, `"cancelled": `)

	code, _, stderr = runReplay(t, seed000Model, "--arrivals", "closed:20,50ms", "--duration", "5s")
	require.Equal(t, exitOK, code, stderr)
}

func TestReplayUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", nil, "exactly one MODEL"},
		{"bad output", []string{seed000Model, "-o", "xml"}, "--output"},
		{"bad set", []string{seed000Model, "--set", "node.nosuch.replicas=2"}, "--set node.nosuch.replicas=2: no node nosuch (nodes: downlink, server, uplink)"},
		{"misspelt set", []string{seed000Model, "--set", "node.servr.replicas=2"}, "--set node.servr.replicas=2: no node servr; did you mean server?"},
		{"set of the wrong type", []string{seed000Model, "--set", "edge.server->downlink.retry.max_attempts=two"}, "--set edge.server->downlink.retry.max_attempts=two: want an integer"},
		{"bad arrivals", []string{seed000Model, "--arrivals", "lots"}, "--arrivals"},
		{"observed without data", []string{seed000Model, "--arrivals", "observed"}, "--dataset"},
		{"bad surge", []string{seed000Model, "--surge", "2,10s"}, "--surge"},
		{"bad tick", []string{seed000Model, "--tick", "0s"}, "tick"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runReplay(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
	code, _, stderr := runReplay(t, "/nonexistent/model.json")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "model.json")
}

func TestReplayObservedArrivals(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	var out, errb bytes.Buffer
	code := run([]string{"ingest", "../../testdata/hotrod-baseline/sample-trace-otlp.json", "--out", ds}, strings.NewReader(""), &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	model := filepath.Join(dir, "model.json")
	require.NoError(t, os.WriteFile(model, []byte(`{"version": 1,
  "entries": [{"node": "frontend", "rate_per_sec": 1, "share": 1}],
  "nodes": [{"name": "frontend", "replicas": 1, "concurrency": 0,
             "service_ms": {"kind": "const", "value": 5}, "overload": {"base": 0, "slope": 0, "threshold": 0}}],
  "edges": []}`), 0o644))
	code, stdout, stderr := runReplay(t, model, "--arrivals", "observed", "--dataset", ds, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, `"roots": 1,`, "the sample holds one trace, so one root request")
}

// parsedTable is the comparison table of `cascade replay`'s text output:
// its header's cells and, by metric, each row's cells.
type parsedTable struct {
	header []string
	labels []string
	rows   map[string][]string
}

// parseCompareTable reads the table that starts at the line whose first
// cell is "metric": cells are separated by two spaces or more.
func parseCompareTable(t *testing.T, out string) parsedTable {
	t.Helper()
	split := regexp.MustCompile(`\s{2,}`)
	var ct parsedTable
	in := false
	for _, line := range strings.Split(out, "\n") {
		cells := split.Split(strings.TrimSpace(line), -1)
		switch {
		case !in && cells[0] == "metric":
			in, ct.header, ct.rows = true, cells, map[string][]string{}
		case in && strings.TrimSpace(line) == "":
			return ct
		case in:
			require.Len(t, cells, len(ct.header), "row %q", line)
			ct.labels = append(ct.labels, cells[0])
			ct.rows[cells[0]] = cells
		}
	}
	require.True(t, in, "no comparison table in\n%s", out)
	return ct
}

// cellNumber reads the number a cell starts with ("1,461 ms", "+0.25 pp
// [-0.10, +0.60]", "99.52%").
func cellNumber(t *testing.T, cell string) float64 {
	t.Helper()
	m := regexp.MustCompile(`^[+-]?[\d,]+(\.\d+)?`).FindString(cell)
	require.NotEmpty(t, m, "no number in %q", cell)
	v, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	require.NoError(t, err)
	return v
}

// seed000Rows are the comparison table's rows for a model without flows.
var seed000Rows = []string{"offered", "success rate", "goodput", "unfinished", "backlog growth", "latency p50",
	"latency p95", "latency p99", "amplification", "retry share", "zombie share", "rejected share"}

// TestReplayCompare: with a what-if (--set or --scenario) replay prints
// one table, the same for one seed or many: the capture's figures, the
// baseline (the model as it is, on the same seeds), the what-if and the
// paired difference with its 95% interval, every cell with its unit.
func TestReplayCompare(t *testing.T) {
	dir := t.TempDir()
	hotrod := filepath.Join(dir, "hotrod.json")
	code, _, stderr := runCLI(t, "graph", hotrodOTLP, "--out", hotrod)
	require.Equal(t, exitOK, code, stderr)
	scen := filepath.Join(dir, "noretry.yaml")
	require.NoError(t, os.WriteFile(scen, []byte("name: noretry\nentries:\n  uplink: {retry: null}\n"), 0o644))

	storm := []string{seed000Model, "--arrivals", "120", "--duration", "5s"}
	whatIfOne := []string{"metric", "observed", "baseline", "what-if", "Δ what-if − baseline (one seed: no interval)"}
	whatIfMany := []string{"metric", "observed", "baseline", "what-if", "Δ what-if − baseline [95%]"}
	plain := []string{"metric", "observed", "replayed", "95% interval"}
	unit := regexp.MustCompile(`^-$|^[+-]?[\d,]+(\.\d+)? (ms|req/s|req|calls/root|pp)\b|^[\d.]+%|^\[`)
	tests := []struct {
		name   string
		args   []string
		header []string
		rows   []string
		// want maps a row to a pattern of its cells after the label,
		// joined by " | ".
		want map[string]string
	}{
		{name: "what-if, one seed", args: append(slices.Clone(storm), "--seed", "2", "--set", "entry.uplink.retry=null"),
			header: whatIfOne, rows: seed000Rows,
			want: map[string]string{
				"success rate":  `^- \| [\d.]+% \| [\d.]+% \| [+-][\d.]+ pp$`,
				"latency p50":   `^- \| [\d,.]+ ms \| [\d,.]+ ms \| [+-][\d,.]+ ms$`,
				"amplification": `^- \| [\d.]+ calls/root \| [\d.]+ calls/root \| [+-][\d.]+ calls/root$`,
			}},
		{name: "what-if, three seeds", args: append(slices.Clone(storm), "--seeds", "3", "--scenario", scen),
			header: whatIfMany, rows: seed000Rows,
			want: map[string]string{
				"success rate": `^- \| [\d.]+% \| [\d.]+% \| [+-][\d.]+ pp \[[+-][\d.]+, [+-][\d.]+\]$`,
				"latency p99":  `^- \| [\d,.]+ ms \| [\d,.]+ ms \| [+-][\d,.]+ ms \[[+-][\d,.]+, [+-][\d,.]+\]$`,
			}},
		{name: "no what-if, one seed", args: append(slices.Clone(storm), "--seed", "2"), header: plain, rows: seed000Rows,
			want: map[string]string{"success rate": `^- \| [\d.]+% \| -$`, "unfinished": `^- \| [\d,]+ req \| -$`}},
		{name: "no what-if, three seeds", args: append(slices.Clone(storm), "--seeds", "3"), header: plain, rows: seed000Rows,
			want: map[string]string{"latency p50": `^- \| [\d,.]+ ms \| \[[\d,.]+, [\d,.]+\] ms$`}},
		{name: "HotROD, retries cut: nothing succeeds", args: []string{hotrod, "--seed", "1", "--set", "edge.driver->redis-manual.retry.max_attempts=1"},
			header: whatIfOne,
			want: map[string]string{
				"offered":      `^3\.33 req/s \| [\d.]+ req/s \| [\d.]+ req/s \| [+-][\d.]+ req/s$`,
				"success rate": `^100\.00% \| 100\.00% \| 0\.00% \| -100\.00 pp$`,
				"latency p50":  `^1,461 ms \| 1,\d{3} ms \| - \| -$`,
				"latency p99":  `^1,677 ms \| 1,\d{3} ms \| - \| -$`,
				"retry share":  `^- \| [\d.]+% \| 0\.00% \| -[\d.]+ pp$`,
			}},
		{name: "HotROD, replayed against observed", args: []string{hotrod, "--seeds", "2"}, header: plain,
			want: map[string]string{
				"success rate": `^100\.00% \| 100\.00% \| \[100\.00%, 100\.00%\]$`,
				"latency p95":  `^1,583 ms \| 1,\d{3} ms \| \[1,\d{3}, 1,\d{3}\] ms$`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runReplay(t, tc.args...)
			require.Equal(t, exitOK, code, stderr)
			require.NotContains(t, out, "e+", "a number in exponent form")
			ct := parseCompareTable(t, out)
			require.Equal(t, tc.header, ct.header)
			if tc.rows != nil {
				require.Equal(t, tc.rows, ct.labels)
			}
			for _, label := range ct.labels {
				for _, cell := range ct.rows[label][1:] {
					require.Regexp(t, unit, cell, "row %s: a cell without its unit", label)
				}
			}
			for label, pattern := range tc.want {
				require.Contains(t, ct.rows, label)
				require.Regexp(t, pattern, strings.Join(ct.rows[label][1:], " | "), "row %s", label)
			}
			if len(tc.header) == 5 {
				// The baseline is the model as it is, on the same seeds:
				// the replayed column of the same command without the
				// what-if.
				var base []string
				for i := 0; i < len(tc.args); i++ {
					if a := tc.args[i]; a == "--set" || a == "--scenario" {
						i++
						continue
					}
					base = append(base, tc.args[i])
				}
				_, bout, _ := runReplay(t, base...)
				bt := parseCompareTable(t, bout)
				for _, label := range ct.labels {
					require.Equal(t, bt.rows[label][2], ct.rows[label][2], "row %s: baseline", label)
				}
			}
			if slices.Equal(tc.header, whatIfOne) {
				// Δ is what-if − baseline.
				for _, label := range []string{"success rate", "goodput", "amplification"} {
					r := ct.rows[label]
					b, w, d := cellNumber(t, r[2]), cellNumber(t, r[3]), cellNumber(t, r[4])
					require.InDelta(t, w-b, d, 0.011, "row %s: %v", label, r)
				}
			}
			if slices.Equal(tc.header, whatIfMany) {
				for _, label := range ct.labels {
					d := ct.rows[label][4]
					m := regexp.MustCompile(`^(\S+) .*\[(\S+), (\S+)\]$`).FindStringSubmatch(d)
					require.NotNil(t, m, "row %s: %q has no interval", label, d)
					mean, lo, hi := cellNumber(t, m[1]), cellNumber(t, m[2]), cellNumber(t, m[3])
					require.True(t, lo <= mean && mean <= hi, "row %s: %q", label, d)
				}
			}
		})
	}
}

// TestReplayCompareGolden holds the what-if table, text and Markdown,
// of the seed-000 storm without client retries.
func TestReplayCompareGolden(t *testing.T) {
	args := []string{seed000Model, "--arrivals", "120", "--duration", "5s", "--set", "entry.uplink.retry=null"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"replay-whatif-seed000-seeds3", []string{"--seeds", "3"}},
		{"replay-whatif-seed000-seed1-markdown", []string{"--seed", "1", "-o", "markdown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runReplay(t, append(slices.Clone(args), tc.args...)...)
			require.Equal(t, exitOK, code, stderr)
			testutil.Golden(t, tc.name, []byte(out))
		})
	}
	_, md, _ := runReplay(t, append(slices.Clone(args), "--seeds", "2", "-o", "markdown")...)
	require.Contains(t, md, "| METRIC | OBSERVED | BASELINE | WHAT-IF | Δ WHAT-IF − BASELINE [95%] |\n|---|---|---|---|---|\n| offered | - | ")
}

// TestReplayCompareJSON: the JSON keeps its fields and adds the
// comparison: the capture's figures, the baseline's and the what-if's
// summaries and the paired differences, with intervals from two seeds.
func TestReplayCompareJSON(t *testing.T) {
	type doc struct {
		Seed       *uint64          `json:"seed"`
		Scenario   string           `json:"scenario"`
		Summary    *replay.Summary  `json:"summary"`
		Runs       []map[string]any `json:"runs"`
		Comparison *struct {
			Observed map[string]float64 `json:"observed"`
			replay.Comparison
		} `json:"comparison"`
	}
	decode := func(args ...string) doc {
		t.Helper()
		code, out, stderr := runReplay(t, append(args, "-o", "json")...)
		require.Equal(t, exitOK, code, stderr)
		var d doc
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		return d
	}
	storm := []string{seed000Model, "--arrivals", "120", "--duration", "5s"}

	// Three seeds: the summary and runs of the what-if as before.
	d := decode(append(slices.Clone(storm), "--seeds", "3", "--set", "entry.uplink.retry=null")...)
	require.NotNil(t, d.Summary)
	require.Len(t, d.Runs, 3)
	require.Equal(t, "baseline + entry.uplink.retry=null", d.Summary.Scenario)
	c := d.Comparison
	require.NotNil(t, c)
	require.Empty(t, c.Observed, "seed 000 was not built from a capture")
	require.Equal(t, []uint64{1, 2, 3}, c.Seeds)
	require.Equal(t, "baseline", c.Baseline.Scenario)
	require.Equal(t, d.Summary.Scenario, c.WhatIf.Scenario)
	require.Equal(t, d.Summary.Metric("success_rate"), c.WhatIf.Metric("success_rate"))
	base := decode(append(slices.Clone(storm), "--seeds", "3")...)
	require.Equal(t, base.Summary.Metric("success_rate"), c.Baseline.Metric("success_rate"))
	for _, name := range []string{"success_rate", "goodput_per_sec", "latency_p99_ms", "amplification"} {
		delta := c.Delta(name)
		require.Equal(t, 3, delta.Pairs, name)
		lo, hi, ok := delta.Interval()
		require.True(t, ok, name)
		require.LessOrEqual(t, lo, delta.Mean, name)
		require.GreaterOrEqual(t, hi, delta.Mean, name)
		require.InDelta(t, c.WhatIf.Metric(name).Mean-c.Baseline.Metric(name).Mean, delta.Mean, 1e-3, name)
	}

	// One seed: the result as before, a difference without an interval.
	d = decode(append(slices.Clone(storm), "--seed", "4", "--set", "entry.uplink.retry=null")...)
	require.NotNil(t, d.Seed)
	require.EqualValues(t, 4, *d.Seed)
	require.Equal(t, "baseline + entry.uplink.retry=null", d.Scenario)
	require.NotNil(t, d.Comparison)
	_, _, ok := d.Comparison.Delta("success_rate").Interval()
	require.False(t, ok, "one seed gives no interval")
	require.Equal(t, 1, d.Comparison.Delta("success_rate").Pairs)

	// No what-if and no observations: no comparison (the golden holds
	// the rest).
	require.Nil(t, decode(append(slices.Clone(storm), "--seed", "4")...).Comparison)
}

// TestReplayCompareUndefined: a latency quantile of a replay in which
// nothing succeeded is no value, not 0: left out of the mean and of the
// paired differences; the differences' interval is Student's t over the
// pairs.
func TestReplayCompareUndefined(t *testing.T) {
	res := func(seed uint64, succeeded int64, p50 float64) *replay.Result {
		r := &replay.Result{}
		r.Seed, r.Roots, r.Succeeded, r.LatencyP50MS = seed, 10, succeeded, p50
		r.SuccessRate = float64(succeeded) / 10
		return r
	}
	base := []*replay.Result{res(1, 10, 100), res(2, 10, 110), res(3, 10, 120)}
	what := []*replay.Result{res(1, 10, 110), res(2, 0, 0), res(3, 10, 140)}
	c, err := replay.Compare(base, what)
	require.NoError(t, err)
	p50 := c.WhatIf.Metric("latency_p50_ms")
	require.Equal(t, 1, p50.Undefined)
	require.InDelta(t, 125, p50.Mean, 1e-9, "the mean of 110 and 140, not of 110, 0 and 140")
	d := c.Delta("latency_p50_ms")
	require.Equal(t, 2, d.Pairs)
	require.InDelta(t, 15, d.Mean, 1e-9)
	lo, hi, ok := d.Interval()
	require.True(t, ok)
	// Differences 10 and 20: standard deviation 7.07, t(1) 12.706.
	require.InDelta(t, 15-63.531, lo, 1e-3)
	require.InDelta(t, 15+63.531, hi, 1e-3)
	require.Equal(t, 3, c.Delta("success_rate").Pairs)

	// All seeds without a success: no value at all.
	c, err = replay.Compare(nil, []*replay.Result{res(1, 0, 0)})
	require.NoError(t, err)
	require.Equal(t, 1, c.WhatIf.Metric("latency_p50_ms").Undefined)
	require.Nil(t, c.Baseline)
	require.Empty(t, c.Deltas)

	_, err = replay.Compare(base[:2], what)
	require.Error(t, err)
	_, err = replay.Compare(base, []*replay.Result{res(1, 1, 1), res(2, 1, 1), res(4, 1, 1)})
	require.ErrorContains(t, err, "seed")
}

// TestTrafficUsersOverClosedLoop: --set traffic.users on a model read as
// closed-loop clients is that many clients with the capture's think
// time (issue 39: it was taken as open Poisson load and the number
// ignored); on an open model it is an error, not a setting with no
// effect.
func TestTrafficUsersOverClosedLoop(t *testing.T) {
	closed := &cascade.Traffic{Kind: cascade.TrafficClosed, Users: 5, ThinkMS: 48}
	tests := []struct {
		name     string
		in       cascade.Traffic
		observed *cascade.Traffic
		want     cascade.Traffic
		note     string
		err      string
	}{
		{"users over a closed model", cascade.Traffic{Users: 10}, closed,
			cascade.Traffic{Kind: cascade.TrafficClosed, Users: 10, ThinkMS: 48}, "10 closed-loop clients instead of the capture's 5", ""},
		{"users and think", cascade.Traffic{Users: 10, ThinkMS: 5}, closed,
			cascade.Traffic{Kind: cascade.TrafficClosed, Users: 10, ThinkMS: 5}, "thinking 5 ms", ""},
		{"kind closed without think", cascade.Traffic{Kind: cascade.TrafficClosed, Users: 8}, closed,
			cascade.Traffic{Kind: cascade.TrafficClosed, Users: 8, ThinkMS: 48}, "the capture's think time, 48 ms", ""},
		{"users over an open model", cascade.Traffic{Users: 10}, nil, cascade.Traffic{Users: 10}, "", "has no effect on this model's open (Poisson) load"},
		{"a rate is left alone", cascade.Traffic{RatePerSec: 7}, closed, cascade.Traffic{RatePerSec: 7}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			note, err := closedOver(&got, tc.observed)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			if tc.note == "" {
				require.Empty(t, note)
			} else {
				require.Contains(t, note, tc.note)
			}
		})
	}
	// The command: an open model refuses users alone, exit 2.
	var out, errb bytes.Buffer
	code := run([]string{"replay", seed000Model, "--set", "traffic.users=10"}, strings.NewReader(""), &out, &errb)
	require.Equal(t, exitUsage, code, errb.String())
	require.Contains(t, errb.String(), "traffic.users=10 has no effect")
}
