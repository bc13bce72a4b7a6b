package graph

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cascade"
	"cascade/internal/mdtable"
)

// Amplification returns an edge's calls per caller request that used the
// edge: logical calls (fan-out) times attempts per call. It reads the
// observed figures; for an edge without them (a hand-written model) it
// returns the worst case, the fan-out mean times the maximum attempts.
func Amplification(e *cascade.Edge) float64 {
	if o := e.Observed; o != nil && o.ParentRequests > 0 {
		return float64(o.Calls) / float64(o.ParentRequests)
	}
	f := e.FanOut.MeanValue()
	if r := e.Retry; r != nil && r.MaxAttempts > 1 {
		f *= float64(r.MaxAttempts)
	}
	return f
}

// sortedByAmplification returns the model's edges, worst amplifiers first
// (ties by from, to).
func sortedByAmplification(m *cascade.Model) []*cascade.Edge {
	es := make([]*cascade.Edge, len(m.Edges))
	for i := range m.Edges {
		es[i] = &m.Edges[i]
	}
	slices.SortStableFunc(es, func(a, b *cascade.Edge) int {
		if c := cmp.Compare(Amplification(b), Amplification(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.From, b.From); c != 0 {
			return c
		}
		return cmp.Compare(a.To, b.To)
	})
	return es
}

// WriteTable writes the result as text tables: the source, the entries,
// the nodes, and the edges with the worst amplifiers first.
func WriteTable(w io.Writer, res *Result) error {
	return writeTable(tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), res)
}

// WriteMarkdown writes the tables of WriteTable as Markdown.
func WriteMarkdown(w io.Writer, res *Result) error {
	return writeTable(mdtable.NewWriter(w), res)
}

// tableWriter is what writeTable writes cells to: a tabwriter.Writer or
// an mdtable.Writer.
type tableWriter interface {
	io.Writer
	Flush() error
}

// writeTable writes the source lines, the entry, node, edge and queue
// tables, and the notes and warnings to tw, which lays out the cells.
func writeTable(tw tableWriter, res *Result) error {
	m := res.Model
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	if s := m.Source; s != nil {
		writeSource(p, s, res.Seed)
	}
	if len(res.Order) > 0 {
		p("order\t%s\n", strings.Join(res.Order, " → "))
	}
	for _, c := range res.Cycles {
		p("cycle\t%s\n", strings.Join(c, ", "))
	}
	writeEntries(p, m)
	writeNodes(p, res)
	writeEdges(p, m)
	if len(res.Queues) > 0 {
		writeQueues(p, res)
	}
	writeNotesAndWarnings(p, res)
	return tw.Flush()
}

// writeSource writes the lines that say what the model was built from
// and with which seed, so that a table can be traced to its data.
func writeSource(p func(string, ...any), s *cascade.ModelSource, seed uint64) {
	switch s.From {
	case cascade.FromAggregates:
		p("model\t%s level, %d aggregated series", s.Level, s.Series)
	case cascade.FromBoth:
		p("model\t%s level, %d spans, %d traces, %d aggregated series", s.Level, s.Spans, s.Traces, s.Series)
	default:
		p("model\t%s level, %d spans, %d traces", s.Level, s.Spans, s.Traces)
	}
	if s.EndNS > s.StartNS {
		p(", %s from %s", time.Duration(s.EndNS-s.StartNS).Round(time.Millisecond),
			time.Unix(0, s.StartNS).UTC().Format(time.RFC3339Nano))
	}
	p(", seed %d\n", seed)
	if s.Dataset != "" {
		p("source\t%s\n", s.Dataset)
	}
}

// writeEntries writes the entry table: where the requests come in, and
// at what rate.
func writeEntries(p func(string, ...any), m *cascade.Model) {
	p("\nENTRY\tOPERATION\tRATE/S\tSHARE\n")
	for _, e := range m.Entries {
		p("%s\t%s\t%s\t%s\n", e.Node, dash(e.Operation), num(e.RatePerSec), pct(e.Share))
	}
}

