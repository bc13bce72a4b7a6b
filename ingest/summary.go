package ingest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cascade"
	"cascade/dataset"
)

// Summary describes what one ingest run read and stored. It is what
// `cascade ingest` prints, as a table or as JSON.
type Summary struct {
	// Dataset is the directory written.
	Dataset string `json:"dataset"`
	// Inputs lists each file read, in reading order.
	Inputs []InputSummary `json:"inputs"`

	// Spans counts stored spans (after deduplication).
	Spans int64 `json:"spans"`
	// Traces counts distinct trace ids.
	Traces int64 `json:"traces"`
	// Services lists the distinct services, sorted.
	Services []string `json:"services"`
	// Operations counts distinct (service, operation) pairs.
	Operations int `json:"operations"`
	// ErrorSpans counts spans with status error.
	ErrorSpans int64 `json:"error_spans"`
	// RootSpans counts spans without a parent.
	RootSpans int64 `json:"root_spans"`
	// SpanRange is the time covered by span starts and ends.
	SpanRange TimeRange `json:"span_range"`
	// DuplicateSpans counts rows dropped because their (trace_id, span_id)
	// was already stored.
	DuplicateSpans int64 `json:"duplicate_spans"`
	// OrphanSpans counts spans whose parent is not in the dataset.
	OrphanSpans int64 `json:"orphan_spans"`
	// TracesWithoutRoot counts traces with no root span.
	TracesWithoutRoot int64 `json:"traces_without_root"`
	// TruncatedTraces counts traces that look cut short: no root span,
	// or spans whose parent is missing. Where a format records no status
	// (Nezha CSV) this is the evidence of failed requests it offers.
	TruncatedTraces int64 `json:"truncated_traces"`
	// ClockSkewSpans counts spans that start before their parent, a sign
	// of clock skew between hosts.
	ClockSkewSpans int64 `json:"clock_skew_spans"`
	// DispatchErrorSpans counts spans that recorded no status and were
	// marked failed because their request handed its response to a web
	// framework's error handler (see ErrorDispatch).
	DispatchErrorSpans int64 `json:"dispatch_error_spans,omitempty"`
	// MessagingSpans counts spans that are messaging operations (a
	// messaging operation was read or inferred: publish, receive,
	// process, ...); LinkedSpans counts spans with at least one link.
	// Both are left out of the JSON when zero.
	MessagingSpans int64 `json:"messaging_spans,omitempty"`
	LinkedSpans    int64 `json:"linked_spans,omitempty"`
	// SharedServerSpans counts server spans that shared their client's
	// span id (Zipkin's B3 model, Brave's default) and were given their
	// own, with the id and SharedSuffix.
	SharedServerSpans int64 `json:"shared_server_spans,omitempty"`

	// Samples counts stored metric points (after deduplication).
	Samples int64 `json:"samples"`
	// Series counts distinct (service, instance, metric, labels).
	Series int64 `json:"series"`
	// MetricKinds counts points by kind.
	MetricKinds map[cascade.MetricKind]int64 `json:"metric_kinds"`
	// MetricServices lists the services the metrics name, sorted.
	MetricServices []string `json:"metric_services"`
	// MetricRange is the time covered by the points.
	MetricRange TimeRange `json:"metric_range"`
	// DuplicateSamples counts points dropped as repeats of a stored point
	// of the same series and time.
	DuplicateSamples int64 `json:"duplicate_samples"`

	// Logs counts stored log records (after deduplication); zero, with
	// the fields below, when no logs were given.
	Logs int64 `json:"logs,omitempty"`
	// LogServices lists the services the log records name, sorted.
	LogServices []string `json:"log_services,omitempty"`
	// LogTemplates counts the distinct templates of the stored records.
	LogTemplates int `json:"log_templates,omitempty"`
	// ErrorLogs counts records of severity ERROR or FATAL.
	ErrorLogs int64 `json:"error_logs,omitempty"`
	// TracedLogs counts records that carry a trace id.
	TracedLogs int64 `json:"traced_logs,omitempty"`
	// LogRange is the time covered by the records.
	LogRange TimeRange `json:"log_range,omitzero"`
	// DuplicateLogs counts records dropped as repeats of a stored record
	// (same time, service, instance, ids, severity and body).
	DuplicateLogs int64 `json:"duplicate_logs,omitempty"`

	// Skipped counts invalid records skipped (--skip-invalid) by reason.
	Skipped map[string]int64 `json:"skipped"`
	// Warnings counts anomalies that were kept, by kind (negative
	// durations clamped, empty inputs, ...).
	Warnings map[string]int64 `json:"warnings"`
	// Notices lists each kind of data problem met, sorted by kind, with
	// its count, first file and position, and what was done. Warnings
	// keeps the counts of the decoders' kinds, as before.
	Notices []Notice `json:"notices,omitempty"`
	// Inferred counts what a format lacked and ingest inferred or
	// defaulted, by note ("status: not recorded by format ...").
	Inferred map[string]int64 `json:"inferred"`
}

