package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/collect"
	"cascade/dataset"
	"cascade/graph"
	"cascade/incident"
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
	graphFlagFrom       = "from"
	graphFlagStart      = "start"
	graphFlagEnd        = "end"
	graphFlagStep       = "step"
	graphFlagTimeout    = "timeout"
	graphFlagAttempts   = "attempts"
)

var errDatasetAndFiles = errors.New("give one dataset directory or raw source files, not both")

// graphOptions holds what the flags of `cascade graph` set.
type graphOptions struct {
	cfg                        graph.Config
	level, output, out, format string
	metrics                    []string
	from, start, end           string
	step, timeout              time.Duration
	attempts                   int
}

// newGraphCmd builds `cascade graph`: the call graph and its
// statistics, from spans or service-graph series, as a model.
func newGraphCmd() *cobra.Command {
	o := &graphOptions{cfg: graph.DefaultConfig()}
	pullDefaults := collect.DefaultConfig().Pull
	o.step, o.timeout = pullDefaults.Step, pullDefaults.Timeout
	o.attempts = pullDefaults.Attempts
	cmd := &cobra.Command{
		Use:   "graph [DATASET|PATH...] [--metrics PATH...] [--from prometheus=URL]",
		Short: "Build the call graph and the uncalibrated model",
		Long: `graph reads a dataset (a directory holding spans.parquet, as ingest writes
it) or raw trace files, which it ingests on the fly into a temporary dataset,
and builds the directed call graph with the statistics the propagation model
needs: per node the request rate, exclusive-time tiers, error rate, in-flight
peak and capacity estimate; per edge the fan-out, parallelism, errors,
timeouts, retries, re-activation, backoff, propagation and latency.

It prints the graph (-o, --output) as a table (edges with the worst
amplifiers first), as the model document (json), or as Graphviz DOT or
Mermaid, and with --out writes the model document (model.json) that fit and
replay read. The document's schema is in docs/model.md.

Without spans, graph builds the model from the series the OpenTelemetry
Collector's servicegraph and spanmetrics connectors make of spans
(traces_service_graph_request_total, _failed_total, the _server_seconds
and _client_seconds histograms; traces_span_metrics_calls_total and
_duration histograms, or the older traces_spanmetrics_* names), read from
--metrics files (prom-text, prom-api), a dataset ingested from them, or a
Prometheus-compatible server with --from prometheus=URL (query_range over
--start..--end at --step). Those give nodes, edges, call and failure rates
and latency tiers per edge, but no fan-out per request (it is estimated as
the edge's rate over the caller's) and no retries; the model's provenance
and source notes say so. Given traces and series together, the traces win
where both hold a node or an edge, and what only the series hold is added.`,
		Example: `  # the model of a dataset written by cascade ingest
  cascade graph /tmp/hotrod --out model.json

  # raw traces, ingested on the fly, at operation level, as Graphviz
  cascade graph testdata/hotrod-baseline/traces-otlp.json.gz --level operation --output dot | dot -Tsvg > hotrod.svg

  # Nezha span CSVs as a Mermaid flowchart
  cascade graph testdata/nezha-onlineboutique/trace --output mermaid

  # the service graph of the last hour from servicegraph/spanmetrics series
  cascade graph --from prometheus=http://127.0.0.1:9090 --start now-1h --out model.json

  # the same series from a file, refined by a sample of traces
  cascade graph sampled-traces.json --metrics servicegraph.prom`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.Flags().Changed(graphFlagMetrics) && !cmd.Flags().Changed(graphFlagFrom) {
				return usageError{errors.New("give a DATASET directory, trace or metric files, or --from prometheus=URL")}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.level, graphFlagLevel, string(o.cfg.Level), "node granularity: service or operation")
	f.StringVarP(&o.output, graphFlagOutput, "o", "table", "what to print: table, json, markdown, dot or mermaid")
	f.StringVar(&o.out, graphFlagOut, "", "write the model document to this file (model.json)")
	f.DurationVar(&o.cfg.Window, graphFlagWindow, o.cfg.Window, "window of the per-node time series (request and error rate, in-flight)")
	f.DurationVar(&o.cfg.Resolution, graphFlagResolution, o.cfg.Resolution, "width of the bins in which in-flight requests are counted")
	f.Uint64Var(&o.cfg.Seed, graphFlagSeed, o.cfg.Seed, "seed of the reservoir sampling behind quantiles of large inputs")
	f.StringSliceVar(&o.metrics, graphFlagMetrics, nil, "metric files or directories to ingest: with raw trace files, or service-graph series alone (repeatable)")
	f.StringVar(&o.format, graphFlagFormat, "auto", "format of raw trace files: auto, otlp-json, otlp-proto, otlp-proto-framed, jaeger-json, zipkin-json, csv")
	f.StringVar(&o.from, graphFlagFrom, "", "read servicegraph and spanmetrics series from prometheus=URL (any server of the Prometheus HTTP API)")
	f.StringVar(&o.start, graphFlagStart, "now-1h", "start of the range read with --from: RFC 3339, Unix seconds, now or now-DURATION (relative to --end); with series from files, the time they were read from (a series first seen after it counts from zero; default the earliest point)")
	f.StringVar(&o.end, graphFlagEnd, "now", "with --from: end of the range read: RFC 3339, Unix seconds, now or now-DURATION")
	f.DurationVar(&o.step, graphFlagStep, o.step, "with --from: query_range resolution")
	f.DurationVar(&o.timeout, graphFlagTimeout, o.timeout, "with --from: timeout of one HTTP request")
	f.IntVar(&o.attempts, graphFlagAttempts, o.attempts, "with --from: attempts per request on connection errors, timeouts, 429 and 5xx")
	cmd.RegisterFlagCompletionFunc(graphFlagOutput, fixedCompletions("table", "json", "markdown", "dot", "mermaid"))
	cmd.RegisterFlagCompletionFunc(graphFlagLevel, fixedCompletions(string(graph.LevelService), string(graph.LevelOperation)))
	cmd.RegisterFlagCompletionFunc(graphFlagFormat, fixedCompletions(formatNames(ingest.TraceFormats)...))
	return cmd
}

// run reads the dataset, files or series, builds the model, writes it to --out and prints the graph.
func (o *graphOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown", "dot", "mermaid"); err != nil {
		return err
	}
	if err := checkOut(graphFlagOut, o.out, outFile); err != nil {
		return err
	}
	var err error
	if o.cfg.Level, err = graph.ParseLevel(o.level); err != nil {
		return usageError{err}
	}
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	o.cfg.Dataset = strings.Join(args, " ")
	var pull *collect.PullConfig
	if o.from != "" {
		kind, u, ok := strings.Cut(o.from, "=")
		if !ok || kind != "prometheus" || u == "" {
			return usageError{fmt.Errorf("--%s %q: want prometheus=URL", graphFlagFrom, o.from)}
		}
		pc := collect.DefaultConfig().Pull
		pc.Prometheus, pc.Queries, pc.Step = u, graph.AggregateQueries, o.step
		pc.Timeout, pc.Attempts = o.timeout, o.attempts
		t := time.Now()
		if pc.End, err = parseTime(o.end, t); err != nil {
			return usageError{fmt.Errorf("--%s: %w", graphFlagEnd, err)}
		}
		if pc.Start, err = parseTime(o.start, pc.End); err != nil {
			return usageError{fmt.Errorf("--%s: %w", graphFlagStart, err)}
		}
		pull = &pc
		o.cfg.SeriesStart = pc.Start
		o.cfg.Dataset = strings.TrimSpace(o.cfg.Dataset + " " + o.from)
	} else if f := cmd.Flags(); f.Changed(graphFlagEnd) || f.Changed(graphFlagStep) || f.Changed(graphFlagTimeout) || f.Changed(graphFlagAttempts) {
		return usageError{fmt.Errorf("--%s, --%s, --%s and --%s apply to --%s only", graphFlagEnd, graphFlagStep, graphFlagTimeout, graphFlagAttempts, graphFlagFrom)}
	} else if f.Changed(graphFlagStart) {
		// Series from files: where their range began.
		if o.cfg.SeriesStart, err = parseTime(o.start, time.Now()); err != nil {
			return usageError{fmt.Errorf("--%s: %w", graphFlagStart, err)}
		}
	}
	dirs, cleanup, err := graphSources(cmd, args, o.metrics, o.format, pull)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := buildGraph(cmd, o.cfg, dirs)
	if errors.Is(err, graph.ErrNoSpans) && len(args) > 0 {
		return noSpans(args, nil)
	}
	if err != nil {
		return err
	}
	data, err := cascade.EncodeModel(res.Model)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := writeFileAtomic(o.out, data); err != nil {
			return fmt.Errorf("write model: %w", err)
		}
	}
	w := cmd.OutOrStdout()
	switch o.output {
	case "json":
		_, err = w.Write(data)
	case "dot":
		err = graph.WriteDOT(w, res.Model)
	case "mermaid":
		err = graph.WriteMermaid(w, res.Model)
	case "markdown":
		err = graph.WriteMarkdown(w, res)
	default:
		err = graph.WriteTableWidth(w, res, outputWidth(w))
	}
	return err
}

