package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// TestReadArrivals reads the root requests of real producers' captures
// (testdata/mq-read): `cascade replay --arrivals observed` took every
// root span for an arrival, a consumer's trace (a message's delivery) and
// a batch publisher's flush too.
func TestReadArrivals(t *testing.T) {
	tests := []struct {
		name string
		file string
		// roots are the root spans, arrivals the root requests among
		// them, by operation.
		roots    int
		arrivals map[string]int
	}{{
		name: "consumer traces started by a message are no arrivals",
		// testdata/notify: events 340 and 360 whole, 350 without its
		// gateway trace; each delivery starts a trace of its own.
		file:     "notify-shared-id.otlp.json.gz",
		roots:    19,
		arrivals: map[string]int{"POST /events": 2},
	}, {
		name: "a batch publisher's flush is no arrival: the requests that created its messages are",
		// Eight POST /events each create a message; two flushes publish
		// four each; a POST /events/bulk publishes its own two; ten
		// deliveries.
		file:     "batch-publish.otlp.json.gz",
		roots:    21,
		arrivals: map[string]int{"POST /events": 8, "POST /events/bulk": 1},
	}, {
		name:     "consumers under the producer's span (Brave's b3 headers) start no trace",
		file:     "brave-kafka-two-groups.json",
		roots:    3,
		arrivals: map[string]int{"post /orders": 3},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Traces = []string{filepath.Join("..", "testdata", "mq-read", tc.file)}
			cfg.Out = filepath.Join(t.TempDir(), "ds")
			_, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			roots := 0
			require.NoError(t, dataset.ReadSpans(cfg.Out, func(s *cascade.Span) error {
				if s.IsRoot() {
					roots++
				}
				return nil
			}))
			require.Equal(t, tc.roots, roots)
			got := map[string]int{}
			require.NoError(t, dataset.ReadArrivals(cfg.Out, func(s *cascade.Span) error {
				require.True(t, s.IsRoot())
				got[s.Operation]++
				return nil
			}))
			require.Equal(t, tc.arrivals, got)
		})
	}
}
