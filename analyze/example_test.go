package analyze_test

import (
	"context"
	"fmt"
	"os"

	"cascade/analyze"
)

// Analyse the bundled HotROD capture end to end and look at what was
// written.
func ExampleRun() {
	out, err := os.MkdirTemp("", "cascade-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(out)
	cfg := analyze.DefaultConfig()
	cfg.Inputs = []string{"../testdata/hotrod-baseline/traces-otlp.json.gz"}
	cfg.Out = out
	cfg.NoFit = true // quicker; the fit calibrates the model first
	cfg.Rank.Seeds, cfg.Rank.Duration, cfg.MinRoots = 2, 10e9, 0
	a, err := analyze.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Dataset.Services)
	fmt.Println(a.Files)
	// Output:
	// [customer driver frontend mysql redis-manual route]
	// [dataset/spans.parquet dataset/metrics.parquet model.json report.json report.md report.html]
}
