package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"cascade/internal/mdtable"
	"time"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/dataset"
	"cascade/replay"
)

// Flag names of `cascade replay`.
const (
	flagScenario = "scenario"
	flagSet      = "set"
	flagArrivals = "arrivals"
	flagDataset  = "dataset"
	flagSurge    = "surge"
	flagDuration = "duration"
	flagDrain    = "drain"
	flagTick     = "tick"
	flagWindow   = "window"
	flagTier     = "tier"
	flagSeed     = "seed"
	flagSeeds    = "seeds"
	flagParallel = "parallel"
	flagSeries   = "series"
	flagOutput   = "output"
)

// replayOptions holds what the flags of `cascade replay` set.
type replayOptions struct {
	cfg                                            replay.Config
	scenarioFile, arrivals, dataset, output, drain string
	sets, surges                                   []string
}

// newReplayCmd builds `cascade replay`: a model replayed, alone or a
// what-if beside its baseline.
func newReplayCmd() *cobra.Command {
	o := &replayOptions{cfg: replay.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "replay MODEL",
		Short: "Simulate how load and failure spread through a model",
		Long: `replay runs the tick-based diffusion engine over MODEL (model.json): root
requests arrive at the entries, calls queue at nodes, work, call their
children, time out, retry, trip breakers and spread failure. It prints one
table of the root success rate (succeeded ÷ offered), goodput, unfinished
requests, latency from the first attempt, amplification, retry, zombie and
rejected shares, beside what the capture observed at the entries where the
model holds it (offered rate, success rate, goodput, p50, p95, p99; - where
it does not); then per-node load and spread, and the times to collapse and
to recover.

A scenario file (YAML; see docs/scenario.md) and --set change any field of
any node, edge or entry, and the scenario's traffic the arrivals: a
what-if. With one, the baseline is replayed too, the model as it is under
the same --arrivals, --surge, --duration, --drain, --tick and seeds, and
the table has the columns observed, baseline, what-if and Δ, the what-if
less the baseline paired seed by seed, with its 95% interval from --seeds
2 or more. Without one, the columns are observed and replayed, with the
95% interval of the mean over --seeds K. One seed or many, the table is the
same, the means over the seeds in its cells; a latency quantile of a replay
in which nothing succeeded is -, not 0. Same model, scenario and seed give
the same output, byte for byte. The JSON keeps the replay's fields (one
seed's result, or with --seeds the summary and runs) and adds
"comparison": the observed figures and, with a what-if, the baseline's
and the what-if's summaries and the differences with their intervals.`,
		Example: `  # the seed-000 retry storm at 0.1 requests/ms, 100 s, fine ticks
  cascade replay testdata/replay/seed000.json --arrivals 100 --duration 100s --tick 10us

  # the same without client retries, against the baseline, over 10 seeds
  cascade replay testdata/replay/seed000.json --arrivals 100 --duration 100s --tick 10us \
      --set entry.uplink.retry=null --seeds 10

  # a scenario file, a surge of x2 for 60 s from 10 s, JSON out
  cascade replay model.json --scenario retries1.yaml --surge 2,10s,60s --output json

  # closed loop: 50 users thinking 100 ms; observed arrivals from a dataset
  cascade replay model.json --arrivals closed:50,100ms
  cascade replay model.json --arrivals observed --dataset /tmp/hotrod`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("give exactly one MODEL file")}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.scenarioFile, flagScenario, "", "scenario file (YAML or JSON) of changes and traffic")
	f.StringArrayVar(&o.sets, flagSet, nil, "change a field: node.NAME.FIELD=V, edge.FROM->TO.FIELD=V, entry.NAME.FIELD=V, traffic.FIELD=V (repeatable)")
	f.StringVar(&o.arrivals, flagArrivals, "", "arrivals: observed, RATE (per second; or N/ms), or closed:USERS,THINK (default: the model's load: its closed-loop clients when load.shape is closed, else Poisson at its entry rates)")
	f.StringVar(&o.dataset, flagDataset, "", "dataset directory whose root spans give --arrivals observed")
	f.StringArrayVar(&o.surges, flagSurge, nil, "surge FACTOR,AT,FOR, e.g. 2,10s,60s (repeatable)")
	f.DurationVar(&o.cfg.Duration, flagDuration, o.cfg.Duration, "time over which root requests arrive")
	f.StringVar(&o.drain, flagDrain, "", "time the replay runs on after the arrivals, for the work in flight to end; a root request still out then is unfinished, not a success (default: 3× the capture's root p99, or the entries' deadlines, at least 1s)")
	f.DurationVar(&o.cfg.Tick, flagTick, o.cfg.Tick, "clock resolution; drawn durations round to it, keeping their mean (default: 1ms, refined while the latency moves at a tenth of it; given, kept)")
	f.DurationVar(&o.cfg.Window, flagWindow, o.cfg.Window, "metric window (series, spread, collapse)")
	f.StringVar(&o.cfg.Tier, flagTier, "", "service from the model's observed tiers: p50, p95, p99, tiers or empirical")
	f.Uint64Var(&o.cfg.Seed, flagSeed, o.cfg.Seed, "random seed (the first, with --seeds)")
	f.IntVar(&o.cfg.Seeds, flagSeeds, o.cfg.Seeds, "replay this many seeds (a what-if's baseline the same ones) and report means with 95% intervals")
	f.IntVar(&o.cfg.Parallel, flagParallel, 0, "seeds replayed at once (default: all cores); does not change the output")
	f.BoolVar(&o.cfg.Series, flagSeries, false, "include per-node time series (JSON output)")
	f.StringVarP(&o.output, flagOutput, "o", "table", "output format: table, json or markdown")
	cmd.RegisterFlagCompletionFunc(flagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc(flagTier, fixedCompletions("p50", "p95", "p99", "tiers", "empirical"))
	cmd.RegisterFlagCompletionFunc(flagArrivals, fixedCompletions("observed", "closed:"))
	return cmd
}

