// Command gen writes the scenarios of cascade/internal/brokersim: for each
// NAME, NAME.json (the traces, OTLP JSON), NAME.zipkin.json (the same
// traces as Brave reports them to Zipkin), NAME.prom (the broker's
// scrapes) and NAME.truth.json (what the simulator knows), to try the CLI
// on:
//
//	go run ./internal/brokersim/gen -out /tmp/brokersim
//	cascade ingest --traces /tmp/brokersim/dead-letter.json --metrics /tmp/brokersim/dead-letter.prom --out /tmp/ds
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"cascade/internal/brokersim"
)

func main() {
	out := flag.String("out", ".", "directory to write into")
	seed := flag.Uint64("seed", 1, "seed of every draw")
	flag.Parse()
	if err := run(*out, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string, seed uint64) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, name := range brokersim.Names() {
		c, err := brokersim.Generate(brokersim.Config{Scenario: name, Seed: seed})
		if err != nil {
			return err
		}
		t, err := json.MarshalIndent(c.Truth, "", "  ")
		if err != nil {
			return err
		}
		z, err := brokersim.Generate(brokersim.Config{Scenario: name, Seed: seed, Format: brokersim.ZipkinBrave})
		if err != nil {
			return err
		}
		files := map[string][]byte{".json": c.Traces, ".zipkin.json": z.Traces, ".prom": c.Metrics, ".truth.json": append(t, '\n')}
		for ext, data := range files {
			if err := os.WriteFile(filepath.Join(out, name+ext), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
