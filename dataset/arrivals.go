package dataset

import "cascade"

// ReadArrivals calls fn, in the dataset's order (by trace, then start),
// for each root request of the dataset in dir: the root span of a trace
// that a caller's request started. A root span that is a consumer's
// delivery (a receive or process span starting the trace of a message
// published elsewhere: Span.Delivered) is none, nor is one that carries
// messages created in other traces (a batch publisher's publish span
// linking to each message's creation context, or a span of no kind of
// its own, a timer's, whose child of the same service is one): the
// requests that published or created those messages are the arrivals.
// graph reads root requests the same way.
//
// The span is only valid during the call, as for ReadSpans.
func ReadArrivals(dir string, fn func(*cascade.Span) error) error {
	var (
		trace string
		roots []cascade.Span // the trace's root spans seen so far
		out   []bool         // per root: carries messages, so no arrival
	)
	flush := func() error {
		for i := range roots {
			if !out[i] {
				if err := fn(&roots[i]); err != nil {
					return err
				}
			}
		}
		roots, out = roots[:0], out[:0]
		return nil
	}
	err := ReadSpans(dir, func(s *cascade.Span) error {
		if s.TraceID != trace {
			if err := flush(); err != nil {
				return err
			}
			trace = s.TraceID
		}
		if s.IsRoot() {
			if !s.Delivered() {
				roots = append(roots, s.Clone())
				out = append(out, carries(s))
			}
			return nil
		}
		if carries(s) {
			// A timer's span whose child carries the messages.
			for i := range roots {
				r := &roots[i]
				if r.SpanID == s.ParentSpanID && r.Service == s.Service &&
					(r.Kind == cascade.KindInternal || r.Kind == cascade.KindUnspecified) {
					out[i] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// carries reports whether s is a publish span that links to the creation
// contexts of the messages it sends (the messaging conventions' batch
// publishing), with links: a span whose messaging operation is publish or
// send, or without one a producer span, or a client span that names a
// destination (graph's publish spans); a "create" span, which makes one
// message, carries none.
func carries(s *cascade.Span) bool {
	if len(s.Links) == 0 {
		return false
	}
	switch s.MessagingOperation {
	case cascade.MessagingPublish, cascade.MessagingSend:
		return true
	case "":
		return s.Kind == cascade.KindProducer || s.Kind == cascade.KindClient && s.Destination != ""
	}
	return false
}
