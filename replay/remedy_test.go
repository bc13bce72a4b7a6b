package replay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

// The remediations seed 002 names (§5.3, §6.2) that the model says with
// its own fields: a fallback, sync→async, a bulkhead and a priority
// split. Each test here fails if the mechanism it names is removed.

// TestFallback: a callee that fails 30% of its calls, a hard dependency.
// A fallback of q = 0.9 answers 9 in 10 of the failures degraded, so the
// caller fails 0.3 × 0.1 = 3% of its requests instead of 30%; with p =
// 0.5 the two compose: 0.3 × 0.5 × 0.1 = 1.5%.
func TestFallback(t *testing.T) {
	build := func(p float64, fb *cascade.Fallback) *cascade.Model {
		e := medge("api", "bad")
		e.Propagation, e.Fallback = p, fb
		bad := mnode("bad", 1, 0, cascade.Const(1))
		bad.Overload.Base = 0.3
		return mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), bad}, e)
	}
	without := replayT(t, build(1, nil))
	with := replayT(t, build(1, &cascade.Fallback{Probability: 0.9}))
	t.Logf("success %.4f without, %.4f with q = 0.9 (%d degraded of %d roots)", without.SuccessRate, with.SuccessRate, with.Counts.Degraded, with.Roots)
	require.InDelta(t, 0.70, without.SuccessRate, 0.02)
	require.Zero(t, without.Counts.Degraded)
	require.InDelta(t, 0.97, with.SuccessRate, 0.01)
	roots := float64(with.Roots)
	require.InDelta(t, 0.27*roots, float64(with.Counts.Degraded), 0.02*roots, "degraded answers are counted")
	_, api := nodeOf(with, "api")
	require.Equal(t, with.Counts.Degraded, api.Degraded, "at the caller")

	half := replayT(t, build(0.5, &cascade.Fallback{Probability: 0.9}))
	require.InDelta(t, 0.985, half.SuccessRate, 0.006)
	require.InDelta(t, 0.135*roots, float64(half.Counts.Degraded), 0.02*roots)

	// q = 1: every failure is answered; a fallback of 0 changes nothing,
	// draw for draw.
	all := replayT(t, build(1, &cascade.Fallback{Probability: 1}))
	require.Equal(t, 1.0, all.SuccessRate)
	zero := replayT(t, build(1, &cascade.Fallback{Probability: 0}))
	require.Equal(t, without.Outcome, zero.Outcome)
}

// TestSyncToAsync: a notifier that takes 30 ms and fails 40% of its
// calls, which fail the caller 20% of the time (p = 0.2). Made async,
// the caller neither waits for it nor fails with it: latency falls from
// 31 ms to 1 ms and success rises from 92% to 100%, while the notifier
// still gets every call.
func TestSyncToAsync(t *testing.T) {
	build := func(async bool) *cascade.Model {
		e := medge("api", "notify")
		e.Propagation, e.Async = 0.2, async
		n := mnode("notify", 1, 0, cascade.Const(30))
		n.Overload.Base = 0.4
		return mmodel("api", 50, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), n}, e)
	}
	sync := replayT(t, build(false))
	async := replayT(t, build(true))
	t.Logf("sync: p50 %g ms, success %.4f; async: p50 %g ms, success %.4f", sync.LatencyP50MS, sync.SuccessRate, async.LatencyP50MS, async.SuccessRate)
	require.InDelta(t, 31, sync.LatencyP50MS, 0.5)
	require.InDelta(t, 0.92, sync.SuccessRate, 0.01)
	require.InDelta(t, 1, async.LatencyP50MS, 0.5)
	require.Equal(t, 1.0, async.SuccessRate)
	notify, _ := nodeOf(async, "notify")
	require.InDelta(t, float64(async.Roots), float64(notify.Calls), 2)
}

// TestBulkhead: reports (450/s) and checkouts (20/s) share a db of 4
// slots at 10 ms a query (400/s): the reports alone overload it, its
// queue grows without end and the checkouts wait behind them for
// seconds. A bulkhead of 3 of the 4 slots for report→db (the db keeps 1
// for everyone else, the same capacity) leaves the reports' queue to
// grow in their own pool, and a checkout waits about its own 10 ms.
func TestBulkhead(t *testing.T) {
	build := func(bulkhead int) *cascade.Model {
		db := mnode("db", 1, 4-bulkhead, cascade.Const(10))
		rep := medge("report", "db")
		rep.Bulkhead = bulkhead
		m := mmodel("report", 450, []cascade.Node{
			mnode("checkout", 1, 0, cascade.Const(1)), db, mnode("report", 1, 0, cascade.Const(1)),
		}, medge("checkout", "db"), rep)
		m.Entries[0].Share = 450.0 / 470
		m.Entries = append(m.Entries, cascade.Entry{Node: "checkout", RatePerSec: 20, Share: 20.0 / 470})
		return m
	}
	shared := replayT(t, build(0))
	bulk := replayT(t, build(3))
	sc, _ := nodeOf(shared, "checkout")
	bc, _ := nodeOf(bulk, "checkout")
	t.Logf("checkout p50/p99: shared %g/%g ms, bulkhead %g/%g ms", sc.LatencyP50MS, sc.LatencyP99MS, bc.LatencyP50MS, bc.LatencyP99MS)
	require.Greater(t, sc.LatencyP50MS, 1000.0, "a checkout waits behind the reports")
	require.Less(t, bc.LatencyP50MS, 15.0, "with the bulkhead a checkout waits for its own query")
	require.Less(t, bc.LatencyP99MS, 60.0)
	sr, _ := nodeOf(shared, "report")
	br, _ := nodeOf(bulk, "report")
	require.Greater(t, br.LatencyP50MS, 1000.0, "the reports still overload their own pool")
	require.Greater(t, sr.LatencyP50MS, 1000.0)
	db, dbc := nodeOf(bulk, "db")
	// The bulkhead's 3 slots are always busy, the shared one 20/s × 10
	// ms = 20% of the time: (3 + 0.2) / 4, utilisation counting all 4.
	require.InDelta(t, 0.8, db.Utilisation, 0.02)
	require.LessOrEqual(t, dbc.InFlightMax, 4)
}

