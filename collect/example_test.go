package collect_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"cascade/collect"
)

// Run receives one OTLP/HTTP JSON request, as an OpenTelemetry SDK sends
// it, and stops: the dataset holds the span.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "cascade-example")
	defer os.RemoveAll(dir)
	cfg := collect.DefaultConfig()
	cfg.Out = filepath.Join(dir, "ds")
	cfg.Receiver.Listen = "127.0.0.1:0" // any free port
	ready := make(chan net.Addr, 1)
	cfg.Receiver.Ready = func(a net.Addr) { ready <- a }

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan *collect.Result)
	go func() {
		res, err := collect.Run(ctx, cfg)
		if err != nil {
			fmt.Println(err)
		}
		done <- res
	}()

	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
	  "scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
	  "name":"GET /cart","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000250000000"}]}]}]}`
	c := &http.Client{}
	resp, err := c.Post("http://"+(<-ready).String()+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		stop()
		<-done
		return
	}
	resp.Body.Close()
	c.CloseIdleConnections()
	fmt.Println(resp.Status)

	stop() // as SIGTERM does: drain, then finalize the dataset
	res := <-done
	fmt.Println(res.Receiver.Spans, "span acknowledged;", res.Summary.Spans, "span stored;", res.Summary.Services)
	// Output:
	// 200 OK
	// 1 span acknowledged; 1 span stored; [checkout]
}
