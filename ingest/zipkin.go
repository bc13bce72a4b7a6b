package ingest

import "io"

func decodeZipkinJSON(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }
