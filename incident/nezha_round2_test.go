package incident

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// Issue 38's protocol (docs/validation.md, "Root cause, round 2"): the
// faults of nezha-dev-faults.tsv split by day. The dev days are the ones
// constants are chosen on; the held-out days are run with them frozen.
// TrainTicket 2023-01-30 was the dev day of every earlier round, so it
// stays one; OnlineBoutique 2022-08-23 had never been run and joins it.
var (
	devDays     = []string{"2022-08-23", "2023-01-30"}
	heldOutDays = []string{"2022-08-22", "2023-01-29"}
)

// devFault is one line of nezha-dev-faults.tsv with the files it names,
// made absolute, and the log and metric files beside them.
type devFault struct {
	nezhaFault
	traces, logs []string
	metricDir    string
	refTraces    []string
	refLogs      []string
	refMetricDir string
}

// readDevFaults reads root/nezha-dev-faults.tsv and keeps the faults of
// the given days.
func readDevFaults(t *testing.T, root string, days []string) []devFault {
	t.Helper()
	path := filepath.Join(root, "nezha-dev-faults.tsv")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []devFault
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue
		}
		c := strings.Split(sc.Text(), "\t")
		require.GreaterOrEqual(t, len(c), 7, "%s:%d: want 7 or more columns", path, line)
		if !slices.Contains(days, c[1]) {
			continue
		}
		d := devFault{nezhaFault: nezhaFault{system: c[0], day: c[1], at: c[2], service: c[3], kind: c[4]}}
		for _, m := range strings.Split(c[5], ",") {
			p := filepath.Join(root, m)
			d.traces = append(d.traces, p)
			d.minutes = append(d.minutes, strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)))
			d.logs = append(d.logs, logFile(filepath.Dir(filepath.Dir(p)), minuteOf(p))...)
		}
		d.metricDir = filepath.Join(filepath.Dir(filepath.Dir(d.traces[0])), "metric")
		ref := filepath.Join(root, c[6])
		d.ref = c[6]
		d.refTraces = []string{ref}
		d.refLogs = logFile(filepath.Dir(filepath.Dir(ref)), minuteOf(ref))
		if md := filepath.Join(filepath.Dir(filepath.Dir(ref)), "metric"); dirExists(md) {
			d.refMetricDir = md
		}
		out = append(out, d)
	}
	require.NoError(t, sc.Err())
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// minuteOf returns "HH_MM" of a Nezha trace file path.
func minuteOf(p string) string {
	b := filepath.Base(p)
	i := strings.Index(b, "_trace")
	if i < 0 {
		return b
	}
	return b[:i]
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// r2Result is one fault's answers: the pass's and the baseline's
// ranking, the pass's confidence.
type r2Result struct {
	f          devFault
	pass       []string // origins, then the other changed nodes in order
	origins    []string
	passRank   int
	conf       float64
	abstained  bool
	rules      []string
	rulesRank  int
	warnings   []string
	ruleDetail string
}

// TestNezhaRound2 is issue 38's harness: every fault of the chosen set
// of nezha-dev-faults.tsv, ingested as `cascade analyze` would with
// everything the data offers (trace minutes, their logs, the day's pod
// metrics; the reference capture with its logs and metrics as
// --baseline), run through Investigate and through the simple-rules
// baseline (simpleRules), with hit@1 and hit@3 per system and per fault
// type for both:
//
//	CASCADE_NEZHA=/work/shared/realdata CASCADE_NEZHA_SET=dev go test ./incident -run 'TestNezhaRound2$' -v -timeout 60m
//	CASCADE_NEZHA=/work/shared/realdata CASCADE_NEZHA_SET=heldout go test ./incident -run 'TestNezhaRound2$' -v -timeout 60m
//
// CASCADE_NEZHA_MODE=own judges against the capture's first windows
// instead of the reference. It is a measurement, not a gate.
func TestNezhaRound2(t *testing.T) {
	root := os.Getenv(envNezha)
	if root == "" {
		t.Skipf("set %s to the directory of the Nezha captures to run the harness", envNezha)
	}
	days := devDays
	switch set := os.Getenv(envNezhaSet); set {
	case "", "dev":
	case "heldout":
		days = heldOutDays
	default:
		t.Fatalf("%s=%q: want dev or heldout", envNezhaSet, set)
	}
	faults := readDevFaults(t, root, days)
	require.NotEmpty(t, faults)
	if only := os.Getenv("CASCADE_NEZHA_ONLY"); only != "" {
		var keep []devFault
		for _, f := range faults {
			if strings.Contains(f.at+" "+f.service+" "+f.kind, only) {
				keep = append(keep, f)
			}
		}
		faults = keep
	}
	useRef := os.Getenv("CASCADE_NEZHA_MODE") != "own"
	cfg := DefaultConfig()
	cfg.Slowdown = 0
	refs := map[string]nezhaData{}
	var results []r2Result
	for _, f := range faults {
		var mdirs []string
		if dirExists(f.metricDir) {
			mdirs = []string{f.metricDir}
		}
		d := nezhaIngestLogs(t, f.traces, mdirs, f.logs)
		in := Input{Spans: d.spans, Samples: d.samples, Model: d.model, Logs: d.logs}
		var rd nezhaData
		if useRef {
			key := strings.Join(f.refTraces, ",")
			var ok bool
			if rd, ok = refs[key]; !ok {
				var rm []string
				if f.refMetricDir != "" {
					rm = []string{f.refMetricDir}
				}
				rd = nezhaIngestLogs(t, f.refTraces, rm, f.refLogs)
				refs[key] = rd
			}
			in.Reference, in.ReferenceLogs, in.ReferenceSamples = rd.spans, rd.logs, rd.samples
		}
		inc, err := Investigate(context.Background(), in, cfg)
		require.NoError(t, err, f.at)
		r := r2Result{f: f, conf: inc.Confidence, abstained: inc.Abstained, warnings: inc.Warnings}
		r.pass = slices.Clone(inc.Origins)
		r.origins = inc.Origins
		for _, n := range inc.Nodes {
			if n.Changed && !slices.Contains(r.pass, n.Node) {
				r.pass = append(r.pass, n.Node)
			}
		}
		r.passRank = outcomeOf(inc, f.service, utc(f.at)).rank
		var ruleIn rulesInput
		ruleIn.spans, ruleIn.samples, ruleIn.logs = d.spans, d.samples, d.logs
		if useRef {
			ruleIn.refSpans, ruleIn.refLogs = rd.spans, rd.logs
		}
		sr, err := simpleRules(ruleIn)
		require.NoError(t, err, f.at)
		for _, s := range sr {
			r.rules = append(r.rules, s.service)
		}
		r.rulesRank = slices.Index(r.rules, f.service) + 1
		if len(sr) > 0 {
			r.ruleDetail = sr[0].String()
		}
		if os.Getenv("CASCADE_NEZHA_DETAIL") != "" {
			t.Logf("%s %s %s (capture from %+ds)\n%s\nrules: %v", f.at, f.service, f.kind, (inc.StartNS-utc(f.at))/1e9,
				evidenceDetail(inc, utc(f.at)), sr)
		}
		results = append(results, r)
	}
	t.Log("\n" + round2Table(results))
}

// round2Table prints per fault the pass's and the baseline's top 3 and
// the injected service's rank in each, then hit@1 and hit@3 per system
// and per fault type, then the pass's confidence against its hits.
func round2Table(rs []r2Result) string {
	var b strings.Builder
	short := func(xs []string) string {
		var o []string
		for i, x := range xs {
			if i == 3 {
				break
			}
			o = append(o, strings.TrimPrefix(strings.TrimSuffix(x, "-service"), "ts-"))
		}
		return strings.Join(o, ", ")
	}
	rk := func(r int) string {
		if r == 0 {
			return "—"
		}
		return fmt.Sprint(r)
	}
	fmt.Fprintln(&b, "| fault (UTC) | system | service | type | pass: top 3 | conf | rank | rules: top 3 | rank |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		sys := strings.TrimPrefix(r.f.system, "nezha-")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f | %s | %s | %s |\n", r.f.at, sys, r.f.service, r.f.kind,
			short(r.pass), r.conf, rk(r.passRank), short(r.rules), rk(r.rulesRank))
	}
	fmt.Fprintln(&b, "\n(rank: the injected service's place among the origins, then the other changed nodes; —: the pass kept no change at it, or it fired no rule)")
	type tally struct{ n, p1, p3, b1, b3 int }
	groups := map[string]*tally{}
	var order []string
	add := func(key string, r r2Result) {
		g := groups[key]
		if g == nil {
			g = &tally{}
			groups[key] = g
			order = append(order, key)
		}
		g.n++
		if r.passRank == 1 {
			g.p1++
		}
		if r.passRank >= 1 && r.passRank <= 3 {
			g.p3++
		}
		if r.rulesRank == 1 {
			g.b1++
		}
		if r.rulesRank >= 1 && r.rulesRank <= 3 {
			g.b3++
		}
	}
	for _, r := range rs {
		add("system "+strings.TrimPrefix(r.f.system, "nezha-"), r)
	}
	kinds := map[string]bool{}
	for _, r := range rs {
		kinds[r.f.kind] = true
	}
	for _, k := range sortedKeys(kinds) {
		for _, r := range rs {
			if r.f.kind == k {
				add("type "+k, r)
			}
		}
	}
	for _, r := range rs {
		add("all", r)
	}
	pct := func(k, n int) string { return fmt.Sprintf("%d/%d (%.0f%%)", k, n, 100*float64(k)/float64(max(n, 1))) }
	fmt.Fprintln(&b, "\n| set | faults | pass hit@1 | pass hit@3 | rules hit@1 | rules hit@3 |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	for _, k := range order {
		g := groups[k]
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", k, g.n, pct(g.p1, g.n), pct(g.p3, g.n), pct(g.b1, g.n), pct(g.b3, g.n))
	}
	fmt.Fprintln(&b, "\n| confidence | first origin right | answers |\n|---|---|---|")
	for _, band := range trackBands {
		var right, n int
		for _, r := range rs {
			if r.conf >= band.lo && (r.conf < band.hi || band.hi == 1) && r.conf > 0 {
				n++
				if r.passRank == 1 {
					right++
				}
			}
		}
		fmt.Fprintf(&b, "| %g to %g | %d | %d |\n", band.lo, band.hi, right, n)
	}
	var fs []nezhaFault
	var tops [][]string
	for _, r := range rs {
		fs = append(fs, r.f.nezhaFault)
		tops = append(tops, r.origins)
	}
	fmt.Fprintf(&b, "\n%s", aggregatorCount(fs, tops))
	var warned []string
	for _, r := range rs {
		for _, w := range r.warnings {
			warned = append(warned, r.f.at+": "+w)
		}
	}
	if len(warned) > 0 {
		fmt.Fprintf(&b, "\nwarnings:\n%s\n", strings.Join(warned, "\n"))
	}
	return b.String()
}

