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

func TestTInterval(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Interval
	}{
		{"zeros", []float64{0, 0, 0}, Interval{0, 0, 0}},
		{"constant", []float64{2, 2}, Interval{2, 2, 2}},
		{"one", []float64{5}, Interval{5, 5, 5}},
		// mean 2, sd 1, t(0.975, 2) = 4.3027: half-width 4.3027/√3.
		{"three", []float64{1, 2, 3}, Interval{2, 2 - 2.4841377, 2 + 2.4841377}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tInterval(tc.xs)
			require.InDelta(t, tc.want.Mean, got.Mean, 1e-6)
			require.InDelta(t, tc.want.Low, got.Low, 1e-6)
			require.InDelta(t, tc.want.High, got.High, 1e-6)
		})
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		o     Objective
		iv    Interval
		floor float64
		want  Verdict
		gain  float64
	}{
		{ObjectiveGoodput, Interval{1, 0.5, 1.5}, 0, Win, 1},
		{ObjectiveGoodput, Interval{1, 0, 2}, 0, NoEffect, 1},
		{ObjectiveGoodput, Interval{0, 0, 0}, 0, NoEffect, 0},
		{ObjectiveGoodput, Interval{-1, -2, -0.1}, 0, Worse, -1},
		{ObjectiveP99, Interval{-10, -12, -8}, 0, Win, 10},
		{ObjectiveP99, Interval{-10, -30, 0}, 0, NoEffect, 10},
		{ObjectiveP99, Interval{5, 1, 9}, 0, Worse, -5},
		{ObjectiveAmplification, Interval{-1, -1.5, -0.5}, 0, Win, 1},
		{ObjectiveSpread, Interval{0.2, 0.1, 0.3}, 0, Worse, -0.2},
		{ObjectiveComposite, Interval{0.1, 0.05, 0.15}, 0, Win, 0.1},
		// Within the baseline's own spread: of no consequence, however
		// narrow the paired interval.
		{ObjectiveGoodput, Interval{0.004, 0.001, 0.007}, 0.01, NoEffect, 0.004},
		{ObjectiveGoodput, Interval{-0.004, -0.007, -0.001}, 0.01, NoEffect, -0.004},
		{ObjectiveP99, Interval{-10, -12, -8}, 5, Win, 10},
		{ObjectiveP99, Interval{-10, -12, -8}, 11, NoEffect, 10},
	}
	for _, tc := range tests {
		t.Run(string(tc.o), func(t *testing.T) {
			v, g := judge(tc.o, tc.iv, tc.floor)
			require.Equal(t, tc.want, v)
			require.InDelta(t, tc.gain, g, 1e-12)
		})
	}
}

// quickConfig is a configuration small enough for tests.
func quickConfig() Config {
	cfg := DefaultConfig()
	cfg.Seeds = 3
	cfg.Duration = 6 * time.Second
	cfg.Capacity = false
	return cfg
}

func loadModel(t testing.TB, path string) *cascade.Model {
	t.Helper()
	b, err := readFile(path)
	require.NoError(t, err)
	m, err := cascade.DecodeModel(b)
	require.NoError(t, err)
	return m
}

