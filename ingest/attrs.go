package ingest

import (
	"net/netip"
	"strconv"

	"cascade"
)

// attrGetter looks an attribute up by key and returns its value as text.
// Formats hold attributes differently (pdata maps, Jaeger tag lists, Zipkin
// tag objects); each decoder adapts its own to this.
type attrGetter func(key string) (string, bool)

// Attribute keys, from the OpenTelemetry semantic conventions and the older
// names that instrumentations still emit.
var (
	instanceKeys   = []string{"service.instance.id", "host.name", "k8s.pod.name", "hostname", "ip"}
	peerKeys       = []string{"peer.service", "server.address", "net.peer.name", "rpc.service"}
	peerPortKeys   = []string{"server.port", "net.peer.port"}
	dbSystemKeys   = []string{"db.system.name", "db.system"}
	dbNameKeys     = []string{"db.namespace", "db.name"}
	messagingKeys  = []string{"messaging.destination.name", "messaging.destination"}
	statusCodeKeys = []string{"http.response.status_code", "http.status_code", "rpc.grpc.status_code"}
	errorTypeKeys  = []string{"error.type", "exception.type"}
	resendKeys     = []string{"http.request.resend_count", "retry.count", "retry.attempt"}
)

// first returns the value of the first key present.
func first(get attrGetter, keys []string) (string, bool) {
	for _, k := range keys {
		if v, ok := get(k); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// instanceFrom picks the instance name from resource (or process) attributes.
func instanceFrom(get attrGetter) string {
	v, _ := first(get, instanceKeys)
	return v
}

// applySpanAttrs fills the fields of s that come from span attributes:
// Peer, StatusCode, ErrorType (when s failed), ResendCount and the
// messaging columns (applyMessaging, which needs s.Kind and s.Operation
// set). It leaves
// fields it finds no attribute for as they are, so a decoder can set them
// from the format's own fields first or after.
func applySpanAttrs(s *cascade.Span, get attrGetter) {
	if s.Peer == "" {
		s.Peer = peerFrom(get)
	}
	if s.StatusCode == 0 {
		if v, ok := first(get, statusCodeKeys); ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				s.StatusCode = int32(n)
			}
		}
	}
	if s.ErrorType == "" {
		if v, ok := first(get, errorTypeKeys); ok {
			s.ErrorType = v
		}
	}
	if s.ResendCount == 0 {
		if v, ok := first(get, resendKeys); ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
				s.ResendCount = int32(n)
			}
		}
	}
	applyMessaging(s, get)
}

// peerFrom names the callee as the caller sees it: peer.service, then the
// server address, then the database (system, and "/name" when recorded),
// then the messaging destination. An address that is an IP alone (no
// name) gets the port when one is recorded (server.port, net.peer.port),
// "127.0.0.1:6379", as Zipkin's remote endpoint gives it: two
// uninstrumented peers on one host are told apart by their ports.
func peerFrom(get attrGetter) string {
	if v, ok := first(get, peerKeys); ok {
		if ip, err := netip.ParseAddr(v); err == nil {
			if p, ok := first(get, peerPortKeys); ok {
				if port, err := strconv.ParseUint(p, 10, 16); err == nil {
					return netip.AddrPortFrom(ip, uint16(port)).String()
				}
			}
		}
		return v
	}
	if sys, ok := first(get, dbSystemKeys); ok {
		if name, ok := first(get, dbNameKeys); ok {
			return sys + "/" + name
		}
		return sys
	}
	if v, ok := first(get, messagingKeys); ok {
		return v
	}
	return ""
}

// statusFromHTTP infers an error status from an HTTP or gRPC code for
// formats without a span status (Zipkin, old Jaeger clients): server
// errors (5xx) fail a server span, and any 4xx/5xx fails a client span,
// as the OpenTelemetry HTTP conventions say.
func statusFromHTTP(kind cascade.SpanKind, code int32) cascade.Status {
	switch {
	case code >= 500 && code < 600:
		return cascade.StatusError
	case code >= 400 && code < 500 && kind == cascade.KindClient:
		return cascade.StatusError
	}
	return cascade.StatusUnset
}
