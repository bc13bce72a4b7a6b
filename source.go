package cascade

// SpanSource calls fn for every span of a dataset and returns fn's first
// error. Spans must come grouped by trace (all spans of a trace one after
// another); within a trace any order will do. dataset.ReadSpans, which
// yields spans sorted by trace and then start, is one. The span passed to
// fn is only valid during the call: a reader copies what it keeps.
type SpanSource func(fn func(*Span) error) error

// SampleSource calls fn for every metric point and returns fn's first
// error; dataset.ReadSamples is one. Any order will do. The sample passed
// to fn is only valid during the call.
type SampleSource func(fn func(*Sample) error) error
