package incident

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrackRecord(t *testing.T) {
	for _, tc := range []struct {
		conf          float64
		band          string
		right, answrs int
	}{
		{1, "0.9 to 1", 2, 3},
		{0.9, "0.9 to 1", 2, 3},
		{0.85, "0.8 to 0.9", 2, 4},
		{0.7, "0.7 to 0.8", 1, 6},
		{0.55, "0 to 0.7", 2, 9},
	} {
		r := trackRecord(tc.conf)
		require.NotNil(t, r, "%g", tc.conf)
		require.Equal(t, tc.band, r.Band)
		require.Equal(t, tc.right, r.Right)
		require.Equal(t, tc.answrs, r.Answers)
	}
	require.Nil(t, trackRecord(0))
}

// TestAbstain: two unexplained changes of nearly equal score leave the
// first origin too close to a tie, and the pass says no origin stands
// out; a clear lead does not.
func TestAbstain(t *testing.T) {
	for _, tc := range []struct {
		a, b    float64
		abstain bool
	}{
		{1, 0.9, true},  // 0.526
		{1, 0.5, false}, // 0.667
	} {
		nodes := []NodeChange{{Node: "x", Changed: true, Score: tc.a}, {Node: "y", Changed: true, Score: tc.b}}
		c := confidence(nodes)
		require.Equal(t, tc.abstain, c > 0 && c < AbstainBelow, "confidence %g", c)
	}
}