// run replays MODEL, with the what-if and its baseline when there is one, and writes the table or JSON.
func (o *replayOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	defer replayGC()()
	orig, err := readModel(args[0])
	if err != nil {
		return err
	}
	model, traffic, name, err := o.whatIf(orig)
	if err != nil {
		return err
	}
	if err := o.config(cmd, model, traffic, name); err != nil {
		return err
	}
	run := &replayRun{Model: args[0], Cfg: o.cfg}
	run.Observed, run.Entries = observedFigures(orig)
	if run.WhatIf, err = replaySeeds(cmd.Context(), model, o.cfg); err != nil {
		return err
	}
	if o.scenarioFile != "" || len(o.sets) > 0 {
		// A what-if: the baseline too, on the same seeds.
		base, baseCfg, err := baselineOf(orig, o.cfg, o.arrivals, o.surges)
		if err != nil {
			return usageError{fmt.Errorf("the baseline: %w", err)}
		}
		if run.Baseline, err = replaySeeds(cmd.Context(), base, baseCfg); err != nil {
			return fmt.Errorf("the baseline: %w", err)
		}
	}
	if run.Compare, err = replay.Compare(run.Baseline, run.WhatIf); err != nil {
		return err
	}
	return o.write(cmd.OutOrStdout(), run)
}

// whatIf applies the scenario file and --set to the model and names the what-if ("" for none).
func (o *replayOptions) whatIf(orig *cascade.Model) (*cascade.Model, *cascade.Traffic, string, error) {
	var err error
	var scen *cascade.Scenario
	name := ""
	if o.scenarioFile != "" {
		if scen, err = replay.LoadScenario(o.scenarioFile); err != nil {
			return nil, nil, "", usageError{err}
		}
		name = scen.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(o.scenarioFile), filepath.Ext(o.scenarioFile))
		}
	}
	setScen, err := replay.ParseSet(orig, o.sets)
	if err != nil {
		return nil, nil, "", usageError{err}
	}
	if len(o.sets) > 0 {
		if name == "" {
			name = "baseline"
		}
		name += " + " + strings.Join(o.sets, ", ")
	}
	model, traffic, err := replay.Apply(orig, scen, setScen)
	if err != nil {
		return nil, nil, "", usageError{err}
	}
	return model, traffic, name, nil
}

