package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cascade/collect"
	"cascade/ingest"
	"cascade/report"
)

// Flag names of cascade collect.
const (
	flagListen   = "listen"
	flagFrom     = "from"
	flagFinalize = "finalize"
)

// collectOptions holds what the flags of `cascade collect` set.
type collectOptions struct {
	cfg                       collect.Config
	from                      []string
	start, end, kindMap       string
	output                    string
	maxRequest, segment, resp sizeFlag
	queueMemory               sizeFlag
}

// newCollectCmd builds `cascade collect`: an OTLP/HTTP receiver, or a
// pull from Prometheus and Jaeger, into a dataset.
func newCollectCmd() *cobra.Command {
	o := &collectOptions{cfg: collect.DefaultConfig()}
	o.maxRequest, o.segment, o.resp = sizeFlag(o.cfg.Receiver.MaxRequestBytes), sizeFlag(o.cfg.Receiver.SegmentBytes), sizeFlag(o.cfg.Pull.MaxResponseBytes)
	o.queueMemory = sizeFlag(o.cfg.Receiver.QueueBytes)
	cmd := &cobra.Command{
		Use:   "collect --out DATASET [--listen ADDR | --from prometheus=URL ... | --finalize]",
		Short: "Record live sources into a dataset: an OTLP/HTTP endpoint, Prometheus, Jaeger",
		Long: `collect records into a dataset without export files.

By default it is an OpenTelemetry OTLP/HTTP endpoint on --listen (loopback,
port 4318): POST /v1/traces and /v1/metrics, protobuf or JSON, gzip or not.
Each request is acknowledged only once its rows are durable in a segment
file of the work directory (DATASET.collect, fsynced). When the queue is
full (--queue requests, or --queue-memory bytes of bodies), it answers 429
with Retry-After. SIGINT or SIGTERM stops it: requests in flight are
finished, then the segments are folded into DATASET/spans.parquet and
metrics.parquet (sorted, deduplicated, moved into place whole) and it
exits 0.

A crash (even kill -9) loses nothing acknowledged: the segments stay in the
work directory, a record cut short is discarded, and the next collect with
the same --out includes them; --finalize folds them in without listening.

With --from it pulls instead: Prometheus query_range (--query, --step) and
Jaeger traces (--service; api_v3, else the legacy /api/traces), over
--start..--end, with a timeout per request and retries with backoff.

A dataset already at --out is kept and added to.`,
		Example: `  # an OTLP/HTTP endpoint; point SDKs at http://127.0.0.1:4318
  cascade collect --out ds
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf ./my-service

  # after a crash: fold what was recorded into the dataset
  cascade collect --out ds --finalize

  # Prometheus series and a rate, at 5s resolution, over the last hour
  cascade collect --out ds --from prometheus=http://127.0.0.1:9090 \
      --query '{__name__=~"hotrod_.+"}' --query 'dispatch_rate=rate(hotrod_requests_total[1m])' \
      --start now-1h --end now --step 5s

  # a service's traces from Jaeger
  cascade collect --out ds --from jaeger=http://127.0.0.1:16686 --service frontend \
      --start 2026-12-02T11:00:00Z --end 2026-12-02T12:00:00Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("collect takes no arguments, got %q (the dataset is --out DATASET)", args[0])}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.Out, "out", "", "dataset directory to write or add to (required)")
	f.StringVar(&o.cfg.Work, "work", "", "work directory for the segments (default DATASET.collect)")
	f.BoolVar(&o.cfg.Finalize, flagFinalize, false, "fold the segments an earlier run left into the dataset, and exit")
	f.IntVar(&o.cfg.RunRows, "sort-rows", ingest.DefaultConfig().RunRows, "rows sorted in memory before spilling a sorted run to disk")
	f.StringVar(&o.kindMap, "metric-kinds", "", "file of metric-name to kind overrides")
	f.StringVarP(&o.output, "output", "o", "table", "summary format: table, json or markdown")

	f.StringVar(&o.cfg.Receiver.Listen, flagListen, o.cfg.Receiver.Listen, "address of the OTLP/HTTP endpoint")
	f.IntVar(&o.cfg.Receiver.QueueSize, "queue", o.cfg.Receiver.QueueSize, "requests admitted at once; the next is answered 429")
	f.Var(&o.queueMemory, "queue-memory", "request body bytes admitted at once; a body beyond is answered 429 (memory stays under about 5 times this)")
	f.Var(&o.maxRequest, "max-request-size", "largest request body, as sent and decompressed (413 beyond)")
	f.Var(&o.segment, "segment-size", "size at which a segment is closed and the next begun")
	f.DurationVar(&o.cfg.Receiver.RetryAfter, "retry-after", o.cfg.Receiver.RetryAfter, "Retry-After of 429 and 503 answers")
	f.DurationVar(&o.cfg.Receiver.DrainTimeout, "drain-timeout", o.cfg.Receiver.DrainTimeout, "how long a stop waits for requests in flight")

	f.StringArrayVar(&o.from, flagFrom, nil, "pull from prometheus=URL or jaeger=URL (repeatable, once each)")
	f.StringArrayVar(&o.cfg.Pull.Queries, "query", nil, "PromQL expression, optionally NAME=EXPR (repeatable)")
	f.DurationVar(&o.cfg.Pull.Step, "step", o.cfg.Pull.Step, "query_range resolution")
	f.StringArrayVar(&o.cfg.Pull.Services, "service", nil, "Jaeger service whose traces to read (repeatable)")
	f.IntVar(&o.cfg.Pull.Limit, "limit", o.cfg.Pull.Limit, "traces per Jaeger request; a window returning this many is split")
	f.StringVar(&o.start, "start", "now-1h", "start of the pulled range: RFC 3339, Unix seconds, now or now-DURATION (relative to --end)")
	f.StringVar(&o.end, "end", "now", "end of the pulled range: RFC 3339, Unix seconds, now or now-DURATION")
	f.DurationVar(&o.cfg.Pull.Timeout, "timeout", o.cfg.Pull.Timeout, "timeout of one HTTP request")
	f.IntVar(&o.cfg.Pull.Attempts, "attempts", o.cfg.Pull.Attempts, "attempts per request on connection errors, timeouts, 429 and 5xx")
	f.Var(&o.resp, "max-response-size", "largest answer read from a source")
	cmd.RegisterFlagCompletionFunc("output", fixedCompletions("table", "json", "markdown"))
	return cmd
}

// run records from the endpoint or the pulled sources, or folds in what an earlier run left, and prints the summary.
func (o *collectOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	if o.cfg.Out == "" {
		return usageError{errNoOut}
	}
	if err := checkOut("out", o.cfg.Out, outDataset); err != nil {
		return err
	}
	for _, f := range o.from {
		kind, u, ok := strings.Cut(f, "=")
		switch {
		case !ok || u == "":
			return usageError{fmt.Errorf("--from %q: want prometheus=URL or jaeger=URL", f)}
		case kind == "prometheus" && o.cfg.Pull.Prometheus == "":
			o.cfg.Pull.Prometheus = u
		case kind == "jaeger" && o.cfg.Pull.Jaeger == "":
			o.cfg.Pull.Jaeger = u
		case kind == "prometheus" || kind == "jaeger":
			return usageError{fmt.Errorf("--from %s given twice", kind)}
		default:
			return usageError{fmt.Errorf("--from %q: unknown source %q (want prometheus or jaeger)", f, kind)}
		}
	}
	fl := cmd.Flags()
	if fl.Changed(flagListen) && (o.cfg.Pulling() || o.cfg.Finalize) {
		return usageError{errors.New("--listen cannot be combined with --from or --finalize")}
	}
	if o.cfg.Pulling() {
		t := time.Now()
		var err error
		if o.cfg.Pull.End, err = parseTime(o.end, t); err != nil {
			return usageError{fmt.Errorf("--end: %w", err)}
		}
		if o.cfg.Pull.Start, err = parseTime(o.start, o.cfg.Pull.End); err != nil {
			return usageError{fmt.Errorf("--start: %w", err)}
		}
	} else if fl.Changed("start") || fl.Changed("end") {
		return usageError{errors.New("--start and --end apply to --from only")}
	}
	o.cfg.Receiver.MaxRequestBytes = int64(o.maxRequest)
	o.cfg.Receiver.QueueBytes = int64(o.queueMemory)
	o.cfg.Receiver.SegmentBytes = int64(o.segment)
	o.cfg.Pull.MaxResponseBytes = int64(o.resp)
	if o.kindMap != "" {
		m, err := ingest.LoadKindMap(o.kindMap)
		if err != nil {
			return err
		}
		o.cfg.Options.MetricKinds = m
	}
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	o.cfg.Log = cmd.ErrOrStderr()
	res, err := collect.Run(cmd.Context(), o.cfg)
	if err != nil {
		return err
	}
	if report.Format(o.output) == report.FormatJSON {
		return report.JSON(cmd.OutOrStdout(), res)
	}
	if res.Summary == nil {
		return nil
	}
	return report.IngestSummary(cmd.OutOrStdout(), res.Summary, report.Format(o.output))
}

// parseTime reads a --start or --end value: RFC 3339 (or a date),
// Unix seconds, "now", or "now-DURATION" / "-DURATION" relative to now.
func parseTime(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "now":
		return now, nil
	case strings.HasPrefix(v, "now-") || strings.HasPrefix(v, "-"):
		ago := strings.TrimPrefix(strings.TrimPrefix(v, "now"), "-")
		d, err := time.ParseDuration(ago)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: %q %s", v, ago, notDuration(ago))
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		sec := int64(s)
		return time.Unix(sec, int64((s-float64(sec))*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, Unix seconds, now or now-DURATION", v)
}

// sizeFlag is a byte size flag: a number of bytes, optionally with a
// binary suffix (K, KiB, M, MiB, G, GiB).
type sizeFlag int64

func (s *sizeFlag) String() string {
	v := int64(*s)
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.n && v%u.n == 0 {
			return fmt.Sprintf("%d%s", v/u.n, u.name)
		}
	}
	return strconv.FormatInt(v, 10)
}

func (s *sizeFlag) Set(v string) error {
	num := strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q: want a positive size such as 16MiB", v)
	}
	*s = sizeFlag(n * mult)
	return nil
}

func (s *sizeFlag) Type() string { return "size" }
