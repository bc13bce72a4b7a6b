package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarizeMatchesIngest(t *testing.T) {
	// A dataset read back counts what the ingest that wrote it counted.
	for _, tc := range []struct {
		name            string
		traces, metrics []string
	}{
		{"hotrod", []string{"../testdata/hotrod-baseline/traces-otlp.json.gz"}, []string{"../testdata/hotrod-baseline/prometheus"}},
		{"nezha", []string{"../testdata/nezha-onlineboutique/trace"}, []string{"../testdata/nezha-onlineboutique/metric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Traces, cfg.Metrics = tc.traces, tc.metrics
			cfg.Out = filepath.Join(t.TempDir(), "ds")
			want, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			got, err := Summarize(cfg.Out)
			require.NoError(t, err)
			require.Positive(t, got.Spans)
			require.Positive(t, got.Samples)
			// What the dataset cannot know: the inputs and what was
			// skipped, warned of or inferred while reading them; and the
			// repeats the ingest dropped.
			want.Inputs, want.Skipped, want.Warnings, want.Inferred, want.Notices = got.Inputs, got.Skipped, got.Warnings, got.Inferred, got.Notices
			want.DuplicateSpans, want.DuplicateSamples = 0, 0
			require.Equal(t, want, got)
		})
	}
}
