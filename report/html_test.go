package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"cascade"
	"cascade/fit"
	"cascade/incident"
	"cascade/internal/testutil"
)

// fixtureNames are the analyses built from the bundled captures (see
// html_fixture_test.go).
var fixtureNames = []string{"hotrod", "boutique"}

func render(t testing.TB, a *Analysis) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, AnalysisHTML(&buf, a), "seed %d", a.Seed)
	return buf.Bytes()
}

func TestAnalysisHTMLGolden(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			a := fixture(t, name)
			page := render(t, a)
			testutil.Golden(t, "analysis-"+name, page)
			// Byte for byte the same when drawn again: no map order, no
			// random ids reach the page.
			require.Equal(t, string(page), string(render(t, a)), "seed %d", a.Seed)
		})
	}
}

// wantCharts counts the charts a page of a should hold: the call graph,
// goodput over time and queue depth (when a queue grew), the capacity
// curve, and the loss plane or one profile per numeric axis.
func wantCharts(a *Analysis) int {
	n := 0
	if a.Model != nil && len(a.Model.Nodes) > 0 {
		n++
		if a.Observed != nil && len(a.Observed.Nodes) > 0 {
			n += 2 // by error rate and by utilisation
		}
	}
	if a.Observed != nil && a.Observed.Timeline != nil {
		n += 3 // requests, errors and latency over time
	}
	if tl := a.Timeline; tl != nil {
		n++
		if len(tl.Baseline.Queues) > 0 {
			n++
		}
		if len(tl.Clients) > 0 {
			n++
		}
	}
	if a.Rank != nil && a.Rank.Capacity != nil && len(a.Rank.Capacity.Points) > 0 {
		n++
	}
	if f := a.Fit; f != nil {
		if f.Plane != nil {
			n++
		} else {
			for _, s := range f.Surface {
				if len(s.Profile) >= 2 && s.Axis != fit.ParamTier {
					n++
				}
			}
		}
	}
	return n
}

// variants are the fixtures with parts missing, as a real analysis can
// lack them.
var variants = []struct {
	name   string
	from   string
	mutate func(a *Analysis)
	// want are texts the page must hold; reject are texts it must not.
	want, reject []string
}{
	{name: "complete", from: "hotrod", mutate: func(*Analysis) {}},
	{name: "incident", from: "boutique", mutate: func(*Analysis) {},
		want: []string{`<section id="incident">`, `<ol class="origins"><li>currencyservice (score`, ">origin</text>", "Amplification</th>",
			`<p class="lead">Between 2022-08-22 05:18:15Z and 05:20:50Z, the incident began at currencyservice`,
			"slowest at currencyservice since it changed: <code>"}},
	{name: "incident, no origin", from: "boutique", mutate: noOrigin,
		want:   []string{`<section id="incident">`, "no node left its normal range", "No node left its normal range: no origin."},
		reject: []string{"<h3>Path</h3>", "the path has no step", "since it changed"}},
	{name: "origin, no path", from: "boutique", mutate: func(a *Analysis) { a.Incident.Path = nil },
		want: []string{"<h3>Path</h3>", "the path has no step", "No caller of currencyservice left its range after it"}},
	{name: "nil parts", from: "hotrod", mutate: func(a *Analysis) {
		a.Fit, a.Incident, a.Timeline.Changed, a.Rank.Capacity = nil, nil, nil, nil
	}, want: []string{"No change won", "The capacity sweep did not run", "calibrated</th><td>no"}},
	{name: "no plane", from: "hotrod", mutate: func(a *Analysis) { a.Fit.Plane = nil },
		want: []string{"The fit recorded no loss plane", "Loss along p", "Loss along k"}},
	{name: "no timeline, no set", from: "hotrod", mutate: func(a *Analysis) {
		a.Timeline, a.Rank.Set, a.Rank.Metastability = nil, nil, nil
	}, want: []string{"No timeline was replayed", "No candidate won", "metastability was not checked"}},
	{name: "no queues", from: "hotrod", mutate: func(a *Analysis) {
		a.Timeline.Baseline.Queues, a.Timeline.Changed.Queues = nil, nil
	}, want: []string{"No node&#39;s queue grew"}},
	{name: "hostile names", from: "hotrod", mutate: func(a *Analysis) {
		// Names come from traces: the page must escape them everywhere.
		const bad = `my"sql</svg><script>x()</script>&`
		rename := func(s *string) {
			if *s == "mysql" {
				*s = bad
			}
		}
		for i := range a.Model.Nodes {
			rename(&a.Model.Nodes[i].Name)
		}
		for i := range a.Model.Edges {
			rename(&a.Model.Edges[i].From)
			rename(&a.Model.Edges[i].To)
		}
		for _, r := range []*TimelineRun{&a.Timeline.Baseline, a.Timeline.Changed} {
			for i := range r.Queues {
				rename(&r.Queues[i].Node)
			}
		}
		a.Rank.Rows[0].Candidate.Description = bad
		a.Fit.Plane.X = bad
		a.Inputs = append(a.Inputs, bad)
	}, want: []string{"my&#34;sql&lt;/svg&gt;&lt;script&gt;x()&lt;/script&gt;&amp;"}},
	{name: "bare", from: "", mutate: func(*Analysis) {},
		want: []string{"The ranking did not run", "No model: nothing to draw"}},
}

