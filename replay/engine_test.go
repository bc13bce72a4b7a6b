package replay

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
)

// Each test here fails if the mechanism it names is removed.

func TestBoundedQueue(t *testing.T) {
	// One slot, 12 ms service, 100/s offered (ρ = 1.2): an unbounded
	// queue grows without end; a bound of 5 rejects and keeps latency low.
	build := func(qcap int) *cascade.Model {
		n := mnode("db", 1, 1, cascade.Const(12))
		n.QueueCap = qcap
		return mmodel("db", 100, []cascade.Node{n})
	}
	unb := replayT(t, build(0))
	bnd := replayT(t, build(5))
	require.Zero(t, unb.Counts.RejectedQueue)
	require.Greater(t, bnd.Counts.RejectedQueue, int64(100))
	require.Greater(t, bnd.RejectedShare, 0.1)
	require.Less(t, bnd.LatencyP99MS, 6*12.0+1)
	require.Greater(t, unb.LatencyP99MS, 10*bnd.LatencyP99MS)
	_, nc := nodeOf(bnd, "db")
	require.LessOrEqual(t, nc.QueueMaxReplica, 5)
}

func TestAsyncEdge(t *testing.T) {
	build := func(async bool) *cascade.Model {
		e := medge("api", "mailer")
		e.Async = async
		return mmodel("api", 20, []cascade.Node{
			mnode("api", 1, 0, cascade.Const(2)),
			mnode("mailer", 1, 0, cascade.Const(50)),
		}, e)
	}
	sync := replayT(t, build(false))
	async := replayT(t, build(true))
	require.InDelta(t, 52, sync.LatencyP50MS, 0.5)
	require.InDelta(t, 2, async.LatencyP50MS, 0.5, "the caller must not wait for an async callee")
	mailer, _ := nodeOf(async, "mailer")
	require.InDelta(t, float64(async.Roots), float64(mailer.Calls), 2, "async calls still run")
}

func TestParallelismAndStages(t *testing.T) {
	build := func(par int, stages bool) *cascade.Model {
		a, b := medge("api", "svc"), medge("api", "other")
		a.FanOut, a.Parallelism = cascade.Const(4), par
		if stages {
			b.Stage = 1
		}
		return mmodel("api", 10, []cascade.Node{
			mnode("api", 1, 0, cascade.Const(0)),
			mnode("other", 1, 0, cascade.Const(30)),
			mnode("svc", 1, 0, cascade.Const(10)),
		}, a, b)
	}
	tests := []struct {
		name    string
		par     int
		stages  bool
		latency float64
	}{
		{"all parallel, one stage", 0, false, 30},
		{"in sequence, one stage", 1, false, 40},
		{"two at a time, one stage", 2, false, 30},
		{"parallel, two stages", 0, true, 40},
		{"in sequence, two stages", 1, true, 70},
		{"two at a time, two stages", 2, true, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := replayT(t, build(tc.par, tc.stages), withDuration(5*time.Second))
			require.InDelta(t, tc.latency, r.LatencyP50MS, 0.5)
			require.InDelta(t, 6, r.Amplification, 0.01) // root + 4 + 1
		})
	}
}

func TestSharedPool(t *testing.T) {
	// HotROD's route pool: 10 calls per request, at most 3 at a time
	// across all requests of the replica when shared.
	build := func(shared bool) *cascade.Model {
		e := medge("front", "route")
		e.FanOut, e.Parallelism, e.SharedPool = cascade.Const(10), 3, shared
		return mmodel("front", 50, []cascade.Node{
			mnode("front", 1, 0, cascade.Const(1)),
			mnode("route", 1, 0, cascade.Const(5)),
		}, e)
	}
	own := replayT(t, build(false))
	shared := replayT(t, build(true))
	_, ownRoute := nodeOf(own, "route")
	_, sharedRoute := nodeOf(shared, "route")
	require.Greater(t, ownRoute.InFlightMax, 3)
	require.Equal(t, 3, sharedRoute.InFlightMax, "a shared pool caps the callee's concurrency")
	require.Greater(t, shared.LatencyP50MS, own.LatencyP50MS)
}

func TestSyncHoldsSlot(t *testing.T) {
	// A slow downstream exhausts the upstream pool only when calls are
	// synchronous.
	build := func(async bool) *cascade.Model {
		e := medge("api", "slow")
		e.Async = async
		return mmodel("api", 100, []cascade.Node{
			mnode("api", 1, 4, cascade.Const(1)),
			mnode("slow", 1, 0, cascade.Const(100)),
		}, e)
	}
	sync := replayT(t, build(false), withDuration(5*time.Second))
	async := replayT(t, build(true), withDuration(5*time.Second))
	syncAPI, _ := nodeOf(sync, "api")
	asyncAPI, _ := nodeOf(async, "api")
	require.Greater(t, syncAPI.Utilisation, 0.99)
	require.Less(t, asyncAPI.Utilisation, 0.1)
}

