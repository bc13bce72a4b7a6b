package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"cascade"
	"cascade/dataset"
)

// Config is what a user sets for one ingest run.
type Config struct {
	// Traces are trace files or directories to read; "-" is stdin.
	Traces []string
	// Metrics are metric files or directories to read; "-" is stdin.
	Metrics []string
	// Logs are log files or directories to read; "-" is stdin. Their
	// records go to logs.parquet, which is written only when Logs is
	// non-empty.
	Logs []string
	// Out is the dataset directory to write. Required.
	Out string
	// Format forces the trace format; FormatAuto (the default) detects
	// it per file.
	Format Format
	// MetricFormat forces the metric format; FormatAuto detects it.
	MetricFormat Format
	// LogFormat forces the log format; FormatAuto detects it.
	LogFormat Format
	// Options are passed to decoders (CSV mapping, metric kinds).
	Options Options
	// SkipInvalid skips invalid records and counts them by reason instead
	// of failing the run. Default false.
	SkipInvalid bool
	// MaxErrors is how many invalid records are collected (and printed)
	// before the run stops; default 20, zero means 1.
	MaxErrors int
	// RunRows is how many rows are sorted in memory before a sorted run is
	// spilled to disk; default 262144, zero means the default. It bounds
	// memory: about 400 bytes a span.
	RunRows int
	// RejectEmpty fails the run, before anything is written, when an
	// input was empty (no bytes, or only whitespace) and no input of the
	// run held a record: an InputError naming the empty inputs, wrapping
	// ErrNoInput. With data from another input, an empty one is only a
	// notice ("empty input"). `cascade ingest` sets it; graph and analyze
	// fail on a capture without spans in their own words.
	RejectEmpty bool
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
	// Note, when set, is told what Run did outside the data, one sentence
	// each: a temporary dataset that a run killed before it finished left
	// beside Out, removed (or a dataset it had moved aside, put back).
	Note func(string)
	// Progress, when set, is called as input bytes are read with the
	// bytes read so far and the total size of the named inputs (0 when
	// unknown, as for stdin). It is called from the reading goroutine.
	Progress func(done, total int64)
}

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{MaxErrors: 20, RunRows: 1 << 18}
}

// Validate reports every problem with the config, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	if c.Out == "" {
		errs = append(errs, errors.New("out: a dataset directory is required"))
	}
	if len(c.Traces) == 0 && len(c.Metrics) == 0 && len(c.Logs) == 0 {
		errs = append(errs, errors.New("traces, metrics, logs: nothing to ingest"))
	}
	if _, err := ParseFormat(string(c.Format), TraceFormats); err != nil {
		errs = append(errs, fmt.Errorf("format: %w", err))
	}
	if _, err := ParseFormat(string(c.MetricFormat), MetricFormats); err != nil {
		errs = append(errs, fmt.Errorf("metric-format: %w", err))
	}
	if _, err := ParseFormat(string(c.LogFormat), LogFormats); err != nil {
		errs = append(errs, fmt.Errorf("log-format: %w", err))
	}
	if c.MaxErrors < 0 {
		errs = append(errs, fmt.Errorf("max-errors: %d is negative", c.MaxErrors))
	}
	if c.RunRows < 0 {
		errs = append(errs, fmt.Errorf("run-rows: %d is negative", c.RunRows))
	}
	return errors.Join(errs...)
}

