package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cascade"
	"cascade/graph"

	"github.com/stretchr/testify/require"
)

// The notification chain with a dependency that slows with its waiters
// and refuses past a wait cap (issue 37): rights' database contends
// (-db-slow) and has an acquire timeout (-db-wait-cap), as real pools do.
// Each setting is a run "before" and runs of changes to it; cascade
// builds the model from before's capture alone (every trace kept) and
// predicts each change, beside what the change measured live. The
// settings are in two sets: dev, on which the load curve's constants
// (graph/loadcurve.go) were looked at, and held, run once after they
// were frozen. docs/validation.md, "A dependency that slows and refuses
// under load", has the tables and the commands.

const (
	envNotifyLoad    = "CASCADE_E2E_NOTIFY_LOAD"
	envNotifyLoadSet = "CASCADE_E2E_NOTIFY_LOAD_SET" // dev, held, a setting's name, or all (default)
	// envNotifyLoadDir names a directory of kept runs (the live test's
	// CASCADE_E2E_NOTIFY_OUT/notify-load) that TestNotifyLoadPredict
	// predicts again, offline.
	envNotifyLoadDir = "CASCADE_NOTIFY_LOAD_DIR"
)

// notifyLoadSetting is a before and its changes.
type notifyLoadSetting struct {
	name, set string
	args      []string // the app's flags, before's and every change's
	changes   []string // notifyVariant's, or rate=N (the load's rate)
}

// rights' database in every setting contends and caps its waits; the
// settings differ in slots, query time, contention, cap, load and the
// changes tried.
var notifyLoadSettings = []notifyLoadSetting{
	{"a", "dev", []string{"-db-slots=2", "-db-query=20ms", "-db-slow=0.5", "-db-wait-cap=100ms", "-rate=25"}, []string{"retries=1", "rate=15"}},
	{"b", "dev", []string{"-db-slots=4", "-db-query=40ms", "-db-slow=0.3", "-db-wait-cap=150ms", "-rate=22"}, []string{"retry-via=delay", "rate=30"}},
	// c and d were held out of the first round (the load curve and the
	// deadline's band); the second round (a pool's contention,
	// waitSlowdown) was developed on all four, so they are dev now.
	{"c", "dev", []string{"-db-slots=3", "-db-query=30ms", "-db-slow=0.4", "-db-wait-cap=120ms", "-rate=24"}, []string{"retries=0", "rate=18"}},
	{"d", "dev", []string{"-db-slots=2", "-db-query=25ms", "-db-slow=0.25", "-db-wait-cap=200ms", "-rate=20"}, []string{"retry-via=delay", "rate=28"}},
	// Held out of the second round, then dev for the third (a cap and a
	// deadline told apart by the successes, both where both show).
	{"e", "dev", []string{"-db-slots=3", "-db-query=20ms", "-db-slow=0.3", "-db-wait-cap=80ms", "-rate=26"}, []string{"retries=1", "rate=20"}},
	{"f", "dev", []string{"-db-slots=5", "-db-query=50ms", "-db-slow=0.2", "-db-wait-cap=150ms", "-rate=21"}, []string{"retry-via=delay", "db-slots=8"}},
	// Its before retries once at once and then through the delay queue
	// (-immediate-retries 1): graph must read the policy
	// (queue.immediate_redeliveries) for the prediction to hold.
	{"i", "dev", []string{"-db-slots=3", "-db-query=30ms", "-db-slow=0.3", "-db-wait-cap=120ms", "-rate=22", "-immediate-retries=1"}, []string{"db-slots=5"}},
	// Held out of the third round: run once, after its constants were
	// frozen.
	{"g", "held", []string{"-db-slots=4", "-db-query=25ms", "-db-slow=0.35", "-db-wait-cap=90ms", "-rate=30"}, []string{"retries=1", "db-slots=6"}},
	{"h", "held", []string{"-db-slots=3", "-db-query=35ms", "-db-slow=0.15", "-db-wait-cap=300ms", "-rate=19"}, []string{"retry-via=delay", "rate=14"}},
}

// notifyLoadSeed is every run's seed: a change runs the same arrivals as
// its before where the rate is the same.
const notifyLoadSeed = 21

func TestE2ENotifyLoad(t *testing.T) {
	if os.Getenv(envNotifyLoad) != "1" {
		t.Skip("SKIPPED: the load-dependent notification chain runs only with " + envNotifyLoad +
			"=1 (.ci/e2e-notify.sh sets it, after building testdata/notify and installing rabbitmq-server)")
	}
	app, prometheus, rabbit := notifyBinaries(t)
	headroom := int64(envInt(t, envNotifyHeadroom, 65)) << 20
	set := os.Getenv(envNotifyLoadSet)
	out := os.Getenv(envNotifyOut)
	if out == "" {
		out = t.TempDir()
	}
	out = filepath.Join(out, "notify-load")
	cascadeBinary(t)
	for _, s := range notifyLoadSettings {
		if !inSet(s, set) {
			continue
		}
		runs := append([]string{""}, s.changes...)
		for _, change := range runs {
			args := slicesClone(s.args)
			name := "before"
			if change != "" {
				args = append(args, "-"+change)
				name = strings.ReplaceAll(change, "=", "-")
			}
			r := runNotify(t, app, prometheus, rabbit, "before", notifyLoadSeed, headroom, args...)
			checkNotifyRun(t, r)
			m := r.measured
			t.Logf("setting %s, %s: %d events, flow success %.1f%%, p50 %.0f ms, p99 %.0f ms, unfinished %d, alarm %v",
				s.name, name, m.Events, 100*m.FlowSuccessRate, m.FlowP50MS, m.FlowP99MS, m.Unfinished, m.MemoryAlarm)
			keepNotify(t, filepath.Join(out, s.name, name), r, 1)
		}
	}
	// What graph must read from each before, whatever the prediction:
	// rights' pool of the app's slots, and the retry policy's immediate
	// part.
	for _, s := range notifyLoadSettings {
		if !inSet(s, set) {
			continue
		}
		before := loadNotifyCapture(t, filepath.Join(out, s.name, "before"))
		bm, err := notifyModel(t.Context(), "notify-load-"+s.name, before)
		require.NoError(t, err)
		rights := bm.Node("rights")
		require.NotNil(t, rights)
		require.Equal(t, flagInt(s.args, "-db-slots"), rights.Concurrency, "setting %s: rights' pool", s.name)
		if n := flagInt(s.args, "-immediate-retries"); n > 0 {
			q := bm.Node(graph.QueuePrefix + "rights")
			require.NotNil(t, q)
			require.Equal(t, n, q.Queue.ImmediateRedeliveries, "setting %s: queue:rights retries at once first", s.name)
		}
	}
	var b bytes.Buffer
	require.NoError(t, predictLoad(t, &b, out, set))
	t.Logf("the load-dependent chain, predicted from each before:\n%s", b.String())
	require.NoError(t, os.WriteFile(filepath.Join(out, "prediction.md"), b.Bytes(), 0o644))
}

// TestNotifyLoadPredict predicts the kept runs of TestE2ENotifyLoad
// again, offline (CASCADE_NOTIFY_LOAD_DIR, the set in
// CASCADE_E2E_NOTIFY_LOAD_SET).
func TestNotifyLoadPredict(t *testing.T) {
	dir := os.Getenv(envNotifyLoadDir)
	if dir == "" {
		t.Skip("SKIPPED: predicts kept runs of TestE2ENotifyLoad; set " + envNotifyLoadDir)
	}
	var b bytes.Buffer
	require.NoError(t, predictLoad(t, &b, dir, os.Getenv(envNotifyLoadSet)))
	t.Logf("the load-dependent chain, predicted from each before:\n%s", b.String())
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// predictLoad writes the table of every setting of the set kept under
// dir: for each, before in sample and each change predicted from
// before's model, with the load curve and without it.
func predictLoad(t *testing.T, w io.Writer, dir, set string) error {
	fmt.Fprintln(w, "| setting | run | flow success meas / pred (gap) | without the load curve (gap) | flow p50 ms meas / pred (err) | flow p99 ms meas / pred (err) | overloaded meas / pred (seeds) | peak ready rights, points meas / pred | memory alarm meas / pred (seeds) | within targets |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range notifyLoadSettings {
		if !inSet(s, set) {
			continue
		}
		bdir := filepath.Join(dir, s.name, "before")
		if _, err := os.Stat(bdir); err != nil {
			continue
		}
		before := loadNotifyCapture(t, bdir)
		bm, err := notifyModel(context.Background(), "notify-load-"+s.name, before)
		if err != nil {
			return err
		}
		flat := cloneModel(bm)
		curves := 0
		for i := range flat.Nodes {
			if flat.Nodes[i].LoadCurve != nil {
				curves++
				flat.Nodes[i].LoadCurve = nil
			}
		}
		for _, change := range append([]string{""}, s.changes...) {
			name, cdir := "before (in sample)", bdir
			if change != "" {
				name, cdir = change, filepath.Join(dir, s.name, strings.ReplaceAll(change, "=", "-"))
			}
			if _, err := os.Stat(cdir); err != nil {
				continue
			}
			meas := before.Measured
			if change != "" {
				meas = loadNotifyCapture(t, cdir).Measured
			}
			scen, err := loadChange(bm, change)
			if err != nil {
				return err
			}
			traffic := trafficAs(before, meas)
			p, err := notifyReplay(context.Background(), bm, scen, traffic)
			if err != nil {
				return fmt.Errorf("setting %s, %s: %w", s.name, name, err)
			}
			pf, err := notifyReplay(context.Background(), flat, scen, traffic)
			if err != nil {
				return fmt.Errorf("setting %s, %s without the curve: %w", s.name, name, err)
			}
			m := measuredFigures(meas)
			over := meas.Unfinished > 0
			pover := 2*p.Overloaded > p.Seeds
			ok := within(change == "", m, p) && over == pover
			fmt.Fprintf(w, "| %s (%s; %s; %d curve) | %s | %.1f%% / %.1f%% (%+.1f pp) | %.1f%% (%+.1f pp) | %.0f / %.0f (%+.0f%%) | %.0f / %.0f (%+.0f%%) | %v / %v (%d/%d) | %.0f, %.0f / %.0f, %.0f | %v / %v (%d/%d) | %s |\n",
				s.name, s.set, strings.Join(s.args, " "), curves, name,
				100*m.Success, 100*p.Success, 100*(p.Success-m.Success), 100*pf.Success, 100*(pf.Success-m.Success),
				m.P50, p.P50, 100*relErr(p.P50, m.P50), m.P99, p.P99, 100*relErr(p.P99, m.P99),
				over, pover, p.Overloaded, p.Seeds, m.Peak["rights"], m.Peak["points"], p.Peak["rights"], p.Peak["points"],
				m.Alarm, p.Alarm, p.Alarms, p.Seeds, yesNo(ok))
		}
	}
	fmt.Fprintf(w, "\nTargets (issue 37): in sample, success within 3 pp and p50 within 15%%; a change, within 5 pp, 25%% p50 and 50%% p99; overloaded (flows unfinished after the drain) called as measured.\n")
	return nil
}

// loadChange is the scenario of a change to before: notifyVariant's,
// or none for rate=N (the traffic carries it) and for before itself.
func loadChange(m *cascade.Model, change string) (*cascade.Scenario, error) {
	if change == "" || strings.HasPrefix(change, "rate=") {
		if v, ok := strings.CutPrefix(change, "rate="); ok {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("change %q: %w", change, err)
			}
		}
		return nil, nil
	}
	return notifyVariant(m, change)
}

// within says whether a prediction meets issue 37's targets: in sample
// (success 3 pp, p50 15%), or a change (5 pp, 25% p50, 50% p99).
func within(inSample bool, m, p notifyFigures) bool {
	if inSample {
		return math.Abs(p.Success-m.Success) <= 0.03 && math.Abs(relErr(p.P50, m.P50)) <= 0.15
	}
	return math.Abs(p.Success-m.Success) <= 0.05 && math.Abs(relErr(p.P50, m.P50)) <= 0.25 && math.Abs(relErr(p.P99, m.P99)) <= 0.5
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// inSet says whether setting s is in set: dev, held, its name, or all
// ("" too).
func inSet(s notifyLoadSetting, set string) bool {
	return set == "" || set == "all" || set == s.set || set == s.name
}

// flagInt is the value of -name=N among args, 0 when absent.
func flagInt(args []string, name string) int {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
