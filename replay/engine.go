package replay

import (
	"fmt"
	"math"

	"cascade"
)

// Engine replays one model under one configuration. Build it with
// NewEngine, then call Run once per seed. A run's memory that does not
// depend on the model (events, call records, histograms, timers) comes
// from a pool shared by all engines and goes back to it when the run
// ends, so a steady state of runs does not allocate, on one engine or on
// many. An Engine is not safe for concurrent use: run seeds in parallel
// on separate Engines.
type Engine struct {
	cfg   Config
	model *cascade.Model

	tickMS   float64 // milliseconds per tick
	perMS    float64 // ticks per millisecond
	end      int64   // the replay's last tick (exclusive)
	arrEnd   float64 // arrivals stop here, ms
	now      int64
	seed     uint64
	q        eventQueue
	nodes    []node
	edges    []edge
	routes   []route // edges first, then entries
	entries  []entry
	entryCum []float64 // cumulative shares of entries

	// jobs holds the job records (attempts at a callee) and links the
	// link records (callers' sides): a retry takes a job record only.
	jobs   slab[job]
	links  slab[link]
	njobs  int32 // jobs in flight
	issues slab[issue]
	// kids reports whether jobs keep lists of their child links
	// (job.kids), which fail-fast and abandonment walk; a model where no
	// call can fail or time out needs neither and skips the lists.
	kids bool
	// scr is the scratch the current run took (nil between runs); octs
	// are the spare histogram octaves that every hist of the engine
	// takes from.
	scr  *scratch
	octs []*octave

	traffic  cascade.Traffic
	closed   bool
	users    []user
	observed []Arrival
	obsEntry []int32
	nextMS   float64 // next open-loop arrival time
	arrR     stream

	m metrics

	// Message queues and brokers (engine_broker.go): the queue nodes,
	// their consumers, the brokers, the messages held, and the flows of
	// root requests, which are kept (flowOn) when the model has an async
	// edge or a queue.
	mqs     []mqueue
	cons    []consumer
	brokers []broker
	msgs    slab[msg]
	flows   slab[flow]
	flowOn  bool

	check   func(event) // tests: called after every event
	checked event       // the event check is called with
	maxJobs int32       // maxJobs, lowered by tests
	// bigZoff holds the zombie offsets too long for job.zoff, by job
	// index (setZoff); an entry is read only while its job's zoff says
	// so, so stale ones need no clearing.
	bigZoff map[int32]int64
}

// node is the replay state of one model node.
type node struct {
	// Fields the path of every call reads come first, those of rarer
	// mechanisms last, so that a call touches few cache lines: the
	// counts and flags, the replicas and stages, the metrics that every
	// call and finish change (nm, whose first fields and latency.oct[0]
	// follow), then the service times drawn ahead. A node was 1.9 KB with
	// these spread over eight cache lines of its thirty.
	replicas int32
	conc     int32 // slots per replica; 0 unlimited
	busy     int32 // jobs holding a slot, all replicas
	queued   int32 // jobs queued, all replicas
	qcap     int32 // queue bound per replica; 0 unbounded
	shedLow  int32 // queue length that turns low-priority calls away; MaxInt32 none
	rr       int32
	pools    int32 // shared pools per replica
	// svcK is the next of svcBuf to use (svcBatch: none left).
	svcK       uint32
	lb         uint8
	overOn     bool
	deadline   bool
	brkOn      bool
	svcBatched bool
	// reps are the replicas' slots and queues: the shared pool of
	// replica r at r, then those of each bulkhead (Edge.Bulkhead) into
	// the node, replicas at a time (route.base).
	reps   []replica
	stages [][]int32 // outgoing edges by stage, in stage order
	nm     nodeMetrics
	// svcBuf holds service times drawn ahead from svcR, svcBatch at a
	// time, when every draw from svcR is one (svcBatched: a random
	// service and no failSvc), already converted to ticks (Engine.ticks).
	svcBuf [svcBatch]int64
	svcR   stream
	perMS  float64 // Engine.perMS, for refillSvc
	// svcRem is what rounding the service times drawn so far to ticks
	// left over, carried into the next (dither).
	svcRem float64
	svc    sampler
	poolv  []pool // pools of replica r at [r·pools, (r+1)·pools)
	// failSvc is the self time of a call that failed on its own, when
	// the model gives one (failSvcOn).
	failSvc   sampler
	failSvcOn bool
	// gaps draws the calls between own failures when the model gives the
	// node's failure process (gapsOn); countdown is the calls left until
	// the next one.
	gaps      sampler
	gapsOn    bool
	countdown int

	name     string
	capacity float64
	failR    stream
	lbR      stream
	over     cascade.Overload
	// curve is the node's load curve (cascade.LoadCurve), nil when none:
	// a call that starts while calls start at r per second per replica
	// takes curve.SlowdownAt(r) times its service time and, when the
	// curve has failures, fails with curve.FailAt(r) instead of over. r
	// is an exponential average of the starts over the curve's window:
	// crate is the starts' sum, each weighted by exp(−age/ctau) (ticks),
	// as of tick clast.
	// wcap is Node.WaitCapMS in ticks; 0 none.
	wcap int64
	// wslow is Node.WaitSlowdown: a call's service time × (1 + wslow ×
	// the live calls queued at its replica as it starts).
	wslow     float64
	curve     *cascade.LoadCurve
	curveFail bool
	crate     float64
	ctau      float64
	cper      float64 // crate to starts per second per replica
	clast     int64
	brk       breaker
	mq        int32 // index in Engine.mqs of a queue node, else -1
}

// Load balancers.
const (
	lbRoundRobin uint8 = iota
	lbRandom
	lbLeastLoaded
	lbP2C
)

type replica struct {
	conc  int32 // slots; 0 unlimited
	busy  int32
	qhead int32 // FIFO of queued jobs through job.qnext
	qtail int32
	qlen  int32
	// qdead counts the queued jobs of a node with deadline propagation
	// whose caller gave up: they wait for nobody, and leave the queue
	// unserved when they reach it (start), so they are not waiters.
	qdead int32
}

// svcBatch is the number of service times a node draws ahead.
const svcBatch = 16

// refillSvc draws svcBatch service times ahead, in ticks: svcBuf[svcK]
// is the next e.ticks(svc.draw(svcR)), and the hot callers (Engine.call,
// Engine.callFull, Engine.start) take it by hand, refilling when svcK
// reaches svcBatch (a method for that is just over the inliner's budget).
// Drawing svcBatch at a time takes the draw's chain of dependent
// operations (the PCG step, its output hash, the ziggurat's tables or the
// normal's and the exponential's arithmetic, the conversion to ticks) off
// the path of each call, where it held up the work that follows (the push
// of the call's event needs its tick); the stream gives the same numbers
// in the same order.
//
//go:noinline
func (n *node) refillSvc() {
	r := n.svcR.Rand
	if n.svc.kind == sExpMean {
		// r.ExpFloat64(), by hand, with the state in registers: the
		// stores to svcBuf would otherwise make every draw load and
		// store it again.
		a, perMS, rem := n.svc.a, n.perMS, n.svcRem
		hi, lo := r.src.hi, r.src.lo
		for i := range n.svcBuf {
			var u uint64
			hi, lo, u = pcgStep(hi, lo)
			j := uint32(u)
			k := uint8(u >> 32)
			x := float64(j) * float64(we[k])
			if j >= ke[k] {
				r.src.hi, r.src.lo = hi, lo
				x = r.expSlow(k, x)
				hi, lo = r.src.hi, r.src.lo
			}
			n.svcBuf[i] = dither(x*a, perMS, &rem)
		}
		r.src.hi, r.src.lo = hi, lo
		n.svcRem = rem
	} else {
		for i := range n.svcBuf {
			n.svcBuf[i] = dither(n.svc.draw(r), n.perMS, &n.svcRem)
		}
	}
}

// svcTicks is a service time drawn for n, in ticks (dither).
func (n *node) svcTicks(ms float64) int64 { return dither(ms, n.perMS, &n.svcRem) }

