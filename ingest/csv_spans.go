package ingest

import "io"

func decodeSpanCSV(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }

// CSVMap maps span CSV columns to Span fields.
type CSVMap struct{}
