//go:build unix

package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// chromiumBin is where Debian's chromium package installs the browser.
const chromiumBin = "/usr/bin/chromium"

// probeScript counts, once the page is laid out, the <svg> elements and
// those that take room on the page, into attributes of <body> that
// --dump-dom shows.
const probeScript = `<script>(function(){var t=0,n=0,w=1e9;` +
	`document.querySelectorAll("svg").forEach(function(s){t++;var r=s.getBoundingClientRect();` +
	`if(r.width>0&&r.height>0){n++;w=Math.min(w,r.width)}});` +
	`document.body.setAttribute("data-svg-total",t);document.body.setAttribute("data-svg-rendered",n);` +
	`document.body.setAttribute("data-svg-min-width",Math.round(w));` +
	`var p=document.querySelector("p.lead");if(p){var r=p.getBoundingClientRect(),c=getComputedStyle(p);` +
	`var v=c.display!=="none"&&c.visibility==="visible"&&parseFloat(c.opacity)>0;` +
	`document.body.setAttribute("data-lead-x",Math.round(r.left));document.body.setAttribute("data-lead-y",Math.round(r.top));` +
	`document.body.setAttribute("data-lead-w",Math.round(r.width));document.body.setAttribute("data-lead-h",Math.round(r.height));` +
	`document.body.setAttribute("data-lead-chars",p.textContent.length);document.body.setAttribute("data-lead-visible",v?1:0);` +
	`document.body.setAttribute("data-summary-y",Math.round(document.getElementById("summary").getBoundingClientRect().top));}` +
	`var o=document.getElementById("observed-nodes");if(o){var rows=0;o.querySelectorAll("tbody tr").forEach(function(tr){` +
	`var r=tr.getBoundingClientRect();if(r.width>0&&r.height>0&&getComputedStyle(tr).visibility==="visible")rows++});` +
	`var box=o.parentElement;document.body.setAttribute("data-observed-rows",rows);` +
	`document.body.setAttribute("data-observed-overflow",Math.max(0,box.scrollWidth-box.clientWidth));}})();</script>`

// TestAnalysisHTMLInChromium opens the HotROD page in headless Chromium
// and checks that every chart was laid out with a size, that the
// screenshot shows the charts' colours, and that the paragraph in plain
// words opens the page, laid out, visible and inked. It runs when Chromium is
// installed at /usr/bin/chromium (apt-get install chromium), and must
// run when CASCADE_CHROMIUM=1.
func TestAnalysisHTMLInChromium(t *testing.T) {
	required := os.Getenv("CASCADE_CHROMIUM") == "1"
	if _, err := os.Stat(chromiumBin); err != nil {
		if required {
			t.Fatalf("CASCADE_CHROMIUM=1 but %s is missing: %v (apt-get install -y chromium)", chromiumBin, err)
		}
		t.Skipf("%s not found: install Debian's chromium (apt-get install -y chromium) to run this check; CASCADE_CHROMIUM=1 makes it required", chromiumBin)
	}
	a := fixture(t, "hotrod")
	page := string(render(t, a))
	// The probe is the page plus a script; the page's policy forbids
	// scripts, so it is widened for this one.
	const csp = `default-src 'none'; `
	require.Contains(t, page, csp)
	probe := strings.Replace(page, csp, csp+`script-src 'unsafe-inline'; `, 1)
	probe = strings.Replace(probe, "</body>", probeScript+"</body>", 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(file, []byte(probe), 0o644))
	shot := filepath.Join(dir, "page.png")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromiumBin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1280,9600",
		"--screenshot="+shot, "--dump-dom", "file://"+file)
	// Chromium starts helper processes: run it in its own process group
	// and kill the group on timeout and after it exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers, if any
	}
	require.NoError(t, err, "chromium: %s", tail(stderr.String(), 2000))

	// The DOM after layout: every chart is there and takes room.
	dom := stdout.String()
	want := wantCharts(a)
	require.Equal(t, want, domCount(t, dom, "data-svg-total"), "svg elements in the DOM")
	require.Equal(t, want, domCount(t, dom, "data-svg-rendered"), "svg elements laid out with a size")
	require.GreaterOrEqual(t, domCount(t, dom, "data-svg-min-width"), 300, "the narrowest chart, px")

	// The paragraph in plain words is there, whole, visible, and above
	// everything else.
	require.Equal(t, 1, domCount(t, dom, "data-lead-visible"), "the summary paragraph is hidden")
	want = utf8.RuneCountInString(summaryParagraph(a))
	require.Greater(t, want, 100)
	require.Equal(t, want, domCount(t, dom, "data-lead-chars"), "the summary paragraph's text")
	at := image.Pt(domCount(t, dom, "data-lead-x"), domCount(t, dom, "data-lead-y"))
	lead := image.Rectangle{Min: at, Max: at.Add(image.Pt(domCount(t, dom, "data-lead-w"), domCount(t, dom, "data-lead-h")))}
	require.GreaterOrEqual(t, lead.Dx(), 300, "the summary paragraph's width, px")
	require.GreaterOrEqual(t, lead.Dy(), 3*18, "the summary paragraph's height, px: several lines")
	require.Less(t, lead.Max.Y, domCount(t, dom, "data-summary-y"), "the summary paragraph is not above the summary table")
	require.Less(t, lead.Min.Y, 400, "the summary paragraph does not open the page")

	// The screenshot decodes, is not blank, and shows each chart's
	// fills: the entry node, the surge band, the capacity band, the best
	// cell of the loss plane, and the ×10 edge.
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 1280, 9600), img.Bounds())
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}]++
		}
	}
	require.Greater(t, len(counts), 200, "distinct colours: the page looks blank")
	// The paragraph's text reaches the screen: pixels in the ink's
	// colour, the cores of its glyphs, within its box.
	ink, inked := hexColour(t, "#1d2330"), 0
	for y := lead.Min.Y; y < lead.Max.Y; y++ {
		for x := lead.Min.X; x < lead.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if (color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}) == ink {
				inked++
			}
		}
	}
	require.Greater(t, inked, 500, "the summary paragraph's text is not on the screenshot")
	fills := []struct{ name, hex string }{{"entry node", "#eef3fb"}}
	if tl := a.Timeline; tl != nil && tl.SurgeToMS > tl.SurgeFromMS {
		fills = append(fills, struct{ name, hex string }{"surge band", "#fbe3c6"})
	}
	if a.Rank != nil && a.Rank.Capacity != nil {
		fills = append(fills, struct{ name, hex string }{"capacity band", "#c6dbef"})
	}
	if a.Fit != nil && a.Fit.Plane != nil {
		fills = append(fills, struct{ name, hex string }{"best cell of the loss plane", "#ffffcc"})
	}
	for i := range a.Model.Edges {
		if amp, _ := amplification(a.Model, &a.Model.Edges[i]); amp == 10 {
			fills = append(fills, struct{ name, hex string }{"an edge of amplification 10", ampColour(10)})
			break
		}
	}
	for _, c := range fills {
		require.Greater(t, counts[hexColour(t, c.hex)], 20, "%s (%s) is not on the screenshot", c.name, c.hex)
	}

	// The observed table is laid out whole, a visible row per node, and
	// the capture's timeline draws the observed and the replayed series
	// in two colours that reach the screen; the operating point too.
	if o := a.Observed; o != nil {
		require.Equal(t, len(o.Nodes), domCount(t, dom, "data-observed-rows"), "visible rows of the observed table")
		require.Zero(t, domCount(t, dom, "data-observed-overflow"), "the observed table is wider than the page, px")
		require.NotNil(t, o.Timeline)
		for _, c := range observedCharts(o.Timeline) {
			chart := chartSVG(t, dom, c.title)
			require.GreaterOrEqual(t, strings.Count(chart, "<path"), 4, "%s: no lines", c.title)
			obs, rep := seriesStroke(t, chart, "observed"), seriesStroke(t, chart, "replayed")
			require.NotEqual(t, obs, rep, "%s: observed and replayed in one colour", c.title)
		}
		require.Greater(t, counts[colObserved], 200, "the observed series (%v) are not on the screenshot", colObserved)
		for _, n := range o.Nodes {
			if n.Slots > 0 && n.Observed.Utilisation == 1 {
				require.Greater(t, counts[hexColour(t, scaleColour(1, utilStops))], 20,
					"%s, at 100%% utilisation, is not on the screenshot", n.Node)
				break
			}
		}
	}

	// The goodput chart draws the baseline and the change in two colours,
	// each named in its legend, and both reach the screen.
	if tl := a.Timeline; tl != nil && tl.Changed != nil {
		chart := chartSVG(t, dom, "Goodput and offered load over time")
		base, change := seriesStroke(t, chart, "goodput, baseline"), seriesStroke(t, chart, "goodput, with the change")
		require.NotEqual(t, base, change, "the goodput of the baseline and of the change are drawn in one colour")
		for _, c := range []struct {
			name string
			col  color.RGBA
		}{{"baseline goodput", base}, {"changed goodput", change}} {
			require.Greater(t, counts[c.col], 50, "%s (%v) is not on the screenshot", c.name, c.col)
		}
	}
}

