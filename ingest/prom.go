package ingest

import "io"

func decodePromText(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }
