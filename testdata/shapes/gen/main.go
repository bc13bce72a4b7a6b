// Command gen writes the fixture shapes of cascade/testdata/shapes as OTLP
// JSON files (or -format zipkin-brave, jaeger, nezha-csv) with their truth beside
// them, to try the CLI on:
//
//	go run ./testdata/shapes/gen -out /tmp/shapes
//	cascade graph /tmp/shapes/staggered-retries.json
//
// Each shape gives NAME.json (the capture), NAME.truth.json (what the
// generator knows) and NAME-slow-stock.json (the same load with stock's
// own work ×4 from the middle of the capture on).
//
// -shape, -traces and -rate write one shape, at that many root requests
// and that rate, for measuring the stages at scale (BENCHMARKS.md,
// "analyze at 1 M, 5 M and 20 M spans"):
//
//	go run ./testdata/shapes/gen -shape staggered-retries -traces 650000 -rate 100 -out /tmp/big
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cascade/testdata/shapes"
)

func main() {
	out := flag.String("out", ".", "directory to write into")
	seed := flag.Uint64("seed", 1, "seed of every draw")
	format := flag.String("format", shapes.OTLP, "how captures are written: otlp, zipkin-brave, jaeger or nezha-csv")
	shape := flag.String("shape", "", "write this shape only (default: every shape)")
	traces := flag.Int("traces", 0, "root requests of each capture (default: the shape's own)")
	rate := flag.Float64("rate", 0, "root requests per second (default: the shape's own)")
	flag.Parse()
	if err := run(*out, *seed, *format, *shape, *traces, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string, seed uint64, format, only string, traces int, rate float64) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if only != "" && !slices.Contains(shapes.Names(), only) {
		return fmt.Errorf("-shape %s: no such shape (%s)", only, strings.Join(shapes.Names(), ", "))
	}
	for _, name := range shapes.Names() {
		if !shapes.Writable(name, format) || (only != "" && name != only) {
			continue
		}
		for _, slow := range []string{"", "stock"} {
			data, truth, err := shapes.Generate(shapes.Config{Shape: name, Seed: seed, Slow: slow, Format: format, Traces: traces, Rate: rate})
			if err != nil {
				return err
			}
			base := name
			if slow != "" {
				base += "-slow-" + slow
			}
			ext := ".json"
			if format == shapes.NezhaCSV {
				ext = ".csv"
			}
			if err := os.WriteFile(filepath.Join(out, base+ext), data, 0o644); err != nil {
				return err
			}
			t, err := json.MarshalIndent(truth, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, base+".truth.json"), append(t, '\n'), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