// TestBulkheadReplicas: a bulkhead is per callee replica, and a full
// queue rejects in the bulkhead's own queue without touching the shared
// one.
func TestBulkheadReplicas(t *testing.T) {
	db := mnode("db", 2, 2, cascade.Const(10))
	db.QueueCap = 5
	db.LoadBalancer = "least-loaded"
	rep := medge("report", "db")
	rep.Bulkhead = 1
	m := mmodel("report", 400, []cascade.Node{
		mnode("checkout", 1, 0, cascade.Const(1)), db, mnode("report", 1, 0, cascade.Const(1)),
	}, medge("checkout", "db"), rep)
	m.Entries[0].Share = 400.0 / 420
	m.Entries = append(m.Entries, cascade.Entry{Node: "checkout", RatePerSec: 20, Share: 20.0 / 420})
	r := replayT(t, m, withDuration(5*time.Second))
	_, dbc := nodeOf(r, "db")
	require.LessOrEqual(t, dbc.InFlightMax, 6, "2 replicas × (2 shared + 1 bulkhead)")
	require.Greater(t, dbc.InFlightMax, 2, "checkouts use the shared slots beside the bulkhead's 2")
	require.LessOrEqual(t, dbc.QueueMaxReplica, 5)
	require.Greater(t, r.Counts.RejectedQueue, int64(800), "about half the report calls (400/s at 2 × 100/s) are turned away")
	c, _ := nodeOf(r, "checkout")
	require.Less(t, c.LatencyP99MS, 40.0, "checkouts keep the shared slots")
}

// TestPrioritySplit: a db of 4 slots at 10 ms (400/s) offered 600/s,
// half of it low priority, with a queue of 40 per replica. Without the
// split a full queue turns away a third of all calls, high priority as
// much as low; shedding low-priority calls once 10 are queued keeps the
// queue short of full, so the high class (300/s, within capacity)
// nearly always gets in while the low class takes what is left.
func TestPrioritySplit(t *testing.T) {
	build := func(shed int) *cascade.Model {
		db := mnode("db", 1, 4, cascade.Const(10))
		db.QueueCap, db.ShedLowAt = 40, shed
		m := mmodel("api", 600, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), db}, medge("api", "db"))
		m.Entries[0].LowPriority = 0.5
		return m
	}
	high := func(r *Result) float64 {
		c := r.Counts
		return float64(c.Succeeded-c.LowSucceeded) / float64(c.Succeeded+c.Failed-c.LowSucceeded-c.LowFailed)
	}
	low := func(r *Result) float64 {
		c := r.Counts
		return float64(c.LowSucceeded) / float64(c.LowSucceeded+c.LowFailed)
	}
	without := replayT(t, build(0))
	with := replayT(t, build(10))
	t.Logf("success high/low: without %.4f/%.4f, with %.4f/%.4f (%d shed)", high(without), low(without), high(with), low(with), with.Counts.Shed)
	require.InDelta(t, 0.5*float64(without.Roots), float64(without.Counts.LowRoots), 0.02*float64(without.Roots))
	require.Less(t, high(without), 0.75, "without the split the high class is shed with the low")
	require.InDelta(t, high(without), low(without), 0.03)
	require.Greater(t, high(with), 0.99, "the split keeps the high class")
	require.Less(t, low(with), 0.5, "and sheds the low one")
	require.Greater(t, with.Counts.Shed, int64(1000))
	require.Zero(t, without.Counts.Shed)
	require.Greater(t, without.LatencyP50MS, with.LatencyP50MS, "a shorter queue")

	// Without low-priority traffic the threshold changes nothing.
	none := build(10)
	none.Entries[0].LowPriority = 0
	noneR := replayT(t, none)
	plain := build(0)
	plain.Entries[0].LowPriority = 0
	require.Equal(t, replayT(t, plain).Outcome, noneR.Outcome)
}