// rulesInput is what the simple-rules baseline reads: the capture's
// spans, samples and logs, and the reference's spans and logs (nil:
// the capture's first minute is the normal).
type rulesInput struct {
	spans, refSpans func(func(*cascade.Span) error) error
	samples         func(func(*cascade.Sample) error) error
	logs, refLogs   LogSource
}

// ruleScore is one service's verdict under the simple rules.
type ruleScore struct {
	service string
	fired   int     // how many of the three rules fired
	size    float64 // the sum of each fired rule's excess, to order ties
	metric  string  // the fired metric with the largest z, if any
	z       float64
	p95     [2]float64 // normal, capture (ms)
	errs    [2]float64 // error lines per minute: normal, capture
}

func (s ruleScore) String() string {
	return fmt.Sprintf("%s fired=%d size=%.2f metric=%s z=%.1f p95=%.1f→%.1f errs/min=%.2f→%.2f",
		s.service, s.fired, s.size, s.metric, s.z, s.p95[0], s.p95[1], s.errs[0], s.errs[1])
}

// The simple rules of Fang et al. (2025), as issue 38 states them; the
// constants are theirs, not chosen here.
const (
	// rulesSigma: a metric point more than 3 standard deviations from
	// the mean of its normal points is anomalous.
	rulesSigma = 3.0
	// rulesP95: a service whose span p95 is at least 3× its normal p95.
	rulesP95 = 3.0
)

// rulesErrorWords are the error keywords a log line is searched for
// (case-insensitive).
var rulesErrorWords = []string{"error", "exception", "fail", "fatal"}

// simpleRules is the simple-rules baseline: per service, (1) any metric
// of its pods with a point inside the capture's span time range more than
// rulesSigma standard deviations from the mean of its points before it;
// (2) the p95 of its spans' durations at least rulesP95 times the
// reference's (or the capture's first minute's); (3) more log lines with
// an error keyword per minute than the reference has (or the capture's
// first minute), and at least 3 of them. Services are ranked by how
// many rules fired, then by the sum of their excesses (z/3, p95
// ratio/3, error-line rate ratio), then by name; a service no rule
// fired for is not ranked.
func simpleRules(in rulesInput) ([]ruleScore, error) {
	type lat struct{ normal, capture []float64 }
	lats := map[string]*lat{}
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	if err := in.spans(func(s *cascade.Span) error {
		lo, hi = min(lo, s.Start), max(hi, s.Start)
		return nil
	}); err != nil {
		return nil, err
	}
	normalEnd := lo + 60e9 // without a reference: the first minute
	if in.refSpans != nil {
		normalEnd = lo
	}
	get := func(svc string) *lat {
		l := lats[svc]
		if l == nil {
			l = &lat{}
			lats[svc] = l
		}
		return l
	}
	if err := in.spans(func(s *cascade.Span) error {
		l := get(s.Service)
		if s.Start < normalEnd {
			l.normal = append(l.normal, float64(s.Duration)/1e6)
		} else {
			l.capture = append(l.capture, float64(s.Duration)/1e6)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if in.refSpans != nil {
		if err := in.refSpans(func(s *cascade.Span) error {
			get(s.Service).normal = append(get(s.Service).normal, float64(s.Duration)/1e6)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	scores := map[string]*ruleScore{}
	score := func(svc string) *ruleScore {
		s := scores[svc]
		if s == nil {
			s = &ruleScore{service: svc}
			scores[svc] = s
		}
		return s
	}
	// Rule 2: trace p95.
	for svc, l := range lats {
		if len(l.normal) == 0 || len(l.capture) == 0 {
			continue
		}
		sort.Float64s(l.normal)
		sort.Float64s(l.capture)
		n, c := quantile(l.normal, 0.95), quantile(l.capture, 0.95)
		if n > 0 && c >= rulesP95*n {
			s := score(svc)
			s.fired++
			s.size += c / n / rulesP95
			s.p95 = [2]float64{n, c}
		}
	}
	// Rule 1: 3-sigma on each metric series, normal before the capture.
	if in.samples != nil {
		type series struct{ normal, capture []float64 }
		byKey := map[[3]string]*series{}
		if err := in.samples(func(x *cascade.Sample) error {
			if x.Service == "" || math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
				return nil
			}
			k := [3]string{x.Service, x.Instance, x.Metric + "{" + x.Labels + "}"}
			sr := byKey[k]
			if sr == nil {
				sr = &series{}
				byKey[k] = sr
			}
			switch {
			case x.Time < lo:
				sr.normal = append(sr.normal, x.Value)
			case x.Time <= hi:
				sr.capture = append(sr.capture, x.Value)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		best := map[string]float64{}
		bestName := map[string]string{}
		for k, sr := range byKey {
			if len(sr.normal) < 3 || len(sr.capture) == 0 {
				continue
			}
			var m, v float64
			for _, x := range sr.normal {
				m += x
			}
			m /= float64(len(sr.normal))
			for _, x := range sr.normal {
				v += (x - m) * (x - m)
			}
			sd := math.Sqrt(v / float64(len(sr.normal)-1))
			if sd == 0 {
				continue
			}
			for _, x := range sr.capture {
				z := math.Abs(x-m) / sd
				if z > rulesSigma && (z > best[k[0]] || z == best[k[0]] && k[2] < bestName[k[0]]) {
					best[k[0]], bestName[k[0]] = z, k[2]
				}
			}
		}
		for svc, z := range best {
			s := score(svc)
			s.fired++
			s.size += z / rulesSigma
			s.metric, s.z = bestName[svc], z
		}
	}
	// Rule 3: error keywords in logs.
	if in.logs != nil {
		count := func(src LogSource, keep func(int64) bool) (map[string]float64, int64, int64, error) {
			n := map[string]float64{}
			var first, last int64 = math.MaxInt64, math.MinInt64
			err := src(func(r *cascade.LogRecord) error {
				if r.Service == "" || !keep(r.Time) {
					return nil
				}
				first, last = min(first, r.Time), max(last, r.Time)
				body := strings.ToLower(r.Body)
				for _, w := range rulesErrorWords {
					if strings.Contains(body, w) {
						n[r.Service]++
						break
					}
				}
				return nil
			})
			return n, first, last, err
		}
		var nErr, cErr map[string]float64
		var nMin, cMin float64
		var err error
		if in.refLogs != nil {
			var f, l int64
			if nErr, f, l, err = count(in.refLogs, func(int64) bool { return true }); err != nil {
				return nil, err
			}
			nMin = math.Max(1, float64(l-f)/60e9)
			var cf, cl int64
			if cErr, cf, cl, err = count(in.logs, func(int64) bool { return true }); err != nil {
				return nil, err
			}
			cMin = math.Max(1, float64(cl-cf)/60e9)
		} else {
			if nErr, _, _, err = count(in.logs, func(t int64) bool { return t < normalEnd }); err != nil {
				return nil, err
			}
			nMin = 1
			var cf, cl int64
			if cErr, cf, cl, err = count(in.logs, func(t int64) bool { return t >= normalEnd }); err != nil {
				return nil, err
			}
			cMin = math.Max(1, float64(cl-cf)/60e9)
		}
		for svc, c := range cErr {
			nr, cr := nErr[svc]/nMin, c/cMin
			if c >= 3 && cr > nr {
				s := score(svc)
				s.fired++
				s.size += (cr + 1) / (nr + 1)
				s.errs = [2]float64{nr, cr}
			}
		}
	}
	out := make([]ruleScore, 0, len(scores))
	for _, s := range scores {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.fired != b.fired {
			return a.fired > b.fired
		}
		if a.size != b.size {
			return a.size > b.size
		}
		return a.service < b.service
	})
	return out, nil
}