// noOrigin turns the incident into one in which no node left its
// normal range.
func noOrigin(a *Analysis) {
	inc := a.Incident
	inc.Origins, inc.Path, inc.Confidence = nil, nil, 0
	for i := range inc.Nodes {
		inc.Nodes[i] = incident.NodeChange{Node: inc.Nodes[i].Node}
	}
	a.Examples.Origin, a.Examples.OriginSlowest, a.Examples.OriginFailed = "", nil, nil
}

// variant returns a fresh copy of the variant's analysis.
func variant(t *testing.T, from string, mutate func(*Analysis)) *Analysis {
	a := &Analysis{Version: AnalysisVersion, Seed: 42}
	if from != "" {
		a = fixture(t, from)
	}
	mutate(a)
	return a
}

// TestAnalysisHTMLStructure parses each page as HTML and checks that it
// is one self-contained document: no external reference, no script, the
// seed printed, one titled and captioned <svg> per chart, each of them
// well-formed XML.
func TestAnalysisHTMLStructure(t *testing.T) {
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			a := variant(t, tc.from, tc.mutate)
			page := render(t, a)
			s := string(page)
			for _, w := range tc.want {
				require.True(t, strings.Contains(s, w), "the page lacks %q (seed %d)", w, a.Seed)
			}
			for _, w := range tc.reject {
				require.False(t, strings.Contains(s, w), "the page holds %q (seed %d)", w, a.Seed)
			}
			require.True(t, strings.HasPrefix(s, "<!DOCTYPE html>\n"))
			seed := strconv.FormatUint(a.Seed, 10)
			require.Contains(t, s, "Seed <code>"+seed+"</code>")
			require.Contains(t, s, "(seed "+seed+")</title>")

			doc, err := html.Parse(bytes.NewReader(page))
			require.NoError(t, err)
			svgs := checkNodes(t, doc)
			require.Len(t, svgs, wantCharts(a), "one <svg> per chart")
			for _, svg := range svgs {
				// Each chart has a title and sits in a captioned figure.
				title := firstElement(svg, "title")
				require.NotNil(t, title, "an <svg> without <title>")
				require.NotEmpty(t, strings.TrimSpace(textOf(title)))
				fig := svg.Parent
				require.Equal(t, "figure", fig.Data)
				require.NotNil(t, firstElement(fig, "figcaption"))
			}
			raw := rawSVGs(s)
			require.Len(t, raw, len(svgs))
			for i, x := range raw {
				require.NoError(t, wellFormed(x), "svg %d is not well-formed XML", i)
			}
		})
	}
}

func TestAnalysisHTMLNil(t *testing.T) {
	require.Error(t, AnalysisHTML(io.Discard, nil))
}

// urlRef finds url(…) in CSS.
var urlRef = regexp.MustCompile(`url\(\s*['"]?([^'")\s]*)`)

// localRef reports whether a reference stays inside the page.
func localRef(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || strings.HasPrefix(v, "#") || strings.HasPrefix(v, "data:")
}

// checkNodes walks the document: no element loads anything from outside
// it. It returns the <svg> elements not nested in another.
func checkNodes(t *testing.T, doc *html.Node) []*html.Node {
	t.Helper()
	var svgs []*html.Node
	var walk func(n *html.Node, inSVG bool)
	walk = func(n *html.Node, inSVG bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "link", "iframe", "object", "embed", "img", "audio", "video", "base":
				t.Errorf("page holds a <%s> element", n.Data)
			case "svg":
				if !inSVG {
					svgs = append(svgs, n)
				}
			}
			for _, at := range n.Attr {
				key := strings.ToLower(at.Key)
				if at.Namespace != "" {
					key = at.Namespace + ":" + key
				}
				switch {
				case key == "xmlns" || strings.HasPrefix(key, "xmlns:") || at.Namespace == "xmlns":
					// A namespace name, not a reference.
				case key == "src" || key == "href" || strings.HasSuffix(key, ":href") || key == "action" || key == "poster" || key == "srcset":
					require.Truef(t, localRef(at.Val), "<%s %s=%q> refers outside the page", n.Data, key, at.Val)
				case strings.HasPrefix(key, "on"):
					t.Errorf("<%s> has an event handler %s", n.Data, key)
				default:
					require.NotContainsf(t, at.Val, "://", "<%s %s=%q>", n.Data, key, at.Val)
				}
				for _, m := range urlRef.FindAllStringSubmatch(at.Val, -1) {
					require.Truef(t, localRef(m[1]), "<%s %s> loads %q", n.Data, key, m[1])
				}
			}
			if n.Data == "style" {
				css := textOf(n)
				require.NotContains(t, css, "@import")
				for _, m := range urlRef.FindAllStringSubmatch(css, -1) {
					require.Truef(t, localRef(m[1]), "<style> loads %q", m[1])
				}
			}
			if n.Data == "meta" && strings.EqualFold(attr(n, "http-equiv"), "refresh") {
				t.Errorf("page refreshes itself")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inSVG || n.Type == html.ElementNode && n.Data == "svg")
		}
	}
	walk(doc, false)
	return svgs
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func firstElement(n *html.Node, tag string) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == tag {
			return c
		}
		if f := firstElement(c, tag); f != nil {
			return f
		}
	}
	return nil
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// rawSVGs returns the page's <svg> elements as written (they do not
// nest).
func rawSVGs(page string) []string {
	var out []string
	for {
		i := strings.Index(page, "<svg")
		if i < 0 {
			return out
		}
		j := strings.Index(page[i:], "</svg>")
		if j < 0 {
			return append(out, page[i:])
		}
		out = append(out, page[i:i+j+len("</svg>")])
		page = page[i+j+len("</svg>"):]
	}
}

// wellFormed reads s as strict XML to its end.
func wellFormed(s string) error {
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if depth != 0 {
				return errors.New("unclosed element")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
}

// TestAmplification checks the figure on each edge: observed counts when
// the model has them, else the fan-out times the expected attempts.
func TestAmplification(t *testing.T) {
	node := func(name string, requests int64, base float64) cascade.Node {
		n := cascade.Node{Name: name, Replicas: 1, Service: cascade.Const(1), Overload: cascade.Overload{Base: base}}
		if requests > 0 {
			n.Observed = &cascade.NodeObserved{Requests: requests}
		}
		return n
	}
	tests := []struct {
		name     string
		from, to cascade.Node
		edge     cascade.Edge
		want     float64
		observed bool
	}{
		{name: "observed, retries included", from: node("driver", 300, 0), to: node("redis", 3300, 0),
			edge: cascade.Edge{FanOut: cascade.Const(11), Observed: &cascade.EdgeObserved{Calls: 4050}}, want: 13.5, observed: true},
		{name: "observed edge, caller without requests", from: node("a", 0, 0), to: node("b", 0, 0),
			edge: cascade.Edge{FanOut: cascade.Const(2), Observed: &cascade.EdgeObserved{Calls: 10}}, want: 2},
		{name: "fan-out only", from: node("a", 0, 0), to: node("b", 0, 0.5),
			edge: cascade.Edge{FanOut: cascade.Dist{Kind: cascade.DistExp, Mean: 3}}, want: 3},
		{name: "retries: 1 + q + q² with q = 0.5", from: node("a", 0, 0), to: node("b", 0, 0.5),
			edge: cascade.Edge{FanOut: cascade.Const(2), Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3}}, want: 3.5},
		{name: "retries half reactivated", from: node("a", 0, 0), to: node("b", 0, 1),
			edge: cascade.Edge{FanOut: cascade.Const(1), Retry: &cascade.Retry{Reactivation: 0.5, MaxAttempts: 2}}, want: 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.edge.From, tc.edge.To = tc.from.Name, tc.to.Name
			m := &cascade.Model{Nodes: []cascade.Node{tc.from, tc.to}, Edges: []cascade.Edge{tc.edge}}
			got, obs := amplification(m, &m.Edges[0])
			require.InDelta(t, tc.want, got, 1e-9)
			require.Equal(t, tc.observed, obs)
		})
	}
}

