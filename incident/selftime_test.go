package incident

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// TestSelfTimeOrigin: CPU contention on a thin service (its own work ×3
// from 60 s on) at 2, 0.5 and 0.2 calls a second is ranked first, with
// its self time counted in calls as evidence and its onset at the fault;
// at 0.2 a second (2 calls a 10 s window, fewer than a window judges)
// the windows alone never see it. A healthy capture at each rate
// reports no origin.
func TestSelfTimeOrigin(t *testing.T) {
	none := func(float64) float64 { return 0 }
	slow := func(t float64) float64 {
		if t >= 60 {
			return 2
		}
		return 0
	}
	tests := []struct {
		name   string
		s      thinSynth
		origin string // "" for no origin
	}{
		{"2 calls/s", thinSynth{delay: none, starve: none, slow: slow, kinds: true, every: 10}, "thin"},
		{"0.5 calls/s", thinSynth{delay: none, starve: none, slow: slow, kinds: true, every: 40}, "thin"},
		{"0.2 calls/s", thinSynth{delay: none, starve: none, slow: slow, kinds: true, every: 100}, "thin"},
		{"0.2 calls/s, no span kinds", thinSynth{delay: none, starve: none, slow: slow, every: 100}, "thin"},
		{"healthy, 2 calls/s", thinSynth{delay: none, starve: none, kinds: true, every: 10}, ""},
		{"healthy, 0.5 calls/s", thinSynth{delay: none, starve: none, kinds: true, every: 40}, ""},
		{"healthy, 0.2 calls/s", thinSynth{delay: none, starve: none, kinds: true, every: 100}, ""},
		{"healthy, 0.2 calls/s, no span kinds", thinSynth{delay: none, starve: none, every: 100}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inc, err := RootCause(context.Background(), graph.Spans(tc.s.spans()), nil, nil, DefaultConfig())
			require.NoError(t, err)
			if tc.origin == "" {
				require.Empty(t, inc.Origins, "%+v", inc.Nodes)
				return
			}
			ev := requireCountedOrigin(t, inc, tc.origin, "self_time_calls")
			require.Empty(t, inc.Nodes[0].ExplainedBy)
			require.Greater(t, ev.Value, 2*ev.Normal) // ×3 own work
		})
	}
}

// TestSelfTimeReference: against a fault-free reference (thin fast), a
// thin service whose own work is ×3 from 60 s on is ranked first; one
// that is ×3 from the capture's first request on differs from the
// reference but has no step in the capture (a baseline mismatch, not
// this incident) and owns no self-time change.
func TestSelfTimeReference(t *testing.T) {
	none := func(float64) float64 { return 0 }
	from := func(at float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= at {
				return 2
			}
			return 0
		}
	}
	ref := thinSynth{delay: none, starve: none, kinds: true, every: 100}
	tests := []struct {
		name   string
		s      thinSynth
		origin string // "" when thin owns no self-time step
	}{
		{"step at 60 s", thinSynth{delay: none, starve: none, slow: from(60), kinds: true, every: 100}, "thin"},
		{"slow from the start", thinSynth{delay: none, starve: none, slow: from(0), kinds: true, every: 100}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inc, err := RootCause(context.Background(), graph.Spans(tc.s.spans()), graph.Spans(ref.spans()), nil, DefaultConfig())
			require.NoError(t, err)
			var owns bool
			for _, n := range inc.Nodes {
				for _, ev := range n.Evidence {
					if n.Node == "thin" && ev.Metric == "self_time_calls" {
						owns = true
					}
				}
			}
			if tc.origin == "" {
				require.False(t, owns, "%+v", inc.Nodes)
				return
			}
			require.True(t, owns, "%+v", inc.Nodes)
			require.NotEmpty(t, inc.Origins, "%+v", inc.Nodes)
			require.Equal(t, tc.origin, inc.Origins[0], "%+v", inc.Nodes)
		})
	}
}

// TestSelfTimeDrop: an early return injected into the thin service (its
// own work ×0.1 from 60 s on, no error), at 2 and 0.2 calls a second,
// is ranked first against a fault-free reference by the fall of its
// self time (self_time_drop), unexplained; without a reference no fall
// is judged (a capture's first windows may be an earlier disturbance's
// tail, and a recovery from it falls). A thin service fast from the
// capture's first request differs from the reference but has no step
// in the capture, and owns no fall. A healthy capture reports none.
func TestSelfTimeDrop(t *testing.T) {
	none := func(float64) float64 { return 0 }
	fast := func(at float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= at {
				return -0.9
			}
			return 0
		}
	}
	ref := thinSynth{delay: none, starve: none, kinds: true, every: 100}
	tests := []struct {
		name   string
		s      thinSynth
		ref    bool
		origin string // "" when thin owns no fall
	}{
		{"2 calls/s", thinSynth{delay: none, starve: none, slow: fast(60), kinds: true, every: 10}, true, "thin"},
		{"0.2 calls/s", thinSynth{delay: none, starve: none, slow: fast(60), kinds: true, every: 100}, true, "thin"},
		{"0.2 calls/s, no span kinds", thinSynth{delay: none, starve: none, slow: fast(60), every: 100}, true, "thin"},
		{"no reference", thinSynth{delay: none, starve: none, slow: fast(60), kinds: true, every: 10}, false, ""},
		{"fast from the start", thinSynth{delay: none, starve: none, slow: fast(0), kinds: true, every: 100}, true, ""},
		{"healthy", thinSynth{delay: none, starve: none, kinds: true, every: 10}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rs cascade.SpanSource
			if tc.ref {
				rs = graph.Spans(ref.spans())
			}
			inc, err := RootCause(context.Background(), graph.Spans(tc.s.spans()), rs, nil, DefaultConfig())
			require.NoError(t, err)
			if tc.origin == "" {
				for _, n := range inc.Nodes {
					for _, ev := range n.Evidence {
						require.NotEqual(t, "self_time_drop", ev.Metric, "%+v", inc.Nodes)
					}
				}
				if tc.name == "healthy" {
					require.Empty(t, inc.Origins, "%+v", inc.Nodes)
				}
				return
			}
			ev := requireCountedOrigin(t, inc, tc.origin, "self_time_drop")
			require.Empty(t, inc.Nodes[0].ExplainedBy)
			require.Less(t, ev.Value, ev.Normal/5) // ×0.1 own work
		})
	}
}
