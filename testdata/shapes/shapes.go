// Package shapes writes deterministic OTLP JSON captures of a small
// four-service chain, each in one of the shapes real instrumentations
// give traces, together with the truth the generator knows about every
// edge and node: fan-out, attempts, retry share, timeouts and which
// capacities are real limits.
//
// The chain is gateway → orders → stock → ledger. Each shape changes how
// the calls are recorded (CLIENT+SERVER pairs, CLIENT spans written under
// the callee's service, SERVER spans only) or how they are made (retries
// of same-name siblings without resend counts, parallel fan-out, both on
// one edge, a deadline that cuts children off while they stay OK, a lock
// that serialises a service in front of an unbounded one). A Slow option
// stretches one service's own work from a point of the capture on, Fail
// makes it fail a share of its requests (an error burst) and Saturate
// makes it serve one request at a time with more work than it can keep
// up with, and Silent makes it stop answering, so attribution can be
// checked against a known origin.
//
// The bytes are what the OpenTelemetry Collector's file exporter writes
// (pdata's JSON marshaler, one ExportTraceServiceRequest); equal Configs
// give equal bytes. The package lives under testdata so that the go tool
// leaves it out of ./... while tests import it as cascade/testdata/shapes;
// `go run ./testdata/shapes/gen -out DIR` writes every shape to files.
package shapes

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Recording styles: which spans a call leaves.
const (
	// Pairs: a CLIENT span in the caller and a SERVER span in the callee
	// (the usual OpenTelemetry pair).
	Pairs = "pairs"
	// ClientOnly: one CLIENT span per call, written under the callee's
	// service, child of the caller's span (no SERVER span), as HotROD's
	// mysql and redis and many database instrumentations.
	ClientOnly = "client-only"
	// ServerOnly: SERVER spans only, each the child of its caller's SERVER
	// span (uninstrumented HTTP clients that still propagate context).
	ServerOnly = "server-only"
)

// Services of the chain, caller first.
var Services = []string{"gateway", "orders", "stock", "ledger"}

// Config selects a capture.
type Config struct {
	// Shape is one of Names().
	Shape string
	// Traces is the number of root requests; 0 means the shape's default.
	Traces int
	// Seed drives every draw; 0 means 1.
	Seed uint64
	// Slow, when not empty, names a service whose own work is stretched
	// by SlowFactor (default 4) for root requests from SlowFrom (a share
	// of the capture, default 0.5) on.
	Slow       string
	SlowFactor float64
	SlowFrom   float64
	// Slots changes the lock of a shape that has one (lock-pool) into a
	// pool of that many slots, or removes it when negative; 0 keeps the
	// lock. The "after" captures of a lock removed or a pool raised.
	Slots int
	// Rate, when positive, replaces the shape's root requests per
	// second.
	Rate float64
	// Fallback, when positive, replaces the fallback share of every edge
	// that has one; negative removes them (the "before" capture of a
	// fallback added).
	Fallback float64
	// Attempts, when positive, replaces the max attempts of every edge
	// that retries: 1 is the "after" capture of retries cut.
	Attempts int
	// Fail, when not empty, names a service that fails FailShare
	// (default 0.3) of its requests itself from SlowFrom on: an error
	// burst. A failing request answers after a fifth of its work with a
	// 503 and calls no one.
	Fail      string
	FailShare float64
	// Saturate, when not empty, names a service that from SlowFrom on
	// serves one request at a time, in arrival order, its own work
	// stretched to SaturateLoad (default 1.25) times the mean gap between
	// root requests: its load exceeds its capacity and the queue in front
	// of it grows for the rest of the capture.
	Saturate     string
	SaturateLoad float64
	// Silent, when not empty, names a service that answers no request
	// from SlowFrom on (a crash): it records nothing, and each call to it
	// fails after 1 ms, where the caller records it.
	Silent string
	// EarlyReturn, when not empty, names a service that from SlowFrom
	// on answers EarlyShare (default 0.7) of its requests without making
	// its calls (an early return): its own work unchanged, no error, and
	// its callee gets fewer calls.
	EarlyReturn string
	EarlyShare  float64
	// EarlyOwn, when above 0, is the share of its own work an early
	// return still does (an injected return at the method's start skips
	// the method's own work too: a leaf, with no calls to skip, then
	// only gets faster); 0 keeps its own work unchanged.
	EarlyOwn float64
	// Mix, when not empty, names a service that serves two operations:
	// its usual one and a bulk one ("<name> bulk") with five times the
	// own work. A tenth of its requests are bulk before SlowFrom and
	// MixShare (default 0.6) from then on: the mix of work shifts,
	// nothing gets slower. Not a fault.
	Mix      string
	MixShare float64
	// Format is how the capture is written: OTLP (the default, the
	// Collector's file exporter) or ZipkinBrave.
	Format string
	// ErrorMessage, when not empty, is the error a service that fails a
	// request itself records ("redis timeout"), after three times its
	// work (HotROD's redis sleeps before failing), and every span that
	// fails because of it up the chain carries the same text, the way a
	// gRPC status passes a callee's message to its caller's client span.
	// Such a message names the callee's trouble, not a caller's
	// deadline: the truth holds no timeout for it.
	ErrorMessage string
	// DeadlineMessage, when not empty, is the error type an attempt cut
	// by its caller's deadline records on the caller's span, where the
	// shape marks it failed ("context deadline exceeded").
	DeadlineMessage string
	// Logs, with Format NezhaCSV, also writes the services' logs as
	// Nezha's log CSV into Truth.Logs (see logs.go).
	Logs bool
	// Throw, when not empty, names a service that from SlowFrom on
	// throws on ThrowShare (default 1) of its requests an exception its
	// handler catches: an ERROR line and a stack line, no closing line,
	// and its caller logs the error it got back; its spans keep status
	// unset and their durations. It shows only in the logs.
	Throw      string
	ThrowShare float64
}

// Formats of a capture.
const (
	// OTLP is one ExportTraceServiceRequest in pdata's JSON.
	OTLP = "otlp"
	// ZipkinBrave is a Zipkin v2 JSON array of spans as Brave (Spring
	// Cloud Sleuth, the Zipkin project's Java tracer) reports them with
	// B3 propagation: a server span shares its client's span id and
	// parent, marked "shared"; times in µs; no status, an "error" tag
	// and http.status_code on a failed HTTP span.
	ZipkinBrave = "zipkin-brave"
	// Jaeger is the query API's answer (GET /api/traces) for spans the
	// OpenTelemetry SDK exported to Jaeger over OTLP: span.kind,
	// otel.status_code and error tags, times in µs, one process per
	// service.
	Jaeger = "jaeger"
	// NezhaCSV is the span CSV of the Nezha dataset (TrainTicket under the
	// OpenTelemetry Java agent): no kind and no status; each request a
	// SERVER span with a controller span below it that makes the calls,
	// and a failed request forwarded to Spring's BasicErrorController,
	// whose span is the only mark of the failure. Pod names carry
	// Kubernetes suffixes, Duration is in µs. Only shapes whose calls are
	// pairs and are never cut by a deadline can be written so.
	NezhaCSV = "nezha-csv"
)

// Truth is what the generator knows about a capture.
type Truth struct {
	Shape  string `json:"shape"`
	Style  string `json:"style"`
	Doc    string `json:"doc"`
	Traces int    `json:"traces"`
	Slow   string `json:"slow,omitempty"`
	// Fail, Saturate and Silent name the services of those faults, if
	// any.
	Fail     string      `json:"fail,omitempty"`
	Saturate string      `json:"saturate,omitempty"`
	Silent   string      `json:"silent,omitempty"`
	Edges    []EdgeTruth `json:"edges"`
	Nodes    []NodeTruth `json:"nodes"`
	// SlowFromNS is when the slowdown (or the other fault) starts (Unix
	// ns), 0 without one.
	SlowFromNS int64 `json:"slow_from_ns,omitempty"`
	// Throw names the service that throws, if any; Logs are the log
	// CSV when Config.Logs asked for it.
	Throw string `json:"throw,omitempty"`
	Logs  []byte `json:"-"`
}

