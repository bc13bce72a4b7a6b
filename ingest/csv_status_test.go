package ingest

import (
	"fmt"
	"strings"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// TestStatusFromCode checks every gRPC code and the HTTP classes on
// server, client and unknown-kind spans.
func TestStatusFromCode(t *testing.T) {
	const (
		ok  = cascade.StatusOK
		bad = cascade.StatusError
	)
	tests := []struct {
		code                  int32
		name                  string
		server, client, plain cascade.Status // plain: unknown kind
	}{
		{0, "gRPC OK", ok, ok, ok},
		{1, "gRPC CANCELLED", ok, bad, ok},
		{2, "gRPC UNKNOWN", bad, bad, bad},
		{3, "gRPC INVALID_ARGUMENT", ok, bad, ok},
		{4, "gRPC DEADLINE_EXCEEDED", bad, bad, bad},
		{5, "gRPC NOT_FOUND", ok, bad, ok},
		{6, "gRPC ALREADY_EXISTS", ok, bad, ok},
		{7, "gRPC PERMISSION_DENIED", ok, bad, ok},
		{8, "gRPC RESOURCE_EXHAUSTED", bad, bad, bad},
		{9, "gRPC FAILED_PRECONDITION", ok, bad, ok},
		{10, "gRPC ABORTED", ok, bad, ok},
		{11, "gRPC OUT_OF_RANGE", ok, bad, ok},
		{12, "gRPC UNIMPLEMENTED", bad, bad, bad},
		{13, "gRPC INTERNAL", bad, bad, bad},
		{14, "gRPC UNAVAILABLE", bad, bad, bad},
		{15, "gRPC DATA_LOSS", bad, bad, bad},
		{16, "gRPC UNAUTHENTICATED", ok, bad, ok},
		{100, "HTTP 100 Continue", ok, ok, ok},
		{200, "HTTP 200 OK", ok, ok, ok},
		{204, "HTTP 204 No Content", ok, ok, ok},
		{301, "HTTP 301 Moved Permanently", ok, ok, ok},
		{304, "HTTP 304 Not Modified", ok, ok, ok},
		{400, "HTTP 400 Bad Request", ok, bad, ok},
		{404, "HTTP 404 Not Found", ok, bad, ok},
		{429, "HTTP 429 Too Many Requests", ok, bad, ok},
		{499, "HTTP 499 Client Closed Request", ok, bad, ok},
		{500, "HTTP 500 Internal Server Error", bad, bad, bad},
		{502, "HTTP 502 Bad Gateway", bad, bad, bad},
		{503, "HTTP 503 Service Unavailable", bad, bad, bad},
		{504, "HTTP 504 Gateway Timeout", bad, bad, bad},
		{599, "HTTP 599", bad, bad, bad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []struct {
				kind cascade.SpanKind
				want cascade.Status
			}{{cascade.KindServer, tc.server}, {cascade.KindClient, tc.client}, {cascade.KindUnspecified, tc.plain}} {
				got, known := statusFromCode(k.kind, tc.code)
				require.True(t, known)
				require.Equal(t, k.want, got, "kind %q", k.kind)
			}
			if tc.code <= int32(maxGRPCCode) {
				// The code's name reads as its number, in each spelling.
				name := strings.TrimPrefix(tc.name, "gRPC ")
				for _, s := range []string{name, strings.ToLower(name), "StatusCode." + name,
					camelCase(name)} {
					got, ok := csvGRPCCode(s)
					require.True(t, ok, s)
					require.Equal(t, tc.code, got, s)
				}
			}
		})
	}
	for _, code := range []int32{-1, 17, 42, 99, 600, 999} {
		t.Run(fmt.Sprint("unknown ", code), func(t *testing.T) {
			got, known := statusFromCode(cascade.KindClient, code)
			require.False(t, known)
			require.Equal(t, cascade.StatusUnset, got)
		})
	}
}

// TestCSVSpanStatus checks the textual and numeric forms a status column
// holds.
func TestCSVSpanStatus(t *testing.T) {
	tests := []struct {
		cell    string
		kind    cascade.SpanKind
		success bool // the column is a success flag
		want    cascade.Status
		code    int32 // with hasCode when non-zero or codeSet
		codeSet bool
		unknown bool
	}{
		{cell: "OK", want: cascade.StatusOK},
		{cell: "ok", want: cascade.StatusOK},
		{cell: "STATUS_CODE_OK", want: cascade.StatusOK},
		{cell: "StatusCode.OK", want: cascade.StatusOK},
		{cell: "Error", want: cascade.StatusError},
		{cell: "STATUS_CODE_ERROR", want: cascade.StatusError},
		{cell: "STATUS_CODE_UNSET", want: cascade.StatusUnset},
		{cell: "unset", want: cascade.StatusUnset},
		{cell: "0", want: cascade.StatusUnset},
		{cell: "1", want: cascade.StatusOK},
		{cell: "2", want: cascade.StatusError},
		{cell: "failed", want: cascade.StatusError},
		{cell: "success", want: cascade.StatusOK},
		{cell: "true", want: cascade.StatusError},
		{cell: "FALSE", want: cascade.StatusOK},
		{cell: "true", success: true, want: cascade.StatusOK},
		{cell: "false", success: true, want: cascade.StatusError},
		{cell: "UNAVAILABLE", want: cascade.StatusError, code: 14},
		{cell: "StatusCode.DEADLINE_EXCEEDED", want: cascade.StatusError, code: 4},
		{cell: "NotFound", want: cascade.StatusOK, code: 5},
		{cell: "NotFound", kind: cascade.KindClient, want: cascade.StatusError, code: 5},
		{cell: "Canceled", kind: cascade.KindClient, want: cascade.StatusError, code: 1},
		{cell: "14", want: cascade.StatusError, code: 14},
		{cell: "200", want: cascade.StatusOK, code: 200},
		{cell: "404", want: cascade.StatusOK, code: 404},
		{cell: "404", kind: cascade.KindClient, want: cascade.StatusError, code: 404},
		{cell: "503", want: cascade.StatusError, code: 503},
		{cell: "42", want: cascade.StatusUnset, code: 42, unknown: true},
		{cell: "maybe", want: cascade.StatusUnset, unknown: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s/%v", tc.cell, tc.kind, tc.success), func(t *testing.T) {
			got, ok := csvSpanStatus(tc.cell, tc.kind, tc.success)
			require.Equal(t, !tc.unknown, ok)
			require.Equal(t, tc.want, got.status)
			require.Equal(t, tc.code != 0 || tc.codeSet, got.hasCode)
			require.Equal(t, tc.code, got.code)
		})
	}
}

// TestCSVSuccessColumn checks which status column names hold a success
// flag.
func TestCSVSuccessColumn(t *testing.T) {
	for name, want := range map[string]bool{
		"success": true, "is_success": true, "Succeeded": true, "ok": true,
		"status": false, "error": false, "is_error": false, "status_code": false,
	} {
		require.Equal(t, want, csvSuccessColumn(name), name)
	}
}

// camelCase spells a gRPC code name as Go's codes.Code.String does:
// DEADLINE_EXCEEDED → DeadlineExceeded.
func camelCase(name string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(name), "_") {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
