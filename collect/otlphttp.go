package collect

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"sync"

	jsoniter "github.com/json-iterator/go"
	"google.golang.org/protobuf/encoding/protowire"

	"cascade"
	"cascade/ingest"
)

// This file holds the OTLP/HTTP protocol: what a request may carry and how
// it is decoded, and how answers are encoded. The server around it is
// receiver.go.

// signal is what an OTLP/HTTP path carries.
type signal int

const (
	signalTraces signal = iota
	signalMetrics
)

// OTLP/HTTP paths.
const (
	pathTraces  = "/v1/traces"
	pathMetrics = "/v1/metrics"
)

// encoding is an OTLP/HTTP body encoding.
type encoding int

const (
	encodingProto encoding = iota
	encodingJSON
)

// Content types of the two encodings.
const (
	contentTypeProto = "application/x-protobuf"
	contentTypeJSON  = "application/json"
)

func (e encoding) contentType() string {
	if e == encodingJSON {
		return contentTypeJSON
	}
	return contentTypeProto
}

// parseContentType maps a Content-Type header to an encoding.
func parseContentType(v string) (encoding, bool) {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return 0, false
	}
	switch mt {
	case contentTypeProto, "application/protobuf":
		return encodingProto, true
	case contentTypeJSON:
		return encodingJSON, true
	}
	return 0, false
}

// errTooLarge is what readBody returns for a body over the limit.
var errTooLarge = errors.New("request body too large")

// errNoMemory is what readBody returns when the bodies of the requests
// admitted already hold the whole memory budget.
var errNoMemory = errors.New("memory budget of the queue spent")

// memBudget bounds the body bytes that admitted requests hold at once.
type memBudget struct {
	mu struct {
		sync.Mutex
		left int64
	}
}

func newMemBudget(n int64) *memBudget {
	b := &memBudget{}
	b.mu.left = n
	return b
}

// take reserves n bytes, or reports that they are not there.
func (b *memBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.mu.left {
		return false
	}
	b.mu.left -= n
	return true
}

// give returns n bytes.
func (b *memBudget) give(n int64) {
	b.mu.Lock()
	b.mu.left += n
	b.mu.Unlock()
}

// chargedBuffer is a buffer whose every byte is charged to a budget as it
// is written; held is what it owes back.
type chargedBuffer struct {
	buf    bytes.Buffer
	budget *memBudget
	held   int64
}

func (c *chargedBuffer) Write(p []byte) (int, error) {
	if !c.budget.take(int64(len(p))) {
		return 0, errNoMemory
	}
	c.held += int64(len(p))
	return c.buf.Write(p)
}

// release gives back what the buffer holds.
func (c *chargedBuffer) release() {
	c.budget.give(c.held)
	c.held = 0
}

// readBody reads a request body into dst, decompressing it when gzipped
// is true. It fails with errTooLarge when the body (as sent or
// decompressed) passes limit, and with errNoMemory when dst's budget runs
// out first.
func readBody(r io.Reader, gzipped bool, limit int64, dst *chargedBuffer) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	var src io.Reader = lr
	if gzipped {
		zr, err := gzip.NewReader(lr)
		if err != nil {
			if lr.N <= 0 {
				return errTooLarge
			}
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	n, err := io.Copy(dst, io.LimitReader(src, limit+1))
	switch {
	case errors.Is(err, errNoMemory):
		return err
	case lr.N <= 0 || n > limit:
		return errTooLarge
	case err != nil && gzipped:
		return fmt.Errorf("gzip: %w", err)
	}
	return err
}

// decoded is what one request body held.
type decoded struct {
	batch batch
	// rejected counts spans (or points) that were dropped as invalid, and
	// rejectMsg tells the first reason: the OTLP partial success.
	rejected  int64
	rejectMsg string
}

// errBadPayload wraps the reason a body could not be decoded at all.
var errBadPayload = errors.New("bad payload")

// requestSink collects what decoding one request yields.
type requestSink struct {
	d      *decoded
	syntax *ingest.ParseError
}

func (s *requestSink) Span(sp *cascade.Span) error {
	s.d.batch.spans = append(s.d.batch.spans, *sp)
	return nil
}

func (s *requestSink) Sample(sm *cascade.Sample) error {
	s.d.batch.samples = append(s.d.batch.samples, *sm)
	return nil
}

// Invalid counts a defective span or point as rejected. A syntax error
// makes the whole body bad: decoding stops and nothing is kept.
func (s *requestSink) Invalid(e *ingest.ParseError) error {
	if errors.Is(e, ingest.ErrSyntax) {
		s.syntax = e
		return e
	}
	if s.d.rejected == 0 {
		s.d.rejectMsg = e.Error()
	}
	s.d.rejected++
	return nil
}

func (s *requestSink) Infer(text string) { s.d.batch.addNote(noteInfer, text) }
func (s *requestSink) Warn(text string)  { s.d.batch.addNote(noteWarn, text) }

// decodeBody decodes one (decompressed) OTLP request body. An error wraps
// errBadPayload: the body is not an OTLP request of this signal and
// encoding, and nothing of it may be stored.
func decodeBody(sig signal, enc encoding, body []byte, opts *ingest.Options) (*decoded, error) {
	var format ingest.Format
	switch {
	case sig == signalTraces && enc == encodingProto:
		format = ingest.FormatOTLPProto
	case sig == signalTraces:
		format = ingest.FormatOTLPJSON
	case enc == encodingProto:
		format = ingest.FormatOTLPMetricsProto
	default:
		format = ingest.FormatOTLPMetricsJSON
	}
	d := &decoded{}
	s := &requestSink{d: d}
	err := ingest.Decode("request", bytes.NewReader(body), format, opts, s)
	if s.syntax != nil {
		return nil, fmt.Errorf("%w: %w", errBadPayload, s.syntax)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadPayload, err)
	}
	return d, nil
}

// exportResponse encodes the answer to an accepted request: an empty
// Export{Trace,Metrics}ServiceResponse, or one carrying the partial success
// when some spans or points were rejected. It writes the bytes pdata's
// ptraceotlp and pmetricotlp write (collect's tests hold it to them), by
// hand: those packages link grpc into every cascade command, which costs
// each process 2.2 ms at start-up (BENCHMARKS.md).
func exportResponse(sig signal, enc encoding, rejected int64, msg string) ([]byte, error) {
	if rejected <= 0 {
		rejected, msg = 0, ""
	}
	if enc == encodingJSON {
		field := "rejectedSpans"
		if sig != signalTraces {
			field = "rejectedDataPoints"
		}
		st := jsoniter.ConfigFastest.BorrowStream(nil)
		defer jsoniter.ConfigFastest.ReturnStream(st)
		st.WriteRaw(`{"partialSuccess":{`)
		if rejected != 0 {
			st.WriteRaw(`"` + field + `":"` + strconv.FormatInt(rejected, 10) + `"`)
		}
		if msg != "" {
			if rejected != 0 {
				st.WriteMore()
			}
			st.WriteObjectField("errorMessage")
			st.WriteString(msg)
		}
		st.WriteRaw("}}")
		return bytes.Clone(st.Buffer()), st.Error
	}
	// partial_success (1) {rejected (1): varint, error_message (2):
	// string}, fields in the order pdata writes them.
	var ps []byte
	if msg != "" {
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
	}
	if rejected != 0 {
		ps = protowire.AppendTag(ps, 1, protowire.VarintType)
		ps = protowire.AppendVarint(ps, uint64(rejected))
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, ps), nil
}

// gRPC status codes carried in the google.rpc.Status of error answers.
const (
	codeInvalidArgument   = 3
	codeResourceExhausted = 8
	codeUnavailable       = 14
)

// statusBody encodes a google.rpc.Status {code, message}, the body the
// OTLP/HTTP specification gives every 4xx and 5xx answer, in the
// request's encoding.
func statusBody(enc encoding, code int32, msg string) []byte {
	if enc == encodingJSON {
		b, _ := json.Marshal(struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}{code, msg})
		return b
	}
	b := []byte{0x08} // field 1 (code), varint
	b = binary.AppendUvarint(b, uint64(code))
	b = append(b, 0x12) // field 2 (message), length-delimited
	b = binary.AppendUvarint(b, uint64(len(msg)))
	return append(b, msg...)
}

// contentEncoding checks a Content-Encoding header: gzip is read, no
// encoding (or identity) passes, anything else is refused.
func contentEncoding(v string) (gzipped, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "identity":
		return false, true
	case "gzip", "x-gzip":
		return true, true
	}
	return false, false
}