// EdgeTruth is one edge as made.
type EdgeTruth struct {
	From, To string
	// CallerRequests counts caller requests that made at least one call
	// on the edge; Logical counts logical calls (first attempts); Attempts
	// counts every attempt.
	CallerRequests, Logical, Attempts int64
	// FanOutMean is Logical ÷ CallerRequests, graph's definition.
	FanOutMean float64
	// MaxAttempts is the most attempts any logical call made.
	MaxAttempts int
	// Limit is the most attempts the caller allows a logical call;
	// Exhausted counts the logical calls that failed at that last
	// attempt (they ran out). Where none did, the capture does not show
	// the limit: MaxAttempts is only a lower bound of it.
	Limit     int
	Exhausted int64
	// RetryShare is (Attempts − Logical) ÷ Attempts.
	RetryShare float64
	// TimeoutMS is the caller's deadline per attempt, 0 when the edge has
	// none; Cut counts attempts it cut off.
	TimeoutMS float64
	Cut       int64
	// TimeoutSeen says whether the capture holds evidence of the timeout
	// (an attempt was cut); without it the timeout must read as unknown.
	TimeoutSeen bool
	// Propagation is p_uv as made: 1 when a logical call that failed
	// (after its attempts) fails the caller's request, 0 when the caller
	// carries on. FailedLogical counts the logical calls that failed; p
	// can be read only where it is positive.
	Propagation   float64
	FailedLogical int64
	// Reactivation is r_uv as made: 1 on an edge that re-sends every
	// failed attempt (up to MaxAttempts), 0 on one that does not retry;
	// BackoffMS the mean wait before a re-send (uniform ±10%).
	Reactivation, BackoffMS float64
}

// NodeTruth is one node as made.
type NodeTruth struct {
	Name string
	// Proven is whether the node has a concurrency limit the traces can
	// prove (a lock: one at a time with requests queueing); Concurrency
	// is that limit, 0 when the node is unbounded.
	Proven      bool
	Concurrency int
}

// edgeSpec is how one caller calls one callee.
type edgeSpec struct {
	fanout      func(*rand.Rand) int // logical calls per request
	parallel    bool                 // all logical calls start together
	maxAttempts int                  // 1: no retries
	backoffMS   float64              // gap between an attempt's end (or cut) and the next
	timeoutMS   float64              // per attempt, 0 none
	// cutStatus is the status an attempt cut by the timeout leaves on the
	// caller's side (Pairs: the client span): "error" or "unset" (the
	// instrumentation ended the span on cancellation without an error).
	cutStatus string
	// failCaller: the caller's request fails when the logical call fails.
	failCaller bool
	// fallbackP: of the failed logical calls that would fail the caller,
	// the share it answers from a fallback instead (degraded, OK), so
	// that p_uv is 1 − fallbackP.
	fallbackP float64
}

// nodeSpec is how one service works.
type nodeSpec struct {
	selfMS   float64 // own work, mean
	tailP    float64 // probability of a slow tail draw
	tailMS   float64 // the tail's extra time, mean
	failP    float64 // probability the service fails a request itself
	fastFail bool    // a failing request answers after a fifth of its work
	lock     bool    // one request at a time, in arrival order
}

// shape is one capture's recipe.
type shape struct {
	doc    string
	style  string
	traces int
	rate   float64 // root requests per second
	nodes  map[string]nodeSpec
	edges  map[string]edgeSpec // "from>to"
}

func one(*rand.Rand) int { return 1 }

