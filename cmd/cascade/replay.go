package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"

	"cascade/internal/mdtable"
	"time"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/ingest"
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

// replayGCPercent is the collector's target while cascade replay runs,
// unless GOGC is set.
const replayGCPercent = 400

// replayGC raises the collector's target for a replay and returns the
// function that restores it. A replay's heap is its job records, which
// live to the end of the run (they are reused, not freed), so at the
// default target of 100% the collector runs each time a collapsing
// replay's queues double the heap, and scans every record each time for
// nothing: about a quarter of the CPU time of a seed-000 replay at 0.15
// requests/ms (BENCHMARKS.md). GOGC, when set, is left alone.
func replayGC() (restore func()) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return func() {}
	}
	old := debug.SetGCPercent(replayGCPercent)
	return func() { debug.SetGCPercent(old) }
}

func newReplayCmd() *cobra.Command {
	cfg := replay.DefaultConfig()
	var (
		scenarioFile, arrivals, dataset, output, drain string
		sets, surges                                   []string
	)
	cmd := &cobra.Command{
		Use:   "replay MODEL",
		Short: "Simulate how load and failure spread through a model",
		Long: `replay runs the tick-based diffusion engine over MODEL (model.json): root
requests arrive at the entries, calls queue at nodes, work, call their
children, time out, retry, trip breakers and spread failure. It prints the
root success rate, goodput, latency from the first attempt, amplification,
retry, zombie and rejected shares, per-node load and spread, and the times
to collapse and to recover.

A scenario file (YAML; see docs/scenario.md) and --set change any field of
any node, edge or entry; --arrivals, --surge and the scenario's traffic
change the arrivals. Same model, scenario and seed give the same output,
byte for byte. With --seeds K the headline metrics are given as means over
K seeds with 95% intervals.`,
		Example: `  # the seed-000 retry storm at 0.1 requests/ms, 100 s, fine ticks
  cascade replay testdata/replay/seed000.json --arrivals 100 --duration 100s --tick 10us

  # the same without client retries, over 10 seeds
  cascade replay testdata/replay/seed000.json --arrivals 100 \
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "table", "json", "markdown"); err != nil {
				return err
			}
			defer replayGC()()
			model, err := readModel(args[0])
			if err != nil {
				return err
			}
			var scen *cascade.Scenario
			name := ""
			if scenarioFile != "" {
				if scen, err = replay.LoadScenario(scenarioFile); err != nil {
					return usageError{err}
				}
				name = scen.Name
				if name == "" {
					name = strings.TrimSuffix(filepath.Base(scenarioFile), filepath.Ext(scenarioFile))
				}
			}
			setScen, err := replay.ParseSet(model, sets)
			if err != nil {
				return usageError{err}
			}
			if len(sets) > 0 {
				if name == "" {
					name = "baseline"
				}
				name += " + " + strings.Join(sets, ", ")
			}
			model, traffic, err := replay.Apply(model, scen, setScen)
			if err != nil {
				return usageError{err}
			}
			if traffic == nil && arrivals == "" {
				// The load the traces showed: closed-loop clients or
				// Poisson arrivals at the entries' rates (nil).
				traffic = model.ObservedTraffic()
			}
			if traffic, err = arrivalTraffic(traffic, arrivals, surges); err != nil {
				return usageError{err}
			}
			if arrivals == "observed" {
				if dataset == "" && (traffic == nil || len(traffic.ArrivalsMS) == 0) {
					return usageError{errors.New("--arrivals observed needs --dataset DIR (or a scenario with traffic.arrivals_ms)")}
				}
				if dataset != "" {
					if cfg.Observed, err = observedArrivals(dataset, model); err != nil {
						return err
					}
				}
			}
			cfg.Traffic = traffic
			cfg.Scenario = name
			if cfg.Drain, err = drainFlag(drain, model); err != nil {
				return usageError{err}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed(flagTick) {
				// The default tick is checked against a tenth of it; a
				// tick given is kept.
				tick, note, err := replay.RefineTick(cmd.Context(), model, cfg)
				if err != nil {
					return err
				}
				if note != "" {
					cfg.Tick = tick
					fmt.Fprintf(cmd.ErrOrStderr(), "cascade: note: %s\n", note)
				}
			}
			w := cmd.OutOrStdout()
			if cfg.Seeds <= 1 {
				res, err := replay.Replay(model, cfg)
				if err != nil {
					return err
				}
				if output == "json" {
					return writeJSON(w, res)
				}
				return replayTable(w, output == "markdown", args[0], cfg, res)
			}
			results, err := replay.RunSeeds(cmd.Context(), model, cfg)
			if err != nil {
				return err
			}
			sum := replay.Summarize(results)
			if output == "json" {
				runs := make([]cascade.Outcome, len(results))
				for i, r := range results {
					runs[i] = r.Outcome
				}
				return writeJSON(w, struct {
					Summary *replay.Summary   `json:"summary"`
					Runs    []cascade.Outcome `json:"runs"`
				}{sum, runs})
			}
			return summaryTable(w, output == "markdown", args[0], cfg, sum)
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarioFile, flagScenario, "", "scenario file (YAML or JSON) of changes and traffic")
	f.StringArrayVar(&sets, flagSet, nil, "change a field: node.NAME.FIELD=V, edge.FROM->TO.FIELD=V, entry.NAME.FIELD=V, traffic.FIELD=V (repeatable)")
	f.StringVar(&arrivals, flagArrivals, "", "arrivals: observed, RATE (per second; or N/ms), or closed:USERS,THINK (default: the model's load: its closed-loop clients when load.shape is closed, else Poisson at its entry rates)")
	f.StringVar(&dataset, flagDataset, "", "dataset directory whose root spans give --arrivals observed")
	f.StringArrayVar(&surges, flagSurge, nil, "surge FACTOR,AT,FOR, e.g. 2,10s,60s (repeatable)")
	f.DurationVar(&cfg.Duration, flagDuration, cfg.Duration, "time over which root requests arrive")
	f.StringVar(&drain, flagDrain, "", "time the replay runs on after the arrivals, for the work in flight to end; a root request still out then is unfinished, not a success (default: 3× the capture's root p99, or the entries' deadlines, at least 1s)")
	f.DurationVar(&cfg.Tick, flagTick, cfg.Tick, "clock resolution; drawn durations round to it, keeping their mean (default: 1ms, refined while the latency moves at a tenth of it; given, kept)")
	f.DurationVar(&cfg.Window, flagWindow, cfg.Window, "metric window (series, spread, collapse)")
	f.StringVar(&cfg.Tier, flagTier, "", "service from the model's observed tiers: p50, p95, p99, tiers or empirical")
	f.Uint64Var(&cfg.Seed, flagSeed, cfg.Seed, "random seed (the first, with --seeds)")
	f.IntVar(&cfg.Seeds, flagSeeds, cfg.Seeds, "replay this many seeds and report means with 95% intervals")
	f.IntVar(&cfg.Parallel, flagParallel, 0, "seeds replayed at once (default: all cores); does not change the output")
	f.BoolVar(&cfg.Series, flagSeries, false, "include per-node time series (JSON output)")
	f.StringVarP(&output, flagOutput, "o", "table", "output format: table, json or markdown")
	cmd.RegisterFlagCompletionFunc(flagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc(flagTier, fixedCompletions("p50", "p95", "p99", "tiers", "empirical"))
	cmd.RegisterFlagCompletionFunc(flagArrivals, fixedCompletions("observed", "closed:"))
	return cmd
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
// trace) and the batch publishers' (ingest.ReadArrivals).
func observedArrivals(dir string, m *cascade.Model) ([]replay.Arrival, error) {
	// entries maps an entry node's name to itself, so that an arrival
	// keeps the model's string, not the span's (valid only during the call).
	entries := map[string]string{}
	for _, e := range m.Entries {
		entries[e.Node] = e.Node
	}
	var out []replay.Arrival
	first := int64(-1)
	err := ingest.ReadArrivals(dir, func(s *cascade.Span) error {
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

func replayTable(w io.Writer, md bool, model string, cfg replay.Config, r *replay.Result) error {
	c := &r.Counts
	tw := newTable(w, md, 0)
	fmt.Fprintf(tw, "model\t%s\n", model)
	fmt.Fprintf(tw, "scenario\t%s\n", r.Scenario)
	fmt.Fprintf(tw, "seed\t%d\n", r.Seed)
	fmt.Fprintf(tw, "duration\t%s\n", durationLine(cfg))
	fmt.Fprintf(tw, "roots\t%d offered (%.2f/s), %d succeeded, %d failed, %d unfinished (queued or in flight at the end)\n",
		r.Roots, r.OfferedRate, r.Succeeded, r.Counts.Failed, r.Unfinished)
	fmt.Fprintf(tw, "success rate\t%s of the offered (an unfinished request is not a success)\n", pct(r.SuccessRate))
	fmt.Fprintf(tw, "load\t%s\n", loadLine(&r.Outcome))
	if r.Flows > 0 || r.FlowsUnfinished > 0 {
		fmt.Fprintf(tw, "flows\t%s succeeded of %d started (%d unfinished)\n", pct(r.FlowSuccessRate), r.Flows+r.FlowsUnfinished, r.FlowsUnfinished)
	}
	fmt.Fprintf(tw, "goodput\t%.2f/s\n", r.Goodput)
	fmt.Fprintf(tw, "latency\tp50 %.1f ms, p95 %.1f ms, p99 %.1f ms (from the first attempt)\n",
		r.LatencyP50MS, r.LatencyP95MS, r.LatencyP99MS)
	fmt.Fprintf(tw, "amplification\t%.3f calls per root\n", r.Amplification)
	fmt.Fprintf(tw, "retry share\t%s\n", pct(r.RetryShare))
	fmt.Fprintf(tw, "zombie share\t%s (%d zombie, %d cancelled attempts)\n", pct(r.ZombieShare), r.Counts.Zombies, r.Counts.Cancelled)
	shed := ""
	if c.Shed > 0 {
		shed = fmt.Sprintf(", low priority shed %d", c.Shed)
	}
	fmt.Fprintf(tw, "rejected share\t%s (queue %d, breaker %d, rate limit %d%s)\n", pct(r.RejectedShare),
		c.RejectedQueue, c.RejectedBreaker, c.RejectedLimit, shed)
	if c.LowRoots > 0 {
		// A priority split's classes; the high class is the rest.
		hs, hf := c.Succeeded-c.LowSucceeded, c.Failed-c.LowFailed
		fmt.Fprintf(tw, "priority\thigh %s success of %d roots, low %s of %d\n",
			pct(ratio(hs, hs+hf)), c.Roots-c.LowRoots, pct(ratio(c.LowSucceeded, c.LowSucceeded+c.LowFailed)), c.LowRoots)
	}
	if c.Degraded > 0 {
		fmt.Fprintf(tw, "degraded\t%d failed calls answered by a fallback (counted as successes)\n", c.Degraded)
	}
	fmt.Fprintf(tw, "collapse\t%s\n", msOrNone(r.CollapseAtMS))
	fmt.Fprintf(tw, "recover\t%s\n", msOrNone(r.RecoverMS))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w, md, tabwriter.AlignRight)
	fmt.Fprintln(tw, header(md, "node\tcalls\tfailures\trejected\tutil\tqueue mean\tqueue max\tp50 ms\tp99 ms\tinfected\t"))
	for _, n := range r.Nodes {
		inf := "-"
		if n.Infected {
			inf = fmt.Sprintf("%.1f s for %.1f s", n.InfectedAtMS/1000, n.InfectedForMS/1000)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%.2f\t%d\t%.1f\t%.1f\t%s\t\n", n.Name, n.Calls, n.Failures,
			n.Rejected, pct(n.Utilisation), n.QueueMean, n.QueueMax, n.LatencyP50MS, n.LatencyP99MS, inf)
	}
	return tw.Flush()
}

func summaryTable(w io.Writer, md bool, model string, cfg replay.Config, s *replay.Summary) error {
	tw := newTable(w, md, 0)
	fmt.Fprintf(tw, "model\t%s\n", model)
	fmt.Fprintf(tw, "scenario\t%s\n", s.Scenario)
	fmt.Fprintf(tw, "seeds\t%d to %d (%d)\n", s.Seeds[0], s.Seeds[len(s.Seeds)-1], len(s.Seeds))
	fmt.Fprintf(tw, "duration\t%s\n", durationLine(cfg))
	fmt.Fprintf(tw, "collapsed\t%d of %d\n", s.Collapsed, len(s.Seeds))
	fmt.Fprintf(tw, "overloaded\t%d of %d (a backlog that grew beyond chance and was still there at the end)\n", s.Overloaded, len(s.Seeds))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w, md, tabwriter.AlignRight)
	fmt.Fprintln(tw, header(md, "metric\tmean\t95% low\t95% high\tstddev\t"))
	for _, m := range s.Metrics {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.4g\t%.4g\t\n", m.Name, m.Mean, m.Low, m.High, m.StdDev)
	}
	return tw.Flush()
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
