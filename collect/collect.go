package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
)

// Result is what one run did.
type Result struct {
	// Summary describes the dataset as finalized; nil when there was
	// nothing to add and the dataset was left as it was.
	Summary *ingest.Summary `json:"summary"`
	// Receiver counts what the endpoint answered; nil unless it listened.
	Receiver *ReceiverStats `json:"receiver,omitempty"`
	// Pull counts what was read; nil unless it pulled.
	Pull *PullStats `json:"pull,omitempty"`
	// Segments counts the segments folded into the dataset.
	Segments int `json:"segments"`
	// DiscardedBytes counts the bytes of torn segment tails left out:
	// records a crash cut short, which were never acknowledged.
	DiscardedBytes int64 `json:"discarded_bytes"`
}

// ErrNothingToFinalize is returned by a Finalize run that finds neither a
// work directory nor a dataset.
var ErrNothingToFinalize = errors.New("nothing to finalize")

// Run does what cfg asks (see Config) and then finalizes: it folds the
// dataset already at cfg.Out, if any, and every segment in the work
// directory (this run's and any an earlier run left) into a new dataset,
// sorted and deduplicated by the ingest store, moves it into place, and
// removes the segments.
//
// A receiving run stops when ctx is done: that is its normal end, it
// drains and finalizes, and returns no error. A pulling or finalizing run
// that ctx stops returns ctx's error and leaves the dataset as it was; the
// segments written so far stay in the work directory for the next run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.settled()
	log := logger(cfg.Log)
	work := cfg.WorkDir()
	if cfg.Finalize {
		_, werr := os.Stat(work)
		_, derr := os.Stat(filepath.Join(cfg.Out, dataset.SpansFile))
		if errors.Is(werr, os.ErrNotExist) && derr != nil {
			return nil, fmt.Errorf("%w: neither %s nor a dataset at %s exists", ErrNothingToFinalize, work, cfg.Out)
		}
	}
	st, err := openStore(work, cfg.Receiver.SegmentBytes)
	if err != nil {
		return nil, err
	}
	locked := true
	defer func() {
		if locked {
			st.close()
		}
	}()
	if paths, _, _ := listSegments(work); len(paths) > 0 && !cfg.Finalize {
		log("resuming: %d segments an earlier run left in %s will be included", len(paths), work)
	}

	res := &Result{}
	switch {
	case cfg.Finalize:
	case cfg.Pulling():
		ps, err := pull(ctx, &cfg.Pull, &cfg.Options, st, log)
		res.Pull = &ps
		if err != nil {
			if ctx.Err() != nil {
				log("interrupted: what was read is kept in %s; run cascade collect --out %s --finalize to add it", work, cfg.Out)
			}
			return res, err
		}
	default:
		ln, err := net.Listen("tcp", cfg.Receiver.Listen)
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		if !isLoopback(ln.Addr()) {
			log("warning: listening on %s, beyond this machine; the endpoint has no authentication", ln.Addr())
		}
		log("listening on %s (OTLP/HTTP: POST %s, %s); segments in %s", ln.Addr(), pathTraces, pathMetrics, work)
		if cfg.Receiver.Ready != nil {
			cfg.Receiver.Ready(ln.Addr())
		}
		rs, err := serve(ctx, &cfg.Receiver, &cfg.Options, ln, st, log)
		res.Receiver = &rs
		log("stopped: acknowledged %d requests (%d spans, %d samples, %d rejected as invalid); answered %d with 429, %d with another 4xx, %d with 503",
			rs.Requests, rs.Spans, rs.Samples, rs.Rejected, rs.Throttled, rs.Refused, rs.Failed)
		if err != nil {
			return res, err
		}
		// Being stopped is how a receiver ends: finalize all the same.
		ctx = context.WithoutCancel(ctx)
	}
	if err := st.finish(); err != nil {
		return res, err
	}
	fin, err := finalize(ctx, cfg.Out, work, cfg.RunRows, log)
	res.Summary, res.Segments, res.DiscardedBytes = fin.sum, fin.segments, fin.discarded
	if err != nil {
		return res, err
	}
	// Every segment is in the dataset: drop the work directory.
	os.Remove(filepath.Join(work, lockName))
	st.close()
	locked = false
	os.Remove(work)
	return res, nil
}

// finalized is what finalize did.
type finalized struct {
	sum       *ingest.Summary
	segments  int
	discarded int64
}

// Warning counted in the summary for each torn segment tail.
const warnTornTail = "segment tail discarded (a write cut short by a crash, never acknowledged)"