var plain = map[string]nodeSpec{
	"gateway": {selfMS: 1},
	"orders":  {selfMS: 3},
	"stock":   {selfMS: 4},
	"ledger":  {selfMS: 6},
}

func chain(mod map[string]edgeSpec) map[string]edgeSpec {
	out := map[string]edgeSpec{
		"gateway>orders": {fanout: one, maxAttempts: 1, failCaller: true},
		"orders>stock":   {fanout: one, maxAttempts: 1, failCaller: true},
		"stock>ledger":   {fanout: one, maxAttempts: 1, failCaller: true},
	}
	for k, v := range mod {
		out[k] = v
	}
	return out
}

func nodes(mod map[string]nodeSpec) map[string]nodeSpec {
	out := map[string]nodeSpec{}
	for k, v := range plain {
		out[k] = v
	}
	for k, v := range mod {
		out[k] = v
	}
	return out
}

var shapeTable = map[string]shape{
	"pairs": {
		doc:   "CLIENT+SERVER pairs on every call; ledger fails 3% of requests, which fails the chain",
		style: Pairs, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"ledger": {selfMS: 6, failP: 0.03}}),
		edges: chain(nil),
	},
	"client-only": {
		doc:   "one CLIENT span per call under the callee's service; stock retries a failed ledger call at once, up to 3 attempts",
		style: ClientOnly, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"ledger": {selfMS: 6, failP: 0.15, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"stock>ledger": {fanout: one, maxAttempts: 3, failCaller: true},
		}),
	},
	"server-only": {
		doc:   "SERVER spans only; orders retries a failed stock call after 15 ms, up to 3 attempts",
		style: ServerOnly, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, failP: 0.12, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: one, maxAttempts: 3, backoffMS: 15, failCaller: true},
		}),
	},
	"staggered-retries": {
		doc: "pairs without resend counts; orders cuts a stock attempt at 80 ms (client span ERROR, no error type) " +
			"and retries it, or a fast 503, after 20 ms, up to 3 attempts",
		style: Pairs, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, tailP: 0.12, tailMS: 150, failP: 0.05, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: one, maxAttempts: 3, backoffMS: 20, timeoutMS: 80, cutStatus: "error", failCaller: true},
		}),
	},
	"fan-out": {
		doc:   "pairs; orders calls stock 3–5 times at once (identical starts); 5% of stock calls fail and are not retried",
		style: Pairs, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, failP: 0.05, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: func(r *rand.Rand) int { return 3 + r.IntN(3) }, parallel: true, maxAttempts: 1, failCaller: false},
		}),
	},
	"mixed": {
		doc:   "pairs; orders calls stock 3 times at once and retries each failed call (10%) after 10 ms, up to 3 attempts",
		style: Pairs, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, failP: 0.10, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: func(*rand.Rand) int { return 3 }, parallel: true, maxAttempts: 3, backoffMS: 10, failCaller: true},
		}),
	},
	"timeout-ok": {
		doc: "SERVER spans only; orders gives up on stock after 60 ms and fails, while stock (a slow tail on 20% of calls) " +
			"finishes its work with status OK",
		style: ServerOnly, traces: 600, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, tailP: 0.2, tailMS: 100}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: one, maxAttempts: 1, timeoutMS: 60, cutStatus: "unset", failCaller: true},
		}),
	},
	"fallback": {
		doc:   "pairs; 20% of stock's requests fail fast, and orders answers 60% of those from a fallback (OK): p = 0.4",
		style: Pairs, traces: 1200, rate: 20,
		nodes: nodes(map[string]nodeSpec{"stock": {selfMS: 4, failP: 0.2, fastFail: true}}),
		edges: chain(map[string]edgeSpec{
			"orders>stock": {fanout: one, maxAttempts: 1, failCaller: true, fallbackP: 0.6},
		}),
	},
	"lock-pool": {
		doc: "pairs; orders holds a lock around its work and its stock call (one request at a time, queueing), " +
			"stock is an unbounded pool that therefore never sees more than one call",
		style: Pairs, traces: 2400, rate: 35,
		nodes: nodes(map[string]nodeSpec{"orders": {selfMS: 12, lock: true}}),
		edges: chain(nil),
	},
}

