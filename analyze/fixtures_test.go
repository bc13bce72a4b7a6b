package analyze

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
)

// reportFixtures are the analyses the report package renders in its
// tests: report.json of `cascade analyze` on the bundled captures, with
// small settings.
var reportFixtures = []struct {
	name string
	cfg  func(out string) Config
}{
	// HotROD: six services, mysql serialised behind a lock, redis
	// retries, a closed load; two numeric axes, so the fit draws a loss
	// plane.
	{"hotrod", func(out string) Config {
		c := DefaultConfig()
		c.Inputs, c.Out = []string{"../testdata/hotrod-baseline/traces-otlp.json.gz"}, out
		c.Fit.Grid, c.Fit.Holdout = "p=0:1:0.25,k=0:2:0.5,theta=0.8|1.2", 2
		c.Rank.Seeds, c.Rank.Duration, c.Rank.CapacityPoints = 3, 20*time.Second, 6
		c.NoIncident, c.MinRoots = true, 0
		return c
	}},
	// OnlineBoutique with currencyservice's CPU contention (Nezha): ten
	// services, an incident with its origin and path; one numeric axis,
	// so the fit has no plane and the profiles are drawn instead.
	{"boutique", func(out string) Config {
		c := DefaultConfig()
		c.Inputs, c.Out = []string{"../testdata/nezha-onlineboutique/trace/05_19_trace.csv.gz",
			"../testdata/nezha-onlineboutique/trace/05_20_trace.csv.gz"}, out
		c.Fit.Grid, c.Fit.Holdout = "k=0:2:0.25,tier=p50|p95|p99", 2
		c.Rank.Seeds, c.Rank.Duration, c.Rank.CapacityPoints = 3, 10*time.Second, 6
		c.Incident.Window, c.Incident.Seeds, c.Incident.Duration = 5*time.Second, 2, 5*time.Second
		c.MinRoots = 0
		return c
	}},
}

// TestReportFixtures holds report's fixtures equal to what analyze writes
// now; -update rewrites them.
func TestReportFixtures(t *testing.T) {
	for _, f := range reportFixtures {
		t.Run(f.name, func(t *testing.T) {
			out := t.TempDir()
			_, err := Run(context.Background(), f.cfg(out))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(out, JSONFile))
			require.NoError(t, err)
			path := filepath.Join("..", "report", "testdata", "analysis-"+f.name+".json")
			if testutil.Updating() {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "%s is not what analyze writes now: run go test ./analyze -run TestReportFixtures -update, then go test ./report -update", path)
		})
	}
}
