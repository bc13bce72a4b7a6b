package graph_test

import (
	"context"
	"fmt"

	"cascade"
	"cascade/graph"
)

// ExampleBuild builds the model of one trace: a frontend that calls a
// catalog twice at once (parallelism 0: all calls together), the catalog
// querying an uninstrumented database (a virtual node), the first query
// timing out and being retried.
func ExampleBuild() {
	const ms = int64(1e6)
	t := int64(1_700_000_000) * 1e9
	spans := []cascade.Span{
		{TraceID: "t1", SpanID: "01", Service: "frontend", Operation: "GET /", Kind: cascade.KindServer, Start: t, Duration: 100 * ms},
		{TraceID: "t1", SpanID: "02", ParentSpanID: "01", Service: "frontend", Operation: "list", Kind: cascade.KindClient, Start: t + 10*ms, Duration: 60 * ms},
		{TraceID: "t1", SpanID: "03", ParentSpanID: "02", Service: "catalog", Operation: "/list", Kind: cascade.KindServer, Start: t + 11*ms, Duration: 58 * ms},
		{TraceID: "t1", SpanID: "04", ParentSpanID: "03", Service: "catalog", Operation: "SELECT", Kind: cascade.KindClient, Start: t + 12*ms, Duration: 20 * ms,
			Peer: "postgres", Status: cascade.StatusError, ErrorType: "timeout"},
		{TraceID: "t1", SpanID: "05", ParentSpanID: "03", Service: "catalog", Operation: "SELECT", Kind: cascade.KindClient, Start: t + 35*ms, Duration: 10 * ms, Peer: "postgres"},
		{TraceID: "t1", SpanID: "06", ParentSpanID: "01", Service: "frontend", Operation: "list", Kind: cascade.KindClient, Start: t + 12*ms, Duration: 30 * ms},
		{TraceID: "t1", SpanID: "07", ParentSpanID: "06", Service: "catalog", Operation: "/list", Kind: cascade.KindServer, Start: t + 13*ms, Duration: 28 * ms},
	}
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(spans), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Model
	fmt.Println("entry:", m.Entries[0].Node, m.Entries[0].Operation)
	for _, n := range m.Nodes {
		fmt.Printf("node %s: virtual %v, self time p50 %g ms\n", n.Name, n.Virtual, n.Tiers.P50)
	}
	for _, e := range m.Edges {
		fmt.Printf("edge %s → %s: fan-out %g, parallelism %d, retries %d, timeout %g ms\n",
			e.From, e.To, e.Observed.FanOutMean, e.Parallelism, e.Observed.Retries, e.TimeoutMS)
	}
	// Output:
	// entry: frontend GET /
	// node catalog: virtual false, self time p50 26.5 ms
	// node frontend: virtual false, self time p50 40 ms
	// node postgres: virtual true, self time p50 15 ms
	// edge catalog → postgres: fan-out 1, parallelism 1, retries 1, timeout 20 ms
	// edge frontend → catalog: fan-out 2, parallelism 0, retries 0, timeout 0 ms
}

// ExampleBuildAggregates builds a model from service-graph and span-metrics
// series read over ten seconds: 20 requests from outside ("user") to a
// frontend, which made 60 calls to a catalog, 3 of them failed.
func ExampleBuildAggregates() {
	t0 := int64(1_700_000_000) * 1e9
	point := func(metric, service, labels string, at, v float64) cascade.Sample {
		return cascade.Sample{Time: t0 + int64(at*1e9), Service: service, Metric: metric, Labels: labels, Value: v}
	}
	var samples []cascade.Sample
	for _, at := range []float64{0, 10} {
		f := at / 10 // the counters rise from 0 to their totals
		samples = append(samples,
			point("traces_service_graph_request_total", "", `client="user",connection_type="virtual_node",server="frontend"`, at, 20*f),
			point("traces_service_graph_request_total", "", `client="frontend",failed="false",server="catalog"`, at, 57*f),
			point("traces_service_graph_request_total", "", `client="frontend",failed="true",server="catalog"`, at, 3*f),
			point("traces_service_graph_request_failed_total", "", `client="frontend",failed="true",server="catalog"`, at, 3*f),
			point("traces_span_metrics_calls_total", "frontend", `span_kind="SPAN_KIND_SERVER",span_name="GET /",status_code="STATUS_CODE_UNSET"`, at, 20*f),
			point("traces_span_metrics_calls_total", "catalog", `span_kind="SPAN_KIND_SERVER",span_name="/list",status_code="STATUS_CODE_UNSET"`, at, 57*f),
			point("traces_span_metrics_calls_total", "catalog", `span_kind="SPAN_KIND_SERVER",span_name="/list",status_code="STATUS_CODE_ERROR"`, at, 3*f),
		)
	}
	res, err := graph.BuildAggregates(context.Background(), graph.DefaultConfig(), graph.Samples(samples))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Model
	fmt.Printf("from %s; entry %s %s at %g/s\n", m.Source.From, m.Entries[0].Node, m.Entries[0].Operation, m.Entries[0].RatePerSec)
	for _, e := range m.Edges {
		fmt.Printf("edge %s → %s: %d calls, %g failed, fan-out %g (%s), retry %v (%s)\n",
			e.From, e.To, e.Observed.Calls, e.Observed.ErrorRate, e.FanOut.MeanValue(), e.Provenance["fan_out"], e.Retry, e.Provenance["retry"])
	}
	// Output:
	// from aggregates; entry frontend GET / at 2/s
	// edge frontend → catalog: 60 calls, 0.05 failed, fan-out 3 (inferred), retry <nil> (default)
}
