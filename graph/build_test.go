package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// t0 is the start of the hand-built traces, Unix ns.
const t0 = int64(1_700_000_000_000_000_000)

// span builds a span of trace tr starting at startMS after t0.
func span(tr, id, parent, svc, op string, kind cascade.SpanKind, startMS, durMS float64, opts ...func(*cascade.Span)) cascade.Span {
	s := cascade.Span{
		TraceID: tr, SpanID: id, ParentSpanID: parent, Service: svc, Operation: op, Kind: kind,
		Start: t0 + int64(startMS*1e6), Duration: int64(durMS * 1e6), Status: cascade.StatusUnset,
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func failed(errType string) func(*cascade.Span) {
	return func(s *cascade.Span) { s.Status, s.ErrorType = cascade.StatusError, errType }
}

func peer(p string) func(*cascade.Span) { return func(s *cascade.Span) { s.Peer = p } }

func code(c int32) func(*cascade.Span) { return func(s *cascade.Span) { s.StatusCode = c } }

func resend(n int32) func(*cascade.Span) { return func(s *cascade.Span) { s.ResendCount = n } }

func instance(i string) func(*cascade.Span) { return func(s *cascade.Span) { s.Instance = i } }

const (
	server   = cascade.KindServer
	client   = cascade.KindClient
	producer = cascade.KindProducer
	consumer = cascade.KindConsumer
	internal = cascade.KindInternal
	none     = cascade.KindUnspecified
)

// callsTo returns, for trace tr, a root server span of svc "a" lasting
// 100 ms and one client span per interval calling service "b" with
// operation op, each with its server span; opts apply to the client spans.
func callsTo(tr string, ivs [][2]float64, opts ...[]func(*cascade.Span)) []cascade.Span {
	out := []cascade.Span{span(tr, "1", "", "a", "/a", server, 0, 100)}
	for i, iv := range ivs {
		id := fmt.Sprintf("%x", 16+2*i)
		var o []func(*cascade.Span)
		if i < len(opts) {
			o = opts[i]
		}
		out = append(out,
			span(tr, id, "1", "a", "get", client, iv[0], iv[1]-iv[0], o...),
			span(tr, fmt.Sprintf("%x", 17+2*i), id, "b", "/get", server, iv[0]+0.5, iv[1]-iv[0]-1))
	}
	return out
}

func buildSpans(t *testing.T, cfg graph.Config, spans []cascade.Span) *graph.Result {
	t.Helper()
	res, err := graph.Build(context.Background(), cfg, graph.Spans(spans), nil)
	require.NoError(t, err)
	data, err := cascade.EncodeModel(res.Model)
	require.NoError(t, err)
	_, err = cascade.DecodeModel(data)
	require.NoError(t, err, "the model must validate")
	return res
}

func concat(parts ...[]cascade.Span) []cascade.Span {
	var out []cascade.Span
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name  string
		level graph.Level
		spans []cascade.Span
		check func(t *testing.T, res *graph.Result)
	}{{
		name: "client span times the call; uninstrumented peer is a virtual node",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100),
			span("t1", "2", "1", "a", "call b", client, 10, 50),
			span("t1", "3", "2", "b", "/b", server, 12, 46),
			span("t1", "4", "3", "b", "SELECT", client, 20, 20, peer("postgres")),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			ab := edge(t, m, "a", "b")
			require.Equal(t, 50.0, ab.Observed.LatencyP50MS)
			require.Equal(t, 50.0, m.Node("a").Tiers.P50) // 100 − 50
			require.Equal(t, 26.0, m.Node("b").Tiers.P50) // 46 − 20
			db := m.Node("postgres")
			require.NotNil(t, db)
			require.True(t, db.Virtual)
			require.Equal(t, int64(1), db.Observed.Requests)
			require.Equal(t, 20.0, edge(t, m, "b", "postgres").Observed.LatencyP50MS)
			require.Equal(t, []string{"a", "b", "postgres"}, res.Order)
			require.Equal(t, []int{0, 1, 2}, []int{res.Nodes[0].Depth, res.Nodes[1].Depth, res.Nodes[2].Depth})
		},
	}, {
		name: "a peer named by its address alone is an uninstrumented peer, not a service",
		spans: []cascade.Span{
			span("t1", "1", "", "shop", "/checkout", server, 0, 100),
			span("t1", "2", "1", "shop", "GET", client, 10, 5, peer("127.0.0.1:6379")),
			span("t1", "3", "1", "shop", "SET", client, 20, 5, peer("127.0.0.1:6379")),
			span("t1", "4", "1", "shop", "GET", client, 30, 5, peer("127.0.0.1")),
			span("t1", "5", "1", "shop", "GET", client, 40, 5, peer("[::1]:9090")),
			span("t1", "6", "1", "shop", "GET", client, 50, 5, peer("localhost:8081")),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			var names []string
			for _, n := range m.Nodes {
				names = append(names, n.Name)
			}
			require.Equal(t, []string{"localhost:8081", "peer:127.0.0.1", "peer:127.0.0.1:6379", "peer:[::1]:9090", "shop"}, names)
			redis := m.Node("peer:127.0.0.1:6379")
			require.True(t, redis.Virtual)
			require.Equal(t, int64(2), redis.Observed.Requests)
			require.Equal(t, "an uninstrumented peer at 127.0.0.1:6379", graph.Title(redis.Name))
			require.Equal(t, "an uninstrumented peer at [::1]:9090", graph.Title("peer:[::1]:9090"))
			require.Equal(t, "localhost:8081", graph.Title("localhost:8081"), "a host name is a name")
		},
	}, {
		name:  "parallel calls count once in exclusive time",
		spans: callsTo("t1", [][2]float64{{10, 50}, {20, 60}, {70, 80}}),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Equal(t, 40.0, m.Node("a").Tiers.P50) // 100 − |[10,60] ∪ [70,80]|
			ab := edge(t, m, "a", "b")
			require.Equal(t, 2.0, ab.Observed.ObservedParallel)
			require.Equal(t, 2, ab.Parallelism)
			require.True(t, ab.Observed.Overlapping)
			require.Equal(t, cascade.Const(3), ab.FanOut)
			require.Zero(t, ab.Observed.Retries)
		},
	}, {
		name:  "calls all at once have parallelism 0",
		spans: callsTo("t1", [][2]float64{{10, 50}, {11, 50}, {12, 50}}),
		check: func(t *testing.T, res *graph.Result) {
			require.Equal(t, 0, edge(t, res.Model, "a", "b").Parallelism)
		},
	}, {
		name: "a client span of another service is the callee reporting itself",
		spans: []cascade.Span{
			span("t1", "1", "", "customer", "/customer", server, 0, 100),
			span("t1", "2", "1", "mysql", "SQL SELECT", client, 1, 98, peer("mysql")),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.False(t, m.Node("mysql").Virtual)
			require.Equal(t, 98.0, m.Node("mysql").Tiers.P50)
			require.Equal(t, 2.0, m.Node("customer").Tiers.P50)
			require.Len(t, m.Edges, 1)
		},
	}, {
		name: "kindless spans give edges where the service changes",
		spans: []cascade.Span{
			span("t1", "1", "", "frontend", "Recv", none, 0, 100),
			span("t1", "2", "1", "frontend", "Cart/Get", none, 10, 30),
			span("t1", "3", "2", "cart", "Cart/Get", none, 12, 26),
			span("t1", "4", "3", "redis", "HGET", none, 15, 10),
			span("t1", "5", "1", "frontend", "render", none, 50, 20),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			fc := edge(t, m, "frontend", "cart")
			require.Equal(t, 30.0, fc.Observed.LatencyP50MS) // timed by the caller's span
			require.Equal(t, 10.0, edge(t, m, "cart", "redis").Observed.LatencyP50MS)
			require.Equal(t, 70.0, m.Node("frontend").Tiers.P50) // render is own work
			require.Equal(t, 16.0, m.Node("cart").Tiers.P50)
			require.False(t, m.Node("redis").Virtual)
		},
	}, {
		name: "producer to consumer is asynchronous and not waited for",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 10),
			span("t1", "2", "1", "a", "publish", producer, 2, 1, peer("orders")),
			span("t1", "3", "2", "b", "consume", consumer, 30, 5),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			ab := edge(t, m, "a", "b")
			require.True(t, ab.Async)
			require.Equal(t, 10.0, m.Node("a").Tiers.P50)
			require.Nil(t, m.Node("orders"), "the consumer was found: no virtual queue node")
		},
	}, {
		name: "self-calls are kept and marked",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100),
			span("t1", "2", "1", "a", "call", client, 10, 20),
			span("t1", "3", "2", "a", "/inner", server, 11, 18),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			aa := edge(t, m, "a", "a")
			require.True(t, aa.Observed.SelfCall)
			require.True(t, m.Node("a").Observed.SelfCall)
			require.Equal(t, int64(2), m.Node("a").Observed.Requests)
			require.Empty(t, res.Cycles)
		},
	}, {
		name: "a repeat after a failure is a retry; a repeat after a success is fan-out",
		spans: callsTo("t1", [][2]float64{{10, 20}, {25, 30}, {31, 40}},
			[]func(*cascade.Span){failed("io error")}),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			o := ab.Observed
			require.Equal(t, int64(3), o.Calls)
			require.Equal(t, int64(1), o.Retries)
			require.Equal(t, 1.5, o.AttemptsPerCall)
			require.Equal(t, cascade.Const(2), ab.FanOut)
			// The retry succeeded: the limit is unknown, at least the 2
			// attempts seen, replayed at the default.
			require.Equal(t, &cascade.Retry{Reactivation: 1, MaxAttempts: graph.DefaultMaxAttempts,
				Backoff: cascade.Backoff{Kind: cascade.BackoffFixed, BaseMS: 5}}, ab.Retry)
			require.Equal(t, 2, o.MaxAttemptsSeen)
			require.Equal(t, cascade.RetryLimitUnknown, o.RetryLimit)
			require.Equal(t, cascade.Default, ab.Provenance["retry.max_attempts"])
			require.Equal(t, []float64{5}, o.BackoffGapsMS)
			require.Equal(t, cascade.Inferred, ab.Provenance["retry"])
			require.Equal(t, 1, ab.Parallelism)
		},
	}, {
		name:  "repeats without failures are fan-out",
		spans: callsTo("t1", [][2]float64{{10, 20}, {21, 30}, {31, 40}}),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Zero(t, ab.Observed.Retries)
			require.Nil(t, ab.Retry)
			require.Equal(t, cascade.Const(3), ab.FanOut)
			require.Equal(t, cascade.Default, ab.Provenance["retry"])
		},
	}, {
		name: "a failure not repeated is not retried",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 20}}, []func(*cascade.Span){failed("boom")}),
			callsTo("t2", [][2]float64{{10, 20}})),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Nil(t, ab.Retry)
			require.Equal(t, cascade.Observed, ab.Provenance["retry"])
			require.Equal(t, 0.5, ab.Observed.ErrorRate)
			// The caller's request did not fail: a fallback.
			require.Equal(t, 0.0, ab.Propagation)
			require.Equal(t, cascade.Observed, ab.Provenance["propagation"])
		},
	}, {
		name: "resend counts decide retries where present",
		spans: callsTo("t1", [][2]float64{{10, 20}, {22, 30}, {31, 40}},
			nil, []func(*cascade.Span){resend(1)}, []func(*cascade.Span){resend(2)}),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Equal(t, int64(2), ab.Observed.Retries)
			require.Equal(t, 3, ab.Retry.MaxAttempts)
			require.Equal(t, 3.0, ab.Observed.AttemptsPerCall)
			require.Equal(t, cascade.Observed, ab.Provenance["retry"])
			// No attempt failed: 3 is the most seen, not a proven limit.
			require.Equal(t, cascade.RetryLimitUnknown, ab.Observed.RetryLimit)
			require.Equal(t, cascade.ObservedPeak, ab.Provenance["retry.max_attempts"])
		},
	}, {
		name: "a chain that fails at its last attempt shows the limit",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 20}, {21, 30}},
				[]func(*cascade.Span){failed("boom")}, []func(*cascade.Span){failed("boom")}),
			callsTo("t2", [][2]float64{{10, 20}, {21, 30}},
				[]func(*cascade.Span){failed("boom")})),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Equal(t, 2, ab.Retry.MaxAttempts)
			require.Equal(t, 2, ab.Observed.MaxAttemptsSeen)
			require.Equal(t, cascade.RetryLimitObserved, ab.Observed.RetryLimit)
			require.Equal(t, cascade.Inferred, ab.Provenance["retry.max_attempts"])
		},
	}, {
		name: "timeouts from the caller's own error type and gRPC status",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 40}}, []func(*cascade.Span){failed("context deadline exceeded")}),
			callsTo("t2", [][2]float64{{10, 35}}, []func(*cascade.Span){failed("upstream"), code(4)}),
			callsTo("t3", [][2]float64{{10, 15}}, []func(*cascade.Span){failed("refused")}),
			callsTo("t4", [][2]float64{{10, 30}})),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Equal(t, int64(2), ab.Observed.Timeouts)
			// The median of the timed-out attempts: where they were cut.
			require.Equal(t, 27.5, ab.TimeoutMS)
			require.Equal(t, graph.EvidenceErrType, ab.Observed.TimeoutEvidence)
			require.Equal(t, cascade.Inferred, ab.Provenance["timeout_ms"])
		},
	}, {
		name: "no caller timeout from what the callee answered or its own span",
		spans: concat(
			// The callee failed and its caller's client span repeats its
			// message, as a gRPC status passes it up (HotROD's "redis
			// timeout").
			[]cascade.Span{span("t2", "1", "", "a", "/a", server, 0, 100),
				span("t2", "2", "1", "a", "get", client, 10, 30, failed("redis timeout")),
				span("t2", "3", "2", "b", "/get", server, 10.5, 29, failed("redis timeout"))},
			// HTTP 504 and 408 are answers from the server or a gateway.
			callsTo("t3", [][2]float64{{10, 40}}, []func(*cascade.Span){failed("upstream"), code(504)}),
			callsTo("t4", [][2]float64{{10, 40}}, []func(*cascade.Span){failed("slow"), code(408)}),
			// A callee that reports its own work as client spans: its
			// "timeout" is its own.
			[]cascade.Span{span("t5", "1", "", "a", "/a", server, 0, 100),
				span("t5", "2", "1", "c", "GetDriver", client, 10, 30, failed("redis timeout"))}),
		check: func(t *testing.T, res *graph.Result) {
			for _, to := range []string{"b", "c"} {
				e := edge(t, res.Model, "a", to)
				require.Zero(t, e.TimeoutMS, to)
				require.Zero(t, e.Observed.Timeouts, to)
				require.Equal(t, graph.EvidenceNone, e.Observed.TimeoutEvidence, to)
				require.Equal(t, cascade.Default, e.Provenance["timeout_ms"], to)
			}
		},
	}, {
		name: "a deadline shorter than the successful calls is none",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 20}}, []func(*cascade.Span){failed("context deadline exceeded")}),
			callsTo("t2", [][2]float64{{10, 40}}),
			callsTo("t3", [][2]float64{{10, 45}})),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Zero(t, ab.TimeoutMS)
			require.Equal(t, graph.EvidenceNone, ab.Observed.TimeoutEvidence)
		},
	}, {
		name:  "no failures: default timeout and propagation",
		spans: callsTo("t1", [][2]float64{{10, 40}}),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Zero(t, ab.TimeoutMS)
			require.Equal(t, cascade.Default, ab.Provenance["timeout_ms"])
			require.Equal(t, 1.0, ab.Propagation)
			require.Equal(t, cascade.Default, ab.Provenance["propagation"])
		},
	}, {
		name: "propagation is P(caller failed | call failed after retries)",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 20}}, []func(*cascade.Span){failed("x")}),
			[]cascade.Span{span("t2", "1", "", "a", "/a", server, 0, 100, failed("x")),
				span("t2", "2", "1", "a", "get", client, 10, 10, failed("x")),
				span("t2", "3", "2", "b", "/get", server, 10.5, 9, failed("x"))}),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			require.Equal(t, 0.5, ab.Propagation)
			require.Equal(t, 0.5, res.Model.Node("a").Observed.ErrorRate)
			// a's failure in t2 is its call's (propagation), not its
			// own: the overload base counts own failures only.
			require.Zero(t, res.Model.Node("a").Overload.Base)
			require.Equal(t, res.Model.Node("b").Observed.ErrorRate, res.Model.Node("b").Overload.Base, "b calls nothing: all its failures are its own")
		},
	}, {
		name: "fan-out counts requests that made no call",
		spans: concat(
			callsTo("t1", [][2]float64{{10, 20}, {30, 40}}),
			callsTo("t2", [][2]float64{{10, 20}, {30, 40}}),
			callsTo("t3", nil),
			callsTo("t4", nil)),
		check: func(t *testing.T, res *graph.Result) {
			ab := edge(t, res.Model, "a", "b")
			o := ab.Observed
			require.Equal(t, int64(2), o.ParentRequests)
			require.Equal(t, []int64{2, 0, 2}, o.FanOutHistogram)
			require.Equal(t, 2.0, o.FanOutMean)
			require.Equal(t, cascade.DistEmpirical, ab.FanOut.Kind)
			require.Len(t, ab.FanOut.Points, 100)
			require.Equal(t, 1.0, ab.FanOut.MeanValue())
		},
	}, {
		name: "stages order a caller's edges",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100),
			span("t1", "2", "1", "b", "/b", server, 0, 10),
			span("t1", "3", "1", "c", "/c", server, 20, 10),
			span("t1", "4", "1", "d", "/d", server, 25, 10),
			span("t1", "5", "1", "e", "/e", server, 40, 10),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Equal(t, 0, edge(t, m, "a", "b").Stage)
			require.Equal(t, 1, edge(t, m, "a", "c").Stage)
			require.Equal(t, 1, edge(t, m, "a", "d").Stage)
			require.Equal(t, 2, edge(t, m, "a", "e").Stage)
		},
	}, {
		// A slow failure of b ends a's request before it calls c: b's
		// median end (over every request) passes c's median start (over
		// the requests that went on), yet c waits for b in every request
		// that called both (HotROD's frontend: route after driver).
		name: "a stage waits for the one before it in the requests that made both",
		spans: concat(
			seqCalls("t1", false), seqCalls("t2", false), seqCalls("t3", false),
			seqCalls("t4", true), seqCalls("t5", true), seqCalls("t6", true), seqCalls("t7", true)),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Equal(t, 0, edge(t, m, "a", "b").Stage)
			require.Equal(t, 1, edge(t, m, "a", "c").Stage)
		},
	}, {
		name:  "operation level names service:operation",
		level: graph.LevelOperation,
		spans: concat(callsTo("t1", [][2]float64{{10, 20}}), []cascade.Span{
			span("t2", "1", "", "a", "/other", server, 0, 10),
		}),
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			edge(t, m, "a:/a", "b:/get")
			require.Len(t, m.Entries, 2)
			require.Equal(t, "a:/a", m.Entries[0].Node)
			require.Equal(t, "/a", m.Entries[0].Operation)
			require.Equal(t, 0.5, m.Entries[0].Share)
			require.Equal(t, "operation", m.Source.Level)
		},
	}, {
		name: "entries keep the dominant root operation",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/x", server, 0, 10),
			span("t2", "1", "", "a", "/x", server, 100, 10),
			span("t3", "1", "", "a", "/metrics", server, 200, 10),
			span("t4", "1", "", "b", "/y", server, 300, 10),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Len(t, m.Entries, 2)
			require.Equal(t, cascade.Entry{Node: "a", Operation: "/x", RatePerSec: 9.677419, Share: 0.75}, m.Entries[0])
			require.Equal(t, "b", m.Entries[1].Node)
		},
	}, {
		name: "orphans and client spans without a callee are counted",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100),
			span("t1", "2", "1", "a", "call ?", client, 10, 10),
			span("t1", "3", "99", "b", "/b", server, 50, 10),
		},
		check: func(t *testing.T, res *graph.Result) {
			require.Equal(t, int64(1), res.Stats.Orphans)
			require.Equal(t, int64(1), res.Stats.Unresolved)
			require.Empty(t, res.Model.Edges)
			require.Len(t, res.Model.Entries, 1)
			require.Len(t, res.Warnings, 2)
			require.Equal(t, -1, res.Nodes[1].Depth)
		},
	}, {
		name: "cycles are strongly connected components",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100),
			span("t1", "2", "1", "a", "call", client, 10, 80),
			span("t1", "3", "2", "b", "/b", server, 11, 78),
			span("t1", "4", "3", "b", "call", client, 20, 50),
			span("t1", "5", "4", "a", "/a2", server, 21, 48),
			span("t1", "6", "5", "a", "call", client, 30, 20),
			span("t1", "7", "6", "c", "/c", server, 31, 18),
		},
		check: func(t *testing.T, res *graph.Result) {
			m := res.Model
			require.Equal(t, [][]string{{"a", "b"}}, res.Cycles)
			require.Equal(t, m.Node("a").Observed.Component, m.Node("b").Observed.Component)
			require.NotEqual(t, m.Node("a").Observed.Component, m.Node("c").Observed.Component)
			require.Equal(t, []string{"a", "b", "c"}, res.Order)
		},
	}, {
		name: "replicas count instances; a peak in flight proves no capacity",
		spans: []cascade.Span{
			span("t1", "1", "", "a", "/a", server, 0, 100, instance("a-1")),
			span("t2", "1", "", "a", "/a", server, 0, 100, instance("a-2")),
			span("t3", "1", "", "a", "/a", server, 0, 100, instance("a-2")),
			span("t4", "1", "", "a", "/a", server, 0, 100, instance("a-1")),
		},
		check: func(t *testing.T, res *graph.Result) {
			a := res.Model.Node("a")
			require.Equal(t, 2, a.Replicas)
			require.Equal(t, 4, a.Observed.PeakInFlight)
			require.Equal(t, 0, a.Concurrency)
			require.Equal(t, graph.CapacityPeak, a.Observed.CapacitySource)
			require.False(t, a.Observed.CapacityProven)
			require.Equal(t, cascade.ObservedPeak, a.Provenance["concurrency"])
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := graph.DefaultConfig()
			if tc.level != "" {
				cfg.Level = tc.level
			}
			tc.check(t, buildSpans(t, cfg, tc.spans))
		})
	}
}

func TestBuildNoSpans(t *testing.T) {
	_, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(nil), nil)
	require.ErrorIs(t, err, graph.ErrNoSpans)
}

func TestBuildCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := graph.Build(ctx, graph.DefaultConfig(), graph.Spans(callsTo("t1", nil)), nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*graph.Config)
		want string
	}{
		{"defaults", func(*graph.Config) {}, ""},
		{"zero means default", func(c *graph.Config) { *c = graph.Config{} }, ""},
		{"level", func(c *graph.Config) { c.Level = "pod" }, `level: level "pod": want service or operation`},
		{"negative window", func(c *graph.Config) { c.Window = -time.Second }, "window: -1s is negative"},
		{"window below resolution", func(c *graph.Config) { c.Window = time.Millisecond }, "window: 1ms is shorter than the resolution 10ms"},
		{"negative resolution", func(c *graph.Config) { c.Resolution = -1 }, "resolution: -1ns is negative"},
		{"max bins", func(c *graph.Config) { c.MaxBins = 3 }, "max-bins: 3, want at least 512"},
		{"reservoir", func(c *graph.Config) { c.Reservoir = -1 }, "reservoir: -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := graph.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestDeterministic builds the same input twice with reservoirs far
// smaller than the data: the same seed gives the same bytes.
func TestDeterministic(t *testing.T) {
	spans := newSynth(3, 200).generate(20000)
	cfg := graph.DefaultConfig()
	cfg.Reservoir = 16
	var outs [][]byte
	for range 2 {
		res := buildSpans(t, cfg, spans)
		b, err := cascade.EncodeModel(res.Model)
		require.NoError(t, err)
		outs = append(outs, b)
	}
	require.Equal(t, string(outs[0]), string(outs[1]))
}

// TestSynthetic checks the figures the generator is built to produce.
func TestSynthetic(t *testing.T) {
	res := buildSpans(t, graph.DefaultConfig(), newSynth(2, 200).generate(50000))
	m := res.Model
	require.Equal(t, "gateway", m.Entries[0].Node)
	require.True(t, m.Node("postgres").Virtual)
	require.True(t, m.Node("redis").Virtual)
	pricing := edge(t, m, "gateway", "pricing")
	require.Equal(t, cascade.Const(6), pricing.FanOut)
	require.Equal(t, 3, pricing.Parallelism)
	// At most 3 at once per request, and requests 5 ms apart on average
	// overlap past 3: one pool per request, seen.
	require.Equal(t, cascade.PoolPerRequest, pricing.Observed.PoolSharing)
	require.False(t, pricing.SharedPool)
	require.Equal(t, 1, pricing.Stage)
	require.Equal(t, 0, edge(t, m, "gateway", "items").Stage)
	require.True(t, edge(t, m, "gateway", "audit").Async)
	redis := edge(t, m, "pricing", "redis")
	require.InDelta(t, 0.1, redis.Observed.ErrorRate, 0.01)
	require.InDelta(t, 0.1, redis.Observed.RetryShare, 0.01)
	require.Equal(t, 3, redis.Retry.MaxAttempts)
	require.InDelta(t, 1.0, redis.Retry.Reactivation, 0.02) // a third failure is not re-sent
	require.Equal(t, cascade.BackoffFixed, redis.Retry.Backoff.Kind)
	require.InDelta(t, 1, redis.Retry.Backoff.BaseMS, 0.01)
	// The client's own "i/o timeout", at its 5 ms deadline.
	require.Equal(t, 5.0, redis.TimeoutMS)
	require.Equal(t, graph.EvidenceErrType, redis.Observed.TimeoutEvidence)
	require.Equal(t, 3, m.Node("gateway").Replicas)
	db := edge(t, m, "items", "postgres")
	require.Equal(t, 5.0, db.Observed.FanOutMax)
	require.Equal(t, 1, db.Parallelism)
}

// TestSerialised simulates a single FIFO server that queues and a pool of
// four workers: only the first is read as capacity 1.
func TestSerialised(t *testing.T) {
	sim := func(workers int, svc func(r *rand.Rand) float64) []cascade.Span {
		r := rand.New(rand.NewPCG(1, 2))
		free := make([]float64, workers)
		var spans []cascade.Span
		arrival := 0.0
		for i := range 600 {
			arrival += r.ExpFloat64() * 25 // 40/s
			w := 0
			for j := range free {
				if free[j] < free[w] {
					w = j
				}
			}
			start := max(arrival, free[w])
			free[w] = start + svc(r)
			spans = append(spans, span(fmt.Sprintf("t%04d", i), "1", "", "db", "query", server, arrival, free[w]-arrival))
		}
		return spans
	}
	single := buildSpans(t, graph.DefaultConfig(), sim(1, func(r *rand.Rand) float64 { return 20 + r.Float64()*10 }))
	db := single.Model.Node("db")
	require.Equal(t, 1, db.Concurrency)
	require.Equal(t, graph.CapacitySerialised, db.Observed.CapacitySource)
	require.InDelta(t, 25, db.Tiers.P50, 2.5)
	require.Greater(t, db.Observed.LatencyP50MS, 40.0)
	require.Equal(t, cascade.Inferred, db.Provenance["service_ms"])

	require.True(t, db.Observed.CapacityProven)

	// Four workers at 60% load: completions bunch, so nothing proves a
	// limit; the peak in flight (queued requests included) is kept as an
	// observation and the node is left unbounded.
	pool := buildSpans(t, graph.DefaultConfig(), sim(4, func(r *rand.Rand) float64 { return 40 + r.ExpFloat64()*20 }))
	db = pool.Model.Node("db")
	require.Equal(t, graph.CapacityPeak, db.Observed.CapacitySource)
	require.False(t, db.Observed.CapacityProven)
	require.Zero(t, db.Concurrency)
	require.GreaterOrEqual(t, db.Observed.PeakInFlight, 3)
}

// TestMetricsJoin joins queue metrics by service.
func TestMetricsJoin(t *testing.T) {
	spans := callsTo("t1", [][2]float64{{10, 20}})
	samples := []cascade.Sample{
		{Time: t0, Service: "b", Instance: "b-1", Metric: "executor_pool_size_threads", Kind: cascade.MetricPoolSize, Value: 8},
		{Time: t0, Service: "b", Instance: "b-1", Metric: "executor_queued_tasks", Kind: cascade.MetricQueueDepth, Value: 3},
		{Time: t0 + 1e9, Service: "b", Instance: "b-1", Metric: "executor_queued_tasks", Kind: cascade.MetricQueueDepth, Value: 7},
		{Time: t0, Service: "b", Instance: "b-1", Metric: "rejected_total", Kind: cascade.MetricRejected, Value: 10},
		{Time: t0 + 1e9, Service: "b", Instance: "b-1", Metric: "rejected_total", Kind: cascade.MetricRejected, Value: 15},
		{Time: t0 + 2e9, Service: "b", Instance: "b-1", Metric: "rejected_total", Kind: cascade.MetricRejected, Value: 2},
		{Time: t0, Service: "b", Metric: "cpu", Kind: cascade.MetricCPU, Value: 0.5},
	}
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(spans), graph.Samples(samples))
	require.NoError(t, err)
	b := res.Model.Node("b")
	require.Equal(t, 8, b.Concurrency)
	require.Equal(t, graph.CapacityPoolSize, b.Observed.CapacitySource)
	require.Equal(t, cascade.Observed, b.Provenance["concurrency"])
	require.Equal(t, 8.0, b.Observed.PoolSize)
	require.Equal(t, 7.0, b.Observed.QueueDepthMax)
	require.Equal(t, 7.0, b.Observed.Rejected) // 5, then a reset to 2
	require.Equal(t, int64(7), res.Stats.Samples)
	require.Equal(t, graph.CapacityPeak, res.Model.Node("a").Observed.CapacitySource)
}

// TestSeries checks the per-node series, and that merging bins past
// MaxBins keeps the totals.
func TestSeries(t *testing.T) {
	spans := newSynth(4, 100).generate(20000)
	for _, maxBins := range []int{graph.DefaultMaxBins, 512} {
		t.Run(fmt.Sprint(maxBins), func(t *testing.T) {
			cfg := graph.DefaultConfig()
			cfg.MaxBins = maxBins
			res := buildSpans(t, cfg, spans)
			for i, info := range res.Nodes {
				n := &res.Model.Nodes[i]
				require.Equal(t, n.Name, info.Name)
				var reqs, errs int64
				var mean float64
				for _, w := range info.Series {
					reqs += w.Requests
					errs += w.Errors
					mean += w.MeanInFlight
				}
				require.Equal(t, n.Observed.Requests, reqs, n.Name)
				require.Equal(t, int64(float64(n.Observed.Requests)*n.Observed.ErrorRate+0.5), errs, n.Name)
				require.Zero(t, int64(info.Window)%int64(info.Resolution))
				if maxBins == 512 {
					require.Greater(t, info.Resolution, 10*time.Millisecond)
				}
				span := float64(res.Model.Source.EndNS-res.Model.Source.StartNS) / float64(info.Window)
				require.InDelta(t, n.Observed.MeanInFlight, mean/span, 0.02*n.Observed.MeanInFlight+1e-3, n.Name)
			}
		})
	}
}

// seqCalls is a trace of a calling b, then c once b answered; with
// bFails b fails after 200 ms and a gives up without calling c.
func seqCalls(trace string, bFails bool) []cascade.Span {
	if bFails {
		return []cascade.Span{
			span(trace, "1", "", "a", "/a", server, 0, 201, failed("x")),
			span(trace, "2", "1", "b", "/b", server, 0, 200, failed("x")),
		}
	}
	return []cascade.Span{
		span(trace, "1", "", "a", "/a", server, 0, 30),
		span(trace, "2", "1", "b", "/b", server, 0, 10),
		span(trace, "3", "1", "c", "/c", server, 11, 10),
	}
}
