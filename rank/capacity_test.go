package rank

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// fourSlots is one node with 4 slots and a constant 10 ms service: a
// capacity of 400 requests a second, offered 200/s.
func fourSlots() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Entries: []cascade.Entry{{Node: "svc", RatePerSec: 200, Share: 1}},
		Nodes:   []cascade.Node{{Name: "svc", Replicas: 1, Concurrency: 4, Service: cascade.Const(10)}},
	}
}

func TestCapacityKnee(t *testing.T) {
	cfg := quickConfig()
	cfg.Seeds = 2
	cfg.Duration = 10 * time.Second
	c, err := Capacity(context.Background(), fourSlots(), cfg)
	require.NoError(t, err)
	require.Len(t, c.Points, 12)
	require.Equal(t, 0.25, c.Points[0].Factor)
	require.Equal(t, 3.0, c.Points[11].Factor)
	// The knee sits just past the capacity: goodput keeps up to 400/s
	// and then stays there while the offered load grows.
	require.Greater(t, c.KneePerSec, 400.0, c.Knee)
	require.Less(t, c.KneePerSec, 450.0, c.Knee)
	require.InDelta(t, 400, c.SafePerSec, 8, "the last point before the knee is ×2")
	for _, p := range c.Points {
		if p.Offered.Mean < 380 {
			require.InDelta(t, 1, p.Ratio, 0.01, "×%g", p.Factor)
			require.True(t, p.Little.Holds, "Little's law below the knee, ×%g: %+v", p.Factor, p.Little)
			require.GreaterOrEqual(t, p.Little.L, 0.95*p.Offered.Mean/100, "L ≥ λ·10 ms: every call spends 10 ms in service")
		}
		if p.Offered.Mean > 500 {
			require.InDelta(t, 400, p.Goodput.Mean, 8, "saturated at ×%g", p.Factor)
			require.Greater(t, p.Little.L, 100.0, "the queue grows for the whole replay at ×%g", p.Factor)
		}
	}
	// Saturation is not collapse: goodput holds at capacity.
	require.Zero(t, c.CollapsePerSec, c.Collapse)
}

func TestCapacityCollapse(t *testing.T) {
	// Seed 000: retries on timeouts past the knee send goodput to nothing.
	cfg := quickConfig()
	cfg.Seeds = 2
	cfg.Duration = 20 * time.Second
	cfg.CapacityPoints = 6
	cfg.CapacityMax = 2
	c, err := Capacity(context.Background(), loadModel(t, "../testdata/replay/seed000.json"), cfg)
	require.NoError(t, err)
	require.Positive(t, c.KneePerSec)
	require.Less(t, c.KneePerSec, 100.0, c.Knee)
	require.Positive(t, c.CollapsePerSec, c.Collapse)
	require.GreaterOrEqual(t, c.CollapsePerSec, c.KneePerSec)

	_, err = Capacity(context.Background(), &cascade.Model{Version: 1,
		Entries: []cascade.Entry{{Node: "a"}}, Nodes: []cascade.Node{{Name: "a", Replicas: 1, Service: cascade.Const(1)}}}, cfg)
	require.ErrorIs(t, err, ErrNoEntries)
}

// TestMetastability: seed 000's retry storm stays collapsed after a
// surge of ×1.5; without client retries the queue drains and goodput
// recovers, so fewer attempts remove the metastability.
func TestMetastability(t *testing.T) {
	cfg := quickConfig()
	cfg.Duration = 30 * time.Second
	cfg.SurgeFactor = 1.5
	cfg.Derive = false
	cfg.Scenarios = []*cascade.Scenario{
		{Name: "attempts=1", Entries: replay.NodePatch("uplink", map[string]any{"retry": map[string]any{"max_attempts": 1}})},
		{Name: "backoff", Entries: replay.NodePatch("uplink", map[string]any{"retry": map[string]any{
			"backoff": map[string]any{"kind": "full-jitter", "base_ms": 100, "max_ms": 1000}}})},
	}
	rep, err := Run(context.Background(), loadModel(t, "../testdata/replay/seed000.json"), cfg)
	require.NoError(t, err)
	ms := rep.Metastability
	require.NotNil(t, ms)
	require.True(t, ms.Metastable, ms.Verdict)
	require.Equal(t, []float64{-1, -1, -1}, ms.RecoverMS)
	require.Equal(t, []string{"attempts=1"}, ms.Removed, ms.Verdict)
	require.Equal(t, 10000.0, ms.AtMS)
	require.Equal(t, 10000.0, ms.ForMS)
	for _, r := range rep.Rows {
		if r.Candidate.Name == "attempts=1" {
			require.Equal(t, Win, r.Verdict)
			require.Equal(t, 3, r.Recovered)
			require.Contains(t, r.Why, "server")
		}
	}
}

// TestCompatibleSet: wins that patch different fields join the set while
// they improve it; a win that patches a member's field is passed over.
func TestCompatibleSet(t *testing.T) {
	cfg := quickConfig()
	cfg.Duration = 20 * time.Second
	cfg.Derive = false
	retry := func(p map[string]any) map[string]json.RawMessage {
		return replay.NodePatch("uplink", map[string]any{"retry": p})
	}
	cfg.Scenarios = []*cascade.Scenario{
		{Name: "attempts=1", Entries: retry(map[string]any{"max_attempts": 1})},
		{Name: "attempts=2", Entries: retry(map[string]any{"max_attempts": 2})},
		{Name: "queue", Nodes: replay.NodePatch("server", map[string]any{"queue_cap": 8})},
		{Name: "pool", Nodes: replay.NodePatch("server", map[string]any{"concurrency": 8})},
	}
	rep, err := Run(context.Background(), loadModel(t, "../testdata/replay/seed000.json"), cfg)
	require.NoError(t, err)
	require.NotNil(t, rep.Set)
	s := rep.Set
	require.Equal(t, rep.Rows[0].Candidate.Name, s.Members[0])
	for i := range s.Members {
		for j := i + 1; j < len(s.Members); j++ {
			a, b := candidateNamed(rep, s.Members[i]), candidateNamed(rep, s.Members[j])
			require.True(t, compatible(a, b), "%s and %s", a.Name, b.Name)
		}
	}
	tried := map[string]SetStep{}
	for _, st := range s.Tried {
		tried[st.Name] = st
	}
	if st, ok := tried["attempts=2"]; ok && contains(s.Members, "attempts=1") {
		require.False(t, st.Joined)
		require.Contains(t, st.Reason, "patches a field")
	}
	if len(s.Members) > 1 {
		require.Equal(t, Win, s.Row.Verdict)
		require.Len(t, s.Row.Candidate.Fields, len(fieldsUnion(rep, s.Members)))
	}
}

func candidateNamed(rep *Report, name string) *Candidate {
	for i := range rep.Rows {
		if rep.Rows[i].Candidate.Name == name {
			return &rep.Rows[i].Candidate
		}
	}
	return nil
}

func fieldsUnion(rep *Report, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, candidateNamed(rep, n).Fields...)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestDeterministic: the same inputs and seeds give byte-identical
// reports whatever the parallelism.
func TestDeterministic(t *testing.T) {
	m := loadModel(t, "../testdata/replay/seed000.json")
	var outs [][]byte
	for _, par := range []int{1, 3} {
		cfg := quickConfig()
		cfg.Capacity = true
		cfg.CapacityPoints = 4
		cfg.Parallel = par
		rep, err := Run(context.Background(), m, cfg)
		require.NoError(t, err)
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		outs = append(outs, b)
	}
	require.Equal(t, string(outs[0]), string(outs[1]))
}
