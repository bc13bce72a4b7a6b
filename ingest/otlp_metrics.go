package ingest

import "io"

func decodeOTLPMetricsJSON(name string, r io.Reader, s sink, opts *Options) error {
	return ErrUnsupported
}

func decodeOTLPMetricsProto(name string, r io.Reader, s sink, opts *Options) error {
	return ErrUnsupported
}
