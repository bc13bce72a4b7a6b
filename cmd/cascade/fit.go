package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/fit"
	"cascade/graph"
	"cascade/ingest"
	"cascade/replay"
)

// Flags of `cascade fit` (prefixed: other subcommands declare their own in
// this package).
const (
	fitFlagModel    = "model"
	fitFlagGrid     = "grid"
	fitFlagWindow   = "window"
	fitFlagWindows  = "windows"
	fitFlagHoldout  = "holdout"
	fitFlagTier     = "tier"
	fitFlagSearch   = "search"
	fitFlagParallel = "parallel"
	fitFlagSeed     = "seed"
	fitFlagSeeds    = "seeds"
	fitFlagTick     = "tick"
	fitFlagDrain    = "drain"
	fitFlagOut      = "out"
	fitFlagOutput   = "output"
	fitFlagMetrics  = "metrics"
	fitFlagFormat   = "format"
	fitFlagShard    = "shard"
)

// fitOptions holds what the flags of `cascade fit` set.
type fitOptions struct {
	cfg                                   fit.Config
	modelFile, out, output, format, shard string
	metrics                               []string
}

// newFitCmd builds `cascade fit`: the grid search of a model's
// coefficients against the capture's windows.
func newFitCmd() *cobra.Command {
	o := &fitOptions{cfg: fit.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "fit DATASET|PATH...",
		Short: "Calibrate the model: grid-search propagation against observed windows",
		Long: `fit calibrates a model against what a dataset observed. It splits the
dataset into observation windows (--window, 1 minute; the whole range when it
is shorter than two windows), reads each window's root arrivals and, per node,
its requests, failures (span status; for formats without one, traces cut
short), latency P50/P95/P99 and queue depth (queue_depth metrics), then
replays every window's arrivals through the model at each point of a grid of
propagation p, re-activation r, overload slope k and threshold theta, service
tier and fan-out scale, with the same seeds for every point, and scores the
distance between simulated and observed.

It prints the best point overall and per tier, the loss surface around the
best point (which parameters are identifiable and which are flat), how far
the fit moved from the model's observed values, the per-node error in
sample and on held-out windows (each fitted without it and predicted), and a
logistic regression of call failure on load beside the grid's values. With
--out it writes the calibrated model: the model with the fitted values,
provenance "fit" on what it set, and the fit's summary under "fit". The
calibrated model is a point the fit replayed: where p or r is flat, it keeps
the model's values and the other axes are searched again with them held
(NAME=model). The fit never makes the model worse: unless the calibrated point
beats the model as it came in sample, and predicts the held-out windows no
worse, it says "kept: uncalibrated: ..." and writes the model as it came.

The model is --model, or built from the dataset as cascade graph builds it.
DATASET is a dataset directory or raw trace files (ingested on the fly).

Grid (--grid): axes NAME=VALUES joined by commas; NAME is tier, p, r, k,
theta or fanout, optionally .TARGET (p, r, fanout: sync, async, virtual or
FROM->TO; k, theta: a node); VALUES is START:STOP:STEP, A|B|C, or model (the
model's own values; tier=model keeps each node's service). Default:
tier=model|p50|p95|p99|empirical, p=0.01:0.5:0.01, r within 0.2 of the observed
re-activation in steps of 0.1, k=0:2:0.5, theta=0.6:1.2:0.2, fanout=1.
An edge whose propagation the traces measured keeps p within that
measure's 95% interval. Grids larger than 2,000 points are searched coarse-to-fine (--search).
Same inputs and seed give the same output at any --parallel.

Across machines (--shard INDEX/COUNT, README "At scale"): each shard
replays the grid points of the first batch (every point, or the coarse
sub-grid when refining) whose position is INDEX modulo COUNT and writes a
partial result to --out; cascade merge joins the COUNT partials into the
report and calibrated model this command prints and writes unsharded,
byte for byte.`,
		Example: `  # fit the HotROD capture's model in 30-second windows, write the calibrated model
  cascade fit testdata/hotrod-baseline/traces-otlp.json.gz --window 30s --out calibrated.json

  # a dataset and a model, a small grid, every point replayed, as JSON
  cascade fit /tmp/hotrod --model model.json --grid 'p=0.01|0.1|0.5,k=0:2:1,tier=p50|p99' \
      --search exhaustive --output json

  # the five busiest minutes of a day of data, P99 tier only, three seeds per point
  cascade fit /data/day --windows auto --tier p99 --seeds 3

  # the same fit on two machines, then joined
  cascade fit /tmp/hotrod --model model.json --shard 0/2 --out parts/fit-0.json   # machine A
  cascade fit /tmp/hotrod --model model.json --shard 1/2 --out parts/fit-1.json   # machine B
  cascade merge parts/fit-0.json parts/fit-1.json --out calibrated.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("give a DATASET directory or trace files")}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.modelFile, fitFlagModel, "", "model document to calibrate (default: built from the dataset as cascade graph builds it)")
	f.StringVar(&o.cfg.Grid, fitFlagGrid, "", "grid specification, e.g. p=0.01:0.5:0.01,k=0:2:0.5,tier=p50|p99 (default: the default grid)")
	f.DurationVar(&o.cfg.Window, fitFlagWindow, o.cfg.Window, "observation window width (the whole range when it is shorter than two windows)")
	f.StringVar(&o.cfg.Windows, fitFlagWindows, o.cfg.Windows, "windows to fit: all, auto (the busiest) or window numbers such as 0,2,5")
	f.IntVar(&o.cfg.Holdout, fitFlagHoldout, o.cfg.Holdout, "windows to back-test by leave-one-out, the busiest first (0 none, -1 all)")
	f.StringVar(&o.cfg.Tier, fitFlagTier, o.cfg.Tier, "service tier: all (the grid's) or one of p50, p95, p99, mean, tiers, empirical, model")
	f.StringVar(&o.cfg.Search, fitFlagSearch, o.cfg.Search, "auto, exhaustive (every point) or refine (coarse-to-fine)")
	f.IntVar(&o.cfg.Parallel, fitFlagParallel, 0, "grid points replayed at once (default: all cores); does not change the output")
	f.Uint64Var(&o.cfg.Seed, fitFlagSeed, o.cfg.Seed, "first replay seed; every point is replayed with the same seeds")
	f.IntVar(&o.cfg.Seeds, fitFlagSeeds, o.cfg.Seeds, "seeds per point and window (their results are averaged)")
	f.DurationVar(&o.cfg.Tick, fitFlagTick, o.cfg.Tick, "replay clock resolution (default: 1ms, refined while the model's latency moves at a tenth of it; given, kept)")
	f.DurationVar(&o.cfg.Drain, fitFlagDrain, o.cfg.Drain, "replay time after a window's last arrival, for its requests to finish")
	f.StringVar(&o.out, fitFlagOut, "", "write the calibrated model to this file (with --shard, the shard's partial result)")
	f.StringVar(&o.shard, fitFlagShard, "", "replay only shard INDEX of COUNT (as 0/4) of the grid and write a partial result to --out, for cascade merge")
	f.StringVarP(&o.output, fitFlagOutput, "o", "table", "report format: table, json or markdown")
	f.StringSliceVar(&o.metrics, fitFlagMetrics, nil, "metric files or directories to ingest with raw trace files (repeatable)")
	f.StringVar(&o.format, fitFlagFormat, "auto", "format of raw trace files: auto, otlp-json, otlp-proto, otlp-proto-framed, jaeger-json, zipkin-json, csv")
	cmd.RegisterFlagCompletionFunc(fitFlagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc(fitFlagTier, fixedCompletions(append([]string{"all"}, fit.Tiers...)...))
	cmd.RegisterFlagCompletionFunc(fitFlagSearch, fixedCompletions(fit.SearchAuto, fit.SearchExhaustive, fit.SearchRefine))
	cmd.RegisterFlagCompletionFunc(fitFlagWindows, fixedCompletions("all", "auto"))
	cmd.RegisterFlagCompletionFunc(fitFlagFormat, fixedCompletions(formatNames(ingest.TraceFormats)...))
	return cmd
}

// run reads the dataset and the model, fits the model to it, and writes the report and the calibrated model.
func (o *fitOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	var err error
	// A tick given is kept as given; the default is checked.
	o.cfg.TickCheck = !cmd.Flags().Changed(fitFlagTick)
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	if o.cfg.Shard, err = replay.ParseShard(o.shard); err != nil {
		return usageError{fmt.Errorf("--%s %w", fitFlagShard, err)}
	}
	if o.cfg.Shard.Sharded() && o.out == "" {
		return usageError{fmt.Errorf("--%s %s: give --%s FILE for the shard's partial result", fitFlagShard, o.shard, fitFlagOut)}
	}
	if err := checkOut(fitFlagOut, o.out, outFile); err != nil {
		return err
	}
	var model *cascade.Model
	if o.modelFile != "" {
		if model, err = readModel(o.modelFile); err != nil {
			return err
		}
	}
	dir, cleanup, err := graphInput(cmd, args, o.metrics, o.format)
	if err != nil {
		return err
	}
	defer cleanup()
	if model == nil {
		gcfg := graph.DefaultConfig()
		gcfg.Dataset = strings.Join(args, " ")
		res, err := graph.Build(cmd.Context(), gcfg, spansOf(dir), samplesOf(dir))
		if err != nil {
			return err
		}
		model = res.Model
	}
	obs, err := fit.Observe(cmd.Context(), o.cfg, model, spansOf(dir), samplesOf(dir))
	if err != nil {
		return err
	}
	o.cfg.Progress = progress(cmd.ErrOrStderr(), "fit", "points")
	if o.cfg.Shard.Sharded() {
		p, err := fit.RunShard(cmd.Context(), o.cfg, model, obs)
		if err != nil {
			return err
		}
		return writePartial(cmd.OutOrStdout(), o.out, p.PartialHeader, fmt.Sprintf("%d of %d grid points replayed", len(p.Points), p.Units), p.Encode)
	}
	res, err := fit.Run(cmd.Context(), o.cfg, model, obs)
	if err != nil {
		return err
	}
	if o.out != "" {
		data, err := cascade.EncodeModel(res.Model)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(o.out, data); err != nil {
			return fmt.Errorf("write calibrated model: %w", err)
		}
	}
	return writeFitReport(cmd.OutOrStdout(), res.Report, o.output)
}

// writeFitReport prints a fit's report in the --output format: what
// cascade fit and cascade merge of a fit's partials print.
func writeFitReport(w io.Writer, r *fit.Report, output string) error {
	switch output {
	case "json":
		return writeJSON(w, r)
	case "markdown":
		return fit.WriteMarkdown(w, r)
	}
	return fit.WriteTable(w, r)
}
