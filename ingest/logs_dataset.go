package ingest

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"cascade"
)

// noticeDupLog is the notice of log records stored twice.
const noticeDupLog = "duplicate log record (same time, service, ids and body)"

// compareLogs orders logs.parquet: by service, then time, then the rest
// of the record, so that equal records are adjacent and the order depends
// on nothing but the records.
func compareLogs(a, b *cascade.LogRecord) int {
	if c := cmp.Compare(a.Service, b.Service); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Instance, b.Instance); c != 0 {
		return c
	}
	if c := cmp.Compare(a.TraceID, b.TraceID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.SpanID, b.SpanID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Body, b.Body); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Severity, b.Severity); c != 0 {
		return c
	}
	return cmp.Compare(a.TemplateID, b.TemplateID)
}

// addLog templates one record, in input order, and queues it for
// logs.parquet.
func (w *datasetWriter) addLog(r *cascade.LogRecord) error {
	w.hasLogs = true
	r.TemplateID = int32(w.templates.Add(r.Body))
	r.Template = ""
	return w.logs.add(r)
}

// writeLogs sorts, deduplicates and writes logs.parquet, giving each
// record its template's final text. A run given no log input writes no
// file.
func (w *datasetWriter) writeLogs(sum *Summary) error {
	if !w.hasLogs {
		return nil
	}
	fw, err := newFileWriter[cascade.LogRecord](filepath.Join(w.tmp, LogsFile),
		parquet.Ascending("service"), parquet.Ascending("time"))
	if err != nil {
		return err
	}
	st := newLogStats()
	texts := make([]string, w.templates.Len()+1)
	for id := 1; id < len(texts); id++ {
		texts[id] = w.templates.Template(id)
	}
	err = w.logs.drain(func(r *cascade.LogRecord) error {
		if !st.add(r) {
			return nil
		}
		if id := int(r.TemplateID); id > 0 && id < len(texts) {
			r.Template = texts[id]
		}
		return fw.write(r)
	})
	if e := fw.close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", LogsFile, err)
	}
	st.fill(sum)
	return nil
}

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
	if st.have && compareLogs(&st.prev, r) == 0 {
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
