package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/graph"
	"cascade/incident"
	"cascade/rank"
	"cascade/replay"
	"cascade/report"
)

// Flags of `cascade rank` (prefixed: other subcommands declare their own).
const (
	rankFlagScenario      = "scenario"
	rankFlagTraffic       = "traffic"
	rankFlagSurge         = "surge"
	rankFlagSeed          = "seed"
	rankFlagSeeds         = "seeds"
	rankFlagObjective     = "objective"
	rankFlagOutput        = "output"
	rankFlagDuration      = "duration"
	rankFlagTick          = "tick"
	rankFlagWindow        = "window"
	rankFlagParallel      = "parallel"
	rankFlagCapacity      = "capacity"
	rankFlagCapSeeds      = "capacity-seeds"
	rankFlagLatencyTarget = "latency-target"
	rankFlagDerive        = "derive"
	rankFlagTier          = "tier"
	rankFlagIncident      = "incident"
	rankFlagBaseline      = "baseline"
	rankFlagIncWindow     = "incident-window"
	rankFlagSlowdown      = "slowdown"
	rankFlagVerify        = "verify"
	rankFlagWide          = "wide"
	rankFlagShard         = "shard"
	rankFlagOut           = "out"
	rankFlagPrepare       = "prepare"
	rankFlagPrefix        = "prefix"
)

// rankOptions holds what the flags of `cascade rank` set.
type rankOptions struct {
	cfg                           rank.Config
	icfg                          incident.Config
	scenarios, incident, baseline []string
	traffic, objective, output    string
	latencyTarget                 time.Duration
	drain, shard, out, prefix     string
	wide, prepare                 bool
}

// newRankCmd builds `cascade rank`: candidate changes replayed on
// common seeds and ranked, and an incident's origin.
func newRankCmd() *cobra.Command {
	o := &rankOptions{cfg: rank.DefaultConfig(), icfg: incident.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "rank [MODEL]",
		Short: "Rank remediations by replaying them; find where an incident began",
		Long: `rank replays MODEL (model.json) under candidate changes and ranks them.

Candidates come from the model (each retrying edge or client: fewer attempts,
exponential backoff with full jitter, a retry budget; each limit that binds in
the baseline, a node's or an edge's pool, a shared pool, a queue cap, a rate
limit, a breaker: raised and cut; each fan-out edge: a concurrency cap where it
has none, batching; each node that queues, fails or runs zombie work: a
bounded queue sized by Little's law, a circuit breaker, deadline propagation;
the load-balancing policy of replicated nodes; an entry rate limit at the
capacity knee; one more replica or twice the pool on the busiest node; on
message queues: a delay queue for retries, one immediate redelivery before
it, a delivery limit, a length cap and its overflow policy, consumers and
prefetch raised or cut, publisher batching, asynchronous publishes, a
fan-out cut) and from --scenario files. Each is replayed over the same --seeds as the baseline
under the normal traffic and under a surge (×--surge for the middle third of
the run), and scored by paired differences with 95% intervals: a change whose
interval on the objective contains zero, or whose effect is within the baseline's
seed-to-seed spread (the "noise" line), has no measurable effect and is never
ranked as a win. The best compatible set of wins is then tried together. A
sweep of offered load gives the capacity curve, its knee and collapse point,
and the surge replays say whether the system is metastable and which change
removes that.

With --incident DATASET (a dataset directory or raw trace files) rank also
reads the incident: when each node left its normal range, the origin (the
earliest change consistent with the call direction), the path the
degradation took, each edge's amplification on it, and the most infectable
node. Without MODEL it reports only that, on a model built from the dataset.
docs/rank.md describes the methods.

The table puts the answer first (where the incident began; the best
change, its effect, verdict, cost and why), then every change ranked and
short sections, fitting the terminal ($COLUMNS; 100 columns when not a
terminal); --wide prints the full tables instead.

Across machines (--shard INDEX/COUNT, README "At scale"): the candidates'
replays are numbered candidate by candidate (in the order they are
derived, the --scenario files last), traffic by traffic and seed by seed;
each shard replays those whose number is INDEX modulo COUNT and writes a
partial result to --out. The tick check, baseline and capacity sweep the
candidates come from run in every shard (shard 0's partial carries them),
unless they were replayed once beforehand: --prepare --out FILE replays
them alone and writes them to FILE, and each shard given --prefix FILE
takes them from it (it must name the same MODEL and flags). cascade merge
joins the COUNT partials into the report this command prints unsharded,
byte for byte, with or without a prefix.`,
		Example: `  # rank remediations for the HotROD model under its observed load
  # (5 closed-loop clients, read from the traces into model.load)
  cascade graph testdata/hotrod-baseline/traces-otlp.json.gz --out model.json
  cascade rank model.json

  # the same under 20 clients that think 100 ms
  cascade rank model.json --traffic closed:20,100ms

  # the seed-000 retry storm, surges of x1.5, Markdown for a postmortem
  cascade rank testdata/replay/seed000.json --surge 1.5 --output markdown

  # the same ranking as four shards (one per machine or pod), then joined
  for i in 0 1 2 3; do cascade rank model.json --shard $i/4 --out parts/rank-$i.json; done
  cascade merge parts/

  # the same, the baseline and capacity sweep replayed once, not in each shard
  cascade rank model.json --prepare --out prefix.json
  for i in 0 1 2 3; do cascade rank model.json --shard $i/4 --prefix prefix.json --out parts/rank-$i.json; done
  cascade merge parts/

  # where did the Nezha currencyservice incident start?
  cascade rank --incident testdata/nezha-onlineboutique/trace`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("give at most one MODEL file")}
			}
			if len(args) == 0 && len(o.incident) == 0 {
				return usageError{errors.New("give a MODEL file, --incident DATASET, or both")}
			}
			return nil
		},
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.scenarios, rankFlagScenario, nil, "a scenario file (YAML or JSON) to rank with the derived candidates (repeatable)")
	f.StringVar(&o.traffic, rankFlagTraffic, "observed", "normal traffic: observed (the model's load: closed-loop clients or Poisson at its entry rates), surge:X, closed:USERS,THINK or RATE per second")
	f.Float64Var(&o.cfg.SurgeFactor, rankFlagSurge, o.cfg.SurgeFactor, "surge regime: the normal traffic times this for the middle third of the run; 0 for none")
	f.Uint64Var(&o.cfg.Seed, rankFlagSeed, o.cfg.Seed, "first random seed; every candidate replays the same seeds")
	f.IntVar(&o.cfg.Seeds, rankFlagSeeds, o.cfg.Seeds, "seeds per candidate and traffic (at least 2)")
	f.StringVar(&o.objective, rankFlagObjective, string(o.cfg.Objective), "what to rank by: success, goodput, p99, amplification, spread or composite")
	f.StringVarP(&o.output, rankFlagOutput, "o", "table", "output format: table, json or markdown")
	f.StringVar(&o.shard, rankFlagShard, "", "replay only shard INDEX of COUNT (as 0/4) of the candidates' replays and write a partial result to --out, for cascade merge")
	f.StringVar(&o.out, rankFlagOut, "", "with --shard, the file of the shard's partial result; with --prepare, of the prefix")
	f.BoolVar(&o.prepare, rankFlagPrepare, false, "replay only the tick check, baseline and capacity sweep that the shards share, and write them to --out, for --prefix")
	f.StringVar(&o.prefix, rankFlagPrefix, "", "with --shard, take the tick check, baseline and capacity sweep from this file (written by --prepare with the same MODEL and flags)")
	f.BoolVar(&o.wide, rankFlagWide, false, "with --output table, print the full tables, however wide, instead of the answer and compact sections")
	f.DurationVar(&o.cfg.Duration, rankFlagDuration, o.cfg.Duration, "time over which each replay's root requests arrive (default: the capture's length, at least 1m0s)")
	f.StringVar(&o.drain, "drain", "", "time each replay runs on after its arrivals; a root request still out then is unfinished, not a success (default: 3× the capture's root p99, or the entries' deadlines, at least 1s)")
	f.DurationVar(&o.cfg.Tick, rankFlagTick, o.cfg.Tick, "replay clock resolution (default: 1ms, refined while the baseline's latency moves at a tenth of it; given, kept)")
	f.DurationVar(&o.cfg.Window, rankFlagWindow, o.cfg.Window, "replay metric window (spread, collapse, recovery)")
	f.StringVar(&o.cfg.Tier, rankFlagTier, "", "service from the model's observed tiers: p50, p95, p99, tiers or empirical")
	f.IntVar(&o.cfg.Parallel, rankFlagParallel, 0, "replays run at once (default: all cores); does not change the output")
	f.BoolVar(&o.cfg.Capacity, rankFlagCapacity, o.cfg.Capacity, "sweep offered load for the capacity curve (needed for the rate-limit candidate)")
	f.BoolVar(&o.cfg.Resample, "resample", o.cfg.Resample, "replay each seed over its own draw of what the capture measured (service times, failure rates, entry rates), so the intervals carry the data's uncertainty; false: the replay's seed noise only")
	f.BoolVar(&o.cfg.FitCheck, "fit-check", o.cfg.FitCheck, "compare the baseline's replay with what the capture measured at each node; beyond 15% p50, 50% p99 or 3 pp errors, no change is called a win or worse (off for a model changed on purpose)")
	f.IntVar(&o.cfg.CapacitySeeds, rankFlagCapSeeds, 0, "seeds per load point of the sweep (default: --seeds)")
	f.DurationVar(&o.latencyTarget, rankFlagLatencyTarget, 0, "latency target W of the bounded queues, queue = ceil(rate×W) − slots (default: 2× each node's p99)")
	f.BoolVar(&o.cfg.Derive, rankFlagDerive, o.cfg.Derive, "derive candidates from the model; false ranks the --scenario files alone")
	f.StringArrayVar(&o.incident, rankFlagIncident, nil, "a dataset directory or trace files holding an incident: report where it started (repeatable)")
	f.StringArrayVar(&o.baseline, rankFlagBaseline, nil, "a fault-free dataset or trace files for the normal range (default: the incident's first windows)")
	f.DurationVar(&o.icfg.Window, rankFlagIncWindow, o.icfg.Window, "window of the incident's per-node series")
	f.Float64Var(&o.icfg.Slowdown, rankFlagSlowdown, o.icfg.Slowdown, "infectability: each node's service time is slowed by this share in replay; 0 skips it")
	f.IntVar(&o.icfg.Verify, rankFlagVerify, o.icfg.Verify, "replay check: the first N origins, each one's fault replayed and scored by how well it reproduces the other nodes (replay_fit); 0 skips it")
	cmd.RegisterFlagCompletionFunc(rankFlagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.RegisterFlagCompletionFunc(rankFlagObjective, fixedCompletions("success", "goodput", "p99", "amplification", "spread", "composite"))
	cmd.RegisterFlagCompletionFunc(rankFlagTraffic, fixedCompletions("observed", "surge:", "closed:"))
	return cmd
}

// run checks the flags, reads MODEL and the incident, ranks, and writes the report.
func (o *rankOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.config(cmd, args); err != nil {
		return err
	}
	doc, model, err := o.inputs(cmd, args)
	if err != nil {
		return err
	}
	if model != nil {
		if !cmd.Flags().Changed(rankFlagDuration) {
			// Replay at least the time the capture covers, so what
			// it showed late (an alarm, a backlog) is replayed.
			o.cfg.Duration = max(o.cfg.Duration, model.Source.Length().Round(time.Second))
		}
		if o.drain != "" {
			if o.cfg.Drain, err = drainFlag(o.drain, model); err != nil {
				return usageError{err}
			}
		}
		o.cfg.Progress = progress(cmd.ErrOrStderr(), "rank", "replays")
		if o.prepare {
			p, err := rank.Prepare(cmd.Context(), model, o.cfg)
			if err != nil {
				return err
			}
			return writePrepared(cmd.OutOrStdout(), o.out, p)
		}
		if o.prefix != "" {
			if o.cfg.Prefix, err = readPrepared(o.prefix); err != nil {
				return err
			}
		}
		if o.cfg.Shard.Sharded() {
			p, err := rank.RunShard(cmd.Context(), model, o.cfg)
			if err != nil {
				return prefixError(o.prefix, err)
			}
			p.Source = doc.Model
			return writePartial(cmd.OutOrStdout(), o.out, p.PartialHeader, fmt.Sprintf("%d of %d replays (candidate × traffic × seed)", len(p.Replays), p.Units), p.Encode)
		}
		if doc.Rank, err = rank.Run(cmd.Context(), model, o.cfg); err != nil {
			return err
		}
		printThin(cmd.ErrOrStderr(), doc.Rank)
	}
	if o.output == "table" {
		return report.RankText(cmd.OutOrStdout(), doc, report.TextOptions{Width: outputWidth(cmd.OutOrStdout()), Wide: o.wide})
	}
	return report.Rank(cmd.OutOrStdout(), doc, report.Format(o.output))
}

// config checks the flags and sets the ranking's and the incident pass's configurations.
func (o *rankOptions) config(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output, "table", "json", "markdown"); err != nil {
		return err
	}
	var err error
	if o.cfg.Shard, err = replay.ParseShard(o.shard); err != nil {
		return usageError{fmt.Errorf("--%s %w", rankFlagShard, err)}
	}
	if err := checkShardFlags(o.cfg.Shard, o.shard, o.out, o.prefix, o.prepare, len(args) > 0, len(o.incident) > 0); err != nil {
		return err
	}
	if err := checkOut(rankFlagOut, o.out, outFile); err != nil {
		return err
	}
	if o.cfg.Objective, err = rank.ParseObjective(o.objective); err != nil {
		return usageError{err}
	}
	t, surge, err := rank.ParseTraffic(o.traffic)
	if err != nil {
		return usageError{err}
	}
	o.cfg.Traffic = t
	// A tick given is kept as given; the default is checked.
	o.cfg.TickCheck = !cmd.Flags().Changed(rankFlagTick)
	if surge > 0 {
		if cmd.Flags().Changed(rankFlagSurge) {
			return usageError{fmt.Errorf("--%s surge:X and --%s: give the factor once", rankFlagTraffic, rankFlagSurge)}
		}
		o.cfg.SurgeFactor = surge
	}
	o.cfg.LatencyTargetMS = float64(o.latencyTarget) / 1e6
	for _, path := range o.scenarios {
		s, err := replay.LoadScenario(path)
		if err != nil {
			return usageError{err}
		}
		if s.Name == "" {
			s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		o.cfg.Scenarios = append(o.cfg.Scenarios, s)
	}
	if err := o.cfg.Validate(); err != nil {
		return usageError{err}
	}
	o.icfg.Seed, o.icfg.Parallel, o.icfg.Tick = o.cfg.Seed, o.cfg.Parallel, o.cfg.Tick
	if err := o.icfg.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// inputs reads MODEL, checks the --scenario files against it, and locates the incident's origin.
func (o *rankOptions) inputs(cmd *cobra.Command, args []string) (*report.RankDocument, *cascade.Model, error) {
	doc := &report.RankDocument{}
	var model *cascade.Model
	var err error
	if len(args) == 1 {
		doc.Model = args[0]
		if model, err = readModel(args[0]); err != nil {
			return nil, nil, err
		}
		// A scenario file that names nothing of the model, or sets
		// a field wrong, is a mistake to fix before the ranking,
		// not a candidate that "failed" in its table.
		for i, s := range o.cfg.Scenarios {
			if _, _, err := replay.Apply(model, s); err != nil {
				return nil, nil, usageError{fmt.Errorf("--%s %s: %w", rankFlagScenario, o.scenarios[i], err)}
			}
		}
	}
	if len(o.incident) > 0 {
		if doc.Incident, err = rootCause(cmd, o.incident, o.baseline, model, o.icfg); err != nil {
			return nil, nil, err
		}
	}
	return doc, model, nil
}

// rootCause reads the incident (and the baseline capture, if any),
// ingesting raw files on the fly, and locates the origin. Without a
// model it builds one from the incident to replay infectability and the
// replay check.
func rootCause(cmd *cobra.Command, during, baseline []string, m *cascade.Model, cfg incident.Config) (*incident.Incident, error) {
	dir, cleanup, err := graphInput(cmd, during, nil, "auto")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var ref cascade.SpanSource
	var refLogs incident.LogSource
	var refSamples cascade.SampleSource
	if len(baseline) > 0 {
		bdir, bclean, err := graphInput(cmd, baseline, nil, "auto")
		if err != nil {
			return nil, err
		}
		defer bclean()
		ref, refLogs, refSamples = spansOf(bdir), logsOf(bdir), samplesOf(bdir)
	}
	if m == nil && (cfg.Slowdown > 0 || cfg.Verify > 0) {
		gcfg := graph.DefaultConfig()
		gcfg.Dataset = strings.Join(during, " ")
		res, err := graph.Build(cmd.Context(), gcfg, spansOf(dir), samplesOf(dir))
		if err != nil {
			return nil, err
		}
		m = res.Model
	}
	defer spanGC()()
	inc, err := incident.Investigate(cmd.Context(), incident.Input{Spans: spansOf(dir), Reference: ref, Samples: samplesOf(dir), Model: m,
		Logs: logsOf(dir), ReferenceLogs: refLogs, ReferenceSamples: refSamples}, cfg)
	if err != nil {
		return nil, err
	}
	// A signal given and not judged is said, whatever the output format.
	for _, w := range inc.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "cascade: warning: incident pass: %s\n", w)
	}
	return inc, nil
}