// nextRR is the round-robin replica after n.rr. It is a conditional
// move, not a branch: with two or three replicas the wrap is a coin toss
// to a predictor, since consecutive calls go to different nodes.
func (n *node) nextRR() int32 {
	r := n.rr + 1
	if r == n.replicas {
		r = 0
	}
	return r
}

// pool returns pool p of replica r (the index of a job's slots in reps:
// a bulkhead's slots are at a replica's index plus a multiple of
// replicas).
func (n *node) pool(r, p int32) *pool {
	if r >= n.replicas {
		r %= n.replicas
	}
	return &n.poolv[r*n.pools+p]
}

// pool is a per-replica pool of calls shared by all requests of the
// caller on one edge (Edge.SharedPool).
type pool struct {
	free  int32
	whead int32 // FIFO of waiting issue records through issue.wnext
	wtail int32
}

// route is how a caller reaches a callee: an edge, or an entry (the
// client of root requests). The fields every call and answer read come
// first, in one cache line.
type route struct {
	callee *node // &nodes[to]
	ed     *edge // &edges[edge], or nil for an entry
	self   int32 // its index in Engine.routes
	to     int32
	edge   int32 // edge index, or -1 for an entry
	entry  int32 // entry index, or -1 for an edge
	// base is where the slots its calls take begin in the callee's
	// reps: 0 for the shared pool, else its bulkhead's.
	base int32
	// guarded: a call on this route can be turned away before it is
	// sent (the edge's availability, the entry's rate limit, the callee's
	// breaker).
	guarded bool
	// plain: not guarded, and no timeout, network delay or retry budget;
	// synchronous first attempts on it go through Engine.call.
	plain bool
	// lean: plain, into a node that cannot fail from overload, in a
	// model without children lists (Engine.kids): nothing times such a
	// call out, abandons it or turns it away on its way, so an attempt
	// that starts at once needs no link (Engine.call). leaf: lean,
	// into a node that calls nobody: such a call is answered exactly when
	// its work ends. done is the event that ends a lean attempt's work:
	// evLeafDone into a leaf, else evJobDone.
	lean  bool
	leaf  bool
	done  uint8
	netOn bool
	// pub: the callee is a queue node, and a call is a publish
	// (Engine.publish, from turnedAway: pub routes are guarded).
	pub bool
	// heldMax is Edge.HeldAtAlarm; heldN the publishes held in the
	// alarm that began at tick heldAt.
	heldMax int32
	heldN   int32
	heldAt  int64
	// batch, on a pub route of an edge with Batch, holds the publishes
	// waiting for their batch; nil none.
	batch *batcher
	// failBlocked: a publisher that fails at once while its broker's
	// alarm blocks it (cascade.Edge.FailBlocked).
	failBlocked bool
	timeout     int64 // ticks; 0 none
	prop        float64
	net         sampler
	netR        stream
	netRem      float64 // dither's remainder for net
	// timers are the deadlines of attempts sent on this route, in send
	// order (the timeout is the same for all, so also in deadline order):
	// one event at a time waits for the earliest live one.
	timers     []timer
	timerHead  int
	timerArmed bool
	retry      retryPolicy
	retryR     stream
}

type edge struct {
	// The fields runStages reads come first: the flags and counts, the
	// route, and the fan-out count's sampler (whose fields for count
	// come first) and stream.
	from  int32
	to    int32
	par   int32
	pool  int32 // index of the shared pool at the caller's replicas
	async bool
	// direct: a synchronous call on a plain route, a fixed count of at
	// least one and nothing that limits how many go at once; runStages
	// sends them all at once through Engine.call.
	direct  bool
	shared  bool
	availOn bool
	rt      *route // &routes[the edge's index]
	fanR    stream
	fan     sampler
	avail   availability
	availR  stream
	propR   stream
	// fb is the fallback's probability (Edge.Fallback), when fbOn.
	fb   float64
	fbOn bool
	fbR  stream
}