// config sets the replay's traffic, observed arrivals, drain and tick from the flags and the what-if.
func (o *replayOptions) config(cmd *cobra.Command, model *cascade.Model, traffic *cascade.Traffic, name string) error {
	var err error
	if traffic == nil && o.arrivals == "" {
		// The load the traces showed: closed-loop clients or
		// Poisson arrivals at the entries' rates (nil).
		traffic = model.ObservedTraffic()
	} else if traffic != nil {
		note, err := closedOver(traffic, model.ObservedTraffic())
		if err != nil {
			return usageError{err}
		}
		if note != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "cascade: note: %s\n", note)
		}
	}
	if traffic, err = arrivalTraffic(traffic, o.arrivals, o.surges); err != nil {
		return usageError{err}
	}
	if o.arrivals == "observed" {
		if o.dataset == "" && (traffic == nil || len(traffic.ArrivalsMS) == 0) {
			return usageError{errors.New("--arrivals observed needs --dataset DIR (or a scenario with traffic.arrivals_ms)")}
		}
		if o.dataset != "" {
			if o.cfg.Observed, err = observedArrivals(o.dataset, model); err != nil {
				return err
			}
		}
	}
	o.cfg.Traffic = traffic
	o.cfg.Scenario = name
	if o.cfg.Drain, err = drainFlag(o.drain, model); err != nil {
		return usageError{err}
	}
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	if !cmd.Flags().Changed(flagTick) {
		// The default tick is checked against a tenth of it; a
		// tick given is kept.
		tick, note, err := replay.RefineTick(cmd.Context(), model, o.cfg)
		if err != nil {
			return err
		}
		if note != "" {
			o.cfg.Tick = tick
			fmt.Fprintf(cmd.ErrOrStderr(), "cascade: note: %s\n", note)
		}
	}
	return nil
}

// write writes the replays and their comparison as a table, Markdown or JSON.
func (o *replayOptions) write(w io.Writer, run *replayRun) error {
	if o.output != "json" {
		return replayTable(w, o.output == "markdown", run)
	}
	if len(run.WhatIf) == 1 {
		return writeJSON(w, struct {
			*replay.Result
			Comparison *replayComparison `json:"comparison,omitempty"`
		}{run.WhatIf[0], run.comparisonJSON()})
	}
	runs := make([]cascade.Outcome, len(run.WhatIf))
	for i, r := range run.WhatIf {
		runs[i] = r.Outcome
	}
	return writeJSON(w, struct {
		Summary    *replay.Summary   `json:"summary"`
		Runs       []cascade.Outcome `json:"runs"`
		Comparison *replayComparison `json:"comparison,omitempty"`
	}{replay.Summarize(run.WhatIf), runs, run.comparisonJSON()})
}

// arrivalTraffic applies --arrivals and --surge over the scenario's
// traffic (nil when none).
func arrivalTraffic(t *cascade.Traffic, arrivals string, surges []string) (*cascade.Traffic, error) {
	if arrivals == "" && len(surges) == 0 {
		return t, nil
	}
	if t == nil {
		t = &cascade.Traffic{}
	}
	switch {
	case arrivals == "":
	case arrivals == "observed":
		t.Kind = cascade.TrafficObserved
	case strings.HasPrefix(arrivals, "closed:"):
		users, think, ok := strings.Cut(strings.TrimPrefix(arrivals, "closed:"), ",")
		n, err := strconv.Atoi(users)
		if err != nil || n < 1 || !ok {
			return nil, fmt.Errorf("--arrivals %q: want closed:USERS,THINK", arrivals)
		}
		ms, err := parseMS(think)
		if err != nil {
			return nil, fmt.Errorf("--arrivals %q: think time: %w", arrivals, err)
		}
		t.Kind, t.Users, t.ThinkMS = cascade.TrafficClosed, n, ms
	default:
		rate, err := parseRate(arrivals)
		if err != nil {
			return nil, fmt.Errorf("--arrivals %q: want observed, RATE or closed:USERS,THINK: %w", arrivals, err)
		}
		t.Kind, t.RatePerSec = cascade.TrafficPoisson, rate
	}
	for _, s := range surges {
		parts := strings.Split(s, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("--surge %q: want FACTOR,AT,FOR", s)
		}
		factor, err := strconv.ParseFloat(strings.TrimPrefix(parts[0], "x"), 64)
		if err != nil || factor < 0 {
			return nil, fmt.Errorf("--surge %q: bad factor", s)
		}
		at, err1 := parseMS(parts[1])
		dur, err2 := parseMS(parts[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("--surge %q: %w", s, err)
		}
		t.Surges = append(t.Surges, cascade.Surge{AtMS: at, ForMS: dur, Factor: factor})
	}
	return t, nil
}

// parseRate reads a rate: "80", "80/s" or "0.08/ms"; per second.
func parseRate(s string) (float64, error) {
	scale := 1.0
	switch {
	case strings.HasSuffix(s, "/ms"):
		s, scale = strings.TrimSuffix(s, "/ms"), 1000
	case strings.HasSuffix(s, "/s"):
		s = strings.TrimSuffix(s, "/s")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, errors.New("not a non-negative number")
	}
	return v * scale, nil
}

// parseMS reads a duration ("100ms", "1.5s") or plain milliseconds.
func parseMS(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 {
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return float64(d) / 1e6, nil
}

// observedArrivals reads the root requests of a dataset as arrivals from
// the first one, each at the entry named by its service (else the first):
// its root spans less the consumers' (a message's delivery starting a
// trace) and the batch publishers' (dataset.ReadArrivals).
func observedArrivals(dir string, m *cascade.Model) ([]replay.Arrival, error) {
	// entries maps an entry node's name to itself, so that an arrival
	// keeps the model's string, not the span's (valid only during the call).
	entries := map[string]string{}
	for _, e := range m.Entries {
		entries[e.Node] = e.Node
	}
	var out []replay.Arrival
	first := int64(-1)
	err := dataset.ReadArrivals(dir, func(s *cascade.Span) error {
		a := replay.Arrival{AtMS: float64(s.Start)}
		if node, ok := entries[s.Service]; ok {
			a.Entry = node
		}
		if first < 0 || s.Start < first {
			first = s.Start
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no root spans", dir)
	}
	for i := range out {
		out[i].AtMS = (out[i].AtMS - float64(first)) / 1e6
	}
	return out, nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

func msOrNone(x float64) string {
	if x < 0 {
		return "none"
	}
	return strconv.FormatFloat(x/1000, 'f', 1, 64) + " s"
}

// drainFlag reads --drain: a duration, or the model's own when empty.
// The result is as replay.Config.Drain takes it: none is negative.
func drainFlag(s string, m *cascade.Model) (time.Duration, error) {
	if s == "" {
		return replay.DrainFor(m), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--drain %q: want a duration of 0 or more, like 5s", s)
	}
	if d == 0 {
		d = -1
	}
	return d, nil
}

// durationLine says how long the arrivals and the drain lasted.
func durationLine(cfg replay.Config) string {
	return fmt.Sprintf("%v of arrivals, then %v of drain (tick %v)", cfg.Duration, max(cfg.Drain, 0), cfg.Tick)
}

// loadLine says whether the replay kept up with what it was offered.
func loadLine(o *cascade.Outcome) string {
	if o.Overloaded {
		return fmt.Sprintf("overloaded: the backlog grew %.2f/s in the second half of the arrivals (offered %.2f/s, ended %.2f/s); %d requests unfinished at the end",
			o.BacklogPerSec, o.OfferedRate, o.OfferedRate-o.BacklogPerSec, o.Unfinished)
	}
	return fmt.Sprintf("keeps up: no backlog grew beyond chance (%+.2f/s in the second half of the arrivals)", zero(o.BacklogPerSec))
}

// zero turns -0 into 0, so a figure never prints as -0.00.
func zero(x float64) float64 {
	if x == 0 {
		return 0
	}
	return x
}

// replaySeeds replays the model with cfg's seeds, in seed order.
func replaySeeds(ctx context.Context, m *cascade.Model, cfg replay.Config) ([]*replay.Result, error) {
	if cfg.Seeds <= 1 {
		r, err := replay.Replay(m, cfg)
		if err != nil {
			return nil, err
		}
		return []*replay.Result{r}, nil
	}
	return replay.RunSeeds(ctx, m, cfg)
}

// baselineOf returns what a what-if is compared with: the model with no
// scenario and no --set, under cfg (the same seeds, duration, drain,
// tick and observed arrivals) and the traffic of the model's own load
// with --arrivals and --surge over it, not the scenario's. When
// --arrivals observed has no arrivals but the scenario's, the baseline
// takes those.
func baselineOf(m *cascade.Model, cfg replay.Config, arrivals string, surges []string) (*cascade.Model, replay.Config, error) {
	base, _, err := replay.Apply(m)
	if err != nil {
		return nil, cfg, err
	}
	var t *cascade.Traffic
	if arrivals == "" {
		t = base.ObservedTraffic()
	}
	if t, err = arrivalTraffic(t, arrivals, surges); err != nil {
		return nil, cfg, err
	}
	if arrivals == "observed" && len(cfg.Observed) == 0 && (t == nil || len(t.ArrivalsMS) == 0) {
		t = cfg.Traffic
	}
	cfg.Traffic, cfg.Scenario = t, ""
	return base, cfg, cfg.Validate()
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// tableWriter is a tabwriter.Writer or, for Markdown, an mdtable.Writer.
type tableWriter interface {
	io.Writer
	Flush() error
}

// newTable returns the writer of one text table: aligned columns, or
// Markdown when md is set.
func newTable(w io.Writer, md bool, flags uint) tableWriter {
	if md {
		return mdtable.NewWriter(w)
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
}

// header is a table's header line: as written, or in upper case for
// Markdown, where an upper-case line is what starts a table.
func header(md bool, line string) string {
	if md {
		return strings.ToUpper(line)
	}
	return line
}

// closedOver makes a scenario's or --set's traffic that names clients
// (users) a change of the model's own closed loop: "traffic.users=10" on
// a model read as 5 closed-loop clients is 10 clients with the same think
// time, not an open load that ignores the number. On a model whose load
// is open, users without kind=closed would have no effect: an error.
func closedOver(t, observed *cascade.Traffic) (string, error) {
	closedModel := observed != nil && observed.Kind == cascade.TrafficClosed
	switch {
	case t.Kind == "" && t.Users > 0:
		if !closedModel {
			return "", fmt.Errorf("traffic.users=%d has no effect on this model's open (Poisson) load: give traffic.kind=closed and traffic.think_ms too, or --arrivals closed:%d,THINK", t.Users, t.Users)
		}
		t.Kind = cascade.TrafficClosed
		if t.ThinkMS == 0 {
			t.ThinkMS = observed.ThinkMS
		}
		return fmt.Sprintf("traffic: %d closed-loop clients instead of the capture's %d, thinking %s ms as they did", t.Users, observed.Users, strconv.FormatFloat(t.ThinkMS, 'f', -1, 64)), nil
	case t.Kind == cascade.TrafficClosed && t.ThinkMS == 0 && closedModel:
		t.ThinkMS = observed.ThinkMS
		if t.Users == 0 {
			t.Users = observed.Users
		}
		return fmt.Sprintf("traffic: closed loop with the capture's think time, %s ms (give traffic.think_ms to change it)", strconv.FormatFloat(t.ThinkMS, 'f', -1, 64)), nil
	}
	return "", nil
}
