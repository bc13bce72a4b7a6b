package analyze

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRun analyses the bundled HotROD capture end to end with the
// defaults of `cascade analyze` (the README's main command) and reports
// spans analysed per second of wall time.
func BenchmarkRun(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Inputs = []string{filepath.Join(hotrod, "traces-otlp.json.gz")}
	cfg.Metrics = []string{filepath.Join(hotrod, "prometheus")}
	b.ReportAllocs()
	var spans int64
	for b.Loop() {
		cfg.Out = filepath.Join(b.TempDir(), "report")
		a, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		spans += a.Dataset.Spans
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkRunIncident runs the boutique fixture (OnlineBoutique with
// currencyservice's CPU contention: an incident of five changed nodes)
// with the incident pass's replay check off and on, to give the check's
// cost: four replays of its faults and one of the baseline, over the
// incident's seeds.
func BenchmarkRunIncident(b *testing.B) {
	for _, verify := range []int{0, 5} {
		b.Run(fmt.Sprintf("verify=%d", verify), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Inputs = []string{"../testdata/nezha-onlineboutique/trace/05_19_trace.csv.gz",
				"../testdata/nezha-onlineboutique/trace/05_20_trace.csv.gz"}
			cfg.Fit.Grid, cfg.Fit.Holdout = "k=0:2:0.25,tier=p50|p95|p99", 2
			cfg.Rank.Seeds, cfg.Rank.Duration, cfg.Rank.CapacityPoints = 3, 10*time.Second, 6
			cfg.Incident.Window, cfg.Incident.Seeds, cfg.Incident.Duration = 5*time.Second, 2, 5*time.Second
			cfg.Incident.Verify, cfg.MinRoots = verify, 0
			b.ReportAllocs()
			var spans int64
			for b.Loop() {
				cfg.Out = filepath.Join(b.TempDir(), "report")
				a, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				spans += a.Dataset.Spans
			}
			b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
