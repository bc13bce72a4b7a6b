package ingest

import "io"

func decodeJaegerJSON(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }
