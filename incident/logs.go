package incident

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mathext"

	"cascade"
	"cascade/internal/numfmt"
)

// LogSource calls fn for every log record of a capture (the order of
// dataset.ReadLogs); it returns fn's first error.
type LogSource = func(fn func(*cascade.LogRecord) error) error

// The log signals (see docs/incident.md, Method): their constants, chosen on the
// fixture generator and the development day (Nezha TrainTicket
// 2023-01-30) only.
const (
	// logAlpha is the false-alarm probability of an onset of a rise (of
	// error records, or of a template): a Poisson tail of the counts of
	// an onset window and the next, against what the normal share
	// brings there.
	logAlpha = 1e-6
	// logWinAlpha is the same tail per window from the onset on (the
	// window pooled with the one before it) for the window to be out.
	logWinAlpha = 1e-2
	// logMinEvents is the fewest events an onset needs (a new
	// template's occurrences, errored requests, a risen template's
	// occurrences), logWinEvents the fewest a window needs to be judged.
	logMinEvents = 5
	logWinEvents = 2
	// logMinRatio is the least ratio of observed to expected counts that
	// counts as a rise; logMinErrRise the least rise of the share of
	// requests with an error record (5 points, as the spans' error rate).
	logMinRatio   = 2.0
	logMinErrRise = 0.05
	// logSilentExp is the count a template's normal share should have
	// brought over a run of windows where it was absent, for the run to
	// be a stop: P(Poisson(8) = 0) = e⁻⁸ = 3.4·10⁻⁴.
	logSilentExp = 8.0
	// logSteadyMiss is the most a template's normal share may predict,
	// summed over the normal windows (with any lines) it was absent
	// from, for it to be watched for a stop: absences its share explains
	// by chance (P(Poisson(1) = 0) = 0.37) on a thin service, where a
	// window holds a request or two; a template absent where its share
	// predicted more comes and goes, as one seen in 2 of the first 3
	// windows of a busy aggregator did on the dev day. (Before issue
	// 38: present in every normal window, which a thin service's
	// statement seldom is.)
	logSteadyMiss = 1.0
	// logMaxZ caps the z-score a tail probability is read as.
	logMaxZ = 20.0
)

// logAcc counts one capture's log records per service and window.
type logAcc struct {
	width int64
	// lines counts the requests that wrote a record (distinct trace
	// ids; a record without one counts alone), errs those with an ERROR
	// or FATAL record or an exception's stack line, tmpl those with each
	// template.
	lines map[string]map[int64]int64
	errs  map[string]map[int64]int64
	tmpl  map[string]map[string]map[int64]int64
	// errT marks, per service, the templates with an error record (see
	// isErrorRecord): an error that stops is no fault.
	errT map[string]map[string]bool
}