// TestLayoutGraph checks the layout of the fixtures' graphs and of a
// graph with cycles: every edge that does not close a cycle goes to a
// later layer, entries come first, and no two nodes of a layer overlap.
func TestLayoutGraph(t *testing.T) {
	cyclic := &cascade.Model{
		Entries: []cascade.Entry{{Node: "a"}},
		Nodes:   []cascade.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e", Virtual: true}},
		Edges: []cascade.Edge{
			{From: "a", To: "b"}, {From: "b", To: "c"}, {From: "c", To: "a"}, // a cycle
			{From: "c", To: "c"}, // a self call
			{From: "a", To: "d"}, {From: "d", To: "b"}, {From: "b", To: "d"}, {From: "d", To: "e"}, {From: "a", To: "e"},
		},
	}
	models := map[string]*cascade.Model{"cyclic": cyclic}
	for _, name := range fixtureNames {
		models[name] = fixture(t, name).Model
	}
	for _, name := range []string{"cyclic", "hotrod", "boutique"} {
		m := models[name]
		t.Run(name, func(t *testing.T) {
			g := layoutGraph(m, "")
			back := 0
			for _, e := range g.edges {
				f, to := g.nodes[e.from], g.nodes[e.to]
				switch {
				case e.self:
					require.Equal(t, e.from, e.to)
				case e.back:
					back++
					require.Less(t, to.layer, f.layer, "%s → %s closes a cycle upwards", f.name, to.name)
				default:
					require.Less(t, f.layer, to.layer, "%s → %s", f.name, to.name)
				}
				// A chain steps one layer at a time.
				for i := 1; i < len(e.chain); i++ {
					require.Equal(t, g.nodes[e.chain[i-1]].layer+1, g.nodes[e.chain[i]].layer)
				}
			}
			for _, en := range m.Entries {
				require.Equal(t, 0, g.nodes[slicesIndex(m, en.Node)].layer)
			}
			for _, l := range g.layers {
				for i := 1; i < len(l); i++ {
					a, b := g.nodes[l[i-1]], g.nodes[l[i]]
					require.GreaterOrEqual(t, b.y-b.h/2, a.y+a.h/2-1e-9, "nodes overlap in a layer")
				}
			}
			if name == "cyclic" {
				require.Equal(t, 2, back, "c → a and d → b close cycles")
			} else {
				require.Zero(t, back)
				// The fewest possible: an exhaustive search over the
				// orders of every layer finds no fewer (in OnlineBoutique,
				// checkoutservice calls all five services of the last
				// layer, and frontend three of them).
				require.Equal(t, map[string]int{"hotrod": 0, "boutique": 1}[name], g.crossings())
			}
			require.False(t, math.IsNaN(g.width+g.height))
			require.NoError(t, wellFormed(graphSVG(m, m.Nodes[0].Name, "graph")))
		})
	}
}

func slicesIndex(m *cascade.Model, name string) int {
	for i := range m.Nodes {
		if m.Nodes[i].Name == name {
			return i
		}
	}
	return -1
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{0, 26, "0 5 10 15 20 25"},
		{0, 0.0115, "0.000 0.002 0.004 0.006 0.008 0.010"},
		{0, 1, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0, 7.3, "0 2 4 6"},
		{0, 9.3, "0 2 4 6 8"},
		{-3, 3, "-3 -2 -1 0 1 2 3"},
		{5, 5, "5"},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		require.Equal(t, tc.want, strings.Join(got, " "), "[%g, %g]", tc.lo, tc.hi)
	}
}

// TestEdgeLabelsBesideTheirLines holds every edge label of the call
// graphs clear of its own line and of the nodes: a label drawn over its
// line reads "×13:5" for ×13.5.
func TestEdgeLabelsBesideTheirLines(t *testing.T) {
	models := map[string]*cascade.Model{}
	for _, name := range fixtureNames {
		models[name] = fixture(t, name).Model
	}
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			m := models[name]
			g := layoutGraph(m, m.Nodes[0].Name)
			routes := g.routes()
			spots := labelSpots(g, routes)
			require.Len(t, spots, len(g.edges))
			for i, e := range g.edges {
				sp := spots[i]
				what := e.edge.From + " → " + e.edge.To + " " + ampText(e.amp)
				require.False(t, sp.hits(routes[i].ink(), 0), "%s: the label %v lies on its line", what, sp)
				for _, nd := range g.nodes {
					if !nd.dummy {
						require.False(t, sp.overlaps(box{nd.x, nd.y - nd.h/2, nd.x + nd.w, nd.y + nd.h/2}), "%s: the label covers %s", what, nd.name)
					}
				}
				for j := range i {
					require.False(t, sp.overlaps(spots[j]), "%s: the label covers another's", what)
				}
				require.True(t, sp.x0 >= 0 && sp.y0 >= 0 && sp.x1 <= g.width && sp.y1 <= g.height-cgLegendH, "%s: the label %v is off the drawing", what, sp)
			}
		})
	}
}
