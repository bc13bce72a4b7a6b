package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"cascade/ingest"
	"cascade/internal/mdtable"
)

// Format is an output format for data a command prints.
type Format string

// Output formats.
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
)

// JSON writes v as indented JSON with a trailing newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// IngestSummary renders an ingest summary as a table, JSON or Markdown.
func IngestSummary(w io.Writer, s *ingest.Summary, f Format) error {
	switch f {
	case FormatJSON:
		return JSON(w, s)
	case FormatTable, "":
		return ingestTable(tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), s)
	case FormatMarkdown:
		return ingestTable(mdtable.NewWriter(w), s)
	}
	return fmt.Errorf("output %q: want table, json or markdown", f)
}

// tableWriter is what a table is written to: a tabwriter.Writer or an
// mdtable.Writer, for Markdown.
type tableWriter interface {
	io.Writer
	Flush() error
}

func stamp(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000Z")
}

func ingestTable(tw tableWriter, s *ingest.Summary) error {
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	p("dataset\t%s", s.Dataset)
	p("")
	logs := false // a LOGS column only where logs were given
	for _, in := range s.Inputs {
		logs = logs || in.Logs > 0
	}
	if logs {
		p("INPUT\tFORMAT\tSPANS\tSAMPLES\tLOGS\tSKIPPED")
	} else {
		p("INPUT\tFORMAT\tSPANS\tSAMPLES\tSKIPPED")
	}
	for _, in := range s.Inputs {
		if logs {
			p("%s\t%s\t%d\t%d\t%d\t%d", in.File, in.Format, in.Spans, in.Samples, in.Logs, in.Skipped)
			continue
		}
		p("%s\t%s\t%d\t%d\t%d", in.File, in.Format, in.Spans, in.Samples, in.Skipped)
	}
	p("")
	p("spans\t%d", s.Spans)
	p("traces\t%d", s.Traces)
	p("services\t%d\t%s", len(s.Services), strings.Join(s.Services, " "))
	p("operations\t%d", s.Operations)
	p("error spans\t%d", s.ErrorSpans)
	if s.DispatchErrorSpans > 0 {
		p("  of which by error dispatch (no status recorded)\t%d", s.DispatchErrorSpans)
	}
	if s.MessagingSpans > 0 {
		p("messaging spans (publish, receive, process, ...)\t%d", s.MessagingSpans)
	}
	if s.LinkedSpans > 0 {
		p("spans linked to other spans\t%d", s.LinkedSpans)
	}
	p("span time range\t%s .. %s", stamp(s.SpanRange.Start), stamp(s.SpanRange.End))
	p("duplicate spans dropped\t%d", s.DuplicateSpans)
	if s.SharedServerSpans > 0 {
		p("shared server spans given their own id\t%d", s.SharedServerSpans)
	}
	p("orphan spans\t%d", s.OrphanSpans)
	p("traces without root\t%d", s.TracesWithoutRoot)
	p("traces that look cut short\t%d", s.TruncatedTraces)
	p("spans starting before parent (clock skew)\t%d", s.ClockSkewSpans)
	p("")
	p("samples\t%d", s.Samples)
	p("series\t%d", s.Series)
	if s.Samples > 0 {
		p("metric time range\t%s .. %s", stamp(s.MetricRange.Start), stamp(s.MetricRange.End))
		kinds := make([]string, 0, len(s.MetricKinds))
		for k, n := range s.MetricKinds {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(kinds)
		p("samples by kind\t%s", strings.Join(kinds, " "))
		p("duplicate samples dropped\t%d", s.DuplicateSamples)
	}
	if s.Logs > 0 || logs {
		p("")
		p("log records\t%d", s.Logs)
		p("log services\t%d\t%s", len(s.LogServices), strings.Join(s.LogServices, " "))
		p("log templates\t%d", s.LogTemplates)
		p("error and fatal records\t%d", s.ErrorLogs)
		p("records with a trace id\t%d", s.TracedLogs)
		p("log time range\t%s .. %s", stamp(s.LogRange.Start), stamp(s.LogRange.End))
		p("duplicate log records dropped\t%d", s.DuplicateLogs)
	}
	counts := func(title string, m map[string]int64) {
		if len(m) == 0 {
			return
		}
		p("")
		p("%s\tCOUNT", title)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p("%s\t%d", k, m[k])
		}
	}
	counts("SKIPPED (INVALID)", s.Skipped)
	counts("WARNING", s.Warnings)
	counts("INFERRED", s.Inferred)
	return tw.Flush()
}