// writeNodes writes the node table: each node's observed load, latency,
// concurrency and capacity, and its place in the graph.
func writeNodes(p func(string, ...any), res *Result) {
	m := res.Model
	p("\nNODE\tREQUESTS\tRATE/S\tPEAK RATE/S\tERR\tP50 MS\tP95 MS\tP99 MS\tSELF P50\tSELF P95\tSELF P99\tPEAK IN-FLIGHT\tMEAN IN-FLIGHT\tλW\tCAPACITY\tREPLICAS\tSCC\tBETWEENNESS\tDEPTH\tPER ROOT\n")
	for i := range m.Nodes {
		n := &m.Nodes[i]
		o := n.Observed
		if o == nil {
			o = &cascade.NodeObserved{}
		}
		name := nodeName(n)
		capacity := nodeCapacity(n, o)
		self := n.Tiers
		if self == nil {
			self = &cascade.Tiers{}
		}
		depth, amp, peak := nodeGraphCells(res, i)
		p("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n",
			name, o.Requests, num(o.RatePerSec), peak, pct(o.ErrorRate),
			num(o.LatencyP50MS), num(o.LatencyP95MS), num(o.LatencyP99MS),
			num(self.P50), num(self.P95), num(self.P99),
			o.PeakInFlight, num(o.MeanInFlight), num(o.LittleL), capacity, n.Replicas,
			o.Component, num(o.Betweenness), depth, amp)
	}
}

// nodeName returns a node's name as the table shows it, marked when the
// node is an uninstrumented peer or virtual, since neither reported
// spans of its own.
func nodeName(n *cascade.Node) string {
	name := n.Name
	switch _, peer := PeerAddress(n.Name); {
	case peer:
		name += " (uninstrumented peer)"
	case n.Virtual:
		name += " (virtual)"
	}
	return name
}

// nodeCapacity returns a node's capacity cell: its concurrency limit and
// whether the data proved it, and from what.
func nodeCapacity(n *cascade.Node, o *cascade.NodeObserved) string {
	capacity := strconv.Itoa(n.Concurrency)
	if n.Concurrency == 0 {
		capacity = "unbounded"
	}
	switch {
	case o.CapacityProven && o.CapacitySource != "":
		capacity += " proven (" + o.CapacitySource + ")"
	case o.CapacityProven:
		capacity += " proven"
	case o.CapacitySource == CapacityPeak:
		// The peak is in its own column.
		capacity += " (no limit proven)"
	case o.CapacitySource != "":
		capacity += " (" + o.CapacitySource + ")"
	}
	return capacity
}

// nodeGraphCells returns node i's depth, calls per root request and
// peak rate, or dashes when the result has no graph figures for it.
func nodeGraphCells(res *Result, i int) (depth, amp, peak string) {
	depth, amp, peak = "-", "-", "-"
	if i < len(res.Nodes) {
		info := &res.Nodes[i]
		if info.Depth >= 0 {
			depth = strconv.Itoa(info.Depth)
		}
		amp = num(info.Amplification)
		peak = num(info.PeakRate())
	}
	return depth, amp, peak
}

// writeEdges writes the edge table, worst amplifiers first, since they
// are what multiplies a fault's load.
func writeEdges(p func(string, ...any), m *cascade.Model) {
	p("\nEDGE\tAMPLIFICATION\tCALLS\tPARENTS\tFAN-OUT MEAN/P50/P95/MAX\tPARALLEL\tSTAGE\tATTEMPTS\tRETRY SHARE\tREACTIVATION\tMAX ATTEMPTS\tBACKOFF\tERR\tTIMEOUTS\tTIMEOUT MS\tPROPAGATION\tP50 MS\tP95 MS\tP99 MS\tRETRIES FOUND BY\tTIMEOUT FOUND BY\tFLAGS\n")
	for _, e := range sortedByAmplification(m) {
		o := e.Observed
		if o == nil {
			o = &cascade.EdgeObserved{}
		}
		par := edgeParallelism(e, o)
		react, attempts, backoff := edgeRetryCells(e, o)
		timeout := "-"
		if e.TimeoutMS > 0 {
			timeout = num(e.TimeoutMS)
		}
		flags := edgeFlags(e, o)
		p("%s → %s\t%s\t%d\t%d\t%s/%s/%s/%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.From, e.To, num(Amplification(e)), o.Calls, o.ParentRequests,
			num(o.FanOutMean), num(o.FanOutP50), num(o.FanOutP95), num(o.FanOutMax),
			par, e.Stage, num(o.AttemptsPerCall), pct(o.RetryShare), react, attempts, backoff,
			pct(o.ErrorRate), o.Timeouts, timeout, num(e.Propagation),
			num(o.LatencyP50MS), num(o.LatencyP95MS), num(o.LatencyP99MS),
			dash(o.RetryEvidence), dash(o.TimeoutEvidence), dash(strings.Join(flags, ",")))
	}
}

// edgeParallelism returns an edge's parallelism cell: how many of its
// calls run at once, whether they share a pool, and whether that is
// known.
func edgeParallelism(e *cascade.Edge, o *cascade.EdgeObserved) string {
	par := strconv.Itoa(e.Parallelism)
	if e.Parallelism == 0 {
		par = "all"
	}
	if e.SharedPool {
		par += " shared"
	}
	if o.PoolSharing == cascade.PoolSharingUnknown {
		par += " (sharing unknown)"
	}
	return par
}

// edgeRetryCells returns an edge's reactivation, maximum attempts and
// backoff cells, dashes and one attempt for an edge that does not
// retry; an attempt limit the data did not prove says so.
func edgeRetryCells(e *cascade.Edge, o *cascade.EdgeObserved) (react, attempts, backoff string) {
	react, attempts, backoff = "-", "1", "-"
	if r := e.Retry; r != nil {
		react, attempts = num(r.Reactivation), strconv.Itoa(r.MaxAttempts)
		if o.RetryLimit == cascade.RetryLimitUnknown {
			attempts += fmt.Sprintf(" (limit unknown: ≥%d seen)", o.MaxAttemptsSeen)
		}
		backoff = r.Backoff.Kind
		if r.Backoff.BaseMS > 0 {
			backoff += " " + num(r.Backoff.BaseMS) + "ms"
		}
	}
	return react, attempts, backoff
}

// edgeFlags returns the edge's flags: async, self-call and overlapping
// calls, which the other columns do not show.
func edgeFlags(e *cascade.Edge, o *cascade.EdgeObserved) []string {
	var flags []string
	if e.Async {
		flags = append(flags, "async")
	}
	if o.SelfCall {
		flags = append(flags, "self-call")
	}
	if o.Overlapping {
		flags = append(flags, "overlapping")
	}
	return flags
}

// writeNotesAndWarnings writes the model's notes and the result's
// warnings last, each under its heading, after the tables they qualify.
func writeNotesAndWarnings(p func(string, ...any), res *Result) {
	m := res.Model
	if s := m.Source; s != nil && len(s.Notes) > 0 {
		p("\nNOTES\n")
		for _, n := range s.Notes {
			p("%s\n", n)
		}
	}
	if len(res.Warnings) > 0 {
		p("\nWARNINGS\n")
		for _, w := range res.Warnings {
			p("%s\n", w)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// num formats a figure with up to three decimals and no trailing zeros.
func num(v float64) string {
	return strconv.FormatFloat(roundMS(v), 'f', -1, 64)
}

// pct formats a share as a percentage with up to one decimal.
func pct(v float64) string {
	return strconv.FormatFloat(float64(int64(v*1000+0.5))/10, 'f', -1, 64) + "%"
}

// writeQueues writes the queue table: each queue's settings and the
// counts behind them.
func writeQueues(p func(string, ...any), res *Result) {
	p("\nQUEUE\tSYSTEM\tCONSUMERS\tPREFETCH\tPUBLISHED\tDELIVERIES\tREDELIVERED\tREDELIVERY\tDELAY MS\tMAX DELIVERIES\tDEAD LETTER\tBYTES/MSG\tDEPTH MAX\tDEPTH FROM\n")
	for _, qi := range res.Queues {
		n := res.Model.Node(qi.Name)
		if n == nil || n.Queue == nil {
			continue
		}
		q := n.Queue
		red := q.Redelivery
		if red == "" {
			red = cascade.RedeliverRequeue
		}
		maxd := "-"
		if q.MaxDeliveries > 0 {
			maxd = strconv.Itoa(q.MaxDeliveries)
			if n.Provenance["max_deliveries"] == cascade.ObservedPeak {
				maxd += " (≥, never ran out)"
			}
		}
		depth := 0.0
		if n.Observed != nil {
			depth = n.Observed.QueueDepthMax
		}
		p("%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			qi.Name, dash(q.System), q.Consumers, q.Prefetch, qi.Published, qi.Deliveries,
			pct(qi.RedeliveryShare), red, num(q.DelayMS), maxd, dash(q.DeadLetter),
			num(q.MessageBytes), num(depth), dash(qi.DepthSource))
	}
}
