package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"cascade/incident"
	"cascade/rank"
)

// This file writes the paragraph that opens report.md and report.html:
// what happened, where it began, what amplified it, what to change first
// and how sure that is, in plain words, each sentence drawn from the
// analysis and left out when the analysis holds nothing to say it with.

// amplifiedAt is the least rise of a path step's calls per request that
// the summary calls an amplification (10%).
const amplifiedAt = 1.1

// summaryParagraph returns the opening paragraph; empty when the
// analysis holds nothing to summarise.
func summaryParagraph(a *Analysis) string {
	return strings.Join(summarySentences(a), " ")
}

// summarySentences returns the paragraph's sentences, in order.
func summarySentences(a *Analysis) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	inc := a.Incident
	origin := inc != nil && len(inc.Origins) > 0 && !inc.Abstained
	add(incidentSentence(inc))
	if !origin {
		add(baselineSentence(a.Rank))
	}
	add(metastableSentence(a.Rank))
	if origin {
		add(pathSentence(inc))
	} else {
		add(graphAmpSentence(a))
		add(infectSentence(inc))
	}
	add(changeSentence(a.Rank))
	add(fitSentence(a.Rank))
	if origin {
		add(originSureSentence(inc))
	}
	return out
}

// metricPhrase names an incident metric in words.
func metricPhrase(m string) string {
	switch m {
	case "latency":
		return "median latency"
	case "self_time":
		return "median time outside its calls"
	case "slow_share":
		return "share of slow requests"
	case "error_rate":
		return "error rate"
	case "call_latency":
		return "latency as its callers see it"
	case "call_slow_share":
		return "share of slow calls as its callers see them"
	case "call_error_rate":
		return "error rate as its callers see it"
	case "gap_in":
		return "median time between its callers' calls and its own answer (the network into it)"
	case "self_time_calls":
		return "median time outside its calls, request by request"
	case "self_time_drop":
		return "median time outside its calls (work it no longer does), request by request"
	case "gap_out":
		return "median time between its calls and its callees' answers (its own client side)"
	case "log_errors":
		return "share of requests that logged an error or an exception"
	case "log_new":
		return "share of its logging requests that wrote a new log template"
	case "log_risen":
		return "share of its logging requests that wrote a risen log template"
	case "log_stopped":
		return "count of requests writing a usual log line (expected, then seen)"
	}
	return strings.ReplaceAll(m, "_", " ")
}

// plural returns n and the noun, the noun with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// incidentSentence says where the incident began, or that no node left
// its normal range; empty without an incident search.
func incidentSentence(inc *incident.Incident) string {
	if inc == nil {
		return ""
	}
	when := fmt.Sprintf("Between %s and %s,", clock(inc.StartNS), clock(inc.EndNS)[11:])
	var changed []string
	for i := range inc.Nodes {
		if inc.Nodes[i].Changed {
			changed = append(changed, inc.Nodes[i].Node)
		}
	}
	if len(inc.Origins) == 0 {
		if len(changed) == 0 {
			return fmt.Sprintf("%s no node left its normal range, each read from %s, so the incident search found no origin.", when, inc.Baseline)
		}
		return fmt.Sprintf("%s %s left their normal range (%s), but a change below explains each, so no origin stands out.",
			when, plural(len(changed), "node"), strings.Join(changed, ", "))
	}
	origin := inc.Origins[0]
	if inc.Abstained && len(inc.Origins) > 1 {
		return fmt.Sprintf("%s %s left their normal range, but no origin stands out: %s leads %s by too little to trust (it holds %.0f%% of their two scores, under %.0f%%).",
			when, plural(len(changed), "node"), origin, inc.Origins[1], 100*inc.Confidence, 100*incident.AbstainBelow)
	}
	s := fmt.Sprintf("%s the incident began at %s, the first node to leave its normal range with no change below it to explain it", when, origin)
	if n := nodeOf(inc, origin); n != nil && n.Changed {
		s += fmt.Sprintf(": its %s went from %s normal to %s in its first window out of range, at %s (%s its normal spread)",
			metricPhrase(n.Metric), metricValue(n.Metric, n.Baseline), metricValue(n.Metric, n.Value),
			clock(n.AtNS)[11:], spreadsText(n.Z))
	}
	var others []string
	for _, c := range changed {
		if c != origin {
			others = append(others, c)
		}
	}
	if len(others) > 0 {
		verb := "left theirs"
		if len(others) == 1 {
			verb = "left its"
		}
		s += fmt.Sprintf("; %s %s as well (%s)", plural(len(others), "other node"), verb, strings.Join(others, ", "))
	}
	return s + "."
}

// baselineSentence says how the system fares in replay as observed.
func baselineSentence(rep *rank.Report) string {
	if rep == nil || len(rep.Baseline) == 0 || len(rep.Regimes) == 0 {
		return ""
	}
	s := rep.Baseline[0]
	if f := s.Metric("flow_success_rate"); f.Name != "" {
		// A model with queues: a request is done when every message
		// it published has been worked.
		return fmt.Sprintf("Replayed as observed (%s), %s of its flows (a request with the work of every message it published) succeed, their completion taking %s ms at the median and %s ms at p99, with %s calls per request.",
			rep.Regimes[0].Name, pctOf(f.Mean), g4(s.Metric("flow_p50_ms").Mean), g4(s.Metric("flow_p99_ms").Mean),
			g4(s.Metric("amplification").Mean))
	}
	return fmt.Sprintf("Replayed as observed (%s), the system answers %s of its requests, %s a second, with a p99 of %s ms and %s calls per request.",
		rep.Regimes[0].Name, pctOf(s.Metric("success_rate").Mean), g4(s.Metric("goodput_per_sec").Mean),
		g4(s.Metric("latency_p99_ms").Mean), g4(s.Metric("amplification").Mean))
}

// metastableSentence warns of a metastable system; empty otherwise.
func metastableSentence(rep *rank.Report) string {
	if rep == nil || rep.Metastability == nil || !rep.Metastability.Metastable {
		return ""
	}
	m := rep.Metastability
	return fmt.Sprintf("Under %s it is metastable: %s.", m.Regime, strings.TrimPrefix(m.Verdict, "metastable: "))
}

// pathSentence says how the change climbed from the origin, and where
// the calls multiplied on the way.
func pathSentence(inc *incident.Incident) string {
	origin := inc.Origins[0]
	if len(inc.Path) == 0 {
		return fmt.Sprintf("No caller of %s left its range after it, so nothing carried the change further.", origin)
	}
	chain := []string{origin}
	best, ratio := -1, amplifiedAt
	for i := range inc.Path {
		p := &inc.Path[i]
		chain = append(chain, p.Caller)
		if p.CallsPerParentBefore > 0 {
			if r := p.CallsPerParentDuring / p.CallsPerParentBefore; r >= ratio {
				best, ratio = i, r
			}
		}
	}
	s := fmt.Sprintf("It climbed %s", strings.Join(chain, " → "))
	if best < 0 {
		return s + fmt.Sprintf(", and no caller multiplied its calls on the way (calls per request rose by less than %.0f%% at every step).",
			100*(amplifiedAt-1))
	}
	p := &inc.Path[best]
	s += fmt.Sprintf("; it was amplified where %s calls %s, from %s to %s calls per request", p.Caller, p.Callee,
		g4(p.CallsPerParentBefore), g4(p.CallsPerParentDuring))
	if p.AttemptsPerCallDuring > p.AttemptsPerCallBefore {
		s += fmt.Sprintf(", retries taking the attempts per call from %s to %s", g4(p.AttemptsPerCallBefore), g4(p.AttemptsPerCallDuring))
	}
	return s + "."
}

// graphAmpSentence names the edge of the call graph that multiplies the
// calls most, when one multiplies them at all.
func graphAmpSentence(a *Analysis) string {
	m := a.Model
	if m == nil {
		return ""
	}
	best, amp := -1, 1.0
	for i := range m.Edges {
		if x, _ := amplification(m, &m.Edges[i]); x > amp {
			best, amp = i, x
		}
	}
	if best < 0 {
		return ""
	}
	e := &m.Edges[best]
	return fmt.Sprintf("The call graph multiplies load most where %s calls %s: %s calls per call into %s, retries included.",
		e.From, e.To, g4(amp), e.From)
}