// chartSVG returns the <svg> element of the chart titled title in dom.
func chartSVG(t *testing.T, dom, title string) string {
	t.Helper()
	i := strings.Index(dom, "<title>"+title)
	require.GreaterOrEqual(t, i, 0, "no chart titled %q", title)
	start := strings.LastIndex(dom[:i], "<svg")
	end := strings.Index(dom[i:], "</svg>")
	require.True(t, start >= 0 && end >= 0, "chart %q is not an <svg> element", title)
	return dom[start : i+end]
}

var svgStroke = regexp.MustCompile(`stroke:\s*(?:#([0-9A-Fa-f]{6})|rgb\((\d+),\s*(\d+),\s*(\d+)\))`)

// seriesStroke returns the colour of the legend's line beside the entry
// named label: gonum/plot draws each legend entry's thumbnail line, then
// its text, so the last stroke before the label is the series'.
func seriesStroke(t *testing.T, chart, label string) color.RGBA {
	t.Helper()
	i := strings.Index(chart, ">"+label+"</text>")
	require.GreaterOrEqual(t, i, 0, "the chart has no legend entry %q", label)
	before := chart[:strings.LastIndex(chart[:i], "<text")]
	all := svgStroke.FindAllStringSubmatch(before, -1)
	require.NotEmpty(t, all, "no line before the legend entry %q", label)
	m := all[len(all)-1]
	if m[1] != "" {
		return hexColour(t, "#"+m[1])
	}
	var rgb [3]uint8
	for k := range rgb {
		v, err := strconv.Atoi(m[k+2])
		require.NoError(t, err)
		rgb[k] = uint8(v)
	}
	return color.RGBA{rgb[0], rgb[1], rgb[2], 0xff}
}

var domAttr = regexp.MustCompile(`(data-[a-z-]+)="(-?\d+)"`)

// domCount reads an attribute the probe set on <body>.
func domCount(t *testing.T, dom, name string) int {
	t.Helper()
	for _, m := range domAttr.FindAllStringSubmatch(dom, -1) {
		if m[1] == name {
			n, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("%s not in the DOM: the probe did not run\n%s", name, tail(dom, 600))
	return 0
}

func hexColour(t *testing.T, s string) color.RGBA {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	require.NoError(t, err)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