// graphSources returns the dataset directories to read: the input (a
// dataset, or raw files ingested into a temporary one), when there is one,
// and the series pulled from Prometheus into a temporary dataset, when
// pull is set. cleanup removes the temporary ones.
func graphSources(cmd *cobra.Command, args, metrics []string, format string, pull *collect.PullConfig) (dirs []string, cleanup func(), err error) {
	var cleanups []func()
	cleanup = func() {
		for _, c := range cleanups {
			c()
		}
	}
	if len(args) > 0 || len(metrics) > 0 {
		dir, c, err := graphInput(cmd, args, metrics, format)
		if err != nil {
			return nil, cleanup, err
		}
		cleanups = append(cleanups, c)
		dirs = append(dirs, dir)
	}
	if pull != nil {
		tmp, err := os.MkdirTemp("", "cascade-graph-prom-")
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		cleanups = append(cleanups, func() { os.RemoveAll(tmp) })
		ccfg := collect.DefaultConfig()
		ccfg.Pull = *pull
		ccfg.Out = filepath.Join(tmp, "dataset")
		ccfg.Log = cmd.ErrOrStderr()
		if err := ccfg.Validate(); err != nil {
			cleanup()
			return nil, func() {}, usageError{err}
		}
		if _, err := collect.Run(cmd.Context(), ccfg); err != nil {
			cleanup()
			return nil, func() {}, err
		}
		dirs = append(dirs, ccfg.Out)
	}
	return dirs, cleanup, nil
}

// buildGraph builds the model from the spans of dirs and, when they hold
// servicegraph or spanmetrics series, from those: the trace-built model
// refined with what only the series hold, or the aggregate-built model
// alone when there are no spans.
func buildGraph(cmd *cobra.Command, cfg graph.Config, dirs []string) (*graph.Result, error) {
	ctx := cmd.Context()
	var spans []cascade.SpanSource
	var samples []cascade.SampleSource
	for _, d := range dirs {
		spans = append(spans, spansOf(d))
		if s := samplesOf(d); s != nil {
			samples = append(samples, s)
		}
	}
	allSamples := func(fn func(*cascade.Sample) error) error {
		for _, s := range samples {
			if err := s(fn); err != nil {
				return err
			}
		}
		return nil
	}
	allSpans := func(fn func(*cascade.Span) error) error {
		for _, s := range spans {
			if err := s(fn); err != nil {
				return err
			}
		}
		return nil
	}
	var sampleSource cascade.SampleSource
	if len(samples) > 0 {
		sampleSource = allSamples
	}
	traces, err := graph.Build(ctx, cfg, allSpans, sampleSource)
	if err != nil && !errors.Is(err, graph.ErrNoSpans) {
		return nil, err
	}
	if cfg.Level != graph.LevelService {
		if traces == nil {
			return nil, usageError{fmt.Errorf("--%s %s: without spans the model comes from service-graph series, which name services only", graphFlagLevel, cfg.Level)}
		}
		svc := cfg
		svc.Level = graph.LevelService
		if a, err := graph.NewAggregateBuilder(svc); err == nil && sampleSource != nil {
			if err := sampleSource(func(s *cascade.Sample) error { a.AddSample(s); return nil }); err != nil {
				return nil, err
			}
			if n := a.Series(); n > 0 {
				traces.Warnings = append(traces.Warnings, fmt.Sprintf("%d service-graph and span-metrics series left out: they name services, and the graph is at %s level", n, cfg.Level))
			}
		}
		return traces, nil
	}
	aggs, aerr := graph.BuildAggregates(ctx, cfg, sampleSource)
	switch {
	case aerr != nil && !errors.Is(aerr, graph.ErrNoAggregates):
		return nil, aerr
	case traces == nil && aggs == nil:
		return nil, fmt.Errorf("%w and %w", graph.ErrNoSpans, graph.ErrNoAggregates)
	case aggs == nil:
		return traces, nil
	case traces == nil:
		return aggs, nil
	}
	return graph.Refine(traces, aggs), nil
}

// isDataset reports whether path is a dataset directory.
func isDataset(path string) bool {
	info, err := os.Stat(filepath.Join(path, dataset.SpansFile))
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
	if sum.Spans == 0 && len(metrics) == 0 {
		// Without metric files there is nothing else to build from; with
		// them, the service-graph series may be the input.
		cleanup()
		return "", nop, noSpans(args, sum)
	}
	return icfg.Out, cleanup, nil
}

func spansOf(dir string) cascade.SpanSource {
	return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
}

// samplesOf reads the dataset's metrics, if it has any.
func samplesOf(dir string) cascade.SampleSource {
	if _, err := os.Stat(filepath.Join(dir, dataset.MetricsFile)); err != nil {
		return nil
	}
	return func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(dir, fn) }
}

// logsOf returns the log records of the dataset dir, or nil when it has
// no logs.parquet.
func logsOf(dir string) incident.LogSource {
	if _, err := os.Stat(filepath.Join(dir, dataset.LogsFile)); err != nil {
		return nil
	}
	return func(fn func(*cascade.LogRecord) error) error { return dataset.ReadLogs(dir, fn) }
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so readers never see a half-written file.
func writeFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }
