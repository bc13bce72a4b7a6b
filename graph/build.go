package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"cascade"
)

// Spans returns a cascade.SpanSource over spans held in memory (tests, examples,
// callers that decoded spans themselves).
func Spans(spans []cascade.Span) cascade.SpanSource {
	return func(fn func(*cascade.Span) error) error {
		for i := range spans {
			if err := fn(&spans[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// Samples returns a cascade.SampleSource over points held in memory.
func Samples(samples []cascade.Sample) cascade.SampleSource {
	return func(fn func(*cascade.Sample) error) error {
		for i := range samples {
			if err := fn(&samples[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// ErrNoSpans is returned when the input holds no span, so no model can be
// built.
var ErrNoSpans = errors.New("no spans")

// Build reads every span and sample and returns the call graph as an
// uncalibrated model with the measurements behind it. samples may be nil.
// Memory is bounded by the largest trace, the number of nodes and edges,
// and the configured bins and reservoirs, not by the dataset's size.
func Build(ctx context.Context, cfg Config, spans cascade.SpanSource, samples cascade.SampleSource) (*Result, error) {
	b, err := NewBuilder(cfg)
	if err != nil {
		return nil, err
	}
	n := 0
	err = spans(func(s *cascade.Span) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b.AddSpan(s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spans: %w", err)
	}
	if samples != nil {
		if err := samples(func(s *cascade.Sample) error { b.AddSample(s); return nil }); err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.Finish()
}

// Result is a built graph: the model document and what was measured to
// make it.
type Result struct {
	// Model is the uncalibrated model; its nodes and edges are sorted.
	Model *cascade.Model
	// Nodes describes each model node, in the order of Model.Nodes.
	Nodes []NodeInfo
	// Order lists the nodes in topological order (callers before
	// callees); the members of a cycle sit together, by name.
	Order []string
	// Cycles lists the strongly connected components of more than one
	// node, each sorted by name, in topological order.
	Cycles [][]string
	// Stats counts what was read.
	Stats Stats
	// Seed is the seed the reservoir sampling used (Config.Seed).
	Seed uint64
	// Queues describes each queue node (a node with a Queue), by name:
	// the counts behind its settings and its depth over time.
	Queues []QueueInfo
	// Warnings are findings worth a look (a capacity below what Little's
	// law requires, client spans whose callee could not be named), sorted.
	Warnings []string
}

// NodeInfo is what the graph analysis and the time series say about one
// node.
type NodeInfo struct {
	// Name is the node's name.
	Name string
	// Depth is the fewest calls from an entry node to this node: 0 for an
	// entry, -1 when no entry reaches it.
	Depth int
	// Amplification is the node's requests per root request.
	Amplification float64
	// Resolution is the width of the in-flight bins after any merging.
	Resolution time.Duration
	// Window is the width of the series' windows (a whole number of bins).
	Window time.Duration
	// Series holds one window per Window from the first span's start to
	// the last span's end.
	Series []Window
}

// PeakRate returns the highest request rate of any window of the series,
// per second.
func (n *NodeInfo) PeakRate() float64 {
	var most int64
	for _, w := range n.Series {
		most = max(most, w.Requests)
	}
	if n.Window <= 0 {
		return 0
	}
	return float64(most) / n.Window.Seconds()
}

// Window is one window of a node's time series.
type Window struct {
	// StartNS is the window's start, Unix nanoseconds.
	StartNS int64 `json:"start_ns"`
	// Requests counts requests that started in the window; Errors counts
	// those that failed.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// MeanInFlight is the time-averaged number of requests in flight;
	// PeakInFlight is the largest average over one bin.
	MeanInFlight float64 `json:"mean_in_flight"`
	PeakInFlight float64 `json:"peak_in_flight"`
}

// Stats counts what a build read.
type Stats struct {
	// Spans counts spans read; Traces counts runs of spans of one trace.
	Spans  int64 `json:"spans"`
	Traces int64 `json:"traces"`
	// Roots counts spans without a parent: root requests.
	Roots int64 `json:"roots"`
	// Orphans counts spans whose parent is not in their trace; they start
	// requests that have no caller and are not entries.
	Orphans int64 `json:"orphans"`
	// Requests counts spans that start work in a node; Calls counts calls
	// between nodes.
	Requests int64 `json:"requests"`
	Calls    int64 `json:"calls"`
	// Unresolved counts client and producer spans with neither a child in
	// another service nor a peer name: their callee is unknown.
	Unresolved int64 `json:"unresolved"`
	// Unreached counts spans in parent cycles (corrupt input), skipped.
	Unreached int64 `json:"unreached"`
	// Samples counts metric points read.
	Samples int64 `json:"samples"`
}

// Builder builds a model from spans added one at a time, holding only the
// trace being read. Use NewBuilder, AddSpan and AddSample, then Finish.
type Builder struct {
	// poolDeadline is the deadline (ms) of each node with a hidden pool
	// whose waiting requests give up at one (pool.go).
	poolDeadline map[string]float64
	// sampleScale is how many requests each traced one stands for (1
	// when the traces are whole; readSampling), and curveNotes say which
	// nodes got a load curve (loadcurve.go).
	sampleScale float64
	curveNotes  []string
	cfg         Config
	rng         *rand.Rand
	syms        symbols
	stats       Stats

	startNS, endNS int64

	nodes   []*nodeAcc
	nodeIdx map[uint64]int32
	edges   []*edgeAcc
	edgeIdx map[uint64]int32
	entries map[uint64]int64 // node<<32 | operation symbol → root spans
	roots   [][2]int64       // root spans' start and end, the first maxLoadRoots
	// rootEndNS is the latest end of a root span, rootFirstNS and
	// rootLastNS the first and last start of one: the window in which
	// requests arrived (see finish).
	rootEndNS, rootFirstNS, rootLastNS int64

	metrics  metricAcc
	warnings []string

	// order counts, per ordered pair of edges out of one caller (A<<32 |
	// B), the caller requests that called on both (both) and those whose
	// first call on B started at or after their last on A ended
	// (after): which of a caller's calls wait for which (assignStages).
	order map[uint64]*[2]int64

	// messaging: queue nodes, and every publish and delivery kept to join
	// them across traces at Finish (see queue.go)
	mq mqAcc

	// the trace being read
	traceID []byte
	tr      []tspan
	work    traceWork

	// one-entry caches of the last interned strings
	cache [4]symCache
	// peers maps a client span's peer, as the span gave it, to the
	// interned name of its node (peerID).
	peers map[string]int32
}

type symCache struct {
	id int32
	ok bool
}

// NewBuilder returns a builder for cfg (zero fields take their defaults).
func NewBuilder(cfg Config) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Builder{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		syms:    newSymbols(),
		nodeIdx: map[uint64]int32{},
		edgeIdx: map[uint64]int32{},
		entries: map[uint64]int64{},
		order:   map[uint64]*[2]int64{},
		peers:   map[string]int32{},
		metrics: newMetricAcc(),
		work:    newTraceWork(),
		mq:      newMQAcc(),
	}, nil
}

// peerID is the interned node name of a client span's peer (peerNode),
// found by the peer as the span gave it: telling a name from an address
// parses it, and a failed parse allocates its error, so each peer is
// parsed once a build, not once a span.
func (b *Builder) peerID(peer string) int32 {
	id, ok := b.peers[peer]
	if !ok {
		id = b.syms.id(peerNode(peer))
		b.peers[strings.Clone(peer)] = id
	}
	return id
}

func (b *Builder) intern(slot int, s string) int32 {
	c := &b.cache[slot]
	if c.ok && b.syms.names[c.id] == s {
		return c.id
	}
	id := b.syms.id(s)
	c.id, c.ok = id, true
	return id
}

// AddSpan adds one span. Spans must come grouped by trace; a trace is
// analysed when the next one begins (or at Finish).
func (b *Builder) AddSpan(s *cascade.Span) {
	if len(b.tr) > 0 && string(b.traceID) != s.TraceID {
		b.flushTrace()
	}
	if len(b.tr) == 0 {
		b.traceID = append(b.traceID[:0], s.TraceID...)
	}
	b.stats.Spans++
	end := s.Start + max(s.Duration, 0)
	if b.stats.Spans == 1 || s.Start < b.startNS {
		b.startNS = s.Start
	}
	if b.stats.Spans == 1 || end > b.endNS {
		b.endNS = end
	}
	t := tspan{
		id:     spanKey(s.SpanID),
		start:  s.Start,
		end:    end,
		svc:    b.intern(0, s.Service),
		op:     b.intern(1, s.Operation),
		inst:   -1,
		peer:   -1,
		errT:   -1,
		code:   s.StatusCode,
		resend: s.ResendCount,
		kind:   kindOf(s.Kind),
		failed: s.Status == cascade.StatusError,
	}
	if s.ParentSpanID != "" {
		t.parent, t.hasParent = spanKey(s.ParentSpanID), true
	}
	if s.Instance != "" {
		t.inst = b.intern(2, s.Instance)
	}
	if s.Peer != "" {
		t.peer = b.peerID(s.Peer)
	}
	if t.failed && s.ErrorType != "" {
		t.errT = b.syms.id(s.ErrorType)
	}
	if s.MessagingSystem != "" || s.MessagingOperation != "" || s.Destination != "" {
		b.addMessaging(&t, s)
	}
	b.tr = append(b.tr, t)
}

// AddSample adds one metric point. Points of the kinds pool_size,
// queue_depth and rejected are joined to the nodes of their service.
func (b *Builder) AddSample(s *cascade.Sample) {
	b.stats.Samples++
	b.metrics.add(s)
}

// Finish analyses the last trace and returns the result. The builder must
// not be used afterwards.
func (b *Builder) Finish() (*Result, error) {
	if len(b.tr) > 0 {
		b.flushTrace()
	}
	if b.stats.Spans == 0 {
		return nil, ErrNoSpans
	}
	return b.finish()
}

// spanKey turns a span id into a 64-bit key without allocating: the value
// of up to 16 hexadecimal digits, else an FNV-1a hash of the text (a
// collision within one trace is vanishingly unlikely).
func spanKey(id string) uint64 {
	if n := len(id); n > 0 && n <= 16 {
		var v uint64
		bad := byte(0)
		for i := 0; i < n; i++ {
			d := hexVal[id[i]]
			bad |= d
			v = v<<4 | uint64(d&0x0f)
		}
		if bad&0x10 == 0 {
			return v
		}
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// hexVal maps a byte to its hexadecimal value, or 0x10 for a non-digit.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0x10
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
		t[c-'a'+'A'] = byte(c-'a') + 10
	}
	return t
}()

// symbols interns strings: each distinct string is copied once (the
// span's strings may alias the reader's buffers) and named by an index.
type symbols struct {
	ids     map[string]int32
	names   []string
	timeout []int8 // per symbol: 0 unknown, 1 looks like a timeout, -1 not
}

func newSymbols() symbols { return symbols{ids: map[string]int32{}} }

func (s *symbols) id(v string) int32 {
	if id, ok := s.ids[v]; ok {
		return id
	}
	v = strings.Clone(v)
	id := int32(len(s.names))
	s.ids[v] = id
	s.names = append(s.names, v)
	s.timeout = append(s.timeout, 0)
	return id
}

// isTimeout reports whether an error type names a timeout: it contains
// "timeout", "timed out", "deadline" (DEADLINE_EXCEEDED, "context
// deadline exceeded") in any case.
func (s *symbols) isTimeout(id int32) bool {
	if id < 0 {
		return false
	}
	if s.timeout[id] == 0 {
		l := strings.ToLower(s.names[id])
		s.timeout[id] = -1
		if strings.Contains(l, "timeout") || strings.Contains(l, "timed out") || strings.Contains(l, "deadline") {
			s.timeout[id] = 1
		}
	}
	return s.timeout[id] == 1
}