// Names returns the shapes in a fixed order.
func Names() []string {
	return []string{"pairs", "client-only", "server-only", "staggered-retries", "fan-out", "mixed", "timeout-ok", "fallback", "lock-pool"}
}

// Writable reports whether a shape can be written in a format: the Nezha
// CSV holds only pairs never cut by a deadline.
func Writable(name, format string) bool {
	sh, ok := shapeTable[name]
	if !ok {
		return false
	}
	if format != NezhaCSV {
		return true
	}
	if sh.style != Pairs {
		return false
	}
	for _, e := range sh.edges {
		if e.timeoutMS > 0 {
			return false
		}
	}
	return true
}

// Rate returns a shape's root requests per second.
func Rate(name string) float64 { return shapeTable[name].rate }

// Doc returns a shape's description.
func Doc(name string) string { return shapeTable[name].doc }

// span is one recorded span before it is marshalled.
type span struct {
	trace      [16]byte
	id, parent [8]byte
	svc, name  string
	kind       ptrace.SpanKind
	start, end int64
	status     string // "", "error"
	code       int64
	errType    string
}

type gen struct {
	rng   *rand.Rand
	sh    shape
	cfg   Config
	spans []span
	ids   uint64
	trace [16]byte
	slow  bool
	// faulty is whether the current trace is past the onset of the Fail
	// or Saturate fault; satFree is when the saturated service's one
	// slot is next free.
	faulty  bool
	shifted bool // Mix: the bulk share is MixShare
	satFree int64
	// slotFree are when each slot of the locked service is next free
	// (one slot: a lock); empty when the lock is removed.
	slotFree []int64
	et       map[string]*EdgeTruth
}

const ms = int64(1e6)

