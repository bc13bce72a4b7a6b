package rank

import (
	"fmt"
	"math"
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
	// Text says it in words ("sheds 3.1% of calls; +12 ms p50"), or
	// "none".
	Text string `json:"text"`
}

// costOf reads a candidate's cost from its effects.
func costOf(effs []Effect) Cost {
	var c Cost
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
		if c.RejectedShare >= 0.0005 {
			// A rejected request is a failed one: under closed-loop
			// clients, who ask again after each answer, success falls
			// far more than goodput.
			s += " (shed requests count as failures)"
		}
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
}

// mechanism explains a candidate's effect: the per-node quantity that
// changes most, relative to its baseline (calls per root, queue maximum,
// failures per root, p99 latency, infected time), or the zombie share,
// compared in the regime where the objective moves most. For a win only
// quantities that fall count, for a worse candidate only those that rise.
func mechanism(m *cascade.Model, o Objective, v Verdict, regimes []Regime, base, cand [][]*replay.Result) string {
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
		sigs = append(sigs, signal{math.Abs(c-b) / math.Max(math.Abs(b), floor), c < b, text})
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
		add(b.infected, c.infected, 1, fmt.Sprintf("%s infected %s → %s", name, ms(round3(1000*b.infected)), ms(round3(1000*c.infected))))
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
		return "no mechanism stands out (per-node calls, queues and failures change by less than 5%)"
	}
	if r > 0 {
		return top.text + " (" + regimes[r].Name + ")"
	}
	return top.text
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
