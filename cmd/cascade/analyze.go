package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"cascade/analyze"
	"cascade/ingest"
	"cascade/rank"
	"cascade/report"
)

// Flags of `cascade analyze` (prefixed: other subcommands declare their
// own).
const (
	analyzeFlagMetrics   = "metrics"
	analyzeFlagLogs      = "logs"
	analyzeFlagFormat    = "format"
	analyzeFlagCSVMap    = "csv-map"
	analyzeFlagOut       = "out"
	analyzeFlagOutput    = "output"
	analyzeFlagSeed      = "seed"
	analyzeFlagSeeds     = "seeds"
	analyzeFlagTraffic   = "traffic"
	analyzeFlagSurge     = "surge"
	analyzeFlagDuration  = "duration"
	analyzeFlagObjective = "objective"
	analyzeFlagFit       = "fit"
	analyzeFlagGrid      = "grid"
	analyzeFlagWindow    = "window"
	analyzeFlagIncident  = "incident"
	analyzeFlagBaseline  = "baseline"
	analyzeFlagBaseLogs  = "baseline-logs"
	analyzeFlagBaseMets  = "baseline-metrics"
	analyzeFlagParallel  = "parallel"
	analyzeFlagWide      = "wide"
)

// analyzeOptions holds what the flags of `cascade analyze` set.
type analyzeOptions struct {
	cfg                                        analyze.Config
	format, csvMap, traffic, objective, output string
	doFit, doIncident, wide                    bool
}

