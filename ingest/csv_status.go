package ingest

import (
	"strconv"
	"strings"

	"cascade"
)

// grpcCodeNames are the gRPC status code names by number, lower-cased
// without underscores ("deadlineexceeded"), as csvGRPCCode compares them.
var grpcCodeNames = [...]string{
	"ok", "cancelled", "unknown", "invalidargument", "deadlineexceeded",
	"notfound", "alreadyexists", "permissiondenied", "resourceexhausted",
	"failedprecondition", "aborted", "outofrange", "unimplemented",
	"internal", "unavailable", "dataloss", "unauthenticated",
}

// maxGRPCCode is the largest gRPC status code (UNAUTHENTICATED).
const maxGRPCCode = len(grpcCodeNames) - 1

// grpcServerFault marks the gRPC codes that fail a server span: the
// OpenTelemetry gRPC conventions' UNKNOWN, DEADLINE_EXCEEDED,
// UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS, and also
// RESOURCE_EXHAUSTED, with which a gRPC server sheds load (the failure
// cascade replays). The other non-zero codes are the caller's fault.
var grpcServerFault = [maxGRPCCode + 1]bool{2: true, 4: true, 8: true, 12: true, 13: true, 14: true, 15: true}

// csvGRPCCode reads a gRPC status code name in any case, with or without
// underscores and with or without a "StatusCode." (Python) or "codes."
// (Go) prefix: "UNAVAILABLE", "DeadlineExceeded", "StatusCode.INTERNAL".
// Go's spelling "Canceled" is accepted.
func csvGRPCCode(s string) (int32, bool) {
	l := strings.ToLower(s)
	for _, p := range []string{"statuscode.", "codes.", "grpc."} {
		l = strings.TrimPrefix(l, p)
	}
	l = strings.ReplaceAll(l, "_", "")
	if l == "canceled" {
		return 1, true
	}
	for i, n := range grpcCodeNames {
		if l == n {
			return int32(i), true
		}
	}
	return 0, false
}

// statusFromCode reads an HTTP or gRPC status code by its meaning. A code
// of 100 or more is HTTP and one from 0 to 16 is gRPC (the two ranges do
// not meet); any other code is unknown and ok is false.
//
// A code records an outcome, so the status is ok or error, never unset:
//
//   - HTTP 1xx, 2xx and 3xx are ok and 5xx an error. 4xx, the caller's
//     fault, fails a client span and leaves a server span (or one of
//     unknown kind) ok, as OpenTelemetry's HTTP conventions say.
//   - gRPC 0 (OK) is ok. Any other code fails a client span; a server
//     span (or one of unknown kind) fails on the codes of grpcServerFault
//     and is ok on the caller's faults (CANCELLED, INVALID_ARGUMENT,
//     NOT_FOUND, ...).
func statusFromCode(kind cascade.SpanKind, code int32) (st cascade.Status, ok bool) {
	switch {
	case code >= 100 && code < 400:
		return cascade.StatusOK, true
	case code >= 400 && code < 500:
		if kind == cascade.KindClient {
			return cascade.StatusError, true
		}
		return cascade.StatusOK, true
	case code >= 500 && code < 600:
		return cascade.StatusError, true
	case code == 0:
		return cascade.StatusOK, true
	case code > 0 && code <= int32(maxGRPCCode):
		if kind == cascade.KindClient || grpcServerFault[code] {
			return cascade.StatusError, true
		}
		return cascade.StatusOK, true
	}
	return cascade.StatusUnset, false
}

// csvStatusCode reads a status code cell: an integer, or a gRPC code name
// (read as its number).
func csvStatusCode(s string) (int32, bool) {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return int32(n), true
	}
	return csvGRPCCode(s)
}

// csvSuccessColumn reports whether a status column named name holds a
// success flag ("success", "is_success", "succeeded", "ok"), whose true
// means ok, rather than an error flag, whose true means error.
func csvSuccessColumn(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "success") || strings.Contains(l, "succeeded") || l == "ok" || l == "is_ok"
}

// csvStatus is what a status cell says.
type csvStatus struct {
	status  cascade.Status
	code    int32 // the HTTP or gRPC code the cell held, when hasCode
	hasCode bool
}

// csvSpanStatus reads a status cell of a span of the given kind. It reads
//
//   - ok, error and unset, in any case, with or without a STATUS_CODE_ or
//     StatusCode. prefix, and success, failed, failure, fail and err;
//   - the OTLP status numbers 0 (unset), 1 (ok) and 2 (error);
//   - true and false: an error flag (true is an error, as Jaeger's error
//     tag), or a success flag when successColumn;
//   - any other integer as an HTTP or gRPC status code, and gRPC code
//     names (UNAVAILABLE, DeadlineExceeded), by statusFromCode.
//
// ok is false when the cell is none of these.
func csvSpanStatus(s string, kind cascade.SpanKind, successColumn bool) (csvStatus, bool) {
	l := strings.ToLower(s)
	l = strings.TrimPrefix(l, "status_code_")
	l = strings.TrimPrefix(l, "statuscode.")
	switch l {
	case "unset", "0":
		return csvStatus{status: cascade.StatusUnset}, true
	case "ok", "1", "success":
		return csvStatus{status: cascade.StatusOK}, true
	case "error", "2", "err", "failed", "failure", "fail":
		return csvStatus{status: cascade.StatusError}, true
	case "true", "false":
		if (l == "true") == successColumn {
			return csvStatus{status: cascade.StatusOK}, true
		}
		return csvStatus{status: cascade.StatusError}, true
	}
	code, ok := csvStatusCode(s)
	if !ok {
		return csvStatus{status: cascade.StatusUnset}, false
	}
	st, ok := statusFromCode(kind, code)
	return csvStatus{status: st, code: code, hasCode: true}, ok
}

// Warnings of span CSV status cells.
const (
	noticeUnknownStatus = "unknown span status (left unset)"
	noticeUnknownCode   = "status code neither HTTP (100-599) nor gRPC (0-16) (kept, status left unset)"
)
