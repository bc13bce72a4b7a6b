package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
)

// Run ingests the HotROD sample trace (Jaeger api_v3 JSON) into a dataset.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "cascade-example")
	defer os.RemoveAll(dir)
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{"../testdata/hotrod-baseline/sample-trace-otlp.json"}
	cfg.Out = filepath.Join(dir, "dataset")
	sum, err := ingest.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Inputs[0].Format, sum.Spans, "spans", sum.Traces, "trace", sum.ErrorSpans, "errors")
	fmt.Println(sum.Services)
	// Output:
	// otlp-json 40 spans 1 trace 3 errors
	// [customer driver frontend mysql redis-manual route]
}

// Run ingests a slice of Nezha's TrainTicket logs: the service from the
// pod name, the severity and trace ids read from each line, and every
// body filed under a Drain template.
func ExampleRun_logs() {
	dir, _ := os.MkdirTemp("", "cascade-example")
	defer os.RemoveAll(dir)
	cfg := ingest.DefaultConfig()
	cfg.Logs = []string{"../testdata/nezha-trainticket/log/09_26_log_head300.csv"}
	cfg.Out = filepath.Join(dir, "dataset")
	sum, err := ingest.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Inputs[0].Format, sum.Logs, "records,", sum.ErrorLogs, "errors,", sum.LogTemplates, "templates")
	err = dataset.ReadLogs(cfg.Out, func(r *cascade.LogRecord) error {
		if r.Severity == "ERROR" {
			fmt.Println(r.Service, r.TraceID, r.SpanID)
			fmt.Println(r.Template)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// logs-csv 300 records, 2 errors, 53 templates
	// ts-preserve-other-service 11b9d6451b2ff23e695b77253b0a7fd3 d285142ccc327a3b
	// o.a.c.c.C.[.[.[.[dispatcherServlet]#175 Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception [Request processing failed; nested exception is java.lang.IllegalStateException: No instances available for ts-travel2-service] with root cause
	// ts-preserve-other-service 9f76f4488525c6e700baa9e9ea7fe56d 222464ae9af98058
	// o.a.c.c.C.[.[.[.[dispatcherServlet]#175 Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception [Request processing failed; nested exception is java.lang.IllegalStateException: No instances available for ts-travel2-service] with root cause
}
