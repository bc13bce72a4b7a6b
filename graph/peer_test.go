package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/graph"
)

func TestPeerAddress(t *testing.T) {
	tests := []struct {
		name, addr, title string
		ok                bool
	}{
		{"peer:127.0.0.1:6379", "127.0.0.1:6379", "an uninstrumented peer at 127.0.0.1:6379", true},
		{"peer:10.0.0.7", "10.0.0.7", "an uninstrumented peer at 10.0.0.7", true},
		{"peer:::1", "::1", "an uninstrumented peer at ::1", true},
		{"peer:[::1]:9090", "[::1]:9090", "an uninstrumented peer at [::1]:9090", true},
		{"127.0.0.1", "", "127.0.0.1", false},                             // no prefix: a name as given
		{"peer:redis", "", "peer:redis", false},                           // a name after the prefix
		{"peer:127.0.0.1:6379:GET", "", "peer:127.0.0.1:6379:GET", false}, // operation level
		{"redis", "", "redis", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, ok := graph.PeerAddress(tc.name)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.addr, addr)
			require.Equal(t, tc.title, graph.Title(tc.name))
		})
	}
}
