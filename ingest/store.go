package ingest

import (
	"cascade"
	"cascade/dataset"
	"cascade/internal/drain"
)

// store is the dataset a run writes: the dataset's writer, with the
// log bodies' templates mined in input order and the Summary's counts
// taken as each file is written, dropping the rows they find repeated.
type store struct {
	w *dataset.Writer
	// templates mines the log bodies' templates in input order; a stored
	// record's TemplateID is its cluster, and the template text is the
	// cluster's once every line is in.
	templates *drain.Parser
	hasLogs   bool // a log input was read: write logs.parquet
}

func createStore(out string, runRows int) (*store, error) {
	w, err := dataset.NewWriter(out, runRows)
	if err != nil {
		return nil, err
	}
	return &store{w: w, templates: drain.New(drain.DefaultConfig())}, nil
}

func (st *store) addSpan(s *cascade.Span) error { return st.w.AddSpan(s) }

func (st *store) addSample(s *cascade.Sample) error { return st.w.AddSample(s) }

// addLog templates one record, in input order, and queues it for
// logs.parquet.
func (st *store) addLog(r *cascade.LogRecord) error {
	st.hasLogs = true
	r.TemplateID = int32(st.templates.Add(r.Body))
	r.Template = ""
	return st.w.AddLog(r)
}

func (st *store) abort() { st.w.Abort() }

// commit sorts, deduplicates and writes the files, filling the dataset
// part of sum, then moves the dataset into place.
func (st *store) commit(sum *Summary) error {
	spans := newSpanStats()
	if err := st.w.WriteSpans(spans.trace); err != nil {
		return err
	}
	spans.fill(sum)
	samples := newSampleStats()
	if err := st.w.WriteSamples(samples.add); err != nil {
		return err
	}
	samples.fill(sum)
	if err := st.writeLogs(sum); err != nil {
		return err
	}
	return st.w.Publish()
}

// writeLogs writes logs.parquet, deduplicated, giving each record its
// template's final text. A run given no log input writes no file.
func (st *store) writeLogs(sum *Summary) error {
	if !st.hasLogs {
		return nil
	}
	logs := newLogStats()
	texts := make([]string, st.templates.Len()+1)
	for id := 1; id < len(texts); id++ {
		texts[id] = st.templates.Template(id)
	}
	err := st.w.WriteLogs(func(r *cascade.LogRecord) bool {
		if !logs.add(r) {
			return false
		}
		if id := int(r.TemplateID); id > 0 && id < len(texts) {
			r.Template = texts[id]
		}
		return true
	})
	if err != nil {
		return err
	}
	logs.fill(sum)
	return nil
}