// infectSentence names the node whose slowdown spreads furthest in
// replay, when one spreads at all.
func infectSentence(inc *incident.Incident) string {
	if inc == nil || len(inc.Infectable) == 0 || !(inc.Infectable[0].Infected > 0) {
		return ""
	}
	x := inc.Infectable[0]
	s := fmt.Sprintf("In replay, slowing %s by %s%% spreads furthest: %s other nodes fall out of range", x.Node,
		g4(100*inc.Slowdown), g4(x.Infected))
	var effects []string
	if x.P99DeltaMS != 0 {
		effects = append(effects, fmt.Sprintf("root p99 %s ms", signed(x.P99DeltaMS)))
	}
	if x.SuccessDelta != 0 {
		effects = append(effects, fmt.Sprintf("success %s pp", signed(100*x.SuccessDelta)))
	}
	if len(effects) > 0 {
		s += " (" + strings.Join(effects, ", ") + ")"
	}
	return s + fmt.Sprintf(", seeds %s.", seedRange(inc.Seeds))
}

// firstChange returns the change to make first: the best compatible
// set when it wins, else the top-ranked win; nil when nothing won.
func firstChange(rep *rank.Report) (members []string, row *rank.Row) {
	if s := rep.Set; s != nil && s.Row.Verdict == rank.Win && len(s.Members) > 0 {
		for _, m := range s.Members {
			members = append(members, describe(rep, m))
		}
		return members, &s.Row
	}
	for i := range rep.Rows {
		if r := &rep.Rows[i]; r.Rank == 1 && r.Verdict == rank.Win {
			return []string{r.Candidate.Description}, r
		}
	}
	return nil, nil
}

// fitSentence says how well the model's replay matched the capture, when
// it did (a miss is the change sentence's reason for recommending
// nothing).
func fitSentence(rep *rank.Report) string {
	if rep == nil || rep.Fit == nil || !rep.Fit.Within() || rep.Fit.Nodes == 0 {
		return ""
	}
	return "The model was checked against its capture: its " + rep.Fit.String() + "."
}

// changeSentence says what to change first, with its interval, seeds
// and the baseline's spread; or that nothing won, or that the data is
// too thin to rank on.
func changeSentence(rep *rank.Report) string {
	if rep == nil {
		return ""
	}
	if b := rep.Basis; b != nil && b.Thin != "" {
		return fmt.Sprintf("The data is too thin to rank changes on (%s), so no change is called a win or worse and none is recommended.", b.Thin)
	}
	if f := rep.Fit; !f.Within() {
		return fmt.Sprintf("The model's replay misses the capture it was read from (%s), so no change is called a win or worse and none is recommended.", f)
	}
	members, row := firstChange(rep)
	if row == nil {
		if len(rep.Rows) == 0 {
			return "No candidate change was ranked."
		}
		return fmt.Sprintf("None of the %s replayed won (seeds %s): this ranking recommends no change.",
			plural(len(rep.Rows), "candidate change"), seedRange(rep.Seeds))
	}
	what := members[0]
	if len(members) > 1 {
		what = "together, " + strings.Join(members, "; ")
	}
	iv := row.Objective
	s := fmt.Sprintf("Change first: %s. In replay it moves %s by %s, 95%% interval %s to %s over seeds %s (covering "+coversText(rep)+"), paired with the baseline, whose seed-to-seed spread is %s.",
		what, objectiveName(rep.Objective), objectiveValue(rep.Objective, iv.Mean, true),
		objectiveValue(rep.Objective, iv.Low, true), objectiveValue(rep.Objective, iv.High, true),
		seedRange(rep.Seeds), noiseText(rep))
	if rep.Flows && row.WhyAtBroker {
		// On a queue model, what the change takes away from the broker.
		s += fmt.Sprintf(" What it changes at the broker: %s.", row.Why)
	}
	return s
}

// objectiveName names an objective in a sentence.
func objectiveName(o rank.Objective) string {
	switch o {
	case rank.ObjectiveComposite:
		return "the composite objective"
	case rank.ObjectiveP99:
		return "the p99 latency"
	case rank.ObjectiveSuccess:
		return "the success rate"
	}
	return string(o)
}

// originSureSentence says how sure the origin is: its lead over the
// next, and how well its fault, replayed, reproduces the rest.
func originSureSentence(inc *incident.Incident) string {
	var parts []string
	if inc.Confidence > 0 {
		c := confidenceText(inc)
		if len(inc.Origins) > 1 && inc.Confidence < 1 {
			c += ", the next being " + inc.Origins[1]
		}
		parts = append(parts, c)
	}
	if n := nodeOf(inc, inc.Origins[0]); n != nil && n.ReplayFault != "" && !math.IsNaN(n.ReplayFit) {
		parts = append(parts, fmt.Sprintf("its fault, replayed in the model, reproduces %s of the changes seen at the other nodes",
			reproducedText(n.ReplayFit)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("How sure the origin is: %s.", strings.Join(parts, "; "))
}

// exampleList is one list of example traces, labelled.
type exampleList struct {
	Label string
	// Traces are the traces, each "id (what)"; Empty says why there
	// are none.
	Traces []exampleTrace
	Empty  string
}

// exampleTrace is one trace of a list: its id and what it shows.
type exampleTrace struct{ ID, What string }

// exampleLists returns the examples' lists, to render; nil without
// examples.
func exampleLists(ex *Examples) []exampleList {
	if ex == nil {
		return nil
	}
	list := func(label string, xs []TraceExample, empty string, what func(*TraceExample) string) exampleList {
		l := exampleList{Label: label}
		for i := range xs {
			l.Traces = append(l.Traces, exampleTrace{xs[i].TraceID, what(&xs[i])})
		}
		if len(xs) == 0 {
			l.Empty = empty
		}
		return l
	}
	took := func(x *TraceExample) string {
		s := durText(x.DurationMS)
		if x.Root != "" {
			s = x.Root + ", " + s
		}
		return s
	}
	failed := func(x *TraceExample) string {
		s := took(x)
		switch {
		case x.RootFailed:
			s += ", the request failed"
		default:
			s += ", " + plural(x.ErrorSpans, "error span") + ", the request answered"
		}
		return s
	}
	out := []exampleList{
		list("slowest requests", ex.Slowest, "none: the dataset holds no trace", took),
		list("with an error span", ex.Failed, "none: no span has an error status", failed),
	}
	if ex.Origin != "" {
		out = append(out,
			list("slowest at "+ex.Origin+" since it changed", ex.OriginSlowest, "none: no trace passed through it since",
				func(x *TraceExample) string { return durText(x.OriginMS) + " at " + ex.Origin + "; " + took(x) }),
			list("with an error span, through "+ex.Origin+" since it changed", ex.OriginFailed, "none: no trace through it since holds an error span", failed))
	}
	return out
}

// examplesMarkdown writes the example traces as a list.
func examplesMarkdown(w io.Writer, ex *Examples) {
	lists := exampleLists(ex)
	if len(lists) == 0 {
		return
	}
	fmt.Fprintf(w, "Traces to open by id (in Jaeger, for one):\n\n")
	for _, l := range lists {
		if len(l.Traces) == 0 {
			fmt.Fprintf(w, "- %s: %s\n", l.Label, l.Empty)
			continue
		}
		var ts []string
		for _, t := range l.Traces {
			ts = append(ts, fmt.Sprintf("`%s` (%s)", t.ID, t.What))
		}
		fmt.Fprintf(w, "- %s: %s\n", l.Label, strings.Join(ts, ", "))
	}
	fmt.Fprintln(w)
}

// durText formats milliseconds to four significant digits, in seconds
// from a second on.
func durText(ms float64) string {
	if ms >= 1000 {
		return g4(ms/1000) + " s"
	}
	return g4(ms) + " ms"
}
