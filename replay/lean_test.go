package replay

import (
	"encoding/json"
	"testing"
	"time"

	"cascade"
)

// TestLeanPath replays models without children lists, whose plain calls
// take the lean path (Engine.call: leaves and parents without a link
// while they run), once as built and once with every call on the
// general path (setLean(false)), and requires the same Result. The cases
// cover what a lean parent meets: calls that queue (callQueued), shared
// pools and progress records, children on routes that are not lean, and
// children that are shed, failing their lean parent, whose caller then
// retries or falls back (leanFailed).
func TestLeanPath(t *testing.T) {
	// fanout30 variants: mod changes the model; each keeps Engine.kids
	// false.
	fan := func(mod func(m *cascade.Model)) *cascade.Model {
		m := fanout30()
		mod(m)
		return m
	}
	queued := fan(func(m *cascade.Model) {
		for i := range m.Nodes {
			n := &m.Nodes[i]
			n.Replicas, n.Concurrency = 1+i%2, 1+i%3
			if i%4 == 1 {
				n.LoadBalancer = "random"
			}
		}
	})
	pools := fan(func(m *cascade.Model) {
		for i := range m.Edges {
			m.Edges[i].SharedPool = m.Edges[i].Parallelism > 0
		}
		for i := range m.Nodes {
			m.Nodes[i].Concurrency = 2
		}
	})
	mixed := fan(func(m *cascade.Model) {
		for i := range m.Edges {
			e := &m.Edges[i]
			switch i % 5 {
			case 1:
				e.Async = true
			case 2:
				e.NetworkMS = &cascade.Dist{Kind: cascade.DistConst, Value: 0.05}
			case 3:
				e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2, Budget: &cascade.RetryBudget{Ratio: 0.1, MinPerSec: 1}}
			}
		}
		for i := range m.Nodes {
			switch i % 3 {
			case 1:
				m.Nodes[i].Service = cascade.Dist{Kind: cascade.DistLognormal, Mu: -1.8, Sigma: 0.5}
			case 2:
				m.Nodes[i].Service = cascade.Const(0.1)
			}
		}
	})
	shed := fan(func(m *cascade.Model) {
		for i := range m.Edges {
			e := &m.Edges[i]
			if i%2 == 0 {
				e.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 3}
			}
			if i%3 == 0 {
				e.Fallback = &cascade.Fallback{Probability: 0.5}
			}
		}
		for i := range m.Nodes {
			m.Nodes[i].Replicas, m.Nodes[i].Concurrency, m.Nodes[i].ShedLowAt = 1, 2, 1
		}
		m.Entries[0].LowPriority = 0.5
	})
	storm := loadModel(t, "seed000.json")
	storm.Entries[0].TimeoutMS = 0
	stormShed := loadModel(t, "seed000.json")
	stormShed.Entries[0].TimeoutMS = 0
	stormShed.Entries[0].LowPriority = 0.5
	down := stormShed.Node("downlink")
	down.Concurrency, down.ShedLowAt = 1, 1
	down.Service = cascade.Dist{Kind: cascade.DistNormal, Mean: 12.5, Sigma: 3.75, Floor: 2.5}
	stormShed.Edges[1].Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2} // uplink->server

	tests := []struct {
		name    string
		m       *cascade.Model
		traffic *cascade.Traffic
		fails   bool // children are shed and retried: leanFailed runs
	}{
		{"fan-out graph", fanout30(), nil, false},
		{"fan-out graph with queues and random replicas", queued, &cascade.Traffic{RatePerSec: 150}, false},
		{"fan-out graph with shared pools", pools, &cascade.Traffic{RatePerSec: 200}, false},
		{"fan-out graph with async, networked and budgeted edges, other services", mixed, nil, false},
		{"fan-out graph shedding low priority, with retries and fallbacks", shed, &cascade.Traffic{RatePerSec: 100}, true},
		// At 60/s the server has free slots often enough for its calls to
		// take the lean path.
		{"seed000 without a timeout", storm, &cascade.Traffic{RatePerSec: 60}, false},
		{"seed000 without a timeout, shedding at the leaf, with retries", stormShed, &cascade.Traffic{RatePerSec: 60}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Duration = 5 * time.Second
			cfg.Tick = 10 * time.Microsecond
			cfg.Traffic = tc.traffic
			cfg.Series = true
			lean, err := NewEngine(tc.m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if lean.kids {
				t.Fatal("the model keeps children lists: no call takes the lean path")
			}
			var parents int
			for i := range lean.routes {
				if r := &lean.routes[i]; r.lean && !r.leaf {
					parents++
				}
			}
			if parents == 0 {
				t.Fatal("no route into a parent is lean")
			}
			general, err := NewEngine(tc.m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			general.setLean(false)
			for seed := uint64(1); seed <= 2; seed++ {
				a, b := lean.Run(seed), general.Run(seed)
				if a.Counts.Calls == 0 {
					t.Fatal("nothing happened")
				}
				if tc.fails && (a.Counts.Shed == 0 || a.Counts.Retries == 0) {
					t.Fatalf("seed %d: nothing was shed and retried: %+v", seed, a.Counts)
				}
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Fatalf("seed %d: the lean path differs from the general one:\nlean    %+v\ngeneral %+v", seed, a.Counts, b.Counts)
				}
			}
		})
	}
}
