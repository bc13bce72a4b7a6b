package replay

// This file builds an engine from its model and configuration (build,
// with its routes and service distributions) and resets it for a seed.

import (
	"math"
	"sort"

	"cascade"
)

// build compiles e.model into the engine's nodes, edges, routes and
// entries under e.cfg, phase by phase.
func (e *Engine) build() error {
	index := e.nodeIndex()
	if err := e.buildNodes(); err != nil {
		return err
	}
	e.buildReplicas(index)
	e.buildEdges(index)
	rates := e.buildEntries(index)
	e.buildBrokers(index)
	e.linkRoutes()
	e.setLean(true)
	if err := e.buildTraffic(rates); err != nil {
		return err
	}
	e.m.init(e)
	return nil
}

// nodeIndex maps the model's node names to their indices.
func (e *Engine) nodeIndex() map[string]int32 {
	m := e.model
	index := make(map[string]int32, len(m.Nodes))
	for i := range m.Nodes {
		index[m.Nodes[i].Name] = int32(i)
	}
	return index
}

// buildNodes compiles each model node into e.nodes.
func (e *Engine) buildNodes() error {
	m := e.model
	e.nodes = make([]node, len(m.Nodes))
	for i := range m.Nodes {
		if err := e.buildNode(&e.nodes[i], &m.Nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

// buildNode compiles one node: its capacity and service, then the
// mechanisms it has.
func (e *Engine) buildNode(n *node, mn *cascade.Node) error {
	n.name = mn.Name
	n.replicas = int32(mn.Replicas)
	n.conc = int32(mn.Concurrency)
	n.qcap = int32(mn.QueueCap)
	n.shedLow = math.MaxInt32
	if mn.ShedLowAt > 0 {
		n.shedLow = int32(min(mn.ShedLowAt, math.MaxInt32))
	}
	n.capacity = float64(mn.Replicas * mn.Concurrency)
	svc, err := e.serviceDist(mn)
	if err != nil {
		return err
	}
	n.svc = compileDist(&svc)
	if mn.FailService != nil {
		n.failSvc, n.failSvcOn = compileDist(mn.FailService), true
	}
	n.svcBatched = !n.svc.deterministic() && !n.failSvcOn
	n.perMS = e.perMS
	n.over = mn.Overload
	n.overOn = mn.Overload.Base > 0 || mn.Overload.Slope > 0
	if g := mn.Overload.Gaps; g != nil {
		n.gaps, n.gapsOn, n.countdown = compileDist(g), true, 0
		n.overOn = true
	}
	switch mn.LoadBalancer {
	case "random":
		n.lb = lbRandom
	case "least-loaded":
		n.lb = lbLeastLoaded
	case "p2c":
		n.lb = lbP2C
	}
	e.buildLoadMechanisms(n, mn)
	n.deadline = mn.DeadlinePropagation
	if b := mn.Breaker; b != nil {
		n.brkOn = true
		n.brk.init(b, e)
	}
	return nil
}

// buildLoadMechanisms compiles the node's wait cap, contention and load
// curve.
func (e *Engine) buildLoadMechanisms(n *node, mn *cascade.Node) {
	if mn.WaitCapMS > 0 {
		n.wcap = max(1, int64(math.Round(mn.WaitCapMS*e.perMS)))
	}
	if mn.WaitSlowdown > 0 {
		// The generic path (start) draws the service time there.
		n.wslow, n.svcBatched = mn.WaitSlowdown, false
	}
	if c := mn.LoadCurve; c != nil {
		// Every call reads the load at its start: the generic path
		// (start), with the service time drawn there.
		n.curve = c
		_, n.curveFail = c.FailAt(0)
		n.ctau = c.WindowMS * e.perMS
		n.cper = 1000 / c.WindowMS / float64(mn.Replicas)
		n.overOn, n.svcBatched = true, false
	}
}

// buildReplicas gives each node its replicas: the shared ones, then,
// for each edge with a bulkhead, slots of its own at every replica of
// the callee (buildEdges sets their concurrency).
func (e *Engine) buildReplicas(index map[string]int32) {
	m := e.model
	parts := make([]int32, len(m.Nodes))
	bulk := make([]float64, len(m.Nodes)) // bulkhead slots per replica
	for i := range m.Edges {
		if b := m.Edges[i].Bulkhead; b > 0 {
			to := index[m.Edges[i].To]
			parts[to]++
			bulk[to] += float64(min(b, math.MaxInt32))
		}
	}
	for i := range m.Nodes {
		n := &e.nodes[i]
		n.reps = make([]replica, m.Nodes[i].Replicas*int(1+parts[i]))
		for r := range n.reps[:n.replicas] {
			n.reps[r].conc = n.conc
		}
		if n.conc > 0 {
			n.capacity = float64(n.replicas) * (float64(n.conc) + bulk[i])
		}
	}
}

// edgeOrder is the model's edge indices grouped per caller by stage
// (Model.Sort order is not assumed).
func (e *Engine) edgeOrder() []int {
	m := e.model
	order := make([]int, len(m.Edges))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := &m.Edges[order[a]], &m.Edges[order[b]]
		if ea.From != eb.From {
			return ea.From < eb.From
		}
		return ea.Stage < eb.Stage
	})
	return order
}

// buildEdges compiles the edges and their routes, in edgeOrder, and
// places each edge at its callee (bulkhead slots) and in its caller
// (shared pool, stage).
func (e *Engine) buildEdges(index map[string]int32) {
	m := e.model
	e.edges = make([]edge, len(m.Edges))
	e.routes = make([]route, len(m.Edges)+len(m.Entries))
	for i := range e.routes {
		e.routes[i].self = int32(i)
	}
	parts := make([]int32, len(m.Nodes)) // bulkheads placed per callee
	lastStage := map[int32]int{}
	for _, i := range e.edgeOrder() {
		e.buildEdge(i, index)
		e.placeEdge(i, parts, lastStage)
	}
	for i := range e.nodes {
		n := &e.nodes[i]
		n.poolv = make([]pool, int(n.pools*n.replicas))
	}
}

// buildEdge compiles model edge i and its route.
func (e *Engine) buildEdge(i int, index map[string]int32) {
	me := &e.model.Edges[i]
	ed := &e.edges[i]
	ed.from, ed.to = index[me.From], index[me.To]
	ed.async = me.Async
	ed.fan = compileDist(&me.FanOut)
	ed.par = int32(me.Parallelism)
	ed.shared = me.SharedPool && me.Parallelism > 0 && !me.Async
	if f := me.Fallback; f != nil && f.Probability > 0 {
		ed.fb, ed.fbOn = f.Probability, true
	}
	if me.Availability != nil {
		ed.availOn = true
		ed.avail.init(me.Availability, e)
	}
	r := &e.routes[i]
	r.to = ed.to
	r.edge, r.entry = int32(i), -1
	e.initRoute(r, me.NetworkMS, me.TimeoutMS, me.Retry)
	r.prop = me.Propagation
}

// placeEdge gives edge i its bulkhead's slots at the callee (after the
// parts[callee] bulkheads placed before it), its caller's next shared
// pool, and its place in the caller's stages (lastStage is the stage of
// each caller's last edge).
func (e *Engine) placeEdge(i int, parts []int32, lastStage map[int32]int) {
	me := &e.model.Edges[i]
	ed, r := &e.edges[i], &e.routes[i]
	if me.Bulkhead > 0 {
		callee := &e.nodes[ed.to]
		parts[ed.to]++
		r.base = parts[ed.to] * callee.replicas
		for k := range callee.replicas {
			callee.reps[r.base+k].conc = int32(min(me.Bulkhead, math.MaxInt32))
		}
	}
	n := &e.nodes[ed.from]
	if ed.shared {
		ed.pool = n.pools
		n.pools++
	}
	if st, ok := lastStage[ed.from]; !ok || st != me.Stage || len(n.stages) == 0 {
		n.stages = append(n.stages, nil)
		lastStage[ed.from] = me.Stage
	}
	n.stages[len(n.stages)-1] = append(n.stages[len(n.stages)-1], int32(i))
}

// buildEntries compiles the entries, their shares of the arrivals and
// their routes (after the edges' in e.routes), and returns the sum of
// their rates.
func (e *Engine) buildEntries(index map[string]int32) (rates float64) {
	m := e.model
	e.entries = make([]entry, len(m.Entries))
	var shares float64
	for i := range m.Entries {
		shares += m.Entries[i].Share
		rates += m.Entries[i].RatePerSec
	}
	e.entryCum = make([]float64, len(m.Entries))
	var cum float64
	for i := range m.Entries {
		me := &m.Entries[i]
		en := &e.entries[i]
		en.node = index[me.Node]
		en.rate = me.RatePerSec
		switch {
		case shares > 0:
			en.share = me.Share / shares
		case rates > 0:
			en.share = me.RatePerSec / rates
		default:
			en.share = 1 / float64(len(m.Entries))
		}
		cum += en.share
		e.entryCum[i] = cum
		if rl := me.RateLimit; rl != nil {
			en.rlOn = true
			en.rl.init(rl.RatePerSec, rl.Burst, e)
		}
		en.low = me.LowPriority
		r := &e.routes[len(m.Edges)+i]
		r.to = en.node
		r.edge, r.entry = -1, int32(i)
		e.initRoute(r, me.NetworkMS, me.TimeoutMS, me.Retry)
		r.prop = 1
	}
	e.entryCum[len(e.entryCum)-1] = 1
	return rates
}

// linkRoutes points each route at its callee and edge, marks which
// calls are guarded, plain and direct, and whether the engine keeps
// children lists (e.kids).
func (e *Engine) linkRoutes() {
	m := e.model
	for i := range e.routes {
		r := &e.routes[i]
		r.callee = &e.nodes[r.to]
		r.pub = r.callee.mq >= 0
		if r.edge >= 0 {
			r.ed = &e.edges[r.edge]
			r.failBlocked = r.pub && m.Edges[r.edge].FailBlocked
			if r.failBlocked {
				r.heldMax = int32(min(m.Edges[r.edge].HeldAtAlarm, math.MaxInt32))
			}
			if b := m.Edges[r.edge].Batch; r.pub && b != nil && b.Size > 1 {
				r.batch = &batcher{route: int32(i), size: b.Size, linger: max(1, e.ticks(b.LingerMS))}
			}
		}
		r.guarded = r.pub || e.nodes[r.to].brkOn ||
			(r.edge >= 0 && e.edges[r.edge].availOn) || (r.entry >= 0 && e.entries[r.entry].rlOn)
		// A call fails when it is turned away, or (below) its callee
		// fails it; it is abandoned only when its caller times out.
		e.kids = e.kids || r.guarded || r.timeout > 0
		// Engine.call takes the shared pool's slots: a bulkhead's calls
		// go through send and arrive.
		r.plain = !r.guarded && r.timeout == 0 && !r.netOn && !r.retry.budgetOn && r.base == 0
		if ed := r.ed; ed != nil {
			ed.rt = r
			ed.direct = r.plain && !ed.async && !ed.shared && ed.fan.kind == sFixed &&
				ed.fan.n >= 1 && (ed.par == 0 || int32(ed.fan.n) <= ed.par)
		}
	}
	for i := range e.nodes {
		n := &e.nodes[i]
		e.kids = e.kids || n.overOn || n.qcap > 0 || n.brkOn
	}
}

// setLean marks the routes whose calls take the lean path (route.lean and
// route.leaf), or none when on is false: the tests compare the two.
func (e *Engine) setLean(on bool) {
	for i := range e.routes {
		r := &e.routes[i]
		r.lean = on && r.plain && r.edge >= 0 && !e.kids && !r.callee.overOn && r.callee.wslow == 0
		r.leaf = r.lean && len(r.callee.stages) == 0
		r.done = evJobDone
		if r.leaf {
			r.done = evLeafDone
		}
	}
}

func (e *Engine) initRoute(r *route, net *cascade.Dist, timeoutMS float64, rt *cascade.Retry) {
	if net != nil {
		r.net = compileDist(net)
		r.netOn = !(r.net.deterministic() && r.net.a == 0)
	}
	r.timeout = e.ticks(timeoutMS)
	r.retry.init(rt)
}

// serviceDist is the node's service distribution under Config.Tier.
func (e *Engine) serviceDist(n *cascade.Node) (cascade.Dist, error) {
	t := n.Tiers
	if e.cfg.Tier == "" || t == nil {
		return n.Service, nil
	}
	var d cascade.Dist
	switch e.cfg.Tier {
	case "p50":
		d = cascade.Const(t.P50)
	case "p95":
		d = cascade.Const(t.P95)
	case "p99":
		d = cascade.Const(t.P99)
	case "tiers":
		d = cascade.Dist{Kind: cascade.DistTiers, P50: t.P50, P95: t.P95, P99: t.P99}
	case "empirical":
		if len(t.Points) == 0 {
			return n.Service, nil
		}
		d = cascade.Dist{Kind: cascade.DistEmpirical, Points: t.Points}
	}
	if err := d.Validate("nodes." + n.Name + ".tiers"); err != nil {
		return d, err
	}
	return d, nil
}

// reset prepares the engine for a run with seed.
func (e *Engine) reset(seed uint64) {
	e.seed = seed
	e.now = 0
	e.q.reset()
	e.jobs.reset()
	e.links.reset()
	e.njobs = 0
	e.issues.reset()
	reseed := func(s *stream, purpose, entity uint64) {
		if s.Rand == nil {
			*s = newStream(seed, purpose, entity)
		} else {
			s.reseed(seed, purpose, entity)
		}
	}
	reseed(&e.arrR, streamArrivals, 0)
	for i := range e.nodes {
		n := &e.nodes[i]
		reseed(&n.svcR, streamService, uint64(i))
		reseed(&n.failR, streamFailure, uint64(i))
		reseed(&n.lbR, streamBalance, uint64(i))
		n.rr, n.busy, n.queued, n.countdown = 0, 0, 0, 0
		n.svcK, n.svcRem = svcBatch, 0
		for r := range n.reps {
			rp := &n.reps[r]
			rp.busy, rp.qhead, rp.qtail, rp.qlen = 0, -1, -1, 0
		}
		for p := range n.poolv {
			n.poolv[p] = pool{whead: -1, wtail: -1}
		}
		if n.brkOn {
			n.brk.reset()
		}
	}
	for i := range e.edges {
		ed := &e.edges[i]
		reseed(&ed.fanR, streamFanOut, uint64(i))
		reseed(&ed.availR, streamAvailability, uint64(i))
		reseed(&ed.propR, streamFailure, 1<<20|uint64(i))
		if ed.fbOn {
			reseed(&ed.fbR, streamFailure, 2<<20|uint64(i))
		}
		if ed.shared {
			n := &e.nodes[ed.from]
			for r := range n.replicas {
				n.pool(r, ed.pool).free = ed.par
			}
		}
		if ed.availOn {
			ed.avail.reset(e, &ed.availR)
		}
	}
	for i := range e.routes {
		r := &e.routes[i]
		reseed(&r.netR, streamNetwork, uint64(i))
		r.netRem = 0
		reseed(&r.retryR, streamRetry, uint64(i))
		r.retry.reset()
		r.timers, r.timerHead, r.timerArmed = r.timers[:0], 0, false
	}
	for i := range e.entries {
		if e.entries[i].rlOn {
			e.entries[i].rl.reset()
		}
		if e.entries[i].low > 0 {
			reseed(&e.entries[i].lowR, streamPriority, uint64(i))
		}
	}
	e.m.reset(e)
	e.resetBrokers(seed)
	for i := range e.routes {
		r := &e.routes[i]
		if b := r.batch; b != nil {
			b.buf, b.gen = b.buf[:0], 0
		}
		r.heldN, r.heldAt = 0, -1
	}
}