// Run reads every input, normalizes it, and writes the dataset. On any
// error nothing is left at c.Out except what was there before. The summary
// is returned even on error, as far as the run got.
func Run(ctx context.Context, c Config) (*Summary, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.MaxErrors == 0 {
		c.MaxErrors = 1
	}
	traces, traceDirs, err := expandPaths(c.Traces)
	if err != nil {
		return nil, err
	}
	metrics, metricDirs, err := expandPaths(c.Metrics)
	if err != nil {
		return nil, err
	}
	logs, logDirs, err := expandPaths(c.Logs)
	if err != nil {
		return nil, err
	}
	sum := &Summary{
		Dataset:  c.Out,
		Skipped:  map[string]int64{},
		Warnings: map[string]int64{},
		Inferred: map[string]int64{},
	}
	defer sum.sortNotices()
	dataset.CleanStale(c.Out, time.Now(), c.Note)
	w, err := createStore(c.Out, c.RunRows)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.abort()
		}
	}()

	var total int64
	for _, p := range slices.Concat(traces, metrics, logs) {
		if info, err := os.Stat(p.path); err == nil && p.path != "-" {
			total += info.Size()
		}
	}
	st := &runSink{cfg: &c, sum: sum, w: w, total: total}
	for _, p := range traces {
		if err := st.input(ctx, p, c.Format, traceInput); err != nil {
			return sum, err
		}
	}
	for _, p := range metrics {
		if err := st.input(ctx, p, c.MetricFormat, metricInput); err != nil {
			return sum, err
		}
	}
	for _, p := range logs {
		if err := st.input(ctx, p, c.LogFormat, logInput); err != nil {
			return sum, err
		}
	}
	w.hasLogs = len(logs) > 0
	if err := emptyDirs(sum, traceDirs, "trace", st.misplaced); err != nil {
		return sum, err
	}
	if err := emptyDirs(sum, metricDirs, "metric", st.misplaced); err != nil {
		return sum, err
	}
	if err := emptyDirs(sum, logDirs, "log", st.misplaced); err != nil {
		return sum, err
	}
	if len(st.errs) > 0 {
		return sum, st.joined()
	}
	if c.RejectEmpty && len(st.empty) > 0 && !readAny(sum) {
		return sum, emptyInputs(st.empty)
	}
	if err := w.commit(sum); err != nil {
		return sum, err
	}
	ok = true
	return sum, nil
}

// readAny reports whether any input gave a record (a span, a sample or
// a log record), valid or not.
func readAny(sum *Summary) bool {
	for _, in := range sum.Inputs {
		if in.Spans+in.Samples+in.Logs+in.Skipped > 0 {
			return true
		}
	}
	return false
}

// emptyInputs is the error of a run whose only inputs were empty, naming
// them.
func emptyInputs(files []string) error {
	what := "the input is empty"
	if len(files) > 1 {
		what = "the inputs are empty"
	}
	return &InputError{File: strings.Join(files, ", "), Err: fmt.Errorf("%s (%s): %w", what, noticeEmpty, ErrNoInput)}
}

// emptyDirs fails the run for the first directory named on the command
// line in which no file was read as a trace (or metric) format, naming
// every file passed over and why: a directory of the wrong files would
// otherwise give an empty dataset without a word. A file of the other
// kind is named for what it looks like (misplaced, by path), and a
// directory holding only such files is told where to go.
func emptyDirs(sum *Summary, dirs []walkedDir, what string, misplaced map[string]string) error {
	for _, d := range dirs {
		read, other := 0, 0
		var passed []string
		for _, in := range sum.Inputs {
			if _, found := slices.BinarySearch(d.files, in.File); !found {
				continue
			}
			if in.Format == formatSkipped {
				if m, ok := misplaced[in.File]; ok {
					passed = append(passed, in.File+" ("+m+")")
					other++
					continue
				}
				passed = append(passed, in.File+" (not a known format)")
				continue
			}
			read++
		}
		if read > 0 {
			continue
		}
		passed = append(passed, d.passed...)
		slices.Sort(passed)
		detail := "it holds no files"
		if len(passed) > 0 {
			detail = "passed over " + strings.Join(passed, ", ")
		}
		if other > 0 && other == len(d.files) {
			fix := "pass the directory with --metrics"
			if what == "metric" {
				fix = "pass the directory as PATH, not with --metrics"
			}
			detail += ": " + fix
		}
		return &InputError{File: d.path, Err: fmt.Errorf("a directory with no %s files: %s: %w", what, detail, ErrNoInput)}
	}
	return nil
}

