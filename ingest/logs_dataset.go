package ingest

import (
	"fmt"
	"strings"

	"cascade"
	"cascade/dataset"
)

// noticeDupLog is the notice of log records stored twice.
const noticeDupLog = "duplicate log record (same time, service, ids and body)"

// logStats accumulates the log part of a Summary from records in stored
// order.
type logStats struct {
	prev      cascade.LogRecord
	have      bool
	alias     bool // records alias a reader's buffers: keep copies
	logs      int64
	dups      int64
	errors    int64
	withTrace int64
	firstDup  string
	services  map[string]bool
	templates map[int32]bool
	rng       TimeRange
}

func newLogStats() *logStats {
	return &logStats{services: map[string]bool{}, templates: map[int32]bool{}}
}

// add counts r and reports false when it repeats the stored record before
// it: a duplicate not to store.
func (st *logStats) add(r *cascade.LogRecord) bool {
	if st.have && dataset.CompareLogs(&st.prev, r) == 0 {
		st.dups++
		if st.firstDup == "" {
			st.firstDup = fmt.Sprintf("service %s at %d", r.Service, r.Time)
		}
		return false
	}
	st.prev, st.have = *r, true
	if st.alias {
		st.prev = cloneLog(r)
	}
	st.logs++
	if r.Severity == "ERROR" || r.Severity == "FATAL" {
		st.errors++
	}
	if r.TraceID != "" {
		st.withTrace++
	}
	if r.Service != "" && !st.services[r.Service] {
		st.services[strings.Clone(r.Service)] = true
	}
	st.templates[r.TemplateID] = true
	st.rng.add(r.Time)
	return true
}

func (st *logStats) fill(sum *Summary) {
	sum.Logs, sum.DuplicateLogs, sum.ErrorLogs, sum.TracedLogs = st.logs, st.dups, st.errors, st.withTrace
	sum.LogTemplates = len(st.templates)
	sum.LogServices = sortedKeys(st.services)
	sum.LogRange = st.rng
	file := ""
	for _, in := range sum.Inputs {
		if in.Logs > 0 {
			if file != "" {
				file = ""
				break
			}
			file = in.File
		}
	}
	sum.notice(noticeDupLog, "dropped: the first stored wins", file, st.firstDup, st.dups)
}

// cloneLog copies a record and its strings.
func cloneLog(r *cascade.LogRecord) cascade.LogRecord {
	c := *r
	c.Service = strings.Clone(r.Service)
	c.Instance = strings.Clone(r.Instance)
	c.Severity = strings.Clone(r.Severity)
	c.TraceID = strings.Clone(r.TraceID)
	c.SpanID = strings.Clone(r.SpanID)
	c.Body = strings.Clone(r.Body)
	c.Template = strings.Clone(r.Template)
	return c
}
