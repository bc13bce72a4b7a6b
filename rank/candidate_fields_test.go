package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

func TestFieldsAndConflicts(t *testing.T) {
	s := &cascade.Scenario{
		Nodes:   replay.NodePatch("db", map[string]any{"queue_cap": 3, "breaker": map[string]any{"window": 5}}),
		Entries: replay.NodePatch("api", map[string]any{"retry": map[string]any{"max_attempts": 1, "backoff": map[string]any{"kind": "none"}}}),
	}
	require.Equal(t, []string{"entry:api/retry.backoff", "entry:api/retry.max_attempts", "node:db/breaker", "node:db/queue_cap"}, fieldsOf(s))
	tests := []struct {
		a, b string
		want bool
	}{
		{"edge:a->b/retry.max_attempts", "edge:a->b/retry.max_attempts", true},
		{"edge:a->b/retry.max_attempts", "edge:a->b/retry.backoff", false},
		{"edge:a->b/retry", "edge:a->b/retry.backoff", true},
		{"edge:a->b/parallelism", "edge:a->c/parallelism", false},
		{"edge:*->b/parallelism", "edge:a->b/parallelism", true},
		{"node:db/queue_cap", "node:db/breaker", false},
		{"node:*/breaker", "node:db/breaker", true},
		{"node:db/breaker", "edge:db->x/breaker", false},
		{"node:db/service_ms", "node:db/service_ms", true},
	}
	for _, tc := range tests {
		t.Run(tc.a+" "+tc.b, func(t *testing.T) {
			require.Equal(t, tc.want, conflict(tc.a, tc.b))
			require.Equal(t, tc.want, conflict(tc.b, tc.a))
		})
	}
}
