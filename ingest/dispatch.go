package ingest

import "cascade"

// errorDispatchOps are the span names web frameworks give the handler
// they forward a failed request to: Spring Boot's BasicErrorController
// (as the OpenTelemetry Java agent and SkyWalking name a controller span,
// Class.method), which serves /error when a handler threw or set a 4xx
// or 5xx status.
var errorDispatchOps = map[string]bool{
	"BasicErrorController.error":     true,
	"BasicErrorController.errorHtml": true,
}

// ErrorDispatch reports whether op names a web framework's error handler:
// a span of that name under a request says the request answered with an
// error, whatever status its spans recorded.
func ErrorDispatch(op string) bool { return errorDispatchOps[op] }

// markDispatched marks failed the spans an error dispatch shows failed,
// where they recorded no status: from the dispatch's parent up through
// its own service (the request that answered with the error), and the
// caller's span above it (which received the error). Formats that record
// no status at all (Nezha's CSV) have no other evidence of a failed
// call; instrumentations that do record it have marked these spans
// already. It returns how many spans it marked; rows are the deduplicated
// spans of one trace, index their positions by span id.
func markDispatched(rows []cascade.Span, index map[string]int) int {
	marked := 0
	for i := range rows {
		if !ErrorDispatch(rows[i].Operation) {
			continue
		}
		svc := rows[i].Service
		j := i
		for steps := 0; steps < len(rows); steps++ {
			p, ok := index[rows[j].ParentSpanID]
			if !ok || rows[j].IsRoot() || p == j {
				break
			}
			j = p
			s := &rows[j]
			if s.Status == cascade.StatusUnset {
				s.Status = cascade.StatusError
				if s.ErrorType == "" {
					s.ErrorType = "error dispatch"
				}
				marked++
			}
			if s.Service != svc {
				break // the caller's span: it received the error
			}
		}
	}
	return marked
}
