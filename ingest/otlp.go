package ingest

import "io"

func decodeOTLPJSON(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }

func decodeOTLPProto(name string, r io.Reader, s sink, opts *Options) error { return ErrUnsupported }

func decodeOTLPProtoFramed(name string, r io.Reader, s sink, opts *Options) error {
	return ErrUnsupported
}
