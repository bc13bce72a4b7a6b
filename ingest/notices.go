package ingest

import (
	"fmt"
	"slices"
	"strings"
)

// Notice is one kind of data problem an ingest met, aggregated: how many
// times, where first, and what was done about it. `cascade` prints each as
// one "cascade: warning:" line on stderr.
type Notice struct {
	// Kind names the problem ("orphan span", "duplicate span id").
	Kind string `json:"kind"`
	// Count is how many records had it.
	Count int64 `json:"count"`
	// File is the input where it was first met; empty when the problem
	// was found after inputs were merged and more than one fed spans.
	File string `json:"file,omitempty"`
	// Position is where in File (or in the dataset) it was first met:
	// "line 12 (byte 880)", "record 3", "trace T span S".
	Position string `json:"position,omitempty"`
	// Action says what was done: kept, dropped, repaired, and how.
	Action string `json:"action"`
}

// String formats the notice as the stderr line prints it, without the
// "cascade: warning: " prefix. A kind whose words were changed is printed
// in its new words (noticeWords); Kind keeps the old ones.
func (n Notice) String() string {
	var b strings.Builder
	kind := n.Kind
	if w, ok := noticeWords[kind]; ok {
		kind = w
	}
	fmt.Fprintf(&b, "%s: %d", kind, n.Count)
	where := n.File
	if n.Position != "" {
		if where != "" {
			where += " "
		}
		where += n.Position
	}
	if where != "" {
		fmt.Fprintf(&b, ", first at %s", where)
	}
	if n.Action != "" {
		fmt.Fprintf(&b, " (%s)", n.Action)
	}
	return b.String()
}

// Kinds of notices ingest adds itself (the decoders name theirs).
const (
	noticeOrphan      = "orphan span (parent not in its trace)"
	noticeDuplicate   = "duplicate span id (same content)"
	noticeConflict    = "conflicting span id (same trace and span id, different content)"
	noticeClockSkew   = "clock skew (span starts before its parent)"
	noticeEmpty       = "empty input"
	noticeDupSample   = "duplicate metric sample (same series and time)"
	noticeNotOTLP     = "JSON line with no resourceSpans, e.g. a Jaeger trace in an OTLP file"
	noticeBadYear     = "span time outside the years 2000-2100"
	noticeDurMismatch = "span duration column disagrees with end - start"
)

// noticeWords are the words a notice is printed with where they are not
// its kind: the summary JSON's kind stays what it was, for programs that
// match it, while the stderr line says it better.
var noticeWords = map[string]string{
	// Two spans of one trace and span id that differ are two calls, not
	// a conflict to settle: one of them is lost.
	noticeConflict: "duplicate span id with different content (same trace and span id)",
}

// actionConflict is what is done with a span whose trace and span id a
// different span stored before it has: stored first is the earlier
// start, at the same start the one read first.
const actionConflict = "the later span, a different call, was dropped; the first kept"

// notice adds n records of kind to the summary, keeping the first
// position met.
func (s *Summary) notice(kind, action, file, pos string, n int64) {
	if n <= 0 {
		return
	}
	for i := range s.Notices {
		if s.Notices[i].Kind == kind {
			s.Notices[i].Count += n
			return
		}
	}
	s.Notices = append(s.Notices, Notice{Kind: kind, Count: n, File: file, Position: pos, Action: action})
}

// sortNotices orders the notices by kind, for deterministic output.
func (s *Summary) sortNotices() {
	slices.SortStableFunc(s.Notices, func(a, b Notice) int { return strings.Compare(a.Kind, b.Kind) })
}

// splitAction splits a warning kind written "what (what was done)" into
// its kind and action; a kind without one was kept as read.
func splitAction(kind string) (string, string) {
	if i := strings.LastIndex(kind, " ("); i > 0 && strings.HasSuffix(kind, ")") {
		return kind[:i], kind[i+2 : len(kind)-1]
	}
	if strings.HasPrefix(kind, warnFileSkipped) {
		return strings.TrimSuffix(warnFileSkipped, ": "), "skipped: " + strings.TrimPrefix(kind, warnFileSkipped)
	}
	return kind, "kept"
}

// positionOf formats a decoder's position as a notice position.
func positionOf(e *ParseError) string {
	var parts []string
	if e.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", e.Line))
	}
	if e.Offset > 0 || e.Line == 0 {
		parts = append(parts, fmt.Sprintf("byte %d", e.Offset))
	}
	pos := strings.Join(parts, " ")
	if e.Path != "" {
		pos += " " + e.Path
	}
	return pos
}

// Plausible span times, Unix nanoseconds: 2000-01-01 to 2100-01-01.
const (
	minPlausibleNs = 946684800 * 1e9
	maxPlausibleNs = 4102444800 * 1e9
)

// unitHint says by what factor a start time t (Unix nanoseconds as read)
// falls short of the plausible years, and the unit to give, or only what
// was done when no power of a thousand fits. (A time too large cannot be
// scaled down from an int64 of nanoseconds into the range, so none is
// suggested.)
func unitHint(t int64) string {
	units := []string{"us", "ms", "s"}
	for k, f := range []int64{1e3, 1e6, 1e9} {
		if t > 0 && t <= maxPlausibleNs/f && t*f >= minPlausibleNs {
			return fmt.Sprintf("kept as read; times look %dx too small: if the column was read as ns, give it as start:%s", f, units[k])
		}
	}
	return "kept as read"
}

// durationHint compares a span's end - start (ns) with its duration
// column as read (ns) and, when they differ by a power of a thousand (a
// unit read wrong), says what was kept and the factor; "" otherwise.
func durationHint(span, given int64) string {
	if span <= 0 || given <= 0 {
		return ""
	}
	lo, hi := min(span, given), max(span, given)
	if float64(hi-lo) <= 0.01*float64(hi) {
		return ""
	}
	ratio := float64(hi) / float64(lo)
	for _, f := range []float64{1e3, 1e6, 1e9} {
		if ratio > f*0.99 && ratio < f*1.01 {
			if given < span {
				return fmt.Sprintf("kept end - start; the duration column reads %gx too small: check its unit, or the start and end units", f)
			}
			return fmt.Sprintf("kept end - start; the duration column reads %gx too large: check its unit, or the start and end units", f)
		}
	}
	return "" // not a unit: rounding or a clock's own disagreement
}