// Generate returns the OTLP JSON of the capture and its truth.
func Generate(cfg Config) ([]byte, *Truth, error) {
	sh, ok := shapeTable[cfg.Shape]
	if !ok {
		return nil, nil, fmt.Errorf("shapes: unknown shape %q", cfg.Shape)
	}
	if cfg.Traces <= 0 {
		cfg.Traces = sh.traces
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.SlowFactor == 0 {
		cfg.SlowFactor = 4
	}
	if cfg.SlowFrom == 0 {
		cfg.SlowFrom = 0.5
	}
	if cfg.FailShare == 0 {
		cfg.FailShare = 0.3
	}
	if cfg.SaturateLoad == 0 {
		cfg.SaturateLoad = 1.25
	}
	if cfg.EarlyShare == 0 {
		cfg.EarlyShare = 0.7
	}
	if cfg.MixShare == 0 {
		cfg.MixShare = 0.6
	}
	for _, svc := range []string{cfg.Slow, cfg.Fail, cfg.Saturate, cfg.Silent, cfg.Mix, cfg.Throw, cfg.EarlyReturn} {
		if svc != "" && !slices.Contains(Services, svc) {
			return nil, nil, fmt.Errorf("shapes: unknown service %q", svc)
		}
	}
	if cfg.Rate > 0 {
		sh.rate = cfg.Rate
	}
	if cfg.Attempts > 0 {
		edges := map[string]edgeSpec{}
		for k, e := range sh.edges {
			if e.maxAttempts > 1 {
				e.maxAttempts = cfg.Attempts
			}
			edges[k] = e
		}
		sh.edges = edges
	}
	if cfg.Fallback != 0 {
		edges := map[string]edgeSpec{}
		for k, e := range sh.edges {
			if e.fallbackP > 0 {
				e.fallbackP = max(0, cfg.Fallback)
			}
			edges[k] = e
		}
		sh.edges = edges
	}
	g := &gen{rng: rand.New(rand.NewPCG(cfg.Seed, 0x5ba9e5)), sh: sh, cfg: cfg, et: map[string]*EdgeTruth{}}
	switch {
	case cfg.Slots > 0:
		g.slotFree = make([]int64, cfg.Slots)
	case cfg.Slots == 0:
		g.slotFree = make([]int64, 1)
	}
	tr := &Truth{Shape: cfg.Shape, Style: sh.style, Doc: sh.doc, Traces: cfg.Traces, Slow: cfg.Slow, Fail: cfg.Fail, Saturate: cfg.Saturate, Silent: cfg.Silent}
	fault := cfg.Slow != "" || cfg.Fail != "" || cfg.Saturate != "" || cfg.Silent != ""
	fault = fault || cfg.Throw != "" || cfg.EarlyReturn != ""
	tr.Throw = cfg.Throw
	for i := 0; i+1 < len(Services); i++ {
		key := Services[i] + ">" + Services[i+1]
		g.et[key] = &EdgeTruth{From: Services[i], To: Services[i+1], TimeoutMS: sh.edges[key].timeoutMS, Limit: sh.edges[key].maxAttempts}
		if sh.edges[key].failCaller {
			g.et[key].Propagation = 1 - sh.edges[key].fallbackP
		}
		if sh.edges[key].maxAttempts > 1 {
			g.et[key].Reactivation, g.et[key].BackoffMS = 1, sh.edges[key].backoffMS
		}
	}
	t := int64(1_760_000_000) * 1e9
	slowAt := int(math.Round(cfg.SlowFrom * float64(cfg.Traces)))
	for i := range cfg.Traces {
		t += int64(g.rng.ExpFloat64() / sh.rate * 1e9)
		g.slow = cfg.Slow != "" && i >= slowAt
		g.faulty = (cfg.Fail != "" || cfg.Saturate != "" || cfg.Silent != "" || cfg.EarlyReturn != "") && i >= slowAt
		g.shifted = cfg.Mix != "" && i >= slowAt
		if fault && i == slowAt {
			tr.SlowFromNS = t
		}
		binary.BigEndian.PutUint64(g.trace[:8], g.rng.Uint64())
		binary.BigEndian.PutUint64(g.trace[8:], uint64(i+1))
		g.request("gateway", [8]byte{}, ptrace.SpanKindServer, "GET /checkout", t)
	}
	for i := 0; i+1 < len(Services); i++ {
		e := g.et[Services[i]+">"+Services[i+1]]
		if e.CallerRequests > 0 {
			e.FanOutMean = float64(e.Logical) / float64(e.CallerRequests)
		}
		if e.Attempts > 0 {
			e.RetryShare = float64(e.Attempts-e.Logical) / float64(e.Attempts)
		}
		e.TimeoutSeen = e.Cut > 0
		tr.Edges = append(tr.Edges, *e)
	}
	for _, s := range Services {
		n := NodeTruth{Name: s}
		if sh.nodes[s].lock && len(g.slotFree) == 1 {
			// One slot, queueing: the traces prove it (serialised). A
			// pool of more slots is a real limit the traces alone do
			// not prove.
			n.Proven, n.Concurrency = true, 1
		}
		tr.Nodes = append(tr.Nodes, n)
	}
	var data []byte
	var err error
	switch cfg.Format {
	case "", OTLP:
		data, err = g.marshal()
	case ZipkinBrave:
		data, err = g.marshalZipkin()
	case Jaeger:
		data, err = g.marshalJaeger()
	case NezhaCSV:
		data, err = g.marshalNezha()
	default:
		return nil, nil, fmt.Errorf("shapes: unknown format %q", cfg.Format)
	}
	if err == nil && cfg.Logs {
		tr.Logs, err = g.marshalNezhaLogs(tr.SlowFromNS)
	}
	return data, tr, err
}