type entry struct {
	node  int32
	share float64
	rate  float64 // per second
	rl    tokenBucket
	rlOn  bool
	low   float64 // share of low-priority roots (Entry.LowPriority)
	lowR  stream
}

// job is one attempt at its callee: network, queue, work, children.
type job struct {
	// A job is 64 bytes, a cache line: 4-byte fields, then depth and the
	// flags, then ticks. A collapse holds hundreds of thousands of jobs
	// at once, and the kernel zeroes each page they take, so every byte
	// here costs, and a job that straddles two lines costs two misses.
	gen uint32
	// link is the caller's link and linkSeq its attempt's sequence. A
	// lean attempt (Engine.call) keeps no link: link holds its calling
	// job as ^parent (negative, which marks it lean) and linkSeq the
	// caller's generation (see leanCaller).
	link    int32
	linkSeq uint32
	rep     int32
	stage   int32 // the stage running (or next to run)
	pending int32 // outstanding synchronous calls of this stage
	issues  int32 // issue records of this stage
	// kids is the first child link (doubly linked through
	// link.prev/next) in a model with children lists (Engine.kids). Lean
	// attempts exist only in models without them, so a lean attempt
	// keeps its caller's issue record (or -1) here instead.
	kids int32
	flow int32 // the flow of its request (read only when flows are kept)
	// zoff is how long the job had run when its caller gave up, if it
	// gave up after the job started, else 0: its zombie work began
	// then. zoffBig: the offset is in Engine.bigZoff (see setZoff).
	zoff  uint32
	route int32 // the route it came by (Engine.routes); its callee is the job's node
	// depth is the calls between the root and this one: at most
	// maxDepth+1, as runStages stops a job at maxDepth from calling.
	depth int8

	state     uint8
	abandoned bool
	fl        uint8 // jfFailed, jfChildFail, jfLow, jfRefused

	arrive int64
	// start is when the job took its slot. Before that, while queued, it
	// holds the next queued job's index (qnext, setQnext): a job is in a
	// queue or started, never both.
	start int64
}

// Job flags (job.fl), in one byte so that a job fits a cache line.
const (
	jfFailed    uint8 = 1 << iota // failed on its own (overload, a drawn failure)
	jfChildFail                   // a call of its failed: it fails too
	jfLow                         // a call of a low-priority request
	jfRefused                     // refused at its node's wait cap while queued: leaves unserved
)

func (jb *job) failed() bool    { return jb.fl&jfFailed != 0 }
func (jb *job) childFail() bool { return jb.fl&jfChildFail != 0 }
func (jb *job) low() bool       { return jb.fl&jfLow != 0 }
func (jb *job) refused() bool   { return jb.fl&jfRefused != 0 }

// lowFlag is jfLow for a low-priority request, else 0.
func lowFlag(low bool) uint8 {
	if low {
		return jfLow
	}
	return 0
}

// rt is the route job jb came by.
func (e *Engine) rt(jb *job) *route { return &e.routes[jb.route] }

// qnext is the job queued after jb, or -1 (while jb is queued).
func (jb *job) qnext() int32 { return int32(jb.start) }

// setQnext makes j the job queued after jb (-1: none).
func (jb *job) setQnext(j int32) { jb.start = int64(j) }

// zoffBig marks a job's zoff kept in Engine.bigZoff.
const zoffBig = 1<<32 - 1

// setZoff notes that job j (record jb) had run d ticks when its caller
// gave up. An offset of 2^32−1 ticks or more (a run can be 2^40 ticks
// long) goes to a map, so that the job keeps four bytes for it.
func (e *Engine) setZoff(j int32, jb *job, d int64) {
	if d < zoffBig {
		jb.zoff = uint32(d)
		return
	}
	jb.zoff = zoffBig
	if e.bigZoff == nil {
		e.bigZoff = make(map[int32]int64)
	}
	e.bigZoff[j] = d
}