// runSink is the sink every decoder of a run writes into.
type runSink struct {
	cfg   *Config
	sum   *Summary
	w     *store
	in    *InputSummary
	file_ string
	errs  []*ParseError
	more  int
	// misplaced names what each input of the other kind looks like
	// (metrics among traces, traces among metrics), by path.
	misplaced map[string]string
	// empty lists the inputs that were empty, in reading order.
	empty []string
	done  atomic.Int64
	total int64
}

func (r *runSink) span(s *cascade.Span) error {
	checkSpan(s, r.warn)
	// The CSV decoder warns of these itself, with the column's position.
	if r.in.Format != FormatSpanCSV && s.Start != 0 && (s.Start < minPlausibleNs || s.Start > maxPlausibleNs) {
		r.sum.notice(noticeBadYear, unitHint(s.Start), r.file_, r.record(), 1)
	}
	r.in.Spans++
	return r.w.addSpan(s)
}

func (r *runSink) sample(s *cascade.Sample) error {
	checkSample(s, r.warn)
	r.in.Samples++
	return r.w.addSample(s)
}

func (r *runSink) log(l *cascade.LogRecord) error {
	r.in.Logs++
	return r.w.addLog(l)
}

func (r *runSink) infer(note string) {
	r.sum.Inferred[note]++
	if note == noticeEmpty {
		r.sum.notice(noticeEmpty, "nothing read", r.file_, "byte 0", 1)
		if n := len(r.empty); n == 0 || r.empty[n-1] != r.file_ {
			r.empty = append(r.empty, r.file_)
		}
	}
}

func (r *runSink) warn(kind string) {
	r.sum.Warnings[kind]++
	k, action := splitAction(kind)
	pos := r.record()
	if strings.HasPrefix(kind, warnFileSkipped) {
		pos = ""
	}
	r.sum.notice(k, action, r.file_, pos, 1)
}

func (r *runSink) warnAt(kind string, at *ParseError) {
	r.sum.Warnings[kind]++
	k, action := splitAction(kind)
	r.sum.notice(k, action, r.file_, positionOf(at), 1)
}

// record is the position of the record being decoded: its ordinal in the
// current input.
func (r *runSink) record() string {
	if r.in == nil {
		return ""
	}
	return fmt.Sprintf("record %d", r.in.Spans+r.in.Samples+r.in.Logs+r.in.Skipped+1)
}

func (r *runSink) invalid(e *ParseError) error {
	if e.File == "" {
		e.File = r.file_
	}
	r.in.Skipped++
	if r.cfg.SkipInvalid {
		r.sum.Skipped[e.Reason()]++
		r.sum.notice("invalid record: "+e.Reason(), "dropped (--skip-invalid)", e.File, positionOf(e), 1)
		return nil
	}
	if len(r.errs) < r.cfg.MaxErrors {
		r.errs = append(r.errs, e)
		return nil
	}
	r.more++
	return r.joined()
}

// joined is the run's error: every collected parse error, one per line,
// then "(and N more)" when more were found than collected.
func (r *runSink) joined() error {
	errs := make([]error, 0, len(r.errs)+1)
	for _, e := range r.errs {
		errs = append(errs, e)
	}
	if r.more > 0 {
		errs = append(errs, fmt.Errorf("(and %d more)", r.more))
	}
	return errors.Join(errs...)
}

// countingReader reports bytes read to the progress callback.
type countingReader struct {
	r   io.Reader
	run *runSink
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.run.cfg.Progress != nil {
		c.run.cfg.Progress(c.run.done.Add(int64(n)), c.run.total)
	}
	return n, err
}