// TestNoOpIsNeverAWin: an empty patch and changes to fields replay does
// not read (or that cannot act) give replays identical to the baseline:
// differences of exactly zero, never a win, under every objective.
func TestNoOpIsNeverAWin(t *testing.T) {
	m := loadModel(t, "../testdata/replay/seed000.json")
	noop := []*cascade.Scenario{
		{Name: "empty", Nodes: replay.NodePatch("server", map[string]any{})},
		{Name: "observed", Nodes: replay.NodePatch("server", map[string]any{"observed": map[string]any{"requests": 5}})},
		{Name: "unlimited-queue", Nodes: replay.NodePatch("downlink", map[string]any{"queue_cap": 3})},
		{Name: "provenance", Edges: map[string]json.RawMessage{"uplink->server": replay.RawPatch(map[string]any{"provenance": map[string]any{"fan_out": "user"}})}},
	}
	for _, o := range Objectives {
		t.Run(string(o), func(t *testing.T) {
			cfg := quickConfig()
			cfg.Objective = o
			cfg.Derive = false
			cfg.Scenarios = noop
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			require.Len(t, rep.Rows, len(noop))
			for _, r := range rep.Rows {
				require.Equal(t, NoEffect, r.Verdict, "%s (seed %d)", r.Candidate.Name, cfg.Seed)
				require.Zero(t, r.Rank)
				require.Equal(t, Interval{}, r.Objective, r.Candidate.Name)
				for _, e := range r.Effects {
					require.Equal(t, Interval{}, e.Delta, "%s %s %s", r.Candidate.Name, e.Regime, e.Metric)
				}
			}
			require.Nil(t, rep.Set)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"one seed", func(c *Config) { c.Seeds = 1 }, "seeds: 1, want at least 2"},
		{"objective", func(c *Config) { c.Objective = "fast" }, `objective "fast"`},
		{"surge", func(c *Config) { c.SurgeFactor = -1 }, "surge factor"},
		{"range", func(c *Config) { c.CapacityMax = 0.1 }, "capacity range"},
		{"traffic", func(c *Config) { c.Scenarios = []*cascade.Scenario{{Name: "x", Traffic: &cascade.Traffic{}}} }, "sets traffic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseTraffic(t *testing.T) {
	tests := []struct {
		in    string
		want  *cascade.Traffic
		surge float64
		err   bool
	}{
		{"observed", nil, 0, false},
		{"", nil, 0, false},
		{"surge:3", nil, 3, false},
		{"surge:x1.5", nil, 1.5, false},
		{"closed:5,0", &cascade.Traffic{Kind: cascade.TrafficClosed, Users: 5}, 0, false},
		{"closed:20,100ms", &cascade.Traffic{Kind: cascade.TrafficClosed, Users: 20, ThinkMS: 100}, 0, false},
		{"80", &cascade.Traffic{Kind: cascade.TrafficPoisson, RatePerSec: 80}, 0, false},
		{"0.1/ms", &cascade.Traffic{Kind: cascade.TrafficPoisson, RatePerSec: 100}, 0, false},
		{"surge:0", nil, 0, true},
		{"closed:0,1", nil, 0, true},
		{"fast", nil, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, surge, err := ParseTraffic(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.surge, surge)
		})
	}
}

func TestObservedTrafficIsTheModelsLoad(t *testing.T) {
	// With no --traffic, a model whose load is closed is ranked under its
	// clients, and one without a load under Poisson arrivals.
	for _, tc := range []struct {
		name string
		load *cascade.Load
		want string
	}{
		{"closed", &cascade.Load{Shape: cascade.LoadClosed, Clients: 6, ThinkMS: 20}, "observed closed loop, 6 users, think 20 ms"},
		{"open", &cascade.Load{Shape: cascade.LoadOpen}, "observed rates (Poisson 80/s)"},
		{"none", nil, "observed rates (Poisson 80/s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, "../testdata/replay/seed000.json")
			m.Load = tc.load
			cfg := DefaultConfig()
			cfg.Seeds, cfg.Duration, cfg.Capacity, cfg.Derive, cfg.SurgeFactor = 2, 2*time.Second, false, false, 0
			cfg.Scenarios = []*cascade.Scenario{{Name: "nothing"}}
			rep, err := Run(context.Background(), m, cfg)
			require.NoError(t, err)
			require.Equal(t, tc.want, rep.Regimes[0].Name)
			if tc.name == "closed" {
				require.Equal(t, cascade.TrafficClosed, rep.Regimes[0].Traffic.Kind)
				require.Equal(t, 6, rep.Regimes[0].Traffic.Users)
			}
		})
	}
}