// readLogs counts src's records by width windows.
func readLogs(ctx context.Context, src LogSource, width int64) (*logAcc, error) {
	la := &logAcc{width: width, lines: map[string]map[int64]int64{}, errs: map[string]map[int64]int64{},
		tmpl: map[string]map[string]map[int64]int64{}, errT: map[string]map[string]bool{}}
	// Each count is of requests, not records: a request that writes a
	// line in a loop, or an exception with its stack, counts once (the
	// records of one request are not independent; the requests are).
	type key struct {
		svc, tmpl, trace string
		w                int64
	}
	seen := map[key]bool{}
	// first reports whether the request (trace) counts for the first
	// time under the service, template ("" for any) and window; a record
	// without a trace id always counts.
	first := func(svc, tmpl, trace string, w int64) bool {
		if trace == "" {
			return true
		}
		k := key{svc, tmpl, trace, w}
		if seen[k] {
			return false
		}
		seen[key{strings.Clone(svc), strings.Clone(tmpl), strings.Clone(trace), w}] = true
		return true
	}
	n := 0
	err := src(func(r *cascade.LogRecord) error {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.Service == "" {
			return nil
		}
		w := floorDiv(r.Time, width)
		svc := r.Service
		if la.lines[svc] == nil {
			svc = strings.Clone(svc)
			la.lines[svc] = map[int64]int64{}
			la.errs[svc] = map[int64]int64{}
			la.tmpl[svc] = map[string]map[int64]int64{}
			la.errT[svc] = map[string]bool{}
		}
		if first(svc, "\x00all", r.TraceID, w) {
			la.lines[svc][w]++
		}
		t := r.Template
		if t == "" {
			t = r.Body
		}
		byW := la.tmpl[svc][t]
		if byW == nil {
			byW = map[int64]int64{}
			la.tmpl[svc][strings.Clone(t)] = byW
		}
		if first(svc, t, r.TraceID, w) {
			byW[w]++
		}
		if isErrorRecord(r) {
			if !la.errT[svc][t] {
				la.errT[svc][strings.Clone(t)] = true
			}
			if first(svc, "\x00err", r.TraceID, w) {
				la.errs[svc][w]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return la, ctx.Err()
}

// isErrorRecord reports a record at ERROR or FATAL, or a line of an
// exception's stack trace: "at pkg.Class.method(File.java:12)", "Caused
// by: …", or an exception's class and message alone
// ("java.lang.IllegalStateException: …").
func isErrorRecord(r *cascade.LogRecord) bool {
	switch r.Severity {
	case "ERROR", "FATAL":
		return true
	case "":
	default:
		return false
	}
	b := strings.TrimSpace(r.Body)
	if strings.HasPrefix(b, "at ") && strings.HasSuffix(b, ")") || strings.HasPrefix(b, "Caused by:") {
		return true
	}
	head, _, _ := strings.Cut(b, " ")
	head = strings.TrimSuffix(head, ":")
	return strings.Contains(head, ".") && (strings.HasSuffix(head, "Exception") || strings.HasSuffix(head, "Error"))
}

// logChange is one count-based change of a service's logs.
type logChange struct {
	metric   string // log_errors, log_new, log_risen, log_stopped
	template string // empty for log_errors
	onset    int    // window (from lo)
	// count and expected are the events from the onset on and what the
	// normal share brings there; normal is the normal share (per request
	// for log_errors, per line for templates).
	count    int64
	expected float64
	normal   float64
	p        float64 // the onset's tail probability
	size     float64 // the share of requests (or lines) it moved, at most 1
	js       []judgement
}

// logNormal is a service's normal range of logs: its requests, lines,
// errored requests and per-template counts, over win windows.
type logNormal struct {
	reqs, lines, errs int64
	win               int // windows with lines
	tmpl              map[string]int64
}

func (la *logAcc) normalOf(svc string, inRange func(w int64) bool) logNormal {
	nl := logNormal{tmpl: map[string]int64{}}
	if la == nil {
		return nl
	}
	for w, c := range la.lines[svc] {
		if inRange(w) && c > 0 {
			nl.lines += c
			nl.win++
		}
	}
	for w, c := range la.errs[svc] {
		if inRange(w) {
			nl.errs += c
		}
	}
	for t, byW := range la.tmpl[svc] {
		for w, c := range byW {
			if inRange(w) && c > 0 {
				nl.tmpl[t] += c
			}
		}
	}
	return nl
}

// steady reports whether template t of service svc is watched for a
// stop: the normal windows in range with lines but without it are
// windows its share predicted little in (at most logSteadyMiss in all).
func (la *logAcc) steady(svc, t string, inRange func(int64) bool, share float64) bool {
	var miss float64
	for w, c := range la.lines[svc] {
		if inRange(w) && c > 0 && la.tmpl[svc][t][w] == 0 {
			miss += share * float64(c)
		}
	}
	return miss <= logSteadyMiss
}

// watched reports whether template t of service svc is watched for a
// stop: it is steady, and not an error record. An error statement that
// stops is an error that went away: only a rise of errors counts, as
// only a rise of latency does (issue 38: ts-preserve-service's
// dispatcherServlet exception, in the reference and not in the
// incident's capture, stood first for 2023-01-29 08:52:06 and, once
// its explainer's false stop was gone, for 10:12:48).
func (la *logAcc) watched(svc, t string, inRange func(int64) bool, share float64) bool {
	return !la.errT[svc][t] && la.steady(svc, t, inRange, share)
}

// matchTemplate maps a template of the incident's capture to one of the
// reference's: the same text, or else the first (in sorted order) with
// as many tokens, each equal or a "<*>" in either. Each capture's
// templates are mined apart, so one line may be templated a little
// differently in each.
func matchTemplate(t string, ref []string) (string, bool) {
	i := sort.SearchStrings(ref, t)
	if i < len(ref) && ref[i] == t {
		return t, true
	}
	a := strings.Fields(t)
	for _, r := range ref {
		b := strings.Fields(r)
		if len(a) != len(b) {
			continue
		}
		ok := true
		for k := range a {
			if a[k] != b[k] && a[k] != "<*>" && b[k] != "<*>" && !sameButDigits(a[k], b[k]) {
				ok = false
				break
			}
		}
		if ok {
			return r, true
		}
	}
	return "", false
}

// sameButDigits reports whether two tokens differ only in the numbers
// they hold ("82]" and "112]"): a number a template miner left in a
// template is a parameter of the statement, not its text, and a
// statement whose number changed did not stop (issue 38: ts-security-
// service's "[Last One Hour: 118 Total Valid Order: 82]" in the
// reference, "169 … 112" in the incident's capture).
func sameButDigits(a, b string) bool {
	digits := false
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		switch {
		case da > 0 && db > 0:
			digits = true
			a, b = a[da:], b[db:]
		case a[0] == b[0] && da == 0 && db == 0:
			a, b = a[1:], b[1:]
		default:
			return false
		}
	}
	return digits && a == "" && b == ""
}

// leadingDigits is the length of the run of ASCII digits s begins with.
func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// logJudgements judges each node's logs window by window from scan on
// against their normal range (the reference's logs, or the first
// BaselineWindows windows): the requests with an error record, each
// template new or risen, and each steady template that stopped. It
// returns each node's changes, loudest first per kind.
//
// judged counts the services whose logs had a normal range.
func logJudgements(la, ra *logAcc, acc, ref *spanAcc, names []string, lo int64, nw, scan int, cfg Config) (out map[string][]*logChange, judged int) {
	if la == nil {
		return nil, 0
	}
	out = map[string][]*logChange{}
	for _, name := range names {
		if la.lines[name] == nil {
			continue
		}
		nl, normWins := logNormalRange(la, ra, acc, ref, name, lo, cfg)
		if nl.reqs < int64(cfg.MinCount) || nl.lines == 0 {
			continue
		}
		judged++
		sl := newServiceLogs(la, acc, name, nl, normWins, lo, nw, scan)
		var chs []*logChange
		if ch := sl.errorRise(); ch != nil {
			chs = append(chs, ch)
		}
		best, keyOf := sl.templateRises(ref != nil)
		for _, ch := range best {
			if ch != nil {
				chs = append(chs, ch)
			}
		}
		if stop := sl.templateStop(ra, ref != nil, keyOf, cfg.BaselineWindows); stop != nil {
			chs = append(chs, stop)
		}
		if len(chs) > 0 {
			out[name] = chs
		}
	}
	return out, judged
}

// logNormalRange returns service name's normal logs with their requests,
// from the reference or else from the first BaselineWindows windows from
// lo, and over how many windows the requests were counted, which fills
// in the requests of a window without any.
func logNormalRange(la, ra *logAcc, acc, ref *spanAcc, name string, lo int64, cfg Config) (nl logNormal, normWins int) {
	if ref != nil {
		nl = ra.normalOf(name, func(int64) bool { return true })
		for _, w := range ref.nodes[name] {
			nl.reqs += w.n
		}
		normWins = len(ref.nodes[name])
	} else {
		end := lo + int64(cfg.BaselineWindows)
		nl = la.normalOf(name, func(w int64) bool { return w >= lo && w < end })
		for w := lo; w < end; w++ {
			if x := acc.nodes[name][w]; x != nil {
				nl.reqs += x.n
			}
		}
		normWins = cfg.BaselineWindows
	}
	return nl, normWins
}

// serviceLogs is one service's logs in the judged windows, nw of them
// from lo, beside its normal range: what its changes are judged on.
type serviceLogs struct {
	la       *logAcc
	name     string
	lo       int64
	nw, scan int
	nl       logNormal
	// reqs, lines and errs are the service's requests, requests with a
	// record and requests with an error record per window.
	reqs, lines, errs []float64
	// refT are the normal's templates and ts the incident's, each sorted.
	refT, ts []string
}

// newServiceLogs reads service name's series per judged window; a window
// without requests is given the normal's mean, so its lines are still
// judged against some requests.
func newServiceLogs(la *logAcc, acc *spanAcc, name string, nl logNormal, normWins int, lo int64, nw, scan int) *serviceLogs {
	reqs := make([]float64, nw)
	lines := make([]float64, nw)
	errs := make([]float64, nw)
	for k := range nw {
		w := lo + int64(k)
		if x := acc.nodes[name][w]; x != nil {
			reqs[k] = float64(x.n)
		}
		if reqs[k] == 0 && normWins > 0 {
			reqs[k] = float64(nl.reqs) / float64(normWins)
		}
		lines[k] = float64(la.lines[name][w])
		errs[k] = float64(la.errs[name][w])
	}
	var refT []string
	for t := range nl.tmpl {
		refT = append(refT, t)
	}
	sort.Strings(refT)
	ts := sortedKeys(la.tmpl[name])
	return &serviceLogs{la: la, name: name, lo: lo, nw: nw, scan: scan, nl: nl,
		reqs: reqs, lines: lines, errs: errs, refT: refT, ts: ts}
}

// errorRise judges the share of requests with an error record against
// the normal's, or returns nil when it did not rise.
func (sl *serviceLogs) errorRise() *logChange {
	nl, reqs := sl.nl, sl.reqs
	p0 := (float64(nl.errs) + 0.5) / (float64(nl.reqs) + 1)
	return logRise("log_errors", "", sl.errs, reqs, reqs, p0, sl.scan, true)
}

// templateRises judges each template's share of the service's lines and
// returns the earliest (then the likeliest) new template and risen one
// (best[0] and best[1]), with the incident's templates matched to the
// normal's (keyOf), which the stops are read through. withRef says the
// normal is a reference capture, whose templates were mined apart and
// are matched by text.
func (sl *serviceLogs) templateRises(withRef bool) (best [2]*logChange, keyOf map[string]string) {
	la, name, lo, nw, nl := sl.la, sl.name, sl.lo, sl.nw, sl.nl
	keyOf = map[string]string{} // the incident's templates matched to the normal's
	for _, t := range sl.ts {
		key, ok := t, true
		if withRef {
			key, ok = matchTemplate(t, sl.refT)
		} else {
			ok = nl.tmpl[t] > 0
		}
		if ok {
			keyOf[t] = key
		}
		xs := make([]float64, nw)
		for k := range nw {
			xs[k] = float64(la.tmpl[name][t][lo+int64(k)])
		}
		c0 := float64(nl.tmpl[key])
		metric, slot := "log_risen", 1
		if !ok || c0 == 0 {
			metric, slot, c0 = "log_new", 0, 0
		}
		s0 := (c0 + 0.5) / (float64(nl.lines) + 1)
		ch := logRise(metric, t, xs, sl.lines, sl.reqs, s0, sl.scan, false)
		if ch != nil && (best[slot] == nil || ch.onset < best[slot].onset ||
			ch.onset == best[slot].onset && ch.p < best[slot].p) {
			best[slot] = ch
		}
	}
	return best, keyOf
}

// templateStop returns the earliest (then the likeliest) stop: a steady
// normal template absent while the service's lines say it should have
// appeared, counted through the incident's templates matched to it
// (keyOf); nil for none.
func (sl *serviceLogs) templateStop(ra *logAcc, withRef bool, keyOf map[string]string, baselineWindows int) *logChange {
	la, name, lo, nw, nl := sl.la, sl.name, sl.lo, sl.nw, sl.nl
	var stop *logChange
	normSrc, normRange := la, func(w int64) bool { return w >= lo && w < lo+int64(baselineWindows) }
	if withRef {
		normSrc, normRange = ra, func(int64) bool { return true }
	}
	for _, t := range sl.refT {
		if nl.win == 0 || !normSrc.watched(name, t, normRange, float64(nl.tmpl[t])/float64(nl.lines)) {
			continue
		}
		xs := make([]float64, nw)
		for _, it := range sl.ts {
			if keyOf[it] != t {
				continue
			}
			for k := range nw {
				xs[k] += float64(la.tmpl[name][it][lo+int64(k)])
			}
		}
		s0 := float64(nl.tmpl[t]) / float64(nl.lines)
		if ch := logStop(t, xs, sl.lines, sl.reqs, s0, sl.scan); ch != nil && (stop == nil || ch.onset < stop.onset ||
			ch.onset == stop.onset && ch.p < stop.p) {
			stop = ch
		}
	}
	return stop
}

// poissonTail is P(X ≥ x) for X ~ Poisson(lambda).
func poissonTail(x, lambda float64) float64 {
	if x <= 0 {
		return 1
	}
	if lambda <= 0 {
		return 0
	}
	return mathext.GammaIncReg(x, lambda)
}

// tailZ reads a tail probability as a z-score (capped at logMaxZ).
func tailZ(p float64) float64 {
	if p <= 0 {
		return logMaxZ
	}
	return math.Min(logMaxZ, math.Max(0, math.Sqrt2*math.Erfcinv(2*p)))
}

// logRise finds the onset of a rise of counts xs (per window) against
// share times base (per window: requests, or lines): the first window
// from scan on whose own count reaches logMinRatio times the expected,
// and whose count pooled with the next window's
// reaches logMinEvents and logMinRatio times the expected, with a
// Poisson tail below logAlpha (and, for errors, a share of requests
// logMinErrRise above normal). From the onset on, a window pooled with
// the one before it (not before the onset) is judged when it holds
// logWinEvents events, and out when it passes the same tests at
// logWinAlpha.
func logRise(metric, template string, xs, base, reqs []float64, share float64, scan int, errors bool) *logChange {
	nw := len(xs)
	material := func(x, lambda, b float64) bool {
		if x < logMinRatio*lambda {
			return false
		}
		return !errors || x/math.Max(b, x)-share >= logMinErrRise
	}
	onset := -1
	var p float64
	for k := scan; k < nw; k++ {
		if xs[k] == 0 || xs[k] < logMinRatio*share*base[k] {
			continue // the onset window rises itself
		}
		x, b := xs[k], base[k]
		if k+1 < nw {
			x, b = x+xs[k+1], b+base[k+1]
		}
		lambda := share * b
		if x < logMinEvents || !material(x, lambda, b) {
			continue
		}
		if p = poissonTail(x, lambda); p < logAlpha {
			onset = k
			break
		}
	}
	if onset < 0 {
		return nil
	}
	ch := &logChange{metric: metric, template: template, onset: onset, normal: share, p: p, js: make([]judgement, nw)}
	var sumR float64
	for k := onset; k < nw; k++ {
		ch.count += int64(xs[k])
		ch.expected += share * base[k]
		sumR += reqs[k]
		x, b := xs[k], base[k]
		if k > onset {
			x, b = x+xs[k-1], b+base[k-1]
		}
		if x < logWinEvents {
			continue
		}
		lambda := share * b
		pk := poissonTail(x, lambda)
		ch.js[k] = judgement{judged: true, out: pk < logWinAlpha && material(x, lambda, b), z: tailZ(pk),
			metric: metric, base: share, value: x / math.Max(b, 1), n: int(x)}
	}
	if sumR > 0 {
		ch.size = math.Min(1, math.Max(0, (float64(ch.count)-ch.expected)/sumR))
	}
	return ch
}

// logStop finds the first run of windows from scan on where a template
// that its normal share says should appear did not: consecutive windows
// without it whose expected count (share times the service's lines)
// reaches logSilentExp. Every window of the run is out.
func logStop(template string, xs, lines, reqs []float64, share float64, scan int) *logChange {
	nw := len(xs)
	for k := scan; k < nw; k++ {
		if xs[k] > 0 || lines[k] == 0 {
			continue
		}
		exp, end := 0.0, k
		for end < nw && xs[end] == 0 {
			exp += share * lines[end]
			end++
		}
		if exp < logSilentExp {
			k = end - 1
			continue
		}
		p := math.Exp(-exp)
		ch := &logChange{metric: "log_stopped", template: template, onset: k, normal: share, expected: exp, p: p,
			js: make([]judgement, nw)}
		var sumR float64
		for i := k; i < end; i++ {
			sumR += reqs[i]
			ch.js[i] = judgement{judged: true, out: true, z: tailZ(p), metric: "log_stopped", base: share * lines[i], value: 0,
				n: int(lines[i])}
		}
		if sumR > 0 {
			ch.size = math.Min(1, exp/sumR)
		}
		return ch
	}
	return nil
}

// logInput is the log counts of the incident's capture and of the
// reference; nil when not given.
type logInput struct{ inc, ref *logAcc }

// readLogInput counts the incident's and the reference's log records.
func readLogInput(ctx context.Context, in Input, width int64) (logInput, error) {
	var li logInput
	var err error
	if in.Logs != nil {
		if li.inc, err = readLogs(ctx, in.Logs, width); err != nil {
			return li, err
		}
	}
	if in.ReferenceLogs != nil {
		if li.ref, err = readLogs(ctx, in.ReferenceLogs, width); err != nil {
			return li, fmt.Errorf("reference: %w", err)
		}
	}
	return li, nil
}

// judgeLogs runs the log signals and merges each node's changes into its
// judgements from scan on, as the gap's and the metrics' are: a log
// window joins one the spans did not judge, or replaces it when out.
// It returns, too, a warning for each log input given and not judged.
func judgeLogs(li logInput, acc, ref *spanAcc, states []*nodeState, names []string, lo int64, nw, scan int, cfg Config) (map[string][]*logChange, []string) {
	switch {
	case li.inc == nil && li.ref != nil:
		return nil, []string{"logs: the reference's logs were given without the capture's: they were not judged"}
	case li.inc == nil:
		return nil, nil
	case ref != nil && li.ref == nil:
		// A reference without logs gives the logs no normal range.
		return nil, []string{"logs: the reference (--baseline) carries no logs, so the capture's logs have no normal range and were not judged (give the reference with its logs: analyze --baseline-logs, or a --baseline dataset that holds them)"}
	}
	ljs, judged := logJudgements(li.inc, li.ref, acc, ref, names, lo, nw, scan, cfg)
	var warn []string
	if judged == 0 {
		where := "the first windows"
		if ref != nil {
			where = "the reference"
		}
		warn = append(warn, fmt.Sprintf("logs: no service of the spans has log lines and %d requests in %s: the logs were not judged", cfg.MinCount, where))
	}
	for _, st := range states {
		for _, ch := range ljs[st.name] {
			st.join(ch.js, scan)
		}
	}
	return ljs, warn
}

// logSize is the largest size of a node's log changes from window c on.
func logSize(chs []*logChange, c int) float64 {
	var s float64
	for _, ch := range chs {
		if ch.onset >= c-1 {
			s = math.Max(s, ch.size)
		}
	}
	return s
}

// logEvidence completes the evidence of log metrics with their
// template, their count from the onset on (Value) against the count the
// normal share brings (Normal), and the least count out of its range
// there (NormalHigh, at logWinAlpha).
func logEvidence(ev []ChangeEvidence, chs []*logChange) {
	for e := range ev {
		for _, ch := range chs {
			if ev[e].Metric != ch.metric {
				continue
			}
			x := math.Ceil(ch.expected)
			for x < float64(ch.count) && poissonTail(x, ch.expected) >= logWinAlpha {
				x++
			}
			ev[e].Template, ev[e].Calls = ch.template, int(ch.count)
			ev[e].Normal, ev[e].NormalHigh, ev[e].Value = numfmt.Round3(ch.expected), x, float64(ch.count)
			break
		}
	}
}