// input reads one input. A file found in a directory whose content no
// decoder takes (a call-graph CSV among metric files, a stray JSON) is
// skipped with a warning rather than failing the run; a file the user named
// fails it.
func (r *runSink) input(ctx context.Context, p inputPath, format Format, kind inputKind) error {
	err := r.file(ctx, p.path, format, kind)
	if !p.walked || r.in == nil || r.in.File != p.path || r.in.Spans+r.in.Samples+r.in.Logs > 0 {
		return err
	}
	unsupported := func(e error) bool { return errors.Is(e, ErrUnsupported) || errors.Is(e, ErrUnknownFormat) }
	skip := err != nil && unsupported(err)
	if err == nil {
		n := 0
		for _, e := range r.errs {
			if e.File == p.path {
				if !unsupported(e) {
					return nil
				}
				n++
			}
		}
		skip = n > 0
	}
	if !skip {
		return err
	}
	r.warn(warnFileSkipped + p.path)
	r.in.Format = formatSkipped
	r.in.Skipped = 0
	r.errs = slices.DeleteFunc(r.errs, func(e *ParseError) bool { return e.File == p.path })
	return nil
}

// inputKind is what an input path was given as.
type inputKind uint8

const (
	traceInput inputKind = iota
	metricInput
	logInput
)

// file reads one input path with the given (or detected) format.
func (r *runSink) file(ctx context.Context, path string, format Format, kind inputKind) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var src io.Reader
	name := path
	if path == "-" {
		src = r.cfg.Stdin
		if src == nil {
			src = os.Stdin
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		src = f
	}
	src = &countingReader{r: &ctxReader{ctx: ctx, r: src}, run: r}
	rd, base, done, err := decompressed(name, src)
	if err != nil {
		return err
	}
	defer done()
	br, ok := rd.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(rd, 1<<20)
	}
	head, peekErr := br.Peek(sniffLen)
	r.sum.Inputs = append(r.sum.Inputs, InputSummary{File: path})
	r.in = &r.sum.Inputs[len(r.sum.Inputs)-1]
	r.file_ = path
	if format == FormatAuto {
		if kind != logInput {
			if m := misplaced(base, head, kind == metricInput); m != nil {
				if r.misplaced == nil {
					r.misplaced = map[string]string{}
				}
				r.misplaced[path] = m.what
				return &InputError{File: path, Err: m}
			}
		}
		switch kind {
		case metricInput:
			format, err = detectMetrics(base, head)
		case logInput:
			format, err = detectLogs(base, head)
		default:
			format, err = detectTrace(base, head)
		}
		if err != nil {
			return &ParseError{File: path, Err: err}
		}
	}
	r.in.Format = format
	if peekErr == io.EOF && len(bytes.TrimLeft(head, " \t\r\n\ufeff")) == 0 {
		// Nothing but whitespace: no decoder would read anything, and
		// not all of them say so (Prometheus text, OTLP logs).
		r.infer(noticeEmpty)
		return nil
	}
	if kind == logInput {
		err = r.decodeLogs(path, format, br)
	} else {
		err = r.decode(path, format, br)
	}
	return err
}

// decode runs the span or metric decoder of format over one input.
func (r *runSink) decode(path string, format Format, br io.Reader) error {
	dec, ok := decoders[format]
	if !ok {
		return fmt.Errorf("%s: format %q: %w", path, format, ErrUnknownFormat)
	}
	return r.decoded(path, dec(path, br, r, &r.cfg.Options))
}

// decodeLogs runs the log decoder of format over one input.
func (r *runSink) decodeLogs(path string, format Format, br io.Reader) error {
	dec, ok := logDecoders[format]
	if !ok {
		return fmt.Errorf("%s: format %q: %w", path, format, ErrUnknownFormat)
	}
	return r.decoded(path, dec(path, br, r, &r.cfg.Options))
}

// decoded completes a decoder's error with the file name and the run's
// collected parse errors.
func (r *runSink) decoded(path string, err error) error {
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && pe.File == "" {
			pe.File = path
		}
		if len(r.errs) > 0 && !errors.As(err, &pe) {
			return errors.Join(r.joined(), err)
		}
		return err
	}
	return nil
}

// ctxReader stops reading when the context is cancelled (SIGINT).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
