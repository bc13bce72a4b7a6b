package ingest

// Options are the per-run settings that decoders read. The zero value is
// valid: auto-detected formats, the Nezha CSV preset when a CSV header
// matches it, and the default metric-kind mapping.
type Options struct {
	// CSVMap maps span CSV columns to Span fields; nil means detect a
	// preset from the header.
	CSVMap *CSVMap
	// LogCSVMap maps log CSV columns to LogRecord fields; nil means
	// detect a preset from the header.
	LogCSVMap *LogCSVMap
	// MetricKinds maps metric names to kinds; nil means DefaultMetricKinds.
	MetricKinds *KindMap
	// ScrapeTime is the time, in Unix nanoseconds, given to Prometheus
	// text points that carry no timestamp of their own; 0 means the
	// input has none to offer and such points are stored at time 0 (and
	// the summary says so).
	ScrapeTime int64
}