// finalize folds the dataset at out (if any) and the segments of work
// into a new dataset at out, then removes the segments. With no segments
// and a dataset in place it does nothing; with neither it writes an empty
// dataset. If it fails or ctx ends it, out and the segments are as they
// were. Run twice over the same segments (a crash after the dataset moved
// into place, before the segments were removed), it yields the same
// dataset: the repeated rows are dropped as duplicates.
func finalize(ctx context.Context, out, work string, runRows int, log func(string, ...any)) (finalized, error) {
	var fin finalized
	paths, _, err := listSegments(work)
	if err != nil {
		return fin, err
	}
	restoreDataset(out, log)
	_, statErr := os.Stat(filepath.Join(out, dataset.SpansFile))
	exists := statErr == nil
	if len(paths) == 0 && exists {
		log("nothing to add: no segments in %s; %s is unchanged", work, out)
		return fin, nil
	}
	w, err := ingest.NewWriter(out, runRows)
	if err != nil {
		return fin, err
	}
	committed := false
	defer func() {
		if !committed {
			w.Abort()
		}
	}()
	fo, err := fin.foldInputs(ctx, w, out, paths, exists, log)
	if err != nil {
		return fin, err
	}
	if err := ctx.Err(); err != nil {
		return fin, err
	}
	sum, err := w.Commit()
	committed = true
	if err != nil {
		return fin, err
	}
	if err := syncPublished(out); err != nil {
		return fin, err
	}
	sum.Inputs = fo.inputs
	addNotes(sum, fo.warnings, fo.inferred)
	fin.sum = sum
	return fin, removeSegments(paths, work)
}

// folded is what foldInputs read: each input's counts, and the warnings
// and inferences the segments' records carried.
type folded struct {
	inputs             []ingest.InputSummary
	warnings, inferred map[string]int64
}

// foldInputs writes into w all the new dataset holds: the dataset at
// out, when it exists, then each segment of paths in sequence order. It
// counts the segments and any torn tail in fin, which Run reports.
func (fin *finalized) foldInputs(ctx context.Context, w *ingest.Writer, out string, paths []string, exists bool, log func(string, ...any)) (folded, error) {
	var inputs []ingest.InputSummary
	warnings, inferred := map[string]int64{}, map[string]int64{}
	if exists {
		in, err := foldDataset(w, out)
		if err != nil {
			return folded{}, err
		}
		inputs = append(inputs, in)
	}
	for pi, p := range paths {
		in, info, err := foldSegment(ctx, w, p, pi == len(paths)-1, warnings, inferred)
		if err != nil {
			return folded{}, err
		}
		fin.noteTornTail(p, info, warnings, log)
		inputs = append(inputs, in)
		fin.segments++
	}
	return folded{inputs: inputs, warnings: warnings, inferred: inferred}, nil
}

// foldDataset writes the rows of the dataset at out into w, copied,
// since the reader lends them only until its next row.
func foldDataset(w *ingest.Writer, out string) (ingest.InputSummary, error) {
	in := ingest.InputSummary{File: out, Format: "dataset"}
	var c cloner
	err := dataset.ReadSpans(out, func(s *cascade.Span) error {
		in.Spans++
		sp := c.span(s)
		return w.Span(&sp)
	})
	if err != nil {
		return in, fmt.Errorf("read dataset %s: %w", out, err)
	}
	err = dataset.ReadSamples(out, func(s *cascade.Sample) error {
		in.Samples++
		sm := c.sample(s)
		return w.Sample(&sm)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return in, fmt.Errorf("read dataset %s: %w", out, err)
	}
	return in, nil
}

// foldSegment writes the rows of segment p into w and counts its notes
// in warnings and inferred; newest says p is the last segment, whose
// missing header is a crash at its creation rather than an error.
func foldSegment(ctx context.Context, w *ingest.Writer, p string, newest bool, warnings, inferred map[string]int64) (ingest.InputSummary, segmentInfo, error) {
	in := ingest.InputSummary{File: p, Format: "collect-segment"}
	info, err := readSegment(p, func(payload []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := decodeRecord(payload)
		if err != nil {
			return err
		}
		for i := range b.spans {
			if err := w.Span(&b.spans[i]); err != nil {
				return err
			}
		}
		for i := range b.samples {
			if err := w.Sample(&b.samples[i]); err != nil {
				return err
			}
		}
		in.Spans += int64(len(b.spans))
		in.Samples += int64(len(b.samples))
		for _, n := range b.notes {
			if n.kind == noteWarn {
				warnings[n.text] += n.count
			} else {
				inferred[n.text] += n.count
			}
		}
		return nil
	})
	if errors.Is(err, errNotSegment) && newest {
		// The newest segment, created when the crash came: its
		// header is fsynced before its first frame is, so with no
		// header nothing in it was acknowledged, whatever a power
		// cut left after the file's creation.
		info, err = segmentInfo{size: info.size, torn: "no segment header"}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return in, info, ctx.Err()
		}
		return in, info, fmt.Errorf("finalize: %w", err)
	}
	return in, info, nil
}

