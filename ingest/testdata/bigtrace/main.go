// Command bigtrace writes one trace of many spans as one OTLP JSON
// TracesData document, as an SDK's file exporter would write a huge trace
// (a batch job, a fan-out over a million items), to measure what ingest
// holds for a single trace:
//
//	go run ./ingest/testdata/bigtrace -spans 1000000 -services 20 -out /tmp/big.json
//
// Span i calls spans 8i+1 .. 8i+8 (a tree eight wide, seven deep for a
// million spans); its service is i mod -services, and each service's spans
// are one resourceSpans element. Every span has an HTTP method, route,
// status code and a peer, and one in a hundred fails. The output depends
// only on the flags.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
)

func main() {
	spans := flag.Int("spans", 1_000_000, "spans in the trace")
	services := flag.Int("services", 20, "services (one resourceSpans element each)")
	out := flag.String("out", "", "file to write (required)")
	flag.Parse()
	if *out == "" || *spans < 1 || *services < 1 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const (
		trace = "5b8efff798038103d269b633813fc60c"
		t0    = int64(1_767_225_600_000_000_000) // 2026-01-01T00:00:00Z
	)
	w.WriteString(`{"resourceSpans":[`)
	for svc := range *services {
		if svc > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc-%02d"}},{"key":"host.name","value":{"stringValue":"host-%02d"}}]},"scopeSpans":[{"scope":{"name":"bigtrace"},"spans":[`, svc, svc)
		first := true
		for i := svc; i < *spans; i += *services {
			if !first {
				w.WriteByte(',')
			}
			first = false
			// A child starts 1 µs per level after its parent and lasts
			// less than it.
			depth := 0
			for p := i; p > 0; p = (p - 1) / 8 {
				depth++
			}
			start := t0 + int64(depth)*1_000 + int64(i%8)*100
			end := start + int64(10_000_000>>depth) + 1_000
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf(`"parentSpanId":"%016x",`, (i-1)/8+1)
			}
			kind, code, status := 2, 200, ""
			if i%2 == 1 {
				kind = 3
			}
			if i%100 == 99 {
				code, status = 503, `,"status":{"code":2,"message":"unavailable"}`
			}
			fmt.Fprintf(w, `{"traceId":"%s","spanId":"%016x",%s"name":"GET /items/{id}","kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"http.request.method","value":{"stringValue":"GET"}},{"key":"http.route","value":{"stringValue":"/items/{id}"}},{"key":"http.response.status_code","value":{"intValue":"%d"}},{"key":"peer.service","value":{"stringValue":"svc-%02d"}}]%s}`,
				trace, i+1, parent, kind, start, end, code, (i*8+1)%*services, status)
		}
		w.WriteString(`]}]}`)
	}
	w.WriteString("]}\n")
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
