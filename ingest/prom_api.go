package ingest

import "io"

func decodePromAPI(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }
