package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"cascade/ingest"
	"cascade/report"
)

// ingestOptions holds what the flags of `cascade ingest` set, and its stdin.
type ingestOptions struct {
	cfg                                           ingest.Config
	stdin                                         io.Reader
	format, metricFormat, csvMap, kindMap, output string
	scrapeTime                                    string
}

// newIngestCmd builds `cascade ingest`, which reads stdin for a PATH of
// "-": traces, metrics and logs into a dataset.
func newIngestCmd(stdin io.Reader) *cobra.Command {
	o := &ingestOptions{cfg: ingest.DefaultConfig(), stdin: stdin}
	cmd := &cobra.Command{
		Use:   "ingest PATH... --out DATASET",
		Short: "Read traces, queue metrics and logs into a Parquet dataset",
		Long: `ingest reads traces (OTLP JSON/JSON Lines/protobuf, Jaeger JSON and api_v3,
Zipkin v2, span CSV) and queue metrics (Prometheus text and HTTP API JSON,
OTLP metrics, CSV), normalizes them, drops duplicate (trace_id, span_id)
rows, and writes DATASET/spans.parquet and DATASET/metrics.parquet.

Given --logs (OTLP logs JSON/protobuf, or a log CSV in Nezha's layout), it
also writes DATASET/logs.parquet: each record's time, service, severity,
trace and span ids, body, and the body's template, mined with the Drain
log parser.

Formats are detected per file; .gz and .zst inputs are read transparently;
directories are read recursively; "-" reads stdin. The dataset is written
to a temporary directory and moved into place only when complete.

Span CSV columns are named with --csv-map, inline ("key=column,...") or
from a file ("@FILE": one key=column a line, "#" comments, column names may
hold commas). Nezha's trace files need none: their header is detected
("--csv-map nezha" names the preset). Keys, in any case:

    trace_id, span_id  trace and span id columns (required)
    parent_span_id     parent id; an empty cell or a root value marks a root
                       (also parent_id, parent, parent_span)
    service            service name (required; also service_name)
    instance           instance; with strip_pod_suffix, the pod by default
    operation          span name (also name, operation_name, span_name)
    kind               server, client, producer, consumer, internal, or 1-5
    start              start time (required): a number of units since the
                       Unix epoch, or RFC 3339 (also start_time)
    end, duration      end time, or duration (one is required); with both,
                       the duration is end - start (also end_time)
    status             ok, error, unset, STATUS_CODE_*, OTLP 0-2, true/false
                       (an error flag; a success flag when the column's name
                       says "success"), or a code read as status_code is
    status_code        HTTP (100-599) or gRPC (0-16) code, or a gRPC name
                       (UNAVAILABLE): HTTP 5xx and gRPC UNKNOWN,
                       DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNIMPLEMENTED,
                       INTERNAL, UNAVAILABLE, DATA_LOSS fail any span; 4xx and
                       the other non-zero gRPC codes only client spans (a
                       span of no kind counts as a server's)
    peer               the callee as a client span names it
    root               parent values that mark a root, "|"-separated
                       (default root|0|null|0000000000000000)
    strip_pod_suffix   true: the service is the pod name without its
                       Kubernetes suffix (frontend-579b9bff58-t2dbm and
                       frontend-0 give frontend), the pod the instance

start, end and duration take a unit after a colon: ns (the default), us
(or µs), ms or s, as in start=timestamp:us. A start time in the wrong
unit draws a warning naming the one that fits. docs/csv.md describes every
span and metric CSV layout (wide, long, and the AIOps KPI files).`,
		Example: `  # the bundled HotROD capture, with its Prometheus scrape
  cascade ingest testdata/hotrod-baseline/traces-otlp.json.gz \
      --metrics testdata/hotrod-baseline/prometheus --out /tmp/hotrod

  # Nezha span CSVs and per-pod metric CSVs, skipping bad rows
  cascade ingest nezha/trace --metrics nezha/metric --out ds --skip-invalid

  # Nezha's traces with the same minutes' logs
  cascade ingest nezha/trace --logs nezha/log --out ds

  # Nezha TrainTicket span CSVs, the preset spelled out
  cascade ingest nezha/trace --out ds \
      --csv-map 'trace_id=TraceID,span_id=SpanID,parent_span_id=ParentID,service=PodName,operation=OperationName,start=StartTimeUnixNano:ns,end=EndTimeUnixNano:ns,duration=Duration:us,root=root,strip_pod_suffix=true'

  # AIOps-challenge span CSVs, with their KPI files
  # (timestamp,cmdb_id,span_id,trace_id,duration,type,status_code,operation_name,parent_span;
  #  timestamp and duration in µs, status_code gRPC or HTTP)
  cascade ingest trace_span.csv --metrics metric --out ds \
      --csv-map 'trace_id=trace_id,span_id=span_id,parent_span_id=parent_span,service=cmdb_id,operation=operation_name,start=timestamp:us,duration=duration:us,status_code=status_code,strip_pod_suffix=true'

  # any other span CSV, through a map file
  # (here trace,span,parent,svc,start_ms,end_ms,http_status)
  printf 'trace_id=trace\nspan_id=span\nparent_span_id=parent\nservice=svc\nstart=start_ms:ms\nend=end_ms:ms\nstatus_code=http_status\n' > spans.map
  cascade ingest export.csv --out ds --csv-map @spans.map

  # a collector file-exporter stream from stdin, summary as JSON
  zcat traces.jsonl.gz | cascade ingest - --format otlp-json --out ds --output json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(o.cfg.Metrics) == 0 && len(o.cfg.Logs) == 0 {
				return usageError{errNoInputs}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.Out, "out", "", "dataset directory to write (required)")
	f.StringSliceVar(&o.cfg.Metrics, "metrics", nil, "metric files or directories (repeatable)")
	f.StringSliceVar(&o.cfg.Logs, "logs", nil, "log files or directories (repeatable): OTLP logs JSON or protobuf, or log CSV (Nezha's layout is detected)")
	f.StringVar(&o.format, "format", "auto", "trace format: auto, otlp-json, otlp-proto, otlp-proto-framed, jaeger-json, zipkin-json, csv")
	f.StringVar(&o.metricFormat, "metric-format", "auto", "metric format: auto, prom-text, prom-api, otlp-metrics-json, otlp-metrics-proto, metrics-csv")
	f.StringVar(&o.csvMap, "csv-map", "", "span CSV column mapping: inline key=column,..., @FILE or nezha (default: detect the Nezha preset; keys above)")
	f.StringVar(&o.kindMap, "metric-kinds", "", "file of metric-name to kind overrides")
	f.StringVar(&o.scrapeTime, "scrape-time", "", "RFC 3339 time for Prometheus text points without timestamps")
	f.BoolVar(&o.cfg.SkipInvalid, "skip-invalid", o.cfg.SkipInvalid, "skip invalid records and count them by reason")
	f.IntVar(&o.cfg.MaxErrors, "max-errors", o.cfg.MaxErrors, "invalid records to report before stopping")
	f.IntVar(&o.cfg.RunRows, "sort-rows", o.cfg.RunRows, "rows sorted in memory before spilling a sorted run to disk")
	f.StringVarP(&o.output, "output", "o", "table", "summary format: table, json or markdown")
	cmd.RegisterFlagCompletionFunc("output", fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc("format", fixedCompletions(formatNames(ingest.TraceFormats)...))
	cmd.RegisterFlagCompletionFunc("metric-format", fixedCompletions(formatNames(ingest.MetricFormats)...))
	return cmd
}

// run ingests the traces, metrics and logs into the dataset at --out and prints its summary.
func (o *ingestOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	o.cfg.Traces = args
	o.cfg.Stdin = o.stdin
	// An empty file is an error unless another input held data.
	o.cfg.RejectEmpty = true
	o.cfg.Note = func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "cascade: note: %s\n", s) }
	var err error
	if o.cfg.Format, err = ingest.ParseFormat(o.format, ingest.TraceFormats); err != nil {
		return usageError{err}
	}
	if o.cfg.MetricFormat, err = ingest.ParseFormat(o.metricFormat, ingest.MetricFormats); err != nil {
		return usageError{err}
	}
	if o.csvMap != "" {
		m, err := loadCSVMap(o.csvMap)
		if err != nil {
			return usageError{err}
		}
		o.cfg.Options.CSVMap = m
	}
	if o.kindMap != "" {
		m, err := ingest.LoadKindMap(o.kindMap)
		if err != nil {
			return err
		}
		o.cfg.Options.MetricKinds = m
	}
	if o.scrapeTime != "" {
		t, err := time.Parse(time.RFC3339Nano, o.scrapeTime)
		if err != nil {
			return usageError{fmt.Errorf("--scrape-time: %q is not an RFC 3339 time, such as 2026-01-02T15:04:05Z", o.scrapeTime)}
		}
		o.cfg.Options.ScrapeTime = t.UnixNano()
	}
	if o.cfg.Out == "" {
		return usageError{errNoOut}
	}
	if err := checkOut("out", o.cfg.Out, outDataset); err != nil {
		return err
	}
	o.cfg.Progress = progress(cmd.ErrOrStderr(), "ingest", "")
	sum, err := ingest.Run(cmd.Context(), o.cfg)
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), sum)
	return report.IngestSummary(cmd.OutOrStdout(), sum, report.Format(o.output))
}

func formatNames(fs []ingest.Format) []string {
	out := []string{"auto"}
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}

func fixedCompletions(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// loadCSVMap reads --csv-map: "@FILE" or an inline mapping. ingest and
// analyze share it.
func loadCSVMap(v string) (*ingest.CSVMap, error) {
	var (
		m   *ingest.CSVMap
		err error
	)
	if len(v) > 1 && v[0] == '@' {
		m, err = ingest.LoadCSVMap(v[1:])
	} else {
		m, err = ingest.ParseCSVMap(v)
	}
	if err != nil {
		return nil, fmt.Errorf("--csv-map: %w", err)
	}
	return m, nil
}

// progress returns a callback that draws a progress bar on w when w is a
// terminal and the work has run for more than a second; otherwise nil, so
// piped output stays quiet and parseable. With unit "" it counts bytes;
// otherwise items of that unit ("points", "replays"), with their rate and
// the time left. The total may grow as the work plans ahead.
func progress(w io.Writer, what, unit string) func(done, total int64) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newProgress(w, what, unit, time.Now, 100*time.Millisecond)
}

// newProgress draws the bar on w, whatever w is, reading the time from
// now and redrawing at most once a throttle. Its rate and time left are
// the work's own, counted from the callback's creation: the bar appears a
// second in, and a rate counted from its appearance would credit that
// second's work to the first tick (issue 39: "3,082,258 points/s", and a
// time left stuck at 0s).
func newProgress(w io.Writer, what, unit string, now func() time.Time, throttle time.Duration) func(done, total int64) {
	start := now()
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		elapsed := now().Sub(start)
		if bar == nil {
			if elapsed < time.Second || total <= 0 {
				return
			}
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionThrottle(throttle),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionSetElapsedTime(false),
				progressbar.OptionSetPredictTime(false),
			)
		}
		if total != bar.GetMax64() {
			bar.ChangeMax64(total)
		}
		bar.Describe(progressText(what, unit, done, total, elapsed))
		bar.Set64(done)
	}
}

// progressText is the bar's label: what is done of the total, the rate
// since the work began and the time left at that rate,
//
//	fit 1,200 of 5,000 points, 400 points/s, about 10s left
//	ingest 12.0 MB of 40.0 MB, 6.0 MB/s, about 5s left
func progressText(what, unit string, done, total int64, elapsed time.Duration) string {
	var s, rate string
	if unit == "" {
		s = fmt.Sprintf("%s %s of %s", what, bytesText(done), bytesText(total))
	} else {
		s = fmt.Sprintf("%s %s of %s %s", what, group(done), group(total), unit)
	}
	if done <= 0 || elapsed <= 0 {
		return s + ", time left unknown"
	}
	perSec := float64(done) / elapsed.Seconds()
	if unit == "" {
		rate = bytesText(int64(perSec)) + "/s"
	} else {
		rate = group(int64(math.Round(perSec))) + " " + unit + "/s"
	}
	left := time.Duration(float64(max(total-done, 0)) / perSec * float64(time.Second)).Round(time.Second)
	if left < time.Second {
		return fmt.Sprintf("%s, %s, under 1s left", s, rate)
	}
	return fmt.Sprintf("%s, %s, about %s left", s, rate, left)
}

// bytesText formats a byte count in decimal units: "812 B", "12.0 MB".
func bytesText(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x, i := float64(n), -1
	for x >= unit && i < 3 {
		x /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", x, "kMGT"[i])
}