// newAnalyzeCmd builds `cascade analyze`: the whole pipeline on one
// capture, written as a report.
func newAnalyzeCmd() *cobra.Command {
	o := &analyzeOptions{cfg: analyze.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "analyze PATH...",
		Short: "Ingest, graph, fit and rank in one go; write the remediation report",
		Long: `analyze runs the whole pipeline on a capture — ingest, graph, fit, the
incident's origin, rank — and writes into --out:

  dataset/         the ingested spans and metrics (unless PATH is a dataset)
  model.json       the model built from the traces (cascade graph)
  calibrated.json  the model with the fitted coefficients (cascade fit)
  report.json      everything below, for programs
  report.md        the report to paste into a postmortem
  report.html      the same with its charts, one self-contained page that
                   opens offline: the call graph coloured by amplification,
                   goodput and queue depth over time for the baseline and
                   the best change, the capacity curve with its knee and
                   collapse, and the fit's loss surface

and prints the answer: the best change, its effect with a 95% interval,
its verdict, cost and why, then every change ranked and short sections,
fitting the terminal ($COLUMNS; 100 columns when not a terminal). --wide
prints the full tables instead (each regime's effect, every change's cost
and mechanism, the capacity sweep), as report.md has them. PATH is trace
files or directories (any format cascade ingest reads) or one dataset
directory.

The stages run with the defaults of their own commands, but: the fit skips
its back-tests, and the ranking replays 4 seeds of 30 s (--seeds,
--duration), so that a capture like the bundled example is analysed in
seconds; without --duration, a replay runs longer (up to 6 h of simulated
time) when the observed rate would send fewer than 2,000 root requests in
30 s, so that a sparse capture's ranking sees enough requests to judge. Every stage replays with the seeds from --seed on: the same inputs
and flags give byte-identical files. Each file is written atomically; a
failed run leaves the files of the last good one.`,
		Example: `  # the bundled HotROD capture, report in ./hotrod-report
  cascade analyze testdata/hotrod-baseline/traces-otlp.json.gz \
      --metrics testdata/hotrod-baseline/prometheus --out hotrod-report

  # an ingested dataset, more seeds, ranked by p99, as Markdown on stdout
  cascade analyze /data/incident --seeds 8 --objective p99 --output markdown

  # Nezha's Online Boutique fault, without the fit
  cascade analyze testdata/nezha-onlineboutique/trace --fit=false --out ob-report`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("give trace files, directories or a dataset directory; to try the bundled example, from the repository's root:\n  " + exampleCommand)}
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.cfg.Metrics, analyzeFlagMetrics, nil, "metric files or directories to ingest with the traces (repeatable)")
	f.StringSliceVar(&o.cfg.Logs, analyzeFlagLogs, nil, "log files or directories to ingest with the traces (repeatable): OTLP logs JSON or protobuf, or log CSV (Nezha's layout is detected)")
	f.StringVar(&o.format, analyzeFlagFormat, "auto", "format of raw trace files: auto, otlp-json, otlp-proto, otlp-proto-framed, jaeger-json, zipkin-json, csv")
	f.StringVar(&o.csvMap, analyzeFlagCSVMap, "", "span CSV column mapping, as cascade ingest --csv-map: inline key=column,... or @FILE (default: detect the Nezha preset)")
	f.StringVar(&o.cfg.Out, analyzeFlagOut, "cascade-report", "directory to write the reports, models and dataset into")
	f.StringVarP(&o.output, analyzeFlagOutput, "o", "table", "what to print: table (the answer, then the ranking), json or markdown (the whole report)")
	f.Uint64Var(&o.cfg.Rank.Seed, analyzeFlagSeed, o.cfg.Rank.Seed, "first random seed of every stage")
	f.IntVar(&o.cfg.Rank.Seeds, analyzeFlagSeeds, o.cfg.Rank.Seeds, "seeds per candidate and traffic in the ranking (at least 2)")
	f.StringVar(&o.traffic, analyzeFlagTraffic, "observed", "normal traffic of the ranking: observed (the model's load: closed-loop clients or Poisson at its entry rates), surge:X, closed:USERS,THINK or RATE per second")
	f.Float64Var(&o.cfg.Rank.SurgeFactor, analyzeFlagSurge, o.cfg.Rank.SurgeFactor, "surge regime: the normal traffic times this for the middle third of the run; 0 for none")
	f.DurationVar(&o.cfg.Rank.Duration, analyzeFlagDuration, o.cfg.Rank.Duration, "simulated time of each ranking replay (default: 30s, longer for a sparse capture, to see 2,000 root requests, up to 6h)")
	f.StringVar(&o.objective, analyzeFlagObjective, string(o.cfg.Rank.Objective), "what to rank by: success, goodput, p99, amplification, spread or composite")
	f.BoolVar(&o.doFit, analyzeFlagFit, true, "calibrate the model against the traces before ranking")
	f.BoolVar(&o.cfg.Rank.Resample, "resample", o.cfg.Rank.Resample, "replay each seed over its own draw of what the capture measured (service times, failure rates, entry rates), so the intervals carry the data's uncertainty; false: the replay's seed noise only")
	f.BoolVar(&o.cfg.Rank.FitCheck, "fit-check", o.cfg.Rank.FitCheck, "compare the model's replay with what the capture measured at each node; beyond 15% p50, 50% p99 or 3 pp errors, no change is called a win or worse")
	f.StringVar(&o.cfg.Fit.Grid, analyzeFlagGrid, "", "fit grid specification (default: the default grid; see cascade fit)")
	f.DurationVar(&o.cfg.Fit.Window, analyzeFlagWindow, o.cfg.Fit.Window, "fit observation window width")
	f.BoolVar(&o.doIncident, analyzeFlagIncident, true, "find when each node left its normal range and where the degradation began")
	f.StringArrayVar(&o.cfg.Baseline, analyzeFlagBaseline, nil, "a fault-free dataset or trace files for the incident pass's normal range (default: the incident's first windows)")
	f.StringSliceVar(&o.cfg.BaselineLogs, analyzeFlagBaseLogs, nil, "log files or directories of the --baseline capture (repeatable): the normal range of the logs when --baseline is trace files")
	f.StringSliceVar(&o.cfg.BaselineMetrics, analyzeFlagBaseMets, nil, "metric files or directories of the --baseline capture (repeatable): a normal range for metric series with too few points of their own before the incident")
	f.IntVar(&o.cfg.Rank.Parallel, analyzeFlagParallel, 0, "replays run at once (default: all cores); does not change the output")
	f.BoolVar(&o.wide, analyzeFlagWide, false, "with --output table, print the full tables, however wide, instead of the answer and compact sections")
	cmd.RegisterFlagCompletionFunc(analyzeFlagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc(analyzeFlagObjective, fixedCompletions("success", "goodput", "p99", "amplification", "spread", "composite"))
	cmd.RegisterFlagCompletionFunc(analyzeFlagTraffic, fixedCompletions("observed", "surge:", "closed:"))
	cmd.RegisterFlagCompletionFunc(analyzeFlagFormat, fixedCompletions(formatNames(ingest.TraceFormats)...))
	cmd.RegisterFlagCompletionFunc(analyzeFlagOut, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	return cmd
}

// run runs the pipeline on the capture, writes the reports into --out, and prints the answer.
func (o *analyzeOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	o.cfg.Inputs = args
	defer spanGC()()
	var err error
	if o.cfg.Format, err = ingest.ParseFormat(o.format, ingest.TraceFormats); err != nil {
		return usageError{err}
	}
	if o.csvMap != "" {
		if o.cfg.CSVMap, err = loadCSVMap(o.csvMap); err != nil {
			return usageError{err}
		}
	}
	if o.cfg.Rank.Objective, err = rank.ParseObjective(o.objective); err != nil {
		return usageError{err}
	}
	t, surge, err := rank.ParseTraffic(o.traffic)
	if err != nil {
		return usageError{err}
	}
	o.cfg.Rank.Traffic = t
	if surge > 0 {
		if cmd.Flags().Changed(analyzeFlagSurge) {
			return usageError{fmt.Errorf("--%s surge:X and --%s: give the factor once", analyzeFlagTraffic, analyzeFlagSurge)}
		}
		o.cfg.Rank.SurgeFactor = surge
	}
	o.cfg.NoFit, o.cfg.NoIncident = !o.doFit, !o.doIncident
	if cmd.Flags().Changed(analyzeFlagDuration) {
		o.cfg.MinRoots = 0 // the user's duration, as given
	}
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	if err := checkOut(analyzeFlagOut, o.cfg.Out, outDir); err != nil {
		return err
	}
	o.cfg.Progress = analyzeProgress(cmd.ErrOrStderr())
	a, err := analyze.Run(cmd.Context(), o.cfg)
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), a.Dataset)
	printThin(cmd.ErrOrStderr(), a.Rank)
	if a.Incident != nil {
		// A signal given and not judged is said on the terminal
		// too (the reports hold it among their notes).
		for _, w := range a.Incident.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "cascade: warning: incident pass: %s\n", w)
		}
	}
	if o.output == "json" {
		return report.JSON(cmd.OutOrStdout(), a)
	}
	if o.output == "markdown" {
		return report.AnalysisMarkdown(cmd.OutOrStdout(), a)
	}
	out := cmd.OutOrStdout()
	opts := report.TextOptions{Width: outputWidth(out), Wide: o.wide}
	doc := &report.RankDocument{Model: filepath.Join(o.cfg.Out, analyze.CalibratedFile), Incident: a.Incident, Rank: a.Rank}
	if err := report.RankText(out, doc, opts); err != nil {
		return err
	}
	fmt.Fprintln(out)
	reports := fmt.Sprintf("Reports in %s: %s, %s, %s (seed %d)", o.cfg.Out, analyze.MarkdownFile, analyze.HTMLFile, analyze.JSONFile, a.Seed)
	if o.wide {
		fmt.Fprintln(out, reports)
		return nil
	}
	printWrapped(out, opts.Width, "--wide prints the full tables (each regime's effect, every change's cost and mechanism, the capacity sweep); "+analyze.MarkdownFile+" has them too.")
	printWrapped(out, opts.Width, reports)
	return nil
}

// analyzeProgress draws a bar per stage on a terminal: replays or grid
// points done of those planned. Elsewhere it draws nothing.
func analyzeProgress(w io.Writer) func(stage string, done, total int64) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var (
		cur string
		bar func(done, total int64)
	)
	return func(stage string, done, total int64) {
		if stage != cur {
			unit := "replays"
			if stage == "fit" {
				unit = "points"
			}
			cur, bar = stage, progress(w, stage, unit)
			return
		}
		if bar != nil && total > 0 {
			bar(done, total)
		}
	}
}
