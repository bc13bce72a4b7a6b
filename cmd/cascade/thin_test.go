package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// thinWarning is the line a one-trace, one-service capture gets on
// stderr (testdata/thin/one-trace.json: 13 spans of the service shop,
// written as the OpenTelemetry Collector's file exporter writes them,
// calling redis and an HTTP service it knows only by 127.0.0.1).
const thinWarning = "cascade: warning: thin data: 1 trace, 13 spans, 1 service, 1 root request; " +
	"the ranking needs at least 100 root requests; no change is called a win or worse\n"

// rankedRows reads the verdicts of a rank document's or an analysis's
// ranking.
type rankedRows struct {
	Rank struct {
		Basis *struct {
			Traces, Roots int64
			Services      int
			Thin          string
		} `json:"basis"`
		Rows []struct {
			Verdict string `json:"verdict"`
		} `json:"rows"`
		Set json.RawMessage `json:"set"`
	} `json:"rank"`
}

func (r *rankedRows) verdicts() map[string]int {
	n := map[string]int{}
	for _, row := range r.Rank.Rows {
		n[row.Verdict]++
	}
	return n
}

func TestThinData(t *testing.T) {
	dir := t.TempDir()
	// seed 000's retry storm, a model whose ranking has wins, stamped as
	// built from one trace.
	var m map[string]any
	data, err := os.ReadFile(seed000Model)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	m["source"] = map[string]any{"traces": 1, "spans": 13, "level": "service"}
	stamped, err := json.Marshal(m)
	require.NoError(t, err)
	thinModel := filepath.Join(dir, "seed000-one-trace.json")
	require.NoError(t, os.WriteFile(thinModel, stamped, 0o644))

	tests := []struct {
		name     string
		args     []string
		warning  string // the thin-data line on stderr, "" for none
		wins     bool   // whether some change wins
		services int    // the basis's services, 0 for no basis
	}{{
		name:     "one trace of one service, analysed",
		args:     []string{"analyze", "testdata/thin/one-trace.json", "--out", filepath.Join(dir, "one"), "--seeds", "2", "--duration", "10s", "-o", "json"},
		warning:  thinWarning,
		services: 1,
	}, {
		name: "a model that ranks wins, built by hand",
		args: append([]string{"rank", seed000Model, "-o", "json"}, quickRank...),
		wins: true,
	}, {
		name:     "the same model built from one trace",
		args:     append([]string{"rank", thinModel, "-o", "json"}, quickRank...),
		warning:  thinWarning, // seed 000 has one instrumented service
		services: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, exitOK, code, stderr)
			if tc.warning != "" {
				require.Contains(t, stderr, tc.warning)
			} else {
				require.NotContains(t, stderr, "thin data")
			}
			var doc rankedRows
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
			v := doc.verdicts()
			if tc.wins {
				require.Positive(t, v["win"], "%v", v)
			} else {
				require.Zero(t, v["win"], "%v", v)
				require.Zero(t, v["worse"], "%v", v)
				require.Empty(t, doc.Rank.Set, "no set of wins")
			}
			if tc.services == 0 {
				require.Nil(t, doc.Rank.Basis)
				return
			}
			require.NotNil(t, doc.Rank.Basis)
			require.Equal(t, int64(1), doc.Rank.Basis.Traces)
			require.Equal(t, tc.services, doc.Rank.Basis.Services)
			require.NotEmpty(t, doc.Rank.Basis.Thin)
		})
	}
}