func TestTimeoutZombiesAndDeadlinePropagation(t *testing.T) {
	// The callee takes 100 ms; the caller gives up at 20 ms. Without
	// deadline propagation the callee finishes every call for nobody;
	// with it, it cancels them where they run.
	build := func(deadline bool) *cascade.Model {
		e := medge("api", "slow")
		e.TimeoutMS = 20
		slow := mnode("slow", 1, 0, cascade.Const(100))
		slow.DeadlinePropagation = deadline
		return mmodel("api", 20, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), slow}, e)
	}
	zombie := replayT(t, build(false), withDuration(5*time.Second))
	cancel := replayT(t, build(true), withDuration(5*time.Second))
	for _, r := range []*Result{zombie, cancel} {
		require.Zero(t, r.Succeeded)
		require.Equal(t, r.Counts.Calls-r.Counts.Roots, r.Counts.Timeouts)
	}
	require.Greater(t, zombie.ZombieShare, 0.6) // 80 of every 100+20 ms of slot time
	require.Greater(t, zombie.Counts.Zombies, int64(90))
	require.Zero(t, cancel.ZombieShare)
	require.Greater(t, cancel.Counts.Cancelled, int64(90))
	_, zc := nodeOf(zombie, "slow")
	_, cc := nodeOf(cancel, "slow")
	require.Less(t, cc.InFlightMax, zc.InFlightMax)
}

func TestZombieParentHearsBack(t *testing.T) {
	// The client gives up at 60 ms on requests that take ~80 ms: api and
	// db run on as zombie work. db's answer must still reach api, which
	// then finishes and frees its slot; were it dropped, api would hold
	// every slot it ever gave a timed-out request until the end, and the
	// replay would report a collapse that no real server has.
	m := mmodel("api", 50, []cascade.Node{mnode("api", 1, 8, cascade.Const(1)), mnode("db", 1, 0, exp(80))}, medge("api", "db"))
	m.Entries[0].TimeoutMS = 60
	r := replayT(t, m, withDuration(30*time.Second))
	api, ac := nodeOf(r, "api")
	// Little's law: 50/s × ~81 ms ≈ 4 busy slots of 8.
	require.Less(t, api.Utilisation, 0.75, "api's slots are not pinned by zombie parents")
	require.Greater(t, ac.Zombies, int64(100), "timed-out requests finish at api as zombie work")
	require.Greater(t, r.SuccessRate, 0.35, "requests under 60 ms still succeed") // P(exp(80) < 59) ≈ 0.52
	require.Less(t, r.SuccessRate, 0.7)
}

func TestDeadlineDropsQueuedWork(t *testing.T) {
	// Queued work whose caller gave up is dropped when it reaches a
	// worker, not served.
	build := func(deadline bool) *cascade.Model {
		e := medge("api", "db")
		e.TimeoutMS = 50
		db := mnode("db", 1, 1, cascade.Const(10))
		db.DeadlinePropagation = deadline
		return mmodel("api", 150, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), db}, e)
	}
	off := replayT(t, build(false))
	on := replayT(t, build(true))
	require.Less(t, off.Goodput, 10.0, "without cancellation the queue serves only the dead")
	require.Greater(t, on.Goodput, 5*off.Goodput)
	t.Logf("goodput without cancellation %.1f/s, with %.1f/s", off.Goodput, on.Goodput)
	require.Greater(t, on.Counts.Cancelled, int64(1000))
}

func TestRetries(t *testing.T) {
	// The callee always fails; the caller retries.
	build := func(rt *cascade.Retry) *cascade.Model {
		e := medge("api", "bad")
		e.Retry = rt
		bad := mnode("bad", 1, 0, cascade.Const(1))
		bad.Overload.Base = 1
		return mmodel("api", 100, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), bad}, e)
	}
	tests := []struct {
		name  string
		retry *cascade.Retry
		share float64 // expected retry share
		tol   float64
	}{
		{"none", nil, 0, 0},
		{"3 retries", &cascade.Retry{Reactivation: 1, MaxAttempts: 4}, 3.0 / 5, 0.001},
		{"3 retries at r=0.5", &cascade.Retry{Reactivation: 0.5, MaxAttempts: 4}, 0.875 / 2.875, 0.01},
		{"budget 10%", &cascade.Retry{Reactivation: 1, MaxAttempts: 4, Budget: &cascade.RetryBudget{Ratio: 0.1}}, 0.1 / 2.1, 0.01},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := replayT(t, build(tc.retry))
			// calls = roots + api->bad attempts; shares are over all calls.
			require.InDelta(t, tc.share, r.RetryShare, tc.tol+0.002)
			require.Zero(t, r.Succeeded)
		})
	}
}

func TestBackoff(t *testing.T) {
	r := newStream(1, streamRetry, 0)
	tests := []struct {
		name   string
		kind   string
		n      int32
		lo, hi float64
	}{
		{"none", cascade.BackoffNone, 3, 0, 0},
		{"fixed", cascade.BackoffFixed, 3, 50, 50},
		{"exponential", cascade.BackoffExponential, 3, 400, 400},
		{"full jitter, first retry", cascade.BackoffFullJitter, 1, 0, 100},
		{"full jitter, third retry", cascade.BackoffFullJitter, 3, 0, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p retryPolicy
			p.init(&cascade.Retry{MaxAttempts: 5, Reactivation: 1, Backoff: cascade.Backoff{Kind: tc.kind, BaseMS: 50}})
			var sum float64
			var prev float64
			for i := 0; i < 10000; i++ {
				d := p.wait(tc.n, &prev, r.Rand)
				require.GreaterOrEqual(t, d, tc.lo)
				require.LessOrEqual(t, d, tc.hi)
				sum += d
			}
			require.InDelta(t, (tc.lo+tc.hi)/2, sum/10000, (tc.hi-tc.lo)/50+1e-9)
		})
	}
	t.Run("decorrelated jitter", func(t *testing.T) {
		var p retryPolicy
		p.init(&cascade.Retry{MaxAttempts: 9, Reactivation: 1, Backoff: cascade.Backoff{Kind: cascade.BackoffDecorrelated, BaseMS: 10, MaxMS: 1000}})
		grew := false
		for k := 0; k < 1000; k++ {
			var prev float64
			last := 10.0
			for n := int32(1); n <= 8; n++ {
				d := p.wait(n, &prev, r.Rand)
				require.GreaterOrEqual(t, d, 10.0)
				require.LessOrEqual(t, d, math.Min(1000, 3*last))
				grew = grew || d > 100
				last = d
			}
		}
		require.True(t, grew)
	})
	t.Run("max caps", func(t *testing.T) {
		var p retryPolicy
		p.init(&cascade.Retry{MaxAttempts: 9, Reactivation: 1, Backoff: cascade.Backoff{Kind: cascade.BackoffExponential, BaseMS: 10, MaxMS: 100}})
		var prev float64
		require.Equal(t, 100.0, p.wait(8, &prev, r.Rand))
	})
}

func TestBackoffDelaysRetries(t *testing.T) {
	// With a fixed 200 ms backoff, a root that fails three times takes
	// 600 ms more than its attempts.
	e := cascade.Entry{Node: "bad", RatePerSec: 10, Share: 1,
		Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 4, Backoff: cascade.Backoff{Kind: cascade.BackoffFixed, BaseMS: 200}}}
	bad := mnode("bad", 1, 0, cascade.Const(5))
	bad.Overload.Base = 0.5
	m := &cascade.Model{Version: 1, Entries: []cascade.Entry{e}, Nodes: []cascade.Node{bad}}
	r := replayT(t, m)
	require.InDelta(t, 5, r.LatencyP50MS, 0.2)
	require.InDelta(t, 3*205+5, r.LatencyP99MS, 0.5)
}

func TestCircuitBreaker(t *testing.T) {
	// The backend fails when overloaded (ρ > 1); a 5 s surge ×4
	// overloads it. The breaker rejects while open, then closes.
	build := func(brk bool) *cascade.Model {
		db := mnode("db", 1, 10, cascade.Const(20))
		db.Overload = cascade.Overload{Slope: 2, Threshold: 1}
		if brk {
			db.Breaker = &cascade.Breaker{ErrorRate: 0.5, Window: 20, MinCalls: 10, OpenMS: 500, HalfOpenProbes: 3}
		}
		return mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), db}, medge("api", "db"))
	}
	surge := withTraffic(cascade.Traffic{RatePerSec: 200, Surges: []cascade.Surge{{AtMS: 5000, ForMS: 5000, Factor: 4}}})
	off := replayT(t, build(false), surge)
	on := replayT(t, build(true), surge)
	require.Zero(t, off.Counts.RejectedBreaker)
	require.Greater(t, on.Counts.RejectedBreaker, int64(1000))
	_, nc := nodeOf(on, "db")
	require.GreaterOrEqual(t, nc.BreakerOpened, int64(1))
	dbOff, _ := nodeOf(off, "db")
	dbOn, _ := nodeOf(on, "db")
	require.Less(t, dbOn.Calls-dbOn.Rejected, dbOff.Calls, "an open breaker keeps calls off the node")
	// Closed again after the surge: the last 5 windows all succeed.
	t.Logf("failed per window with a breaker: %v", on.Series.Failed)
	for w := 15; w < 20; w++ {
		require.Greater(t, on.Series.Succeeded[w], int64(150), "window %d", w)
		require.Zero(t, on.Series.Failed[w], "window %d", w)
	}
	require.GreaterOrEqual(t, on.RecoverMS, 0.0)
}

func TestRateLimit(t *testing.T) {
	m := mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(1))})
	m.Entries[0].RateLimit = &cascade.RateLimit{RatePerSec: 50, Burst: 10}
	r := replayT(t, m)
	require.InDelta(t, 50, r.Goodput, 1)
	require.InDelta(t, 150.0/200, r.RejectedShare, 0.02)
	require.Equal(t, r.Counts.Failed, r.Counts.RejectedLimit)
}

func TestClosedLoopTurnedAwayAdvances(t *testing.T) {
	// Closed-loop users who think for no time, turned away at once by the
	// entry's rate limit: each sends at most one request a tick, and the
	// replay ends (it would spin in one tick forever otherwise).
	m := mmodel("api", 0, []cascade.Node{mnode("api", 1, 0, cascade.Const(2))})
	m.Entries[0].RateLimit = &cascade.RateLimit{RatePerSec: 50, Burst: 1}
	r := replayT(t, m, withDuration(2*time.Second),
		withTraffic(cascade.Traffic{Kind: cascade.TrafficClosed, Users: 4}))
	ticks := int64(2 * time.Second / (100 * time.Microsecond))
	require.LessOrEqual(t, r.Counts.Roots, 4*(ticks+1), "at most one request a user a tick")
	require.Greater(t, r.Counts.RejectedLimit, 2*ticks, "the users keep knocking")
	require.InDelta(t, 50, r.Goodput, 2, "the limit lets 50/s through")
}

func TestLoadBalancers(t *testing.T) {
	// Seed 004's heavy tail: least-loaded and p2c beat round-robin,
	// which beats random, over 8 seeds.
	m := loadModel(t, "seed004.json")
	p99 := map[string]float64{}
	for _, lb := range []string{"round-robin", "random", "least-loaded", "p2c"} {
		m.Nodes[0].LoadBalancer = lb
		for s := uint64(1); s <= 8; s++ {
			p99[lb] += replayT(t, m, withSeed(s), withDuration(50*time.Second)).LatencyP99MS / 8
		}
	}
	t.Logf("p99 by policy: %v", p99)
	require.Less(t, p99["least-loaded"], p99["round-robin"])
	require.Less(t, p99["p2c"], p99["round-robin"])
	require.Less(t, p99["round-robin"], p99["random"])
}

func TestPartition(t *testing.T) {
	e := medge("api", "db")
	e.Availability = &cascade.Availability{Partitions: []cascade.Partition{{AtMS: 2000, ForMS: 2000}}}
	m := mmodel("api", 100, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), mnode("db", 1, 0, cascade.Const(5))}, e)
	r := replayT(t, m, withDuration(6*time.Second))
	for w, f := range r.Series.Failed {
		if w == 2 || w == 3 {
			require.Equal(t, r.Series.Offered[w], f, "window %d", w)
			continue
		}
		require.Zero(t, f, "window %d", w)
	}
	require.Greater(t, r.Counts.Unavailable, int64(180))
	require.InDelta(t, 0, r.RecoverMS, 1)
}

func TestRandomAvailability(t *testing.T) {
	e := medge("api", "db")
	e.Availability = &cascade.Availability{Up: 0.9, MeanDownMS: 50}
	m := mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), mnode("db", 1, 0, cascade.Const(1))}, e)
	r := replayT(t, m, withDuration(60*time.Second))
	require.InDelta(t, 0.9, r.SuccessRate, 0.02)
}

func TestOverloadCurve(t *testing.T) {
	tests := []struct {
		name string
		over cascade.Overload
		rate float64
		want float64 // success rate
	}{
		{"base only", cascade.Overload{Base: 0.2}, 50, 0.8},
		{"under threshold", cascade.Overload{Slope: 1, Threshold: 0.9}, 50, 1},
		// 4 slots, 20 ms: 200/s keeps ~4 in flight; ρ ≈ 1 and more with
		// queueing: failures appear.
		{"over threshold", cascade.Overload{Slope: 1, Threshold: 0.5}, 180, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mnode("svc", 1, 4, cascade.Const(20))
			n.Overload = tc.over
			r := replayT(t, mmodel("svc", tc.rate, []cascade.Node{n}), withDuration(100*time.Second))
			if tc.name == "over threshold" {
				require.Less(t, r.SuccessRate, 0.8)
				require.Greater(t, r.SuccessRate, 0.2)
				return
			}
			require.InDelta(t, tc.want, r.SuccessRate, 0.02)
		})
	}
}

func TestPropagation(t *testing.T) {
	for _, p := range []float64{0, 0.3, 1} {
		e := medge("api", "bad")
		e.Propagation = p
		bad := mnode("bad", 1, 0, cascade.Const(1))
		bad.Overload.Base = 1
		r := replayT(t, mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), bad}, e))
		require.InDelta(t, 1-p, r.SuccessRate, 0.02, "propagation %g", p)
	}
}

func TestFailFast(t *testing.T) {
	// A hard failure of the first call ends the request without waiting
	// for its slow sibling.
	fast, slow := medge("api", "bad"), medge("api", "slow")
	bad := mnode("bad", 1, 0, cascade.Const(1))
	bad.Overload.Base = 1
	m := mmodel("api", 20, []cascade.Node{mnode("api", 1, 1, cascade.Const(0)), bad, mnode("slow", 1, 0, cascade.Const(100))}, fast, slow)
	r := replayT(t, m, withDuration(5*time.Second))
	api, _ := nodeOf(r, "api")
	require.InDelta(t, 1, api.LatencyP50MS, 0.2)
	require.Greater(t, r.Counts.Zombies, int64(50), "the abandoned sibling runs on as zombie work")
}

func TestFanOutDistribution(t *testing.T) {
	e := medge("api", "svc")
	e.FanOut = cascade.Dist{Kind: cascade.DistUniform, Min: 0.5, Max: 4.5} // 1..4, mean 2.5
	r := replayT(t, mmodel("api", 100, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), mnode("svc", 1, 0, cascade.Const(1))}, e))
	require.InDelta(t, 3.5, r.Amplification, 0.05)
}

// TestFanOutCountSteps checks that count's comparisons (setCountSteps)
// give unifCount's value at and around every threshold and for random
// draws.
func TestFanOutCountSteps(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		on       bool
	}{
		{"1-3", 0.5, 3.5, true},
		{"1-4", 0.5, 4.5, false}, // 0.5 + 4·(1 - 2⁻⁵³) rounds to 4.5: 1 to 5
		{"0-1", 0, 1, true},
		{"2-2.4", 2, 2.4, true},
		{"0.49-3.51", 0.49, 3.51, false}, // 0 to 4
		{"0.51-3.49", 0.51, 3.49, true},
		{"1.5-2.5", 1.5, 2.5, true},
		{"0-10", 0, 10, false},
		{"30-31", 30, 31, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compileDist(&cascade.Dist{Kind: cascade.DistUniform, Min: tc.min, Max: tc.max})
			require.Equal(t, sUnif, s.kind)
			require.Equal(t, tc.on, s.cntOn)
			if !s.cntOn {
				return
			}
			var ms []uint64
			for _, c := range s.cnt {
				for _, d := range []int64{-2, -1, 0, 1, 2} {
					if m := int64(c) + d; m >= 0 && m < 1<<53 {
						ms = append(ms, uint64(m))
					}
				}
			}
			ms = append(ms, 0, 1<<53-1)
			r := newStream(7, streamFanOut, 0)
			for range 100000 {
				ms = append(ms, r.Rand.Uint64()<<11>>11)
			}
			for _, m := range ms {
				require.Equal(t, s.unifCount(m), s.stepCount(m), "m=%d", m)
			}
			// And count itself draws what the rounding of Float64 gives.
			a, b := newStream(9, streamFanOut, 1), newStream(9, streamFanOut, 1)
			for range 100000 {
				require.Equal(t, int(math.Round(tc.min+(tc.max-tc.min)*a.Float64())), s.count(b.Rand))
			}
		})
	}
}

func TestServiceDistributions(t *testing.T) {
	tests := []struct {
		name string
		d    cascade.Dist
		mean float64
		p99  float64 // 0: not checked
	}{
		{"const", cascade.Const(7), 7, 7},
		{"exp", exp(10), 10, 10 * math.Log(100)},
		{"lognormal", cascade.Dist{Kind: cascade.DistLognormal, Mu: 3.5, Sigma: 0.4}, math.Exp(3.5 + 0.08), math.Exp(3.5 + 0.4*2.3263)},
		{"normal", cascade.Dist{Kind: cascade.DistNormal, Mean: 20, Sigma: 2}, 20, 20 + 2*2.3263},
		{"uniform", cascade.Dist{Kind: cascade.DistUniform, Min: 10, Max: 30}, 20, 29.8},
		{"empirical", cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 2, 3, 10}}, 4, 10},
		{"tiers", cascade.Dist{Kind: cascade.DistTiers, P50: 10, P95: 40, P99: 100}, 0, 100},
		{"spike", cascade.Dist{Kind: cascade.DistExp, Mean: 10, SpikeProb: 0.05, SpikeMS: 60}, 13, 0},
		{"floor", cascade.Dist{Kind: cascade.DistLognormal, Mu: 3.5, Sigma: 0.4, Floor: 30}, 0, 0},
		{"cap", cascade.Dist{Kind: cascade.DistExp, Mean: 10, Cap: 15}, 0, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compileDist(&tc.d)
			r := newStream(7, streamService, 0)
			const n = 200000
			xs := make([]float64, n)
			var sum float64
			for i := range xs {
				xs[i] = s.draw(r.Rand)
				require.GreaterOrEqual(t, xs[i], tc.d.Floor)
				sum += xs[i]
			}
			mean := sum / n
			want := tc.mean
			if want == 0 {
				want = tc.d.MeanValue()
			}
			switch tc.name {
			case "floor":
				require.Greater(t, mean, tc.d.MeanValue())
			case "cap":
				require.Less(t, mean, 10.0)
			default:
				require.InDelta(t, want, mean, want*0.02)
			}
			if tc.p99 > 0 {
				require.InDelta(t, tc.p99, quantile(xs, 0.99), tc.p99*0.03)
			}
			if tc.name == "tiers" {
				require.InDelta(t, 10, quantile(xs, 0.5), 0.3)
				require.InDelta(t, 40, quantile(xs, 0.95), 1)
			}
		})
	}
}

func TestTier(t *testing.T) {
	n := mnode("svc", 1, 0, exp(10))
	n.Tiers = &cascade.Tiers{P50: 5, P95: 20, P99: 40, Points: []float64{1, 1, 1, 50}}
	m := mmodel("svc", 50, []cascade.Node{n})
	for tier, p50 := range map[string]float64{"p50": 5, "p95": 20, "p99": 40, "tiers": 5, "empirical": 1} {
		r := replayT(t, m, func(c *Config) { c.Tier = tier })
		require.InDelta(t, p50, r.LatencyP50MS, 0.3, tier)
	}
}

func TestArrivals(t *testing.T) {
	m := mmodel("api", 100, []cascade.Node{mnode("api", 1, 0, cascade.Const(10))})
	t.Run("poisson", func(t *testing.T) {
		r := replayT(t, m, withDuration(100*time.Second))
		require.InDelta(t, 100, r.OfferedRate, 2)
	})
	t.Run("surge x2", func(t *testing.T) {
		r := replayT(t, m, withTraffic(cascade.Traffic{RatePerSec: 100, Surges: []cascade.Surge{{AtMS: 5000, ForMS: 10000, Factor: 2}}}))
		var in, out int64
		for w, o := range r.Series.Offered {
			if w >= 5 && w < 15 {
				in += o
			} else {
				out += o
			}
		}
		require.InDelta(t, 200, float64(in)/10, 10)
		require.InDelta(t, 100, float64(out)/10, 10)
	})
	t.Run("closed loop", func(t *testing.T) {
		// 10 users, 90 ms think, 10 ms service: 100 requests/s.
		r := replayT(t, m, withTraffic(cascade.Traffic{Kind: cascade.TrafficClosed, Users: 10, ThinkMS: 90}))
		require.InDelta(t, 100, r.OfferedRate, 5)
	})
	t.Run("closed loop surge", func(t *testing.T) {
		r := replayT(t, m, withTraffic(cascade.Traffic{Kind: cascade.TrafficClosed, Users: 10, ThinkMS: 90,
			Surges: []cascade.Surge{{AtMS: 5000, ForMS: 10000, Factor: 3}}}))
		require.InDelta(t, 300, float64(r.Series.Offered[10]), 40)
		require.InDelta(t, 100, float64(r.Series.Offered[17]), 30)
	})
	t.Run("observed", func(t *testing.T) {
		r := replayT(t, m, withTraffic(cascade.Traffic{Kind: cascade.TrafficObserved, ArrivalsMS: []float64{0, 1, 2, 1500, 30000}}))
		require.Equal(t, int64(4), r.Roots) // the last is past the end
		require.Equal(t, []int64{3, 1}, r.Series.Offered[:2])
	})
	t.Run("observed entries", func(t *testing.T) {
		two := mmodel("a", 1, []cascade.Node{mnode("a", 1, 0, cascade.Const(1)), mnode("b", 1, 0, cascade.Const(1))})
		two.Entries = append(two.Entries, cascade.Entry{Node: "b", Share: 0})
		r := replayT(t, two, func(c *Config) { c.Observed = []Arrival{{AtMS: 1, Entry: "b"}, {AtMS: 2, Entry: "b"}, {AtMS: 3}} })
		a, _ := nodeOf(r, "a")
		b, _ := nodeOf(r, "b")
		require.Equal(t, int64(1), a.Calls)
		require.Equal(t, int64(2), b.Calls)
	})
}

func TestSpreadAndCollapse(t *testing.T) {
	// A surge overloads db, whose slow answers time out at api.
	e := medge("api", "db")
	e.TimeoutMS = 100
	db := mnode("db", 1, 4, cascade.Const(10))
	m := mmodel("api", 200, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), db}, e)
	r := replayT(t, m, withTraffic(cascade.Traffic{RatePerSec: 200, Surges: []cascade.Surge{{AtMS: 5000, ForMS: 5000, Factor: 3}}}))
	dbo, _ := nodeOf(r, "db")
	require.True(t, dbo.Infected)
	require.InDelta(t, 5000, dbo.InfectedAtMS, 1000)
	require.GreaterOrEqual(t, dbo.InfectedForMS, 5000.0)
	require.Less(t, r.CollapseAtMS, 0.0, "it recovers, so it did not collapse for good")
	require.GreaterOrEqual(t, r.RecoverMS, 0.0)
	require.Less(t, r.RecoverMS, 10000.0)
	// Without the surge nothing is infected.
	calm := replayT(t, m)
	dbc, _ := nodeOf(calm, "db")
	require.False(t, dbc.Infected)
	require.Equal(t, -1.0, calm.RecoverMS)
}

func TestSeries(t *testing.T) {
	m := mmodel("api", 100, []cascade.Node{mnode("api", 1, 2, cascade.Const(10))})
	r := replayT(t, m, func(c *Config) { c.Series = true; c.Window = 500 * time.Millisecond })
	s := r.Nodes[0].Series
	require.NotNil(t, s)
	// 20 s of arrivals, then the model's drain of 1 s: 42 windows, the
	// last two idle once the calls in flight have ended.
	require.Equal(t, 1000.0, r.DrainMS)
	require.Len(t, s.Utilisation, 42)
	require.InDelta(t, 0.5, s.Utilisation[20], 0.15)
	require.InDelta(t, 1, s.InFlight[20], 0.3)
	require.Zero(t, s.Utilisation[41])
	require.Zero(t, r.Unfinished)
}

func TestIdleTicksAreFree(t *testing.T) {
	// 10^9 ticks of 1 µs with ten arrivals: the cost follows the events.
	m := mmodel("api", 0.01, []cascade.Node{mnode("api", 1, 0, cascade.Const(1))})
	start := time.Now()
	r := replayT(t, m, func(c *Config) { c.Duration = 1000 * time.Second; c.Tick = time.Microsecond })
	require.Less(t, time.Since(start), 5*time.Second)
	require.Less(t, r.Counts.Events, int64(100))
}

func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sortFloats(s)
	return s[int(q*float64(len(s)))]
}

func TestCycleIsBounded(t *testing.T) {
	// A node that always calls itself, with no delay: the chain stops at
	// the depth bound instead of looping at one tick forever.
	self := medge("loop", "loop")
	m := mmodel("loop", 10, []cascade.Node{mnode("loop", 1, 0, cascade.Const(0))}, self)
	r := replayT(t, m, withDuration(time.Second))
	require.Equal(t, r.Roots, r.Counts.Truncated)
	require.InDelta(t, 65, r.Amplification, 0.01) // the root call and 64 below it
	require.Equal(t, r.Roots, r.Succeeded)
}

func TestTimeoutPrecision(t *testing.T) {
	// A quarter of the calls take 100 ms, the rest 1 ms; the caller waits
	// 50 ms and retries at once. Successes take 1 ms, or k·50 + 1 ms after
	// k timeouts: every timer fires on time although most attempts
	// answer first.
	e := medge("api", "svc")
	e.TimeoutMS = 50
	e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 9, Backoff: cascade.Backoff{Kind: cascade.BackoffNone}}
	svc := mnode("svc", 1, 0, cascade.Dist{Kind: cascade.DistEmpirical, Points: []float64{1, 1, 1, 100}})
	r := replayT(t, mmodel("api", 500, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), svc}, e))
	require.InDelta(t, 1, r.LatencyP50MS, 0.01)
	require.InDelta(t, 101, r.LatencyP95MS, 0.1) // P(k ≤ 1) = 0.9375, P(k ≤ 2) = 0.984; 0.1% histogram
	require.InDelta(t, 151, r.LatencyP99MS, 0.2)
	require.InDelta(t, 0.25, float64(r.Counts.Timeouts)/float64(r.Counts.Calls-r.Counts.Roots), 0.01)
}

func TestNetworkDelay(t *testing.T) {
	// 5 ms each way on the edge and 2 ms each way from the client.
	e := medge("api", "db")
	e.NetworkMS = &cascade.Dist{Kind: cascade.DistConst, Value: 5}
	m := mmodel("api", 50, []cascade.Node{mnode("api", 1, 0, cascade.Const(1)), mnode("db", 1, 0, cascade.Const(3))}, e)
	m.Entries[0].NetworkMS = &cascade.Dist{Kind: cascade.DistConst, Value: 2}
	r := replayT(t, m, withDuration(5*time.Second))
	require.InDelta(t, 2+1+5+3+5+2, r.LatencyP50MS, 0.01)
	db, _ := nodeOf(r, "db")
	require.InDelta(t, 3, db.LatencyP50MS, 0.01, "time at the node excludes the network")
}

func TestTick(t *testing.T) {
	// A drawn duration rounds to a neighbouring tick, with the remainder
	// carried to the next draw, so the mean holds at any tick: 0.3 ms is
	// 0 or 1 tick of 1 ms, 1 or 2 of 250 µs, and 3 of 100 µs.
	m := mmodel("api", 50, []cascade.Node{mnode("api", 1, 0, cascade.Const(0.3))})
	for _, tc := range []struct {
		tick   time.Duration
		lo, hi float64 // the two ticks 0.3 ms lies between, in ms
	}{
		{time.Millisecond, 0, 1},
		{250 * time.Microsecond, 0.25, 0.5},
		{100 * time.Microsecond, 0.3, 0.3},
		{40 * time.Microsecond, 0.28, 0.32},
	} {
		r := replayT(t, m, withDuration(2*time.Second), func(c *Config) { c.Tick = tc.tick })
		_, nc := nodeOf(r, "api")
		require.InDelta(t, 0.3, nc.LatencyMeanMS, 0.01, "tick %v: mean", tc.tick)
		require.GreaterOrEqual(t, r.LatencyP50MS, tc.lo-1e-9, "tick %v", tc.tick)
		require.LessOrEqual(t, r.LatencyP50MS, tc.hi+1e-9, "tick %v", tc.tick)
	}
}

func TestDither(t *testing.T) {
	// Each draw lands within a tick of itself, and the ticks add up to
	// the draws within half a tick, for draws shorter and longer than a
	// tick.
	for _, ms := range []float64{0.1, 0.5, 0.999, 1, 2.5, 40.5, 1e-3} {
		var rem, sum float64
		var ticks int64
		for i := 1; i <= 1000; i++ {
			d := dither(ms, 1, &rem)
			require.InDelta(t, ms, float64(d), 1, "%g ms, draw %d", ms, i)
			ticks += d
			sum += ms
			require.InDelta(t, sum, float64(ticks), 0.5+1e-9, "%g ms after %d draws", ms, i)
		}
	}
	var rem float64
	require.Equal(t, int64(0), dither(0, 1, &rem))
	require.Equal(t, int64(1<<62), dither(math.MaxFloat64, 1, &rem))
}

func TestAsyncCycleIsBounded(t *testing.T) {
	self := medge("loop", "loop")
	self.Async = true
	m := mmodel("loop", 10, []cascade.Node{mnode("loop", 1, 0, cascade.Const(0))}, self)
	r := replayT(t, m, withDuration(time.Second))
	require.Equal(t, r.Roots, r.Counts.Truncated)
}

func TestRunaway(t *testing.T) {
	// Fan-out 2 on a self-call: 2^64 calls per request. The replay stops
	// instead of exhausting memory.
	self := medge("loop", "loop")
	self.FanOut = cascade.Const(2)
	m := mmodel("loop", 10, []cascade.Node{mnode("loop", 1, 0, cascade.Const(1))}, self)
	cfg := DefaultConfig()
	cfg.Duration = time.Second
	e, err := NewEngine(m, cfg)
	require.NoError(t, err)
	e.maxJobs = 1 << 14
	require.True(t, e.Run(1).Counts.Aborted)
	require.Equal(t, int32(maxJobs), func() int32 { e, _ := NewEngine(m, cfg); return e.maxJobs }())
}

func TestCollapseNeedsARun(t *testing.T) {
	// A collapse is a run of starved windows to the end, long enough and
	// with enough roots offered not to be chance or requests in flight.
	e, err := NewEngine(mmodel("api", 10, []cascade.Node{mnode("api", 1, 0, cascade.Const(1))}), DefaultConfig())
	require.NoError(t, err)
	for _, tc := range []struct {
		name               string
		offered, succeeded []int64
		want               float64
	}{
		{"healthy", []int64{10, 10, 10, 10, 10}, []int64{10, 10, 10, 10, 10}, -1},
		{"two starved windows", []int64{50, 50, 50, 50, 50}, []int64{50, 50, 50, 0, 0}, -1},
		{"three thin windows", []int64{3, 3, 3, 3, 3}, []int64{3, 3, 0, 1, 0}, -1},
		{"three starved windows", []int64{10, 10, 10, 10, 10}, []int64{10, 10, 1, 2, 0}, 2000},
		{"starved, then served", []int64{10, 10, 10, 10, 10}, []int64{1, 1, 1, 10, 10}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, _ := e.collapse(RootSeries{WindowMS: 1000, Offered: tc.offered, Succeeded: tc.succeeded})
			require.Equal(t, tc.want, at)
		})
	}
}

func TestLoadCurve(t *testing.T) {
	// An unbounded node of 10 ms whose calls slow and fail with the rate
	// of calls arriving (cascade.LoadCurve): ×1 and no failure at 10/s,
	// ×3 and half failing from 100/s on, flat beyond.
	curve := &cascade.LoadCurve{WindowMS: 1000, RatePerSec: []float64{10, 100}, Slowdown: []float64{1, 3}, Fail: []float64{0, 0.5}}
	tests := []struct {
		name       string
		curve      *cascade.LoadCurve
		rate       float64
		success    float64
		p50, delta float64 // ms
	}{
		{"light", curve, 10, 1, 10, 0.5},
		{"between", curve, 55, 0.75, 20, 2},
		{"heavy", curve, 200, 0.5, 30, 1},
		{"heavy without a curve", nil, 200, 1, 10, 0.5},
		{"slowdown only", &cascade.LoadCurve{WindowMS: 1000, RatePerSec: []float64{10, 100}, Slowdown: []float64{1, 3}}, 200, 1, 30, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mnode("db", 1, 0, cascade.Const(10))
			n.LoadCurve = tc.curve
			r := replayT(t, mmodel("db", tc.rate, []cascade.Node{n}), withDuration(100*time.Second))
			require.InDelta(t, tc.success, r.SuccessRate, 0.03)
			db, _ := nodeOf(r, "db")
			require.InDelta(t, tc.p50, db.LatencyP50MS, tc.delta)
		})
	}
}

func TestWaitSlowdown(t *testing.T) {
	// A pool of 2 slots of 10 ms (200/s) at 150/s holds, unless its
	// calls slow with the queue: at 0.2 a call per waiter, 3 waiters
	// make 16 ms (125/s), the queue grows, and the pool collapses.
	tests := []struct {
		name       string
		slow, rate float64
		overloaded bool
		p50Max     float64 // ms, of the pool's calls
	}{
		{"no contention", 0, 150, false, 40},
		{"contention, light load", 0.2, 50, false, 12},
		{"contention past the knee", 0.2, 150, true, math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mnode("db", 1, 2, cascade.Const(10))
			n.WaitSlowdown = tc.slow
			r := replayT(t, mmodel("db", tc.rate, []cascade.Node{n}), withDuration(30*time.Second))
			require.Equal(t, tc.overloaded, r.Overloaded, "overloaded")
			db, _ := nodeOf(r, "db")
			require.Less(t, db.LatencyP50MS, tc.p50Max)
		})
	}
}

func TestWaitSlowdownLeavesAbandonedOut(t *testing.T) {
	// Callers give up after 60 ms and the pool drops their queued work
	// (deadline propagation): those calls wait for nobody and are not
	// waiters. The count of them (replica.qdead) must rise and fall with
	// the queue: never more than it, nothing left once it is empty.
	e := medge("api", "db")
	e.TimeoutMS = 60
	db := mnode("db", 1, 2, cascade.Const(10))
	db.DeadlinePropagation = true
	db.WaitSlowdown = 0.05
	m := mmodel("api", 300, []cascade.Node{mnode("api", 1, 0, cascade.Const(0)), db}, e)
	cfg := DefaultConfig()
	cfg.Duration = 10 * time.Second
	en, err := NewEngine(m, cfg)
	require.NoError(t, err)
	r := en.Run(1)
	require.Positive(t, r.Counts.Cancelled, "queued work dropped")
	for i := range en.nodes {
		for _, rp := range en.nodes[i].reps {
			require.GreaterOrEqual(t, rp.qdead, int32(0), en.nodes[i].name)
			require.LessOrEqual(t, rp.qdead, rp.qlen, en.nodes[i].name)
			if rp.qlen == 0 {
				require.Zero(t, rp.qdead, en.nodes[i].name)
			}
		}
	}
}

func TestWaitCap(t *testing.T) {
	// One slot of 10 ms (100/s) at 150/s: without a cap the queue grows
	// for good; with a cap of 50 ms the calls that waited that long are
	// refused then, the queue stays short and the slot serves its 100/s.
	tests := []struct {
		name       string
		capMS      float64
		success    float64
		overloaded bool
	}{
		{"no cap", 0, 0, true},
		{"cap 50 ms", 50, 0.66, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mnode("db", 1, 1, cascade.Const(10))
			n.WaitCapMS = tc.capMS
			r := replayT(t, mmodel("db", 150, []cascade.Node{n}), withDuration(30*time.Second))
			require.Equal(t, tc.overloaded, r.Overloaded)
			if tc.capMS > 0 {
				require.InDelta(t, tc.success, r.SuccessRate, 0.03)
				require.Positive(t, r.Counts.RejectedQueue)
				db, _ := nodeOf(r, "db")
				// A refused call's time is its cap: none is slower.
				require.LessOrEqual(t, db.LatencyP99MS, tc.capMS+10+1)
			}
		})
	}
}
