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
