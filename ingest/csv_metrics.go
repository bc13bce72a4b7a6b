package ingest

import "io"

func decodeMetricCSV(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }
