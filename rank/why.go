package rank

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"cascade"
	"cascade/replay"
)

// Cost is what a candidate costs, from its effects: load it sheds and
// latency it adds, in the regime where each is worst.
type Cost struct {
	// RejectedShare is the share of calls the candidate rejects beyond
	// the baseline (full queues, open breakers, rate limits).
	RejectedShare float64 `json:"rejected_share"`
	// ExtraP50MS and ExtraP99MS are the mean increases of the root
	// latency quantiles (0 when they fall).
	ExtraP50MS float64 `json:"extra_p50_ms"`
	ExtraP99MS float64 `json:"extra_p99_ms"`
	// SuccessDrop is the largest mean fall of the success rate, when its
	// interval excludes zero.
	SuccessDrop float64 `json:"success_drop"`
	// Failures says where the success it costs was lost, when it costs
	// success: the node whose own failures rose and why.
	Failures *FailureRise `json:"failures,omitempty"`
	// FlowSuccessDrop is the largest mean fall of the flows' success
	// rate, when its interval excludes zero (models whose replays count
	// flows); Queue says which queue lost the messages and how.
	FlowSuccessDrop float64    `json:"flow_success_drop,omitempty"`
	Queue           *QueueLoss `json:"queue,omitempty"`
	// Text says it in words ("sheds 3.1% of calls; +12 ms p50"), or
	// "none".
	Text string `json:"text"`
}

// FailureRise is the node whose failures rose under a candidate that
// costs success, in the traffic where success falls most.
type FailureRise struct {
	// Node is where the failures begin: the node of the largest rise of
	// failures per root request, followed down to the callee whose rise
	// accounts for it.
	Node string `json:"node"`
	// Baseline and Candidate are its failed calls over its calls.
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Mechanism says why they rose ("its queue fills and turns calls
	// away").
	Mechanism string `json:"mechanism"`
	// Regime is the traffic.
	Regime string `json:"regime"`
}

// costOf reads a candidate's cost from its effects, and where it costs
// success, finds the node whose failures rose in its replays.
func costOf(m *cascade.Model, regimes []Regime, effs []Effect, base, cand [][]*replay.Result) Cost {
	var c Cost
	worst, wr := 0.0, -1
	for _, e := range effs {
		if e.Metric == MetricSuccess && e.Delta.High < 0 && e.Delta.Mean < worst {
			worst = e.Delta.Mean
			wr = slices.IndexFunc(regimes, func(r Regime) bool { return r.Name == e.Regime })
		}
	}
	if wr >= 0 && wr < len(base) && wr < len(cand) {
		c.Failures = failureRise(m, base[wr], cand[wr])
		if c.Failures != nil {
			c.Failures.Regime = regimes[wr].Name
		}
	}
	for _, e := range effs {
		switch e.Metric {
		case MetricRejected:
			c.RejectedShare = math.Max(c.RejectedShare, e.Candidate-e.Baseline)
		case MetricP50:
			c.ExtraP50MS = math.Max(c.ExtraP50MS, e.Delta.Mean)
		case MetricP99:
			c.ExtraP99MS = math.Max(c.ExtraP99MS, e.Delta.Mean)
		case MetricSuccess:
			if e.Delta.High < 0 {
				c.SuccessDrop = math.Max(c.SuccessDrop, -e.Delta.Mean)
			}
		}
	}
	var parts []string
	if c.RejectedShare >= 0.0005 {
		parts = append(parts, fmt.Sprintf("sheds %.1f%% of calls", 100*c.RejectedShare))
	}
	if c.SuccessDrop > 0 {
		s := fmt.Sprintf("success −%.1f pp", 100*c.SuccessDrop)
		if wr > 0 {
			// The largest fall is not under the first traffic, whose
			// figures the answer's "also" line gives: say which it is
			// (issue 39: one number per fact).
			s += " under " + regimes[wr].Name
		}
		if c.RejectedShare >= 0.0005 {
			// A rejected request is a failed one: under closed-loop
			// clients, who ask again after each answer, success falls
			// far more than goodput.
			s += " (shed requests count as failures)"
		}
		if f := c.Failures; f != nil && f.Candidate-f.Baseline >= 0.005 {
			s += fmt.Sprintf(" (%s's failures %s → %s of its calls: %s)", f.Node, pct(f.Baseline), pct(f.Candidate), f.Mechanism)
		} else if f != nil {
			// No node fails a larger share of its calls: the failures
			// grew with the calls, not with a node's trouble.
			s += fmt.Sprintf(" (no node fails a larger share of its calls: %s still fails %s of them, and %s)", f.Node, pct(f.Candidate), f.Mechanism)
		}
		parts = append(parts, s)
	}
	if s := flowCost(m, regimes, effs, base, cand, &c); s != "" {
		parts = append(parts, s)
	}
	if c.ExtraP50MS >= 0.5 {
		parts = append(parts, "+"+ms(round3(c.ExtraP50MS))+" p50")
	}
	if c.ExtraP99MS >= 0.5 {
		parts = append(parts, "+"+ms(round3(c.ExtraP99MS))+" p99")
	}
	c.Text = strings.Join(parts, "; ")
	if c.Text == "" {
		c.Text = "none"
	}
	return c
}

// signal is one per-node quantity compared between baseline and
// candidate; every quantity is one where less is better.
type signal struct {
	rel  float64
	down bool // the candidate lowers it
	text string
	// broker marks a broker's or a queue's own signal (its alarm, its
	// lost messages) rather than a node's.
	broker bool
}

// mechanism explains a candidate's effect: the per-node quantity that
// changes most, relative to its baseline (calls per root, queue maximum,
// failures per root, p99 latency, infected time), or the zombie share,
// compared in the regime where the objective moves most. For a win only
// quantities that fall count, for a worse candidate only those that rise.
// atBroker reports that the quantity is a broker's or a queue's own (its
// memory alarm, its dropped or dead-lettered messages).
func mechanism(m *cascade.Model, o Objective, v Verdict, regimes []Regime, base, cand [][]*replay.Result) (why string, atBroker bool) {
	r := 0
	best := -1.0
	for i := range regimes {
		d := objectiveDiffs(o, base[i:i+1], cand[i:i+1])
		var s float64
		for _, x := range d {
			s += x
		}
		if a := math.Abs(s); a > best {
			r, best = i, a
		}
	}
	callers := map[string][]string{}
	for i := range m.Edges {
		callers[m.Edges[i].To] = append(callers[m.Edges[i].To], m.Edges[i].From)
	}
	entries := map[string]bool{}
	for i := range m.Entries {
		entries[m.Entries[i].Node] = true
	}
	bs, cs := nodeMeans(base[r]), nodeMeans(cand[r])
	var sigs []signal
	add := func(b, c, floor float64, text string) {
		sigs = append(sigs, signal{rel: math.Abs(c-b) / math.Max(math.Abs(b), floor), down: c < b, text: text})
	}
	// A broker's alarm and a queue's lost messages come first: on a tie
	// they are the mechanism the node figures follow from.
	n := len(sigs)
	brokerSignals(m, base[r], cand[r], add)
	for i := n; i < len(sigs); i++ {
		sigs[i].broker = true
	}
	for _, name := range bs.names {
		b, c, ok := bs.at(name), cs.at(name), cs.has(name)
		if !ok {
			continue
		}
		who := name
		switch cl := callers[name]; {
		case len(cl) == 1:
			who = cl[0] + "→" + name
		case len(cl) == 0 && entries[name]:
			who = "client→" + name
		}
		verb := "stops amplifying"
		if c.calls > b.calls {
			verb = "amplifies more"
		}
		add(b.calls, c.calls, 0.05, fmt.Sprintf("%s %s: %s → %s calls per root", who, verb, num(round3(b.calls)), num(round3(c.calls))))
		add(b.queue, c.queue, 1, fmt.Sprintf("%s queue max %s → %s", name, num(round3(b.queue)), num(round3(c.queue))))
		add(b.fails, c.fails, 0.01, fmt.Sprintf("%s failures %s → %s per root", name, num(round3(b.fails)), num(round3(c.fails))))
		add(b.p99, c.p99, 1, fmt.Sprintf("%s p99 %s → %s", name, ms(round3(b.p99)), ms(round3(c.p99))))
		// Infected: a window with twice its slots' worth of calls in it
		// or a tenth of its calls failing (replay.Config.InfectLoad,
		// InfectFailureRate), said in a responder's words.
		add(b.infected, c.infected, 1, fmt.Sprintf("%s saturated or failing for %s of the run; with the change, %s", name, ms(round3(1000*b.infected)), ms(round3(1000*c.infected))))
	}
	var bz, cz float64
	for i := range base[r] {
		bz += base[r][i].ZombieShare / float64(len(base[r]))
		cz += cand[r][i].ZombieShare / float64(len(cand[r]))
	}
	add(bz, cz, 0.01, fmt.Sprintf("zombie work %.0f%% → %.0f%% of slot time", 100*bz, 100*cz))
	top := signal{}
	for _, s := range sigs {
		if v == Win && !s.down || v == Worse && s.down {
			continue
		}
		if s.rel > top.rel {
			top = s
		}
	}
	if top.rel < 0.05 {
		return "no mechanism stands out (per-node calls, queues and failures change by less than 5%)", false
	}
	if r > 0 {
		return top.text + " (" + regimes[r].Name + ")", top.broker
	}
	return top.text, top.broker
}

// nodeStat is a node's mean per-root calls and failures, queue maximum,
// p99 latency and infected seconds over seeds.
type nodeStat struct{ calls, queue, fails, p99, infected float64 }

type nodeStats struct {
	names []string
	by    map[string]nodeStat
}

func (s nodeStats) at(n string) nodeStat { return s.by[n] }
func (s nodeStats) has(n string) bool    { _, ok := s.by[n]; return ok }

func nodeMeans(rs []*replay.Result) nodeStats {
	s := nodeStats{by: map[string]nodeStat{}}
	k := float64(len(rs))
	for _, r := range rs {
		roots := math.Max(1, float64(r.Roots))
		for i := range r.Nodes {
			n := &r.Nodes[i]
			st, ok := s.by[n.Name]
			if !ok {
				s.names = append(s.names, n.Name)
			}
			st.calls += float64(n.Calls) / roots / k
			st.queue += float64(n.QueueMax) / k
			st.fails += float64(n.Failures) / roots / k
			st.p99 += n.LatencyP99MS / k
			st.infected += n.InfectedForMS / 1000 / k
			s.by[n.Name] = st
		}
	}
	return s
}

// nodeLoad is a node's totals over seeds, per root request where it
// counts calls.
type nodeLoad struct {
	calls, fails, rejected, timeouts, breakerOpened float64
	inFlightMax, meanLoad                           float64
}

func nodeLoads(rs []*replay.Result) map[string]nodeLoad {
	out := map[string]nodeLoad{}
	k := float64(len(rs))
	for _, r := range rs {
		roots := math.Max(1, float64(r.Roots))
		for i := range r.Nodes {
			n := &r.Nodes[i]
			l := out[n.Name]
			l.calls += float64(n.Calls) / roots / k
			l.fails += float64(n.Failures) / roots / k
			l.rejected += float64(n.Rejected) / roots / k
			out[n.Name] = l
		}
		for i := range r.NodeCounts {
			nc := &r.NodeCounts[i]
			l := out[nc.Name]
			l.timeouts += float64(nc.Timeouts) / roots / k
			l.breakerOpened += float64(nc.BreakerOpened) / k
			l.inFlightMax += float64(nc.InFlightMax) / k
			l.meanLoad += nc.MeanLoad / k
			out[nc.Name] = l
		}
	}
	return out
}

// failureRise finds where a candidate's lost success begins: the node
// whose failures per root request rose most, followed down, callee by
// callee, to the one whose rise accounts for at least half of its
// caller's (a failure that propagates counts at every caller on its way
// up), and says why its failures rose. Nil when no node's failures rose.
func failureRise(m *cascade.Model, base, cand []*replay.Result) *FailureRise {
	bl, cl := nodeLoads(base), nodeLoads(cand)
	rise := func(n string) float64 { return cl[n].fails - bl[n].fails }
	names := make([]string, 0, len(cl))
	for n := range cl {
		names = append(names, n)
	}
	slices.Sort(names)
	top := ""
	for _, n := range names {
		if rise(n) > 0 && (top == "" || rise(n) > rise(top)) {
			top = n
		}
	}
	if top == "" {
		return nil
	}
	seen := map[string]bool{top: true}
	for {
		next := ""
		for i := range m.Edges {
			e := &m.Edges[i]
			if e.From != top || seen[e.To] || rise(e.To) < rise(top)/2 {
				continue
			}
			if next == "" || rise(e.To) > rise(next) || rise(e.To) == rise(next) && e.To < next {
				next = e.To
			}
		}
		if next == "" {
			break
		}
		top = next
		seen[top] = true
	}
	b, c := bl[top], cl[top]
	share := func(l nodeLoad) float64 {
		if l.calls <= 0 {
			return 0
		}
		return l.fails / l.calls
	}
	f := &FailureRise{Node: top, Baseline: share(b), Candidate: share(c), Mechanism: failureMechanism(m, top, bl, cl)}
	return f
}

// failureMechanism says why node name's failures rose from b to c (bl
// and cl hold every node's): calls turned away (an open breaker, a full
// queue), callers that time out, load past its overload curve's
// threshold; else, for a node that does not fail on its own, the calls
// to a failing callee that now fail it, and what reaches it more (more
// calls, or more at once).
func failureMechanism(m *cascade.Model, name string, bl, cl map[string]nodeLoad) string {
	n, b, c := m.Node(name), bl[name], cl[name]
	d := c.fails - b.fails
	more := func(x, y float64) bool { return y > 1.05*x && y-x > 1e-9 }
	switch {
	case c.rejected-b.rejected >= d/2 && c.breakerOpened > b.breakerOpened:
		return fmt.Sprintf("%s's breaker opens more often (%s → %s times a run) and turns calls away", name, num(round3(b.breakerOpened)), num(round3(c.breakerOpened)))
	case c.rejected-b.rejected >= d/2:
		return fmt.Sprintf("%s's queue fills and turns calls away", name)
	case c.timeouts-b.timeouts >= d/2:
		return fmt.Sprintf("its callers give up on %s more often (timeouts %s → %s per root request)", name, num(round3(b.timeouts)), num(round3(c.timeouts)))
	case n != nil && n.Overload.Slope > 0 && more(b.meanLoad, c.meanLoad):
		return fmt.Sprintf("more concurrency reaches %s (mean load %s → %s), which fails under load (its overload curve)", name, num(round3(b.meanLoad)), num(round3(c.meanLoad)))
	}
	var parts []string
	switch {
	case more(b.calls, c.calls):
		parts = append(parts, fmt.Sprintf("more calls reach %s (%s → %s per root request)", name, num(round3(b.calls)), num(round3(c.calls))))
	case more(b.inFlightMax, c.inFlightMax):
		parts = append(parts, fmt.Sprintf("more calls reach %s at once (at most %s → %s in flight)", name, num(round3(b.inFlightMax)), num(round3(c.inFlightMax))))
	}
	// A node that does not fail on its own fails when its calls do: name
	// the callee that fails most, and the retries that no longer save
	// its failures.
	if n != nil && n.Overload.Base <= 0 && n.Overload.Slope <= 0 {
		var callee *cascade.Edge
		for i := range m.Edges {
			e := &m.Edges[i]
			if e.From == name && !e.Async && cl[e.To].fails > 0 && (callee == nil || cl[e.To].fails > cl[callee.To].fails) {
				callee = e
			}
		}
		if callee != nil {
			share := func(l nodeLoad) string { return pct(l.fails / math.Max(l.calls, 1e-12)) }
			was, now := share(bl[callee.To]), share(cl[callee.To])
			s := fmt.Sprintf("its calls to %s fail it more often (%s fails %s → %s of its calls", callee.To, callee.To, was, now)
			if was == now {
				s = fmt.Sprintf("its calls to %s fail it more often (%s fails %s of its calls either way", callee.To, callee.To, now)
			}
			if r := callee.Retry; r != nil && r.MaxAttempts > 1 {
				s += fmt.Sprintf("; %s's retries save fewer of them", name)
			}
			parts = append(parts, s+")")
		}
	}
	if len(parts) == 0 {
		return name + " fails a larger share of its calls"
	}
	return strings.Join(parts, ", and ")
}

// pct formats a share as a percentage, with a decimal below 10%.
func pct(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// QueueLoss is the queue where a candidate that costs flow success loses
// its messages, in the traffic where flow success falls most.
type QueueLoss struct {
	// Queue is the queue node.
	Queue string `json:"queue"`
	// Mechanism says how ("overflow drops its oldest messages (drop-head):
	// 0 → 0.12 per root request").
	Mechanism string `json:"mechanism"`
	// Regime is the traffic.
	Regime string `json:"regime"`
}

// flowCost fills c's FlowSuccessDrop and Queue from the flow success
// effects, and says it in words; "" when flow success does not fall.
func flowCost(m *cascade.Model, regimes []Regime, effs []Effect, base, cand [][]*replay.Result, c *Cost) string {
	worst, wr := 0.0, -1
	for _, e := range effs {
		if e.Metric == MetricFlowSuccess && e.Delta.High < 0 && e.Delta.Mean < worst {
			worst = e.Delta.Mean
			wr = slices.IndexFunc(regimes, func(r Regime) bool { return r.Name == e.Regime })
		}
	}
	if wr < 0 {
		return ""
	}
	c.FlowSuccessDrop = -worst
	s := fmt.Sprintf("flow success −%.1f pp", 100*c.FlowSuccessDrop)
	if wr < len(base) && wr < len(cand) {
		if c.Queue = queueLoss(m, base[wr], cand[wr]); c.Queue != nil {
			c.Queue.Regime = regimes[wr].Name
			s += " (" + c.Queue.Queue + ": " + c.Queue.Mechanism + ")"
		}
	}
	return s
}

// queueTotals are a queue's message counts per root request, and its
// broker's alarm time and restarts per run, means over seeds.
type queueTotals struct {
	dropped, rejected, dead, redelivered, blockedMS float64
	alarmMS, restarts, lost                         float64
}

func queueMeans(m *cascade.Model, rs []*replay.Result) map[string]queueTotals {
	out := map[string]queueTotals{}
	k := float64(len(rs))
	for _, r := range rs {
		roots := math.Max(1, float64(r.Roots))
		brokers := map[string]cascade.BrokerOutcome{}
		for _, b := range r.Brokers {
			brokers[b.Name] = b
		}
		for i := range r.Nodes {
			q := r.Nodes[i].Queue
			if q == nil {
				continue
			}
			t := out[r.Nodes[i].Name]
			t.dropped += float64(q.Dropped) / roots / k
			t.rejected += float64(q.Rejected) / roots / k
			t.dead += float64(q.DeadLettered) / roots / k
			t.redelivered += float64(q.Redelivered) / roots / k
			t.blockedMS += q.BlockedMS / roots / k
			if n := m.Node(r.Nodes[i].Name); n != nil && n.Queue != nil {
				if b, ok := brokers[n.Queue.Broker]; ok {
					t.alarmMS += b.AlarmMS / k
					t.restarts += float64(b.Restarts) / k
					t.lost += float64(b.Lost) / roots / k
				}
			}
			out[r.Nodes[i].Name] = t
		}
	}
	return out
}

// queueLoss finds the queue whose messages a candidate loses: the one
// whose lost messages per root request (dropped, refused, dead-lettered,
// lost in a restart) rose most, or, where none lost more, whose
// redeliveries or blocked publishers rose most; and names the mechanism:
// overflow drops, a memory alarm that blocks publishers or a broker that
// restarts, refused publishes, more redeliveries. Nil when no queue
// changed for the worse.
func queueLoss(m *cascade.Model, base, cand []*replay.Result) *QueueLoss {
	bq, cq := queueMeans(m, base), queueMeans(m, cand)
	names := make([]string, 0, len(cq))
	for n := range cq {
		names = append(names, n)
	}
	slices.Sort(names)
	lost := func(t queueTotals) float64 { return t.dropped + t.rejected + t.dead + t.lost }
	top, rise := "", 0.0
	for _, n := range names {
		if d := lost(cq[n]) - lost(bq[n]); d > rise {
			top, rise = n, d
		}
	}
	if top == "" {
		// Nothing lost more: more redeliveries or longer blocks.
		for _, n := range names {
			b, c := bq[n], cq[n]
			if d := (c.redelivered - b.redelivered) + (c.blockedMS-b.blockedMS)/1000; d > rise {
				top, rise = n, d
			}
		}
	}
	if top == "" {
		return nil
	}
	n := m.Node(top)
	if n == nil || n.Queue == nil {
		return nil
	}
	b, c, q := bq[top], cq[top], n.Queue
	per := func(what string, x, y float64) string {
		return fmt.Sprintf("%s %s → %s per root request", what, num(round3(x)), num(round3(y)))
	}
	broker := q.Broker
	type cause struct {
		d    float64
		text string
	}
	causes := []cause{
		{c.lost - b.lost, fmt.Sprintf("broker %s restarts past its memory watermark and loses what it holds (%s; restarts %s → %s a run)",
			broker, per("messages lost", b.lost, c.lost), num(round3(b.restarts)), num(round3(c.restarts)))},
		{c.dropped - b.dropped, fmt.Sprintf("the full queue drops its oldest messages (overflow %s; %s)", overflowOf(q), per("dropped", b.dropped, c.dropped))},
		{c.dead - b.dead, fmt.Sprintf("more messages run out of deliveries and are dead-lettered (%s)", per("dead-lettered", b.dead, c.dead))},
		{c.redelivered - b.redelivered, fmt.Sprintf("more redeliveries (%s)", per("redelivered", b.redelivered, c.redelivered))},
	}
	rejected := fmt.Sprintf("the full queue refuses publishes (overflow reject-publish; %s)", per("refused", b.rejected, c.rejected))
	if c.alarmMS > b.alarmMS && broker != "" {
		rejected = fmt.Sprintf("broker %s's memory alarm refuses and blocks publishers (alarm on %s → %s a run; %s)",
			broker, ms(round3(b.alarmMS)), ms(round3(c.alarmMS)), per("refused", b.rejected, c.rejected))
	}
	causes = append(causes, cause{c.rejected - b.rejected, rejected})
	blocked := fmt.Sprintf("publishers into it wait longer (blocked %s → %s per root request)", ms(round3(b.blockedMS)), ms(round3(c.blockedMS)))
	if c.alarmMS > b.alarmMS && broker != "" {
		blocked = fmt.Sprintf("broker %s's memory alarm blocks publishers (alarm on %s → %s a run; blocked %s → %s per root request)",
			broker, ms(round3(b.alarmMS)), ms(round3(c.alarmMS)), ms(round3(b.blockedMS)), ms(round3(c.blockedMS)))
	}
	causes = append(causes, cause{(c.blockedMS - b.blockedMS) / 1000, blocked})
	best := causes[0]
	for _, x := range causes[1:] {
		if x.d > best.d {
			best = x
		}
	}
	return &QueueLoss{Queue: top, Mechanism: best.text}
}

// brokerSignals adds, for a model with queues, each broker's memory-alarm
// time and restarts a run and each queue's messages dropped by overflow,
// refused, dead-lettered and lost per root request, baseline against
// candidate, as mechanism signals.
func brokerSignals(m *cascade.Model, base, cand []*replay.Result, add func(b, c, floor float64, text string)) {
	type bt struct{ alarmMS, restarts float64 }
	means := func(rs []*replay.Result) map[string]bt {
		out := map[string]bt{}
		k := float64(len(rs))
		for _, r := range rs {
			for _, b := range r.Brokers {
				t := out[b.Name]
				t.alarmMS += b.AlarmMS / k
				t.restarts += float64(b.Restarts) / k
				out[b.Name] = t
			}
		}
		return out
	}
	bb, cb := means(base), means(cand)
	for i := range m.Brokers {
		n := m.Brokers[i].Name
		b, c := bb[n], cb[n]
		add(b.alarmMS, c.alarmMS, 100, fmt.Sprintf("broker %s's memory alarm (publishers blocked) on %s → %s a run", n, ms(round3(b.alarmMS)), ms(round3(c.alarmMS))))
		add(b.restarts, c.restarts, 1, fmt.Sprintf("broker %s restarts %s → %s a run", n, num(round3(b.restarts)), num(round3(c.restarts))))
	}
	bq, cq := queueMeans(m, base), queueMeans(m, cand)
	names := make([]string, 0, len(bq))
	for n := range bq {
		names = append(names, n)
	}
	slices.Sort(names)
	// A queue that refuses nothing itself (no reject-publish cap) refuses
	// only the publishers that fail at once while its broker's alarm
	// blocks them: those refusals are the alarm's.
	refusedBy := map[string]string{}
	for i := range m.Edges {
		e := &m.Edges[i]
		if !e.FailBlocked {
			continue
		}
		if q := m.Node(e.To); q != nil && q.Queue != nil && (q.Queue.MaxLength == 0 || q.Queue.Overflow != cascade.OverflowRejectPublish) {
			refusedBy[e.To] = q.Queue.Broker
		}
	}
	for _, n := range names {
		b, c := bq[n], cq[n]
		add(b.dropped, c.dropped, 0.01, fmt.Sprintf("%s overflow drops %s → %s per root", n, num(round3(b.dropped)), num(round3(c.dropped))))
		what := "refused publishes"
		if br, ok := refusedBy[n]; ok {
			what = fmt.Sprintf("publishes refused under broker %s's memory alarm", br)
		}
		add(b.rejected, c.rejected, 0.01, fmt.Sprintf("%s %s %s → %s per root", n, what, num(round3(b.rejected)), num(round3(c.rejected))))
		add(b.dead, c.dead, 0.01, fmt.Sprintf("%s dead-lettered %s → %s per root", n, num(round3(b.dead)), num(round3(c.dead))))
	}
}