// zombieFrom is the tick at which job j's (record jb's) work began to
// serve nobody: its start, or when its caller gave up if that was later.
func (e *Engine) zombieFrom(j int32, jb *job) int64 {
	if jb.zoff == zoffBig {
		return jb.start + e.bigZoff[j]
	}
	return jb.start + int64(jb.zoff)
}

// leanCaller is a lean attempt's caller: the calling job, its
// generation and its issue record (or -1).
func (jb *job) leanCaller() (p int32, pgen uint32, is int32) {
	return ^jb.link, jb.linkSeq, jb.kids
}

// Job states.
const (
	jsFree uint8 = iota
	jsNet
	jsQueued
	jsRunning
	jsWaiting
)

// link is the caller's side of one logical call: its attempts, timer and
// retries.
type link struct {
	seq       uint32 // bumped at every attempt and at the end: stale events carry an old one
	parent    int32  // the calling job, or -1 for roots and async calls
	parentGen uint32
	issue     int32 // the parent's issue record, or -1
	user      int32 // closed-loop user of a root, or -1
	attempt   int32
	job       int32
	jobGen    uint32
	prev      int32
	next      int32
	// flow is the flow of the link's request (-1 none, or when flows
	// are not kept); its attempts take it (job.flow).
	flow int32
	// depth is its jobs' depth when it has no parent (async calls):
	// at most maxDepth+1, as a job's.
	depth   int8
	live    bool
	waiting bool // an attempt is out and its answer not yet in
	low     bool // for a low-priority request

	// rt is its route; its index, which only a timer needs, is rt.self.
	// The link keeps no copy of the index, and its depth is a byte: it
	// is 80 bytes, not 88, and a collapse holds one for each call in
	// progress.
	rt      *route
	pj      *job // the calling job's record (valid while parentGen matches), or nil
	first   int64
	backoff float64 // previous backoff (decorrelated jitter)
}

// issue is a job's progress on one synchronous edge of a stage.
type issue struct {
	job     int32
	jobGen  uint32
	jp      *job // the job's record
	edge    int32
	left    int32 // calls not yet issued
	active  int32 // calls issued and not finished
	next    int32 // the job's next issue record
	wnext   int32 // next waiter of a shared pool
	waiting bool  // queued at a shared pool
	dead    bool  // the job is gone; free when it leaves the pool queue
}

type user struct {
	retireAt int64 // surge users retire after this tick; -1 never
	pauseAt  int64 // paused users sleep in [pauseAt, resumeAt)
	resumeAt int64
	sentAt   int64 // tick of the user's last request
}

// timer is one attempt's deadline.
type timer struct {
	at   int64
	link int32
	seq  uint32
}

// NewEngine checks the model and the configuration and builds an engine.
// The model must not change while the engine is in use.
func NewEngine(m *cascade.Model, cfg Config) (*Engine, error) {
	if cfg.Seeds == 0 {
		cfg.Seeds = 1
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	e := &Engine{cfg: cfg, model: m, maxJobs: maxJobs}
	e.tickMS = float64(cfg.Tick) / 1e6
	e.perMS = 1 / e.tickMS
	switch {
	case cfg.Drain == 0:
		cfg.Drain = DrainFor(m)
	case cfg.Drain < 0:
		cfg.Drain = 0
	}
	e.cfg.Drain = cfg.Drain
	e.end = e.ticks(float64(cfg.Duration+cfg.Drain) / 1e6)
	if err := e.build(); err != nil {
		return nil, err
	}
	return e, nil
}

// curveLoad is the rate (per second, per replica) at which calls have
// been starting at n, a node with a load curve, before this one; it
// counts this one for the next.
func (e *Engine) curveLoad(n *node) float64 {
	x := n.crate * math.Exp(-float64(e.now-n.clast)/n.ctau)
	n.crate, n.clast = x+1, e.now
	return x * n.cper
}

// batcher is a batching publisher's pending publishes (cascade.Batch).
type batcher struct {
	route  int32 // its route's index, the linger event's id
	size   int
	linger int64 // ticks
	gen    uint32
	buf    []pendingPub
}

type pendingPub struct {
	l   int32
	seq uint32
}
