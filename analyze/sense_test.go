package analyze

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
	"cascade/rank"
)

// TestHotRODRankingMakesSense runs the README's main command (analyze on
// the bundled HotROD capture and its metrics, default settings) and holds
// the ranking to sense: one mysql capacity change (a second replica and
// a second pool slot are the same slots for a single replica), no
// batching of a fan-out below 2, and a capacity section whose table,
// "Collapse:" line and per-point seed counts agree, in the JSON and in
// report.md; and report.md's opening (the paragraph in plain words and
// the traces to open) to testdata/readme-opening.md.golden.
func TestHotRODRankingMakesSense(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole analysis")
	}
	out := t.TempDir()
	cfg := DefaultConfig()
	cfg.Inputs = []string{"../testdata/hotrod-baseline/traces-otlp.json.gz"}
	cfg.Metrics = []string{"../testdata/hotrod-baseline/prometheus"}
	cfg.Out = out
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	r := a.Rank

	capacity := 0
	for _, row := range r.Rows {
		c := row.Candidate
		if strings.HasPrefix(c.Description, "mysql") && (c.Kind == rank.KindPool || c.Kind == rank.KindReplicas) {
			capacity++
		}
		if c.Kind == rank.KindBatching {
			for key := range c.Scenario.Edges {
				from, to, _ := strings.Cut(key, "->")
				for _, e := range a.Model.Edges {
					if e.From == from && e.To == to {
						require.GreaterOrEqual(t, e.Observed.FanOutMean, 2.0, "%s batches a fan-out of %g", c.Name, e.Observed.FanOutMean)
					}
				}
			}
		}
	}
	require.Equal(t, 1, capacity, "one grouped mysql capacity change")
	// The lock is the only thing worth changing: no other candidate wins
	// by more than the baseline's seed-to-seed spread.
	for _, row := range r.Rows {
		if row.Verdict == rank.Win {
			require.Contains(t, []string{rank.KindPool, rank.KindReplicas}, row.Candidate.Kind, "%s wins by %g (noise %g)",
				row.Candidate.Description, row.Gain, r.NoiseFloor)
		}
	}
	require.Equal(t, 1, r.Rows[0].Rank)
	require.Contains(t, r.Rows[0].Candidate.Description, "mysql", "the lock is the bottleneck")

	// The capacity section agrees with itself.
	c := r.Capacity
	require.NotNil(t, c)
	seedsCollapsed := 0
	for _, p := range c.Points {
		seedsCollapsed += p.Collapsed
	}
	if c.CollapsePerSec == 0 {
		if seedsCollapsed > 0 {
			require.Contains(t, c.Collapse, "seeds collapsed", "the line must say some seeds collapsed")
		} else {
			require.Equal(t, "none within the sweep", c.Collapse)
		}
	} else {
		var at *rank.CapacityPoint
		for i := range c.Points {
			if p := &c.Points[i]; at == nil && p.Offered.Mean >= c.CollapsePerSec-0.001 {
				at = p
			}
		}
		require.NotNil(t, at)
		require.Positive(t, at.Collapsed, "collapse at %g/s with no seed collapsed there", c.CollapsePerSec)
	}

	// report.md opens with the paragraph in plain words and the traces
	// to open, as the golden has them.
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	opening, _, ok := strings.Cut(string(md), "\n## ")
	require.True(t, ok, "report.md has no section")
	testutil.Golden(t, "readme-opening.md", []byte(opening+"\n"))

	// report.md says the same: the Collapse line is the curve's, and the
	// table's Collapsed column is the points' counts.
	f, err := os.Open(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	defer f.Close()
	var line string
	var column []int
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "- **Collapse:** "):
			line = strings.TrimPrefix(l, "- **Collapse:** ")
		case strings.HasPrefix(l, "| Load | Offered/s"):
			in = true
		case in && strings.HasPrefix(l, "| ×"):
			cells := strings.Split(l, "|")
			n, err := strconv.Atoi(strings.TrimSpace(cells[8]))
			require.NoError(t, err, l)
			column = append(column, n)
		case in && !strings.HasPrefix(l, "|"):
			in = false
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, c.Collapse, line)
	require.Len(t, column, len(c.Points))
	for i, p := range c.Points {
		require.Equal(t, p.Collapsed, column[i], "load ×%g", p.Factor)
	}
}
