package ingest

// Options are the per-run settings that decoders read. The zero value is
// valid: auto-detected formats, the Nezha CSV preset when a CSV header
// matches it, and the default metric-kind mapping.
type Options struct {
	// CSVMap maps span CSV columns to Span fields; nil means detect a
	// preset from the header.
	CSVMap *CSVMap
	// MetricKinds maps metric names to kinds; nil means DefaultMetricKinds.
	MetricKinds *KindMap
}
