package cascade

import (
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