// InputSummary describes one input file.
type InputSummary struct {
	// File is the path as given ("-" for stdin).
	File string `json:"file"`
	// Format is the format read (detected or forced).
	Format Format `json:"format"`
	// Spans and Samples count the rows the file produced, before
	// deduplication across files.
	Spans   int64 `json:"spans"`
	Samples int64 `json:"samples"`
	// Logs counts the file's log records, before deduplication.
	Logs int64 `json:"logs,omitempty"`
	// Skipped counts the file's invalid records that were skipped.
	Skipped int64 `json:"skipped"`
}

// TimeRange is a closed interval of Unix nanoseconds; zero when empty.
type TimeRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

func (r *TimeRange) add(t int64) {
	if r.Start == 0 && r.End == 0 {
		r.Start, r.End = t, t
		return
	}
	r.Start = min(r.Start, t)
	r.End = max(r.End, t)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// spanStats accumulates the span half of a Summary, one trace at a time.
type spanStats struct {
	spans, traces, errors, roots             int64
	dups, orphans, noRoot, truncated, skewed int64
	cycles, dispatched, unshared             int64
	messaging, linked                        int64
	conflicts                                int64
	// first positions ("trace T span S") of each counted problem
	firstDup, firstConflict, firstOrphan, firstSkew, firstCycle string
	services                                                    map[string]bool
	ops                                                         map[[2]string]bool
	rng                                                         TimeRange
	index                                                       map[string]int
	shared                                                      []cascade.Span // the second spans of shared pairs
	paired                                                      map[string]bool
}

func newSpanStats() *spanStats {
	return &spanStats{services: map[string]bool{}, ops: map[[2]string]bool{}, index: map[string]int{}, paired: map[string]bool{}}
}

// trace takes all rows of one trace in stored order, drops repeated span
// ids (the first stored wins), counts anomalies, and returns the rows to
// store. It works in place: the rows kept are moved to the front of rows
// and returned as a prefix of it (a trace of a million spans is held
// once, not copied), so rows must not be read again after the call.
func (st *spanStats) trace(rows []cascade.Span) []cascade.Span {
	st.resetTrace()
	n := st.dropRepeats(rows)
	kept := st.separateShared(rows, n)
	st.traces++
	st.noteCycles(kept)
	st.dispatched += int64(markDispatched(kept, st.index))
	st.countSpans(kept)
	return kept
}

// resetTrace clears what trace keeps per trace, so one trace's span ids
// do not leak into the next.
func (st *spanStats) resetTrace() {
	clear(st.index)
	st.shared = st.shared[:0]
	clear(st.paired)
}

// dropRepeats moves the rows to keep to the front of rows and returns how
// many there are, counting repeated span ids as duplicates or conflicts
// and setting aside the second spans of shared client/server pairs.
func (st *spanStats) dropRepeats(rows []cascade.Span) int {
	// rows[:n] are the rows kept so far; rows[n:i] were dropped or moved
	// forward, and may be overwritten.
	n := 0
	for i := range rows {
		id := rows[i].SpanID
		if j, dup := st.index[id]; dup {
			if !st.paired[id] && sharedPair(&rows[j], &rows[i]) {
				// Separated below, once every span of the trace is in:
				// the server's calls may come after it.
				st.paired[id] = true
				st.shared = append(st.shared, rows[i])
				continue
			}
			if rows[j].Equal(&rows[i]) {
				st.dups++
				if st.firstDup == "" {
					st.firstDup = spanPos(&rows[i])
				}
			} else {
				st.conflicts++
				if st.firstConflict == "" {
					st.firstConflict = spanPos(&rows[i])
				}
			}
			continue
		}
		st.index[id] = n
		if n != i {
			rows[n] = rows[i]
		}
		n++
	}
	return n
}

// separateShared splits the Zipkin shared pairs set aside by dropRepeats
// into client and server spans (unshare), counting as conflicts the pairs
// it cannot separate, and returns the rows to keep.
func (st *spanStats) separateShared(rows []cascade.Span, n int) []cascade.Span {
	// unshare appends the separated servers at rows[n:], over rows the
	// loop dropped (each server was one of them).
	kept := rows[:n]
	if len(st.shared) > 0 {
		var u int
		kept, u = unshare(kept, st.index, st.shared)
		st.unshared += int64(u)
		if d := int64(len(st.shared) - u); d > 0 {
			st.conflicts += d
			if st.firstConflict == "" {
				st.firstConflict = spanPos(&st.shared[0])
			}
		}
	}
	return kept
}

// noteCycles cuts the trace's parent cycles, so every span has a root
// above it, and counts the cycles cut.
func (st *spanStats) noteCycles(kept []cascade.Span) {
	if n := cutCycles(kept, st.index); n > 0 {
		st.cycles += int64(n)
		if st.firstCycle == "" {
			st.firstCycle = "trace " + kept[0].TraceID
		}
	}
}

// countSpans adds the kept spans to the totals and counts the trace's
// roots, orphans and clock-skewed children, and whether it is truncated.
func (st *spanStats) countSpans(kept []cascade.Span) {
	roots, orphans := 0, 0
	for i := range kept {
		s := &kept[i]
		st.spans++
		st.services[s.Service] = true
		st.ops[[2]string{s.Service, s.Operation}] = true
		st.rng.add(s.Start)
		st.rng.add(s.End())
		if s.Status == cascade.StatusError {
			st.errors++
		}
		if s.MessagingOperation != "" {
			st.messaging++
		}
		if len(s.Links) > 0 {
			st.linked++
		}
		if s.IsRoot() {
			roots++
			continue
		}
		p, ok := st.index[s.ParentSpanID]
		if !ok {
			orphans++
			if st.firstOrphan == "" {
				st.firstOrphan = spanPos(s)
			}
			continue
		}
		if s.Start < kept[p].Start {
			st.skewed++
			if st.firstSkew == "" {
				st.firstSkew = spanPos(s)
			}
		}
	}
	st.roots += int64(roots)
	st.orphans += int64(orphans)
	if roots == 0 {
		st.noRoot++
	}
	if roots == 0 || orphans > 0 {
		st.truncated++
	}
}

func (st *spanStats) fill(sum *Summary) {
	sum.Spans, sum.Traces, sum.ErrorSpans, sum.RootSpans = st.spans, st.traces, st.errors, st.roots
	sum.DuplicateSpans, sum.OrphanSpans = st.dups+st.conflicts, st.orphans
	sum.TracesWithoutRoot, sum.TruncatedTraces, sum.ClockSkewSpans = st.noRoot, st.truncated, st.skewed
	sum.Services = sortedKeys(st.services)
	sum.Operations = len(st.ops)
	sum.SpanRange = st.rng
	sum.DispatchErrorSpans = st.dispatched
	sum.MessagingSpans, sum.LinkedSpans = st.messaging, st.linked
	sum.SharedServerSpans = st.unshared
	file := spanFile(sum)
	if st.cycles > 0 {
		sum.Warnings[warnParentCycle] += st.cycles
		k, action := splitAction(warnParentCycle)
		sum.notice(k, action, file, st.firstCycle, st.cycles)
	}
	sum.notice(noticeDuplicate, "dropped: the first stored wins", file, st.firstDup, st.dups)
	sum.notice(noticeConflict, actionConflict, file, st.firstConflict, st.conflicts)
	sum.notice(noticeOrphan, "kept: starts a request without a caller", file, st.firstOrphan, st.orphans)
	sum.notice(noticeClockSkew, "kept as read", file, st.firstSkew, st.skewed)
}

// spanPos is the notice position of a span in the merged dataset.
func spanPos(s *cascade.Span) string {
	return fmt.Sprintf("trace %s span %s", s.TraceID, s.SpanID)
}

// spanFile is the one input that gave spans, or "" when several did: a
// problem found on the merged spans is then placed by its ids alone.
func spanFile(sum *Summary) string {
	file := ""
	for _, in := range sum.Inputs {
		if in.Spans > 0 {
			if file != "" {
				return ""
			}
			file = in.File
		}
	}
	return file
}

// sampleStats accumulates the metric half of a Summary from samples in
// stored order (by series, then time).
type sampleStats struct {
	prev            cascade.Sample
	have            bool
	alias           bool // samples alias a reader's buffers: keep copies
	samples, series int64
	dups            int64
	firstDup        string
	kinds           map[cascade.MetricKind]int64
	services        map[string]bool
	rng             TimeRange
}

func newSampleStats() *sampleStats {
	return &sampleStats{kinds: map[cascade.MetricKind]int64{}, services: map[string]bool{}}
}

// add counts s, and reports false when it repeats the stored point before
// it (same series and time): a duplicate not to store.
func (st *sampleStats) add(s *cascade.Sample) bool {
	if st.alias {
		c := cloneSample(s)
		s = &c
	}
	if st.have {
		switch {
		case dataset.CompareSamples(&st.prev, s) == 0:
			st.dups++
			if st.firstDup == "" {
				st.firstDup = fmt.Sprintf("series %s/%s %s{%s} at %d", s.Service, s.Instance, s.Metric, s.Labels, s.Time)
			}
			return false
		case dataset.CompareSeries(&st.prev, s) != 0:
			st.series++
		}
	} else {
		st.series++
	}
	st.prev, st.have = *s, true
	st.samples++
	st.kinds[s.Kind]++
	if s.Service != "" {
		st.services[s.Service] = true
	}
	if s.Time != 0 {
		st.rng.add(s.Time)
	}
	return true
}

func (st *sampleStats) fill(sum *Summary) {
	sum.Samples, sum.Series, sum.DuplicateSamples = st.samples, st.series, st.dups
	sum.MetricKinds = st.kinds
	sum.MetricServices = sortedKeys(st.services)
	sum.MetricRange = st.rng
	file := ""
	for _, in := range sum.Inputs {
		if in.Samples > 0 {
			if file != "" {
				file = ""
				break
			}
			file = in.File
		}
	}
	sum.notice(noticeDupSample, "dropped: the first stored wins", file, st.firstDup, st.dups)
}

// Summarize counts what the dataset in dir holds, as the Summary of the
// ingest that wrote it counts it (inputs, skips, warnings and inferences
// excepted: the dataset does not record them).
func Summarize(dir string) (*Summary, error) {
	sum := &Summary{Dataset: dir, Inputs: []InputSummary{}, Skipped: map[string]int64{},
		Warnings: map[string]int64{}, Inferred: map[string]int64{}}
	st := newSpanStats()
	var group []cascade.Span
	err := dataset.ReadSpans(dir, func(s *cascade.Span) error {
		if len(group) > 0 && group[0].TraceID != s.TraceID {
			st.trace(group)
			group = group[:0]
		}
		group = append(group, s.Clone())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(group) > 0 {
		st.trace(group)
	}
	st.fill(sum)
	if _, err := os.Stat(filepath.Join(dir, dataset.MetricsFile)); err == nil {
		ss := newSampleStats()
		ss.alias = true
		if err := dataset.ReadSamples(dir, func(s *cascade.Sample) error { ss.add(s); return nil }); err != nil {
			return nil, err
		}
		ss.fill(sum)
	}
	if _, err := os.Stat(filepath.Join(dir, dataset.LogsFile)); err == nil {
		ls := newLogStats()
		ls.alias = true
		if err := dataset.ReadLogs(dir, func(r *cascade.LogRecord) error { ls.add(r); return nil }); err != nil {
			return nil, err
		}
		ls.fill(sum)
	}
	return sum, nil
}

// cloneSample copies a sample and its strings.
func cloneSample(s *cascade.Sample) cascade.Sample {
	c := *s
	c.Service = strings.Clone(s.Service)
	c.Instance = strings.Clone(s.Instance)
	c.Metric = strings.Clone(s.Metric)
	c.Kind = cascade.MetricKind(strings.Clone(string(s.Kind)))
	c.Labels = strings.Clone(s.Labels)
	return c
}
