package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"cascade/ingest"
)

// Run ingests the HotROD sample trace (Jaeger api_v3 JSON) into a dataset.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "cascade-example")
	defer os.RemoveAll(dir)
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{"../testdata/hotrod-baseline/sample-trace-otlp.json"}
	cfg.Out = filepath.Join(dir, "dataset")
	sum, err := ingest.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Inputs[0].Format, sum.Spans, "spans", sum.Traces, "trace", sum.ErrorSpans, "errors")
	fmt.Println(sum.Services)
	// Output:
	// otlp-json 40 spans 1 trace 3 errors
	// [customer driver frontend mysql redis-manual route]
}
