package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/graph"
	"cascade/ingest"
	"cascade/internal/atomicfile"
)

// Flags of `cascade graph` (prefixed: other subcommands declare their own
// in this package).
const (
	graphFlagLevel      = "level"
	graphFlagOutput     = "output"
	graphFlagOut        = "out"
	graphFlagWindow     = "window"
	graphFlagResolution = "resolution"
	graphFlagMetrics    = "metrics"
	graphFlagFormat     = "format"
	graphFlagSeed       = "seed"
)

var errDatasetAndFiles = errors.New("give one dataset directory or raw source files, not both")

func newGraphCmd() *cobra.Command {
	cfg := graph.DefaultConfig()
	var (
		level, output, out, format string
		metrics                    []string
	)
	cmd := &cobra.Command{
		Use:   "graph DATASET|PATH...",
		Short: "Build the call graph and the uncalibrated model",
		Long: `graph reads a dataset (a directory holding spans.parquet, as ingest writes
it) or raw trace files, which it ingests on the fly into a temporary dataset,
and builds the directed call graph with the statistics the propagation model
needs: per node the request rate, exclusive-time tiers, error rate, in-flight
peak and capacity estimate; per edge the fan-out, parallelism, errors,
timeouts, retries, re-activation, backoff, propagation and latency.

It prints the graph as a table (edges with the worst amplifiers first), as
the model document (json), or as Graphviz DOT or Mermaid, and with -o writes
the model document (model.json) that fit and replay read. The document's
schema is in docs/model.md.`,
		Example: `  # the model of a dataset written by cascade ingest
  cascade graph /tmp/hotrod -o model.json

  # raw traces, ingested on the fly, at operation level, as Graphviz
  cascade graph testdata/hotrod-baseline/traces-otlp.json.gz --level operation --output dot | dot -Tsvg > hotrod.svg

  # Nezha span CSVs as a Mermaid flowchart
  cascade graph testdata/nezha-onlineboutique/trace --output mermaid`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("give a DATASET directory or trace files")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "json", "markdown", "dot", "mermaid"); err != nil {
				return err
			}
			var err error
			if cfg.Level, err = graph.ParseLevel(level); err != nil {
				return usageError{err}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			cfg.Dataset = strings.Join(args, " ")
			dir, cleanup, err := graphInput(cmd, args, metrics, format)
			if err != nil {
				return err
			}
			defer cleanup()
			res, err := graph.Build(cmd.Context(), cfg, spansOf(dir), samplesOf(dir))
			if errors.Is(err, graph.ErrNoSpans) {
				return noSpans(args, nil)
			}
			if err != nil {
				return err
			}
			data, err := cascade.EncodeModel(res.Model)
			if err != nil {
				return err
			}
			if out != "" {
				if err := writeFileAtomic(out, data); err != nil {
					return fmt.Errorf("write model: %w", err)
				}
			}
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				_, err = w.Write(data)
			case "dot":
				err = graph.WriteDOT(w, res.Model)
			case "mermaid":
				err = graph.WriteMermaid(w, res.Model)
			case "markdown":
				err = graph.WriteMarkdown(w, res)
			default:
				err = graph.WriteTable(w, res)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&level, graphFlagLevel, string(cfg.Level), "node granularity: service or operation")
	f.StringVar(&output, graphFlagOutput, "table", "what to print: table, json, markdown, dot or mermaid")
	f.StringVarP(&out, graphFlagOut, "o", "", "write the model document to this file (model.json)")
	f.DurationVar(&cfg.Window, graphFlagWindow, cfg.Window, "window of the per-node time series (request and error rate, in-flight)")
	f.DurationVar(&cfg.Resolution, graphFlagResolution, cfg.Resolution, "width of the bins in which in-flight requests are counted")
	f.Uint64Var(&cfg.Seed, graphFlagSeed, cfg.Seed, "seed of the reservoir sampling behind quantiles of large inputs")
	f.StringSliceVar(&metrics, graphFlagMetrics, nil, "metric files or directories to ingest with raw trace files (repeatable)")
	f.StringVar(&format, graphFlagFormat, "auto", "format of raw trace files: auto, otlp-json, otlp-proto, otlp-proto-framed, jaeger-json, zipkin-json, csv")
	cmd.RegisterFlagCompletionFunc(graphFlagOutput, fixedCompletions("table", "json", "markdown", "dot", "mermaid"))
	cmd.RegisterFlagCompletionFunc(graphFlagLevel, fixedCompletions(string(graph.LevelService), string(graph.LevelOperation)))
	cmd.RegisterFlagCompletionFunc(graphFlagFormat, fixedCompletions(formatNames(ingest.TraceFormats)...))
	return cmd
}

// isDataset reports whether path is a dataset directory.
func isDataset(path string) bool {
	info, err := os.Stat(filepath.Join(path, ingest.SpansFile))
	return err == nil && !info.IsDir()
}

// graphInput returns the dataset directory to read: args[0] when it is a
// dataset, else a temporary dataset ingested from args (removed by
// cleanup).
func graphInput(cmd *cobra.Command, args, metrics []string, format string) (dir string, cleanup func(), err error) {
	nop := func() {}
	datasets := 0
	for _, a := range args {
		if isDataset(a) {
			datasets++
		}
	}
	switch {
	case datasets == 1 && len(args) == 1:
		if len(metrics) > 0 {
			return "", nop, usageError{fmt.Errorf("--%s: a dataset holds its metrics; ingest them into it", graphFlagMetrics)}
		}
		return args[0], nop, nil
	case datasets > 0:
		return "", nop, usageError{errDatasetAndFiles}
	}
	icfg := ingest.DefaultConfig()
	if icfg.Format, err = ingest.ParseFormat(format, ingest.TraceFormats); err != nil {
		return "", nop, usageError{err}
	}
	tmp, err := os.MkdirTemp("", "cascade-graph-")
	if err != nil {
		return "", nop, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	icfg.Traces = args
	icfg.Metrics = metrics
	icfg.Out = filepath.Join(tmp, "dataset")
	icfg.Progress = progress(cmd.ErrOrStderr(), "ingest", "")
	sum, err := ingest.Run(cmd.Context(), icfg)
	if err != nil {
		cleanup()
		return "", nop, err
	}
	printWarnings(cmd.ErrOrStderr(), sum)
	if sum.Spans == 0 {
		cleanup()
		return "", nop, noSpans(args, sum)
	}
	return icfg.Out, cleanup, nil
}

func spansOf(dir string) graph.SpanSource {
	return func(fn func(*cascade.Span) error) error { return ingest.ReadSpans(dir, fn) }
}

// samplesOf reads the dataset's metrics, if it has any.
func samplesOf(dir string) graph.SampleSource {
	if _, err := os.Stat(filepath.Join(dir, ingest.MetricsFile)); err != nil {
		return nil
	}
	return func(fn func(*cascade.Sample) error) error { return ingest.ReadSamples(dir, fn) }
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so readers never see a half-written file.
func writeFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }
