package analyze

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cascade"
	"cascade/dataset"
	"cascade/fit"
	"cascade/graph"
	"cascade/incident"
	"cascade/ingest"
	"cascade/internal/atomicfile"
	"cascade/rank"
	"cascade/report"
)

// Files written into Config.Out.
const (
	DatasetDir     = "dataset"
	ModelFile      = "model.json"
	CalibratedFile = "calibrated.json"
	JSONFile       = "report.json"
	MarkdownFile   = "report.md"
	HTMLFile       = "report.html"
)

// Config says what to analyse and how.
type Config struct {
	// Inputs are trace files or directories to ingest, or one dataset
	// directory written by cascade ingest.
	Inputs []string
	// Metrics are metric files or directories ingested with the traces.
	Metrics []string
	// Logs are log files or directories ingested with the traces, into
	// the dataset's logs.parquet.
	Logs []string
	// Format is the trace format of the inputs; empty or auto detects.
	Format ingest.Format
	// CSVMap maps the columns of span CSV inputs (and baseline files) to
	// span fields, as ingest's Options.CSVMap; nil detects a preset from
	// the header.
	CSVMap *ingest.CSVMap
	// Out is the directory the reports and models are written to; it is
	// created when missing. Files of earlier runs are replaced one by
	// one, each atomically.
	Out string
	// Graph builds the model.
	Graph graph.Config
	// Fit calibrates the model; NoFit skips it.
	Fit   fit.Config
	NoFit bool
	// Rank ranks the remediations; its Seed is every stage's seed.
	Rank rank.Config
	// Baseline, when set, is a fault-free capture (trace files, or one
	// dataset directory) whose spans make every node's normal range in
	// the incident pass; empty: the incident's own first windows.
	Baseline []string
	// BaselineLogs and BaselineMetrics are log and metric files or
	// directories ingested with Baseline's trace files, so that the
	// reference carries the logs and metrics that make their normal
	// range; empty: none. A Baseline dataset holds its own.
	BaselineLogs, BaselineMetrics []string
	// Incident finds where an incident began; NoIncident skips it.
	Incident   incident.Config
	NoIncident bool
	// MinRoots is the fewest root requests a ranking or infectability
	// replay should see: when the model's entry rate would send fewer in
	// Rank.Duration (a sparse capture), the replays run longer, up to
	// MaxDuration, and their metric window grows with them (a 600th of
	// the duration, at least Rank.Window). 0 keeps the durations given.
	MinRoots    int
	MaxDuration time.Duration
	// Progress, when set, is told of each stage as it starts (done and
	// total count replays or points; 0, 0 when a stage starts).
	Progress func(stage string, done, total int64)
}

// DefaultConfig returns the defaults of `cascade analyze`: every stage at
// its own defaults, but a fit that skips its back-tests (the ranking
// replays the fitted model over many seeds; a back-test is for `cascade
// fit`), and a ranking of 4 seeds of 30 simulated seconds, so that a
// capture the size of the bundled example is analysed in seconds — made
// longer, up to 6 hours, when the observed rate would send fewer than
// 2,000 root requests in that time (MinRoots): a replay that sees a few
// dozen requests has intervals too wide to rank anything.
func DefaultConfig() Config {
	c := Config{
		Graph:    graph.DefaultConfig(),
		Fit:      fit.DefaultConfig(),
		Rank:     rank.DefaultConfig(),
		Incident: incident.DefaultConfig(),
	}
	c.Fit.Holdout = 0
	c.Rank.Seeds = 4
	c.Rank.Duration = 30 * time.Second
	c.MinRoots, c.MaxDuration = 2000, 6*time.Hour
	return c
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Inputs) == 0 {
		errs = append(errs, errors.New("no input: give trace files or a dataset directory"))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("no output directory"))
	}
	if err := c.Rank.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !c.NoFit {
		if err := c.Fit.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if !c.NoIncident {
		if err := c.Incident.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run analyses the inputs end to end — ingest, graph, fit, rank, the
// incident's origin and the timeline of the best change — and writes the
// dataset (unless the input is one), model.json, calibrated.json,
// report.json, report.md and report.html into cfg.Out. The dataset is
// ingested beside Out/dataset and takes its place only when the analysis
// has succeeded, as do the models and reports. Every stage
// replays with the seeds from cfg.Rank.Seed on, so the same inputs and
// configuration give byte-identical files at any parallelism.
//
// A run that fails leaves cfg.Out as it found it: a directory it had to
// create is removed again (when nothing else was put in it meanwhile).
func Run(ctx context.Context, cfg Config) (*report.Analysis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(cfg.Out)
	a, err := runAnalysis(ctx, cfg)
	if err != nil && errors.Is(statErr, fs.ErrNotExist) {
		os.Remove(cfg.Out) // only if empty: a failed run wrote nothing else
	}
	return a, err
}

// runAnalysis is Run's work, stage by stage, in the order the report
// needs them; Run only checks cfg and removes the directory of a failed run.
func runAnalysis(ctx context.Context, cfg Config) (*report.Analysis, error) {
	shareSeeds(&cfg)
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	a := &report.Analysis{Version: report.AnalysisVersion, Inputs: cfg.Inputs, Seed: cfg.Rank.Seed}
	stage := progressStages(cfg.Progress)

	// Ingest, unless the input is a dataset already.
	stage("ingest")
	dir, sum, keep, cleanup, err := openDataset(ctx, cfg, &a.Files)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	a.Dataset = sum
	if sum.Spans == 0 {
		return nil, &ingest.InputError{File: strings.Join(cfg.Inputs, ", "), Err: fmt.Errorf("no spans to analyse: %w", ingest.ErrNoInput)}
	}
	spans, samples := datasetSources(dir)

	stage("graph")
	g, err := buildGraph(ctx, cfg, spans, samples)
	if err != nil {
		return nil, err
	}
	var out []outFile
	if err := addModel(ModelFile, g.Model, &a.Files, &out); err != nil {
		return nil, err
	}
	model, err := fitModel(ctx, cfg, stage, a, g.Model, spans, samples, &out)
	if err != nil {
		return nil, err
	}
	a.Model = model
	stretchReplays(&cfg, a, model)
	if !cfg.NoIncident {
		stage("incident")
		done, err := investigate(ctx, cfg, a, model, spans, samples, dir)
		if done != nil {
			defer done()
		}
		if err != nil {
			return nil, err
		}
	}

	// A few traces to open: the slowest, the failed, those through the
	// origin.
	if a.Examples, err = examples(spans, a.Incident); err != nil {
		return nil, fmt.Errorf("examples: %w", err)
	}
	if err := rankModel(ctx, cfg, stage, a, g, model); err != nil {
		return nil, err
	}
	// Everything is read and found: the new dataset replaces the last
	// run's, then the models and reports do, each file atomically.
	if err := keep(); err != nil {
		return nil, err
	}
	return a, write(cfg.Out, a, out)
}

// shareSeeds gives the fit and the incident pass the ranking's seed, and
// them and the incident pass its parallelism and tick, so one seed and
// one setting rule the whole run.
func shareSeeds(cfg *Config) {
	seed := cfg.Rank.Seed
	cfg.Fit.Seed, cfg.Incident.Seed = seed, seed
	cfg.Incident.Parallel, cfg.Fit.Parallel = cfg.Rank.Parallel, cfg.Rank.Parallel
	cfg.Incident.Tick = cfg.Rank.Tick
}

// progressStages returns the function that announces a stage to progress
// and returns the stage's own progress callback; both are nil-safe, so a
// run without progress reports pays nothing.
func progressStages(progress func(stage string, done, total int64)) func(name string) func(done, total int64) {
	return func(name string) func(done, total int64) {
		if progress == nil {
			return nil
		}
		progress(name, 0, 0)
		return func(done, total int64) { progress(name, done, total) }
	}
}

// datasetSources returns the readers of the dataset's spans and, when it
// holds metrics, of its samples (nil otherwise), which every later stage
// reads again rather than keep in memory.
func datasetSources(dir string) (spans cascade.SpanSource, samples cascade.SampleSource) {
	spans = func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
	if _, err := os.Stat(filepath.Join(dir, dataset.MetricsFile)); err == nil {
		samples = func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(dir, fn) }
	}
	return spans, samples
}

// buildGraph builds the call graph and its model from the dataset, named
// after the inputs unless the configuration names it.
func buildGraph(ctx context.Context, cfg Config, spans cascade.SpanSource, samples cascade.SampleSource) (*graph.Result, error) {
	gcfg := cfg.Graph
	if gcfg.Dataset == "" {
		gcfg.Dataset = strings.Join(cfg.Inputs, " ")
	}
	g, err := graph.Build(ctx, gcfg, spans, samples)
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	return g, nil
}

// fitModel calibrates the built model against the traces and returns the
// model the later stages replay: the calibrated one, or the built one
// when the fit is skipped or finds no window, which a note then says.
func fitModel(ctx context.Context, cfg Config, stage func(string) func(done, total int64), a *report.Analysis, model *cascade.Model,
	spans cascade.SpanSource, samples cascade.SampleSource, out *[]outFile) (*cascade.Model, error) {
	if cfg.NoFit {
		a.Notes = append(a.Notes, "fit skipped (--fit=false): the ranking replays the model as built from the traces")
		return model, nil
	}
	fcfg := cfg.Fit
	fcfg.Progress = stage("fit")
	obs, err := fit.Observe(ctx, fcfg, model, spans, samples)
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	res, err := fit.Run(ctx, fcfg, model, obs)
	switch {
	case errors.Is(err, fit.ErrNoWindows):
		a.Notes = append(a.Notes, "fit skipped: the traces hold no window to fit against")
	case err != nil:
		return nil, fmt.Errorf("fit: %w", err)
	default:
		a.Fit = res.Report
		model = res.Model
		if err := addModel(CalibratedFile, model, &a.Files, out); err != nil {
			return nil, err
		}
	}
	return model, nil
}

// stretchReplays lengthens the replays of a sparse capture so they see
// MinRoots roots and cover the capture, and says so in a note.
func stretchReplays(cfg *Config, a *report.Analysis, model *cascade.Model) {
	if d, w, ok := stretch(model, *cfg); ok {
		a.Notes = append(a.Notes, fmt.Sprintf("the replays run %s instead of %s (windows of %s) to see %d root requests at the observed %.4g/s and cover the capture's %s",
			d, cfg.Rank.Duration, w, cfg.MinRoots, entryRate(model), model.Source.Length().Round(time.Second)))
		cfg.Rank.Duration, cfg.Rank.Window = d, w
		cfg.Incident.Duration = max(cfg.Incident.Duration, d)
	}
}

// investigate finds where the incident began: the change points are read
// from the spans, the infectability replays the model. It returns the
// closer of the baseline's dataset, if one was opened, for the caller to
// defer even when err is not nil, since the baseline lives as long as
// the run.
func investigate(ctx context.Context, cfg Config, a *report.Analysis, model *cascade.Model,
	spans cascade.SpanSource, samples cascade.SampleSource, dir string) (done func(), err error) {
	in := incident.Input{Spans: spans, Samples: samples, Model: model, Logs: logsOf(dir)}
	if len(cfg.Baseline) > 0 {
		ref, bdir, bdone, err := baselineSpans(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		done = bdone
		in.Reference, in.ReferenceLogs, in.ReferenceSamples = ref, logsOf(bdir), samplesOf(bdir)
	}
	if a.Incident, err = incident.Investigate(ctx, in, cfg.Incident); err != nil {
		return done, fmt.Errorf("incident: %w", err)
	}
	// A signal given and not judged is said, never dropped quietly.
	for _, w := range a.Incident.Warnings {
		a.Notes = append(a.Notes, "incident pass: "+w)
	}
	return done, nil
}

// rankModel ranks the model, with the capacity curve and metastability,
// then reads how the answer moves with what the capture does not show,
// the timeline, and the capture beside the model's replay of it.
func rankModel(ctx context.Context, cfg Config, stage func(string) func(done, total int64), a *report.Analysis, g *graph.Result, model *cascade.Model) error {
	var err error
	rcfg := cfg.Rank
	rcfg.Progress = stage("rank")
	if a.Rank, err = rank.Run(ctx, model, rcfg); err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	if n := onsetBeyond(a.Incident, model, rcfg.Duration); n != "" {
		a.Notes = append(a.Notes, n)
	}
	// How the answer moves with what the capture does not show.
	stage("sensitivity")
	if a.Sensitivity, err = sensitivity(ctx, model, rcfg, a.Rank); err != nil {
		return fmt.Errorf("sensitivity: %w", err)
	}
	stage("timeline")
	if a.Timeline, err = timeline(ctx, model, rcfg, a.Rank); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	// The capture beside the model's replay of it.
	if a.Observed, err = observed(ctx, g, model, rcfg, a.Rank); err != nil {
		return fmt.Errorf("observed: %w", err)
	}
	return nil
}

// stretch returns the replay duration and metric window that let the
// ranking see cfg.MinRoots roots at the model's entry rate and cover the
// capture's own length (what it showed late, an alarm or a backlog, is
// replayed), and whether they differ from the configured ones.
func stretch(m *cascade.Model, cfg Config) (time.Duration, time.Duration, bool) {
	if cfg.MinRoots <= 0 {
		return 0, 0, false
	}
	d := m.Source.Length().Round(time.Second)
	if rate := entryRate(m); rate > 0 && rate*cfg.Rank.Duration.Seconds() < float64(cfg.MinRoots) {
		d = max(d, time.Duration(float64(cfg.MinRoots)/rate*float64(time.Second)).Round(time.Minute))
	}
	if cfg.MaxDuration > 0 {
		d = min(d, cfg.MaxDuration)
	}
	if d <= cfg.Rank.Duration {
		return 0, 0, false
	}
	w := max(cfg.Rank.Window, (d / 600).Round(time.Second))
	return d, w, true
}

// entryRate is the model's root requests per second over its entries.
func entryRate(m *cascade.Model) float64 {
	var r float64
	for _, e := range m.Entries {
		r += e.RatePerSec
	}
	return r
}

// openDataset returns the dataset directory to read: the input when it is a
// dataset, else the inputs ingested into a temporary directory inside
// Out. keep moves that into Out/dataset (replacing the last run's) once
// the analysis has succeeded; cleanup removes what keep did not move.
func openDataset(ctx context.Context, cfg Config, files *[]string) (dir string, sum *ingest.Summary, keep func() error, cleanup func(), err error) {
	nop := func() {}
	keep = func() error { return nil }
	if len(cfg.Inputs) == 1 && isDataset(cfg.Inputs[0]) {
		if len(cfg.Metrics) > 0 {
			return "", nil, nil, nop, errors.New("metrics: a dataset holds its metrics; ingest them into it")
		}
		if len(cfg.Logs) > 0 {
			return "", nil, nil, nop, errors.New("logs: a dataset holds its logs; ingest them into it")
		}
		sum, err := ingest.Summarize(cfg.Inputs[0])
		return cfg.Inputs[0], sum, keep, nop, err
	}
	for _, in := range cfg.Inputs {
		if isDataset(in) {
			return "", nil, nil, nop, fmt.Errorf("%s: give one dataset directory or raw files, not both", in)
		}
	}
	tmp, err := os.MkdirTemp(cfg.Out, ".dataset-")
	if err != nil {
		return "", nil, nil, nop, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	icfg := ingest.DefaultConfig()
	icfg.Traces, icfg.Metrics, icfg.Logs = cfg.Inputs, cfg.Metrics, cfg.Logs
	if cfg.Format != "" {
		icfg.Format = cfg.Format
	}
	icfg.Options.CSVMap = cfg.CSVMap
	icfg.Out = filepath.Join(tmp, DatasetDir)
	if sum, err = ingest.Run(ctx, icfg); err != nil {
		cleanup()
		return "", nil, nil, nop, err
	}
	sum.Dataset = DatasetDir
	*files = append(*files, filepath.Join(DatasetDir, dataset.SpansFile))
	if _, err := os.Stat(filepath.Join(icfg.Out, dataset.MetricsFile)); err == nil {
		*files = append(*files, filepath.Join(DatasetDir, dataset.MetricsFile))
	}
	if _, err := os.Stat(filepath.Join(icfg.Out, dataset.LogsFile)); err == nil {
		*files = append(*files, filepath.Join(DatasetDir, dataset.LogsFile))
	}
	keep = func() error {
		final := filepath.Join(cfg.Out, DatasetDir)
		if err := os.RemoveAll(final); err != nil {
			return err
		}
		return os.Rename(icfg.Out, final)
	}
	return icfg.Out, sum, keep, cleanup, nil
}

// isDataset reports whether path is a directory holding spans.parquet.
func isDataset(path string) bool {
	fi, err := os.Stat(filepath.Join(path, dataset.SpansFile))
	return err == nil && fi.Mode().IsRegular()
}

// outFile is a file to write once the analysis has succeeded.
type outFile struct {
	name string
	data []byte
}

// addModel encodes m as the file name, to be written with the reports.
func addModel(name string, m *cascade.Model, files *[]string, out *[]outFile) error {
	data, err := cascade.EncodeModel(m)
	if err != nil {
		return err
	}
	*files = append(*files, name)
	*out = append(*out, outFile{name, data})
	return nil
}

// write renders the three reports, then writes them and the models, each
// to a temporary file renamed into place: a report that fails to render
// leaves every file of the last run as it was.
func write(dir string, a *report.Analysis, out []outFile) error {
	a.Files = append(a.Files, JSONFile, MarkdownFile, HTMLFile)
	for _, f := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{JSONFile, func(b *bytes.Buffer) error { return report.JSON(b, a) }},
		{MarkdownFile, func(b *bytes.Buffer) error { return report.AnalysisMarkdown(b, a) }},
		{HTMLFile, func(b *bytes.Buffer) error { return report.AnalysisHTML(b, a) }},
	} {
		var b bytes.Buffer
		if err := f.render(&b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		out = append(out, outFile{f.name, b.Bytes()})
	}
	for _, f := range out {
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// baselineSpans returns the spans of cfg.Baseline: the dataset it
// names, or its trace files ingested into a temporary dataset that done
// removes.
func baselineSpans(ctx context.Context, cfg Config) (cascade.SpanSource, string, func(), error) {
	if len(cfg.Baseline) == 1 {
		if _, err := os.Stat(filepath.Join(cfg.Baseline[0], dataset.SpansFile)); err == nil {
			if len(cfg.BaselineLogs)+len(cfg.BaselineMetrics) > 0 {
				return nil, "", nil, errors.New("a dataset holds its logs and metrics; ingest them into it")
			}
			dir := cfg.Baseline[0]
			return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }, dir, func() {}, nil
		}
	}
	tmp, err := os.MkdirTemp("", "cascade-baseline-")
	if err != nil {
		return nil, "", nil, err
	}
	done := func() { os.RemoveAll(tmp) }
	icfg := ingest.DefaultConfig()
	icfg.Traces, icfg.Logs, icfg.Metrics = cfg.Baseline, cfg.BaselineLogs, cfg.BaselineMetrics
	icfg.Format = cfg.Format
	icfg.Options.CSVMap = cfg.CSVMap
	icfg.Out = filepath.Join(tmp, "dataset")
	if _, err := ingest.Run(ctx, icfg); err != nil {
		done()
		return nil, "", nil, err
	}
	dir := icfg.Out
	return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }, dir, done, nil
}

// logsOf returns the log records of the dataset dir, or nil when it has
// no logs.parquet.
func logsOf(dir string) incident.LogSource {
	if _, err := os.Stat(filepath.Join(dir, dataset.LogsFile)); err != nil {
		return nil
	}
	return func(fn func(*cascade.LogRecord) error) error { return dataset.ReadLogs(dir, fn) }
}

// samplesOf returns the metric samples of the dataset dir, or nil when
// it has no metrics.parquet.
func samplesOf(dir string) cascade.SampleSource {
	if _, err := os.Stat(filepath.Join(dir, dataset.MetricsFile)); err != nil {
		return nil
	}
	return func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(dir, fn) }
}

// onsetBeyond says when the incident began later into the capture than
// the ranking's replays run (their arrivals last d from the capture's
// start): what the capture showed from then on is not replayed.
func onsetBeyond(inc *incident.Incident, m *cascade.Model, d time.Duration) string {
	if inc == nil || len(inc.Origins) == 0 || m.Source == nil || m.Source.StartNS == 0 {
		return ""
	}
	for _, n := range inc.Nodes {
		if n.Node != inc.Origins[0] || !n.Changed || n.AtNS == 0 {
			continue
		}
		at := time.Duration(n.AtNS - m.Source.StartNS)
		if at <= d {
			return ""
		}
		return fmt.Sprintf("the incident began at %s %s into the capture, beyond the %s the ranking's replays run: they do not reach it (give --duration %s or more)",
			n.Node, at.Round(time.Second), d, at.Round(time.Second)+time.Second)
	}
	return ""
}