// noteTornTail logs and counts the bytes a crash left after segment p's
// last complete record, so that the summary says what was discarded.
func (fin *finalized) noteTornTail(p string, info segmentInfo, warnings map[string]int64, log func(string, ...any)) {
	if lost := info.size - info.good; info.torn != "" && lost > 0 {
		log("segment %s: discarded %d bytes after byte %d (%s): a write cut short by a crash, never acknowledged", p, lost, info.good, info.torn)
		warnings[warnTornTail]++
		fin.discarded += lost
	}
}

// syncPublished makes the new dataset's entries, and its own entry,
// durable before the segments it holds go (ingest has synced the files).
func syncPublished(out string) error {
	for _, dir := range []string{out, filepath.Dir(filepath.Clean(out))} {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// addNotes adds the warnings and inferences the segments' records
// carried to the summary's own, so that the dataset keeps what
// collecting noted.
func addNotes(sum *ingest.Summary, warnings, inferred map[string]int64) {
	for k, v := range warnings {
		sum.Warnings[k] += v
	}
	for k, v := range inferred {
		sum.Inferred[k] += v
	}
}

// removeSegments removes the segments the new dataset holds and syncs
// work, so that a later run does not fold them in again.
func removeSegments(paths []string, work string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove finalized segment: %w", err)
		}
	}
	return syncDir(work)
}

// restoreDataset undoes a publish that a crash cut between its two renames
// (the old dataset moved aside to .NAME.tmp-*.old, the new one not yet in
// place): with no dataset at out, the dataset moved aside goes back. The
// segments it was being merged with are all still there.
func restoreDataset(out string, log func(string, ...any)) {
	out = filepath.Clean(out)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		return
	}
	parent, base := filepath.Dir(out), filepath.Base(out)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "."+base+".tmp-") || !strings.HasSuffix(name, ".old") {
			continue
		}
		aside := filepath.Join(parent, name)
		if _, err := os.Stat(filepath.Join(aside, dataset.SpansFile)); err != nil {
			continue
		}
		if err := os.Rename(aside, out); err == nil {
			log("restored %s from %s, left by a crash while it was being replaced", out, aside)
		}
		return
	}
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// logger returns a function that writes one line to w per call, prefixed
// "collect: ", safe for concurrent use; with a nil w it does nothing.
func logger(w io.Writer) func(string, ...any) {
	if w == nil {
		return func(string, ...any) {}
	}
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "collect: "+format+"\n", args...)
	}
}

// cloner copies the rows dataset.ReadSpans and ReadSamples lend (their
// strings alias the reader's buffers), sharing the copies of strings that
// repeat: services, operations and the other low-cardinality columns, and
// the trace id of consecutive spans.
type cloner struct {
	strs      map[string]string
	lastTrace string
}

// str returns a copy of s that outlives the reader's buffers.
func (c *cloner) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := c.strs[s]; ok {
		return v
	}
	if c.strs == nil || len(c.strs) > 1<<16 {
		c.strs = make(map[string]string)
	}
	v := strings.Clone(s)
	c.strs[v] = v
	return v
}

func (c *cloner) span(s *cascade.Span) cascade.Span {
	out := *s
	if s.TraceID != c.lastTrace {
		c.lastTrace = strings.Clone(s.TraceID)
	}
	out.TraceID = c.lastTrace
	out.SpanID = strings.Clone(s.SpanID)
	out.ParentSpanID = strings.Clone(s.ParentSpanID)
	out.Service = c.str(s.Service)
	out.Instance = c.str(s.Instance)
	out.Operation = c.str(s.Operation)
	out.Kind = cascade.SpanKind(c.str(string(s.Kind)))
	out.Status = cascade.Status(c.str(string(s.Status)))
	out.ErrorType = c.str(s.ErrorType)
	out.Peer = c.str(s.Peer)
	out.MessagingSystem = c.str(s.MessagingSystem)
	out.MessagingOperation = c.str(s.MessagingOperation)
	out.Destination = c.str(s.Destination)
	out.ConsumerGroup = c.str(s.ConsumerGroup)
	out.MessageID = strings.Clone(s.MessageID)
	if s.Links != nil {
		out.Links = make([]cascade.SpanLink, len(s.Links))
		for i, l := range s.Links {
			out.Links[i] = cascade.SpanLink{TraceID: strings.Clone(l.TraceID), SpanID: strings.Clone(l.SpanID)}
		}
	}
	return out
}

func (c *cloner) sample(s *cascade.Sample) cascade.Sample {
	out := *s
	out.Service = c.str(s.Service)
	out.Instance = c.str(s.Instance)
	out.Metric = c.str(s.Metric)
	out.Kind = cascade.MetricKind(c.str(string(s.Kind)))
	out.Labels = c.str(s.Labels)
	return out
}
