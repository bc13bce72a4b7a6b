package replay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cascade"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Model builders for the mechanism tests.

func mnode(name string, replicas, conc int, svc cascade.Dist) cascade.Node {
	return cascade.Node{Name: name, Replicas: replicas, Concurrency: conc, Service: svc}
}

func medge(from, to string) cascade.Edge {
	return cascade.Edge{From: from, To: to, FanOut: cascade.Const(1), Propagation: 1}
}

func mmodel(entry string, rate float64, nodes []cascade.Node, edges ...cascade.Edge) *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: entry, RatePerSec: rate, Share: 1}},
		Nodes:   nodes,
		Edges:   edges,
	}
}

func exp(mean float64) cascade.Dist { return cascade.Dist{Kind: cascade.DistExp, Mean: mean} }

// replayT runs one replay (20 s, 0.1 ms ticks, seed 1 unless changed).
func replayT(t testing.TB, m *cascade.Model, opts ...func(*Config)) *Result {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Duration = 20 * time.Second
	cfg.Tick = 100 * time.Microsecond
	for _, o := range opts {
		o(&cfg)
	}
	r, err := Replay(m, cfg)
	require.NoError(t, err, "seed %d", cfg.Seed)
	return r
}

func nodeOf(r *Result, name string) (cascade.NodeOutcome, NodeCounts) {
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			return r.Nodes[i], r.NodeCounts[i]
		}
	}
	panic("replay test: no node " + name)
}

func withDuration(d time.Duration) func(*Config) { return func(c *Config) { c.Duration = d } }
func withDrain(d time.Duration) func(*Config)    { return func(c *Config) { c.Drain = d } }
func withSeed(s uint64) func(*Config)            { return func(c *Config) { c.Seed = s } }
func withTraffic(t cascade.Traffic) func(*Config) {
	return func(c *Config) { c.Traffic = &t }
}
