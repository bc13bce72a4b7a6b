package replay

import (
	"math"
	"slices"

	"cascade"
)

// metrics accumulates a run's measurements as events happen; windowed
// values are time-weighted integrals updated at each change of state.
//
// A node's integrals of busy and queued calls per window are kept ahead
// of time: the level at any moment is assumed to hold to the end of the
// window (or of the replay), and a change of δ at tick t adds δ·(stop − t)
// to the window's integral, where stop is the window's end. Entering a
// window credits it with the level times its length. The sums are the
// same integers as piecewise level·duration sums, for one multiply-add
// per change instead of a piece per change.
type metrics struct {
	win   int64 // ticks per window
	nWin  int
	curW  int   // the window of e.now
	wEnd  int64 // end of window curW
	roots int64

	succeeded, failed int64
	calls, retries    int64
	timeouts          int64
	rejectedQueue     int64
	rejectedBreaker   int64
	rejectedLimit     int64
	unavailable       int64
	starts            int64
	zombies           int64
	cancelled         int64
	late              int64
	truncated         int64
	degraded          int64
	shed              int64
	lowRoots          int64
	lowSucceeded      int64
	lowFailed         int64
	aborted           bool
	slotTicks         int64
	zombieTicks       int64
	// flows counts the flows that ended, flowsOK the successful ones,
	// and flowLat their completion times, in ticks.
	flows, flowsOK int64
	flowLat        hist
	// arrTicks is the end of Config.Duration, in ticks; goodByEnd counts
	// the roots that succeeded before it, which goodput is made of.
	arrTicks, goodByEnd int64

	latency hist
	offered []int64
	succW   []int64
	failW   []int64
}

type nodeMetrics struct {
	// What every call and finish reads or changes comes first (see
	// node), the latency histogram's octave pointers last of it.
	w           int     // window of the last change of level
	wEnd        int64   // end of window w
	stop        int64   // min(wEnd, end of the replay): the current level holds to here
	bInt        []int64 // Σ busy·ticks per window
	wCalls      []int64
	calls       int64
	inflightMax int
	latency     hist

	qInt   []int64 // Σ queued·ticks per window
	wFails []int64

	failures, rejected    int64
	timeouts, zombies     int64
	cancelled, degraded   int64
	queueMax, queueMaxRep int
}

func (m *metrics) init(e *Engine) {
	m.win = max(1, e.ticks(float64(e.cfg.Window)/1e6))
	m.arrTicks = e.ticks(float64(e.cfg.Duration) / 1e6)
	m.nWin = int((e.end + m.win - 1) / m.win)
	m.offered = make([]int64, m.nWin+1)
	m.succW = make([]int64, m.nWin+1)
	m.failW = make([]int64, m.nWin+1)
	m.latency.spare = &e.octs
	m.flowLat.spare = &e.octs
	for i := range e.nodes {
		nm := &e.nodes[i].nm
		nm.latency.spare = &e.octs
		nm.qInt = make([]int64, m.nWin+1)
		nm.bInt = make([]int64, m.nWin+1)
		nm.wCalls = make([]int64, m.nWin+1)
		nm.wFails = make([]int64, m.nWin+1)
	}
}

func (m *metrics) reset(e *Engine) {
	lat, fl, off, sw, fw := m.latency, m.flowLat, m.offered, m.succW, m.failW
	win, nWin, arr := m.win, m.nWin, m.arrTicks
	*m = metrics{win: win, nWin: nWin, arrTicks: arr, latency: lat, flowLat: fl, offered: off, succW: sw, failW: fw, wEnd: win}
	m.latency.reset()
	m.flowLat.reset()
	clear(m.offered)
	clear(m.succW)
	clear(m.failW)
	for i := range e.nodes {
		nm := &e.nodes[i].nm
		l := nm.latency
		l.reset()
		*nm = nodeMetrics{latency: l, qInt: nm.qInt, bInt: nm.bInt, wCalls: nm.wCalls, wFails: nm.wFails,
			wEnd: win, stop: min(win, e.end)}
		clear(nm.qInt)
		clear(nm.bInt)
		clear(nm.wCalls)
		clear(nm.wFails)
	}
}

// window returns the window of e.now.
func (e *Engine) window() int {
	m := &e.m
	for e.now >= m.wEnd {
		m.curW++
		m.wEnd += m.win
	}
	return m.curW
}

func (m *metrics) rootOffered(e *Engine) {
	m.roots++
	m.offered[e.window()]++
}

func (m *metrics) rootDone(e *Engine, ok bool, lat int64) {
	w := e.window()
	if ok {
		m.succeeded++
		if e.now < m.arrTicks {
			m.goodByEnd++
		}
		m.succW[w]++
		// m.latency.add(lat), by hand (see finish).
		h := &m.latency
		o, s := histBucket(uint64(max(lat, 0)))
		c := h.oct[o]
		if c == nil {
			c = h.grow(o)
		}
		c[s&(1<<histSub-1)]++
		h.n++
		return
	}
	m.failed++
	m.failW[w]++
}

// lowDone records the end of a low-priority root request.
func (m *metrics) lowDone(ok bool) {
	if ok {
		m.lowSucceeded++
		return
	}
	m.lowFailed++
}

// busyAdd changes n.busy (all replicas) by d at e.now.
func (e *Engine) busyAdd(n *node, d int32) {
	nm := &n.nm
	if e.now >= nm.wEnd {
		e.roll(n)
	}
	n.busy += d
	nm.bInt[nm.w] += int64(d) * (nm.stop - e.now)
}

// queuedAdd changes n.queued (all replicas) by d at e.now.
func (e *Engine) queuedAdd(n *node, d int32) {
	nm := &n.nm
	if e.now >= nm.wEnd {
		e.roll(n)
	}
	n.queued += d
	nm.qInt[nm.w] += int64(d) * (nm.stop - e.now)
}

// roll moves node n's integrals into the window of e.now, crediting each
// window it enters with the level held over its whole length.
func (e *Engine) roll(n *node) {
	nm := &n.nm
	q, b := int64(n.queued), int64(n.busy)
	for e.now >= nm.wEnd && nm.w+1 < len(nm.qInt) {
		start := nm.wEnd
		nm.w++
		nm.wEnd += e.m.win
		nm.stop = min(nm.wEnd, e.end)
		if span := nm.stop - start; span > 0 {
			nm.qInt[nm.w] += q * span
			nm.bInt[nm.w] += b * span
		}
	}
}

func (e *Engine) nodeCall(n *node) {
	n.nm.calls++
	n.nm.wCalls[e.window()]++
}

func (e *Engine) nodeFail(n *node) {
	n.nm.failures++
	n.nm.wFails[e.window()]++
}

func (e *Engine) nodeReject(n *node) {
	n.nm.rejected++
	e.nodeFail(n)
}

// result assembles the run's Result.
func (e *Engine) result() *Result {
	m := &e.m
	for i := range e.nodes {
		if n := &e.nodes[i]; e.now >= n.nm.wEnd {
			e.roll(n)
		}
	}
	durMS := min(e.ms(e.end), float64(e.cfg.Duration)/1e6)
	secs := durMS / 1000
	scen := e.cfg.Scenario
	if scen == "" {
		scen = "baseline"
	}
	res := &Result{}
	o := &res.Outcome
	o.Seed = e.seed
	o.Scenario = scen
	o.DurationMS = durMS
	o.DrainMS = e.ms(e.end) - durMS
	o.Roots = m.roots
	o.Succeeded = m.succeeded
	o.Unfinished = m.roots - m.succeeded - m.failed
	o.SuccessRate = ratio(m.succeeded, m.roots)
	o.Goodput = float64(m.goodByEnd) / secs
	o.OfferedRate = float64(m.roots) / secs
	o.LatencyP50MS = e.ms1(m.latency.quantile(0.50))
	o.LatencyP95MS = e.ms1(m.latency.quantile(0.95))
	o.LatencyP99MS = e.ms1(m.latency.quantile(0.99))
	o.Amplification = ratio(m.calls, m.roots)
	o.RetryShare = ratio(m.retries, m.calls)
	o.ZombieShare = ratio(m.zombieTicks, m.slotTicks)
	o.RejectedShare = ratio(m.rejectedQueue+m.shed+m.rejectedBreaker+m.rejectedLimit, m.calls)
	res.Counts = Counts{
		Roots: m.roots, Succeeded: m.succeeded, Failed: m.failed,
		InFlight: m.roots - m.succeeded - m.failed,
		Calls:    m.calls, Retries: m.retries, Timeouts: m.timeouts,
		RejectedQueue: m.rejectedQueue, RejectedBreaker: m.rejectedBreaker,
		RejectedLimit: m.rejectedLimit, Unavailable: m.unavailable,
		Executions: m.starts, Zombies: m.zombies, Cancelled: m.cancelled,
		Late: m.late, Truncated: m.truncated, Degraded: m.degraded, Shed: m.shed,
		LowRoots: m.lowRoots, LowSucceeded: m.lowSucceeded, LowFailed: m.lowFailed,
		Events: e.q.count, Aborted: m.aborted,
	}
	winMS := e.ms(m.win)
	res.Series = RootSeries{
		WindowMS:  winMS,
		Offered:   slices.Clone(m.offered[:m.nWin]),
		Succeeded: slices.Clone(m.succW[:m.nWin]),
		Failed:    slices.Clone(m.failW[:m.nWin]),
	}
	arrived := e.arrivalSeries(res.Series)
	o.CollapseAtMS, o.RecoverMS = e.collapse(arrived)
	o.BacklogPerSec, o.Overloaded = backlog(arrived)
	o.Overloaded = o.Overloaded && o.Unfinished > 0

	order := make([]int, len(e.nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case e.nodes[a].name < e.nodes[b].name:
			return -1
		case e.nodes[a].name > e.nodes[b].name:
			return 1
		}
		return 0
	})
	o.Nodes = make([]cascade.NodeOutcome, 0, len(e.nodes))
	res.NodeCounts = make([]NodeCounts, 0, len(e.nodes))
	for _, i := range order {
		n := &e.nodes[i]
		o.Nodes = append(o.Nodes, e.nodeOutcome(n))
		nc := NodeCounts{
			Name: n.name, InFlightMax: n.nm.inflightMax, QueueMaxReplica: n.nm.queueMaxRep,
			Timeouts: n.nm.timeouts, Zombies: n.nm.zombies, Cancelled: n.nm.cancelled,
			Degraded:      n.nm.degraded,
			LatencyMeanMS: e.ms1(n.nm.latency.mean()),
		}
		if n.brkOn {
			nc.BreakerOpened = n.brk.opened
		}
		if n.capacity > 0 {
			q, b, span := e.levels(n)
			nc.MeanLoad = round6(float64(q+b) / (float64(span) * n.capacity))
		}
		res.NodeCounts = append(res.NodeCounts, nc)
	}
	roundOutcome(o)
	e.brokerResults(o)
	return res
}

// levels sums node n's queued and busy integrals over the windows of
// the arrivals (Config.Duration, not the drain, whose idle time would
// thin them out), and returns the ticks they span.
func (e *Engine) levels(n *node) (q, b, span int64) {
	m := &e.m
	nw := int(math.Round(float64(e.ticks(float64(e.cfg.Duration)/1e6)) / float64(m.win)))
	nw = max(1, min(nw, m.nWin))
	for w := 0; w < nw; w++ {
		q += n.nm.qInt[w]
		b += n.nm.bInt[w]
	}
	return q, b, max(1, min(e.end, int64(nw)*m.win))
}

func (e *Engine) nodeOutcome(n *node) cascade.NodeOutcome {
	m := &e.m
	nm := &n.nm
	no := cascade.NodeOutcome{
		Name: n.name, Calls: nm.calls, Failures: nm.failures, Rejected: nm.rejected,
		QueueMax:     nm.queueMax,
		LatencyP50MS: e.ms1(nm.latency.quantile(0.5)),
		LatencyP95MS: e.ms1(nm.latency.quantile(0.95)),
		LatencyP99MS: e.ms1(nm.latency.quantile(0.99)),
	}
	q, b, span := e.levels(n)
	no.QueueMean = float64(q) / float64(span)
	if n.capacity > 0 {
		no.Utilisation = float64(b) / (float64(span) * n.capacity)
	}
	// Spread: windows where the failure rate or the load passed the
	// infection threshold.
	var infected int
	for w := 0; w < m.nWin; w++ {
		span := min(e.end, int64(w+1)*m.win) - int64(w)*m.win
		hit := nm.wCalls[w] > 0 && float64(nm.wFails[w]) >= e.cfg.InfectFailureRate*float64(nm.wCalls[w])
		if n.capacity > 0 && float64(nm.qInt[w]+nm.bInt[w]) >= e.cfg.InfectLoad*n.capacity*float64(span) {
			hit = true
		}
		if hit {
			if !no.Infected {
				no.Infected = true
				no.InfectedAtMS = e.ms(int64(w) * m.win)
			}
			infected++
		}
	}
	no.InfectedForMS = float64(infected) * e.ms(m.win)
	if e.cfg.Series {
		s := &cascade.NodeSeries{WindowMS: e.ms(m.win)}
		for w := 0; w < m.nWin; w++ {
			span := float64(min(e.end, int64(w+1)*m.win) - int64(w)*m.win)
			s.QueueDepth = append(s.QueueDepth, round6(float64(nm.qInt[w])/span))
			s.InFlight = append(s.InFlight, round6(float64(nm.bInt[w])/span))
			u := 0.0
			if n.capacity > 0 {
				u = float64(nm.bInt[w]) / (span * n.capacity)
			}
			s.Utilisation = append(s.Utilisation, round6(u))
			s.Failures = append(s.Failures, nm.wFails[w])
			s.Calls = append(s.Calls, nm.wCalls[w])
		}
		no.Series = s
	}
	return no
}

// collapse finds when goodput fell under half the offered load for good,
// and how long after the trigger (the last surge, else the last
// scheduled partition) it took goodput to return to 90% of offered.
//
// Offered counts roots by arrival and Succeeded by completion, so a
// healthy replay's last windows can fall short by chance when few roots
// arrive per window or requests are still in flight at the end: a run
// counts as a collapse only when it lasts at least collapseWindows
// windows and was offered at least collapseRoots roots.
func (e *Engine) collapse(rs RootSeries) (collapseAt, recover float64) {
	collapseAt, recover = -1, -1
	var offered int64
	run := 0
	for w := len(rs.Offered) - 1; w >= 0; w-- {
		if rs.Offered[w] > 0 && float64(rs.Succeeded[w]) < 0.5*float64(rs.Offered[w]) {
			collapseAt = float64(w) * rs.WindowMS
			offered += rs.Offered[w]
			run++
			continue
		}
		break
	}
	if run < collapseWindows || offered < collapseRoots {
		collapseAt = -1
	}
	trigger := -1.0
	for _, s := range e.traffic.Surges {
		trigger = math.Max(trigger, s.AtMS+s.ForMS)
	}
	if trigger < 0 {
		for i := range e.model.Edges {
			if a := e.model.Edges[i].Availability; a != nil {
				for _, p := range a.Partitions {
					trigger = math.Max(trigger, p.AtMS+p.ForMS)
				}
			}
		}
	}
	if trigger < 0 {
		return collapseAt, -1
	}
	for w := range rs.Offered {
		start := float64(w) * rs.WindowMS
		if start < trigger || rs.Offered[w] == 0 {
			continue
		}
		if float64(rs.Succeeded[w]) >= 0.9*float64(rs.Offered[w]) {
			return collapseAt, start - trigger
		}
	}
	return collapseAt, -1
}

// arrivalSeries is rs cut to the windows that end by the arrivals' end
// (the last, partial one included when arrivals filled most of it): the
// drain's windows offer nothing and say nothing of collapse or backlog.
func (e *Engine) arrivalSeries(rs RootSeries) RootSeries {
	n := int(math.Round(e.arrEnd / rs.WindowMS))
	n = max(1, min(n, len(rs.Offered)))
	return RootSeries{WindowMS: rs.WindowMS, Offered: rs.Offered[:n], Succeeded: rs.Succeeded[:n], Failed: rs.Failed[:n]}
}

// backlog measures how fast the root requests not yet ended grew over
// the second half of the arrivals (the first half lets a healthy system
// fill its pipeline): offered minus ended over that time, per second.
// The backlog grew for real when that difference passes three standard
// deviations of Poisson counts, sqrt(offered + ended): in a system that
// keeps up the two counts differ only by the requests in flight at the
// half's two ends.
func backlog(rs RootSeries) (perSec float64, grows bool) {
	n := len(rs.Offered)
	from := n / 2
	if n-from < 2 {
		return 0, false
	}
	var offered, ended int64
	for w := from; w < n; w++ {
		offered += rs.Offered[w]
		ended += rs.Succeeded[w] + rs.Failed[w]
	}
	secs := float64(n-from) * rs.WindowMS / 1000
	d := float64(offered - ended)
	return d / secs, d > 3*math.Sqrt(float64(offered+ended))
}

// The least a trailing run of starved windows must hold to be a collapse.
const (
	collapseWindows = 3
	collapseRoots   = 20
)

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ms1 converts a tick value to milliseconds.
func (e *Engine) ms1(t float64) float64 { return t * e.tickMS }

// round6 rounds to 6 significant decimals so JSON output is short and
// stable.
func round6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 6-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

func roundOutcome(o *cascade.Outcome) {
	for _, f := range []*float64{&o.DurationMS, &o.DrainMS, &o.SuccessRate, &o.Goodput, &o.OfferedRate, &o.BacklogPerSec,
		&o.LatencyP50MS, &o.LatencyP95MS, &o.LatencyP99MS, &o.Amplification, &o.RetryShare,
		&o.ZombieShare, &o.RejectedShare, &o.CollapseAtMS, &o.RecoverMS} {
		*f = round6(*f)
	}
	for i := range o.Nodes {
		n := &o.Nodes[i]
		for _, f := range []*float64{&n.Utilisation, &n.QueueMean, &n.LatencyP50MS, &n.LatencyP95MS, &n.LatencyP99MS,
			&n.InfectedAtMS, &n.InfectedForMS} {
			*f = round6(*f)
		}
	}
}
