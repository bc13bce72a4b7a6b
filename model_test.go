package cascade

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadValidateAndTraffic(t *testing.T) {
	base := func(l *Load) *Model {
		return &Model{Version: ModelVersion, Load: l,
			Entries: []Entry{{Node: "api", RatePerSec: 1, Share: 1}},
			Nodes:   []Node{{Name: "api", Replicas: 1, Service: Const(1)}}}
	}
	for _, tc := range []struct {
		name    string
		load    *Load
		err     string
		traffic *Traffic
	}{
		{"none", nil, "", nil},
		{"open", &Load{Shape: LoadOpen, Roots: 40}, "", nil},
		{"closed", &Load{Shape: LoadClosed, Clients: 5, ThinkMS: 48}, "", &Traffic{Kind: TrafficClosed, Users: 5, ThinkMS: 48}},
		{"closed without clients", &Load{Shape: LoadClosed}, "load.clients", nil},
		{"unknown shape", &Load{Shape: "bursty"}, "load.shape", nil},
		{"negative think", &Load{Shape: LoadOpen, ThinkMS: -1}, "think_ms", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base(tc.load)
			err := m.Validate()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.traffic, m.ObservedTraffic())
		})
	}
}

// TestValidateRemediations checks the remediation fields' bounds, each
// error with its path.
func TestValidateRemediations(t *testing.T) {
	base := func() *Model {
		return &Model{Version: ModelVersion,
			Entries: []Entry{{Node: "api", RatePerSec: 1, Share: 1}},
			Nodes:   []Node{{Name: "api", Replicas: 1, Service: Const(1)}, {Name: "db", Replicas: 1, Concurrency: 2, Service: Const(1)}},
			Edges:   []Edge{{From: "api", To: "db", FanOut: Const(1), Propagation: 1}}}
	}
	for _, tc := range []struct {
		name string
		edit func(m *Model)
		err  string
	}{
		{"all set", func(m *Model) {
			m.Entries[0].LowPriority = 0.5
			m.Nodes[1].ShedLowAt = 3
			m.Edges[0].Fallback = &Fallback{Probability: 1}
			m.Edges[0].Bulkhead = 1
		}, ""},
		{"low priority share", func(m *Model) { m.Entries[0].LowPriority = 1.5 }, "entries[0].low_priority: 1.5 is outside [0, 1]"},
		{"shed threshold", func(m *Model) { m.Nodes[1].ShedLowAt = -1 }, "nodes[1].shed_low_at: -1 is negative"},
		{"fallback", func(m *Model) { m.Edges[0].Fallback = &Fallback{Probability: -0.1} }, "edges[0].fallback.probability: -0.1 is outside [0, 1]"},
		{"bulkhead", func(m *Model) { m.Edges[0].Bulkhead = -2 }, "edges[0].bulkhead: -2 is negative"},
		{"pool sharing unknown is valid", func(m *Model) { m.Edges[0].Observed = &EdgeObserved{PoolSharing: PoolSharingUnknown} }, ""},
		{"pool sharing", func(m *Model) { m.Edges[0].Observed = &EdgeObserved{PoolSharing: "maybe"} },
			`edges[0].observed.pool_sharing: "maybe", want shared, per-request or unknown`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.edit(m)
			err := m.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestValidateQueues(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Queue
		b    *Broker
		want string
	}{
		{"ok", Queue{Consumers: 2, Broker: "mq", Overflow: OverflowDropHead, MaxLength: 10}, &Broker{Name: "mq"}, ""},
		{"no consumer", Queue{}, nil, "consumers: 0"},
		{"overflow", Queue{Consumers: 1, Overflow: "drop"}, nil, `overflow: "drop"`},
		{"delay needs ttl", Queue{Consumers: 1, Redelivery: RedeliverDelay}, nil, "delay_ms"},
		{"unknown broker", Queue{Consumers: 1, Broker: "x"}, nil, `unknown broker "x"`},
		{"unknown dead letter", Queue{Consumers: 1, DeadLetter: "dlq"}, nil, `unknown node "dlq"`},
		{"alarm", Queue{Consumers: 1, Broker: "mq"}, &Broker{Name: "mq", Alarm: "explode"}, `alarm: "explode"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			m := Model{Version: ModelVersion,
				Entries: []Entry{{Node: "p", Share: 1}},
				Nodes: []Node{
					{Name: "p", Replicas: 1, Service: Dist{Kind: "const", Value: 1}},
					{Name: "q", Replicas: 1, Queue: &q}, // a queue needs no service time
				}}
			if tc.b != nil {
				m.Brokers = []Broker{*tc.b}
			}
			err := m.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestLoadCurve(t *testing.T) {
	c := &LoadCurve{WindowMS: 1000, RatePerSec: []float64{1, 3, 7}, Slowdown: []float64{1, 2, 4}, Fail: []float64{0, 0.1, 0.5}}
	tests := []struct {
		k, slow, fail float64
	}{
		{0, 1, 0},      // flat before the first point
		{1, 1, 0},      // at a point
		{2, 1.5, 0.05}, // between
		{5, 3, 0.3},
		{7, 4, 0.5},
		{100, 4, 0.5}, // flat beyond the last: no storm the capture did not show
	}
	for _, tc := range tests {
		require.InDelta(t, tc.slow, c.SlowdownAt(tc.k), 1e-12, "slowdown at %g", tc.k)
		f, ok := c.FailAt(tc.k)
		require.True(t, ok)
		require.InDelta(t, tc.fail, f, 1e-12, "fail at %g", tc.k)
	}
	var none *LoadCurve
	require.Equal(t, 1.0, none.SlowdownAt(3))
	_, ok := (&LoadCurve{WindowMS: 1000, RatePerSec: []float64{0}, Slowdown: []float64{2}}).FailAt(3)
	require.False(t, ok)
}

func TestLoadCurveValidate(t *testing.T) {
	tests := []struct {
		name string
		c    LoadCurve
		want string // "" valid
	}{
		{"ok", LoadCurve{WindowMS: 1000, RatePerSec: []float64{0, 2}, Fail: []float64{0, 0.2}}, ""},
		{"no window", LoadCurve{RatePerSec: []float64{0}, Fail: []float64{0}}, "window_ms"},
		{"no points", LoadCurve{WindowMS: 1000}, "rate_per_sec: no points"},
		{"not increasing", LoadCurve{WindowMS: 1000, RatePerSec: []float64{2, 2}, Fail: []float64{0, 0}}, "want increasing"},
		{"nothing", LoadCurve{WindowMS: 1000, RatePerSec: []float64{0}}, "neither slowdown nor fail"},
		{"short", LoadCurve{WindowMS: 1000, RatePerSec: []float64{0, 1}, Slowdown: []float64{1}}, "1 values for 2 points"},
		{"zero factor", LoadCurve{WindowMS: 1000, RatePerSec: []float64{0}, Slowdown: []float64{0}}, "want a finite factor > 0"},
		{"probability", LoadCurve{WindowMS: 1000, RatePerSec: []float64{0}, Fail: []float64{1.5}}, "outside [0, 1]"},
		{"negative count", LoadCurve{WindowMS: 1000, RatePerSec: []float64{-1}, Fail: []float64{0}}, "want a finite rate >= 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate("nodes[0].load_curve")
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "nodes[0].load_curve")
		})
	}
}
