package rank

import (
	"encoding/json"
	"fmt"
	"strings"

	"cascade"
)

// Thresholds of thin data (see docs/rank.md, "The data a
// ranking rests on").
const (
	// MinRoots is the fewest root requests a model built from traces
	// must rest on for the ranking to call any change a win or worse.
	// The ranking's intervals are over replay seeds: they say how sure
	// the replay is, not how sure the model is, and every rate the model
	// replays was read from the roots. The observed success rate of n
	// roots has a 95% interval of half-width 1.96·√(p(1−p)/n): at its
	// widest (p = ½) that is under 10 pp from n = 97, and when no root
	// failed the rule of three bounds the failure rate at 3/n, 3 pp at
	// n = 100. Below 100 roots the data's own uncertainty is wider than
	// the effects the ranking sorts (a few pp of success), however
	// narrow the seed-to-seed intervals are, so the ranking abstains.
	MinRoots = 100
	// MinNodeRequests is the fewest requests at which a node's p99
	// latency is read from the data rather than being its slowest
	// request (below 100 the 99th percentile is the maximum). A node
	// with fewer is named in the data basis (Basis.MinNode) so that the
	// reader knows which node's numbers are thinnest; it does not by
	// itself stop the ranking, since a rarely called node leaves the
	// rest of the model's rates as well measured as its roots make them.
	MinNodeRequests = 100
)

// Basis is the data a model, and so a ranking of it, rests on: what the
// traces held, read from the model's source, load, nodes and fit.
type Basis struct {
	// Traces, Spans and Roots count what the model was built from: the
	// traces and spans read and the root requests among them.
	Traces int64 `json:"traces"`
	Spans  int64 `json:"spans"`
	Roots  int64 `json:"roots"`
	// Services counts the instrumented services (virtual nodes, the
	// callees seen only from their callers, are not services).
	Services int `json:"services"`
	// MinRequests is the fewest requests any node of the model saw, and
	// MinNode that node (the first by name when several tie).
	MinRequests int64  `json:"min_requests"`
	MinNode     string `json:"min_node,omitempty"`
	// Windows counts the observation windows the fit calibrated the
	// model against; 0 when the model is not fitted.
	Windows int `json:"windows"`
	// Thin says what is too thin to rank on (empty when nothing is):
	// with it set, no change is called a win or worse (the verdict is
	// NotEnoughData).
	Thin string `json:"thin,omitempty"`
}

// BasisOf returns the data basis of a model built from traces; nil for a
// model built by hand or from aggregated series alone, whose basis the
// model does not record.
func BasisOf(m *cascade.Model) *Basis {
	src := m.Source
	if src == nil || src.Traces <= 0 || src.From == cascade.FromAggregates {
		return nil
	}
	b := &Basis{Traces: src.Traces, Spans: src.Spans, Roots: src.Traces, MinRequests: -1}
	if m.Load != nil && m.Load.Roots > 0 {
		b.Roots = m.Load.Roots
	}
	services := map[string]bool{}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if !n.Virtual {
			svc := n.Name
			if src.Level == "operation" {
				svc, _, _ = strings.Cut(svc, ":")
			}
			services[svc] = true
		}
		if n.Observed != nil && (b.MinRequests < 0 || n.Observed.Requests < b.MinRequests) {
			b.MinRequests, b.MinNode = n.Observed.Requests, n.Name
		}
	}
	b.MinRequests = max(b.MinRequests, 0)
	b.Services = len(services)
	if len(m.Fit) > 0 {
		var f struct {
			Windows []int `json:"windows"`
		}
		if json.Unmarshal(m.Fit, &f) == nil {
			b.Windows = len(f.Windows)
		}
	}
	if b.Roots < MinRoots {
		b.Thin = fmt.Sprintf("%s, %s, %s, %s; the ranking needs at least %d root requests",
			count(b.Traces, "trace"), count(b.Spans, "span"), count(int64(b.Services), "service"),
			count(b.Roots, "root request"), MinRoots)
	}
	return b
}

// count is n and the noun, plural unless n is 1.
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// String says the basis in one line: "300 traces, 300 root requests, at
// least 300 requests per node (customer), fitted on 1 window of the
// capture".
func (b *Basis) String() string {
	s := fmt.Sprintf("%s, %s, %s, at least %s per node", count(b.Traces, "trace"),
		count(b.Roots, "root request"), count(int64(b.Services), "service"), count(b.MinRequests, "request"))
	if b.MinNode != "" {
		s += " (" + b.MinNode + ")"
	}
	if b.Windows > 0 {
		s += ", fitted on " + count(int64(b.Windows), "window") + " of the capture"
	} else {
		s += ", not fitted"
	}
	return s
}

// abstain turns every win and worse of a ranking on thin data into
// NotEnoughData: the replay's intervals do not cover the uncertainty of
// the rates the model read from too few requests.
func abstain(rows []Row) {
	for i := range rows {
		if rows[i].Verdict == Win || rows[i].Verdict == Worse {
			rows[i].Verdict = NotEnoughData
		}
	}
}
