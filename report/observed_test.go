package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/internal/testutil"
)

// TestObservedMarkdownGolden holds report.md's section "The model
// against what was observed" on each fixture.
func TestObservedMarkdownGolden(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			a := fixture(t, name)
			require.NotNil(t, a.Observed, "the fixture has no observed section: run go test ./analyze -run TestReportFixtures -update")
			var b bytes.Buffer
			require.NoError(t, AnalysisMarkdown(&b, a))
			md := b.String()
			i := strings.Index(md, "\n## The model against what was observed\n")
			require.GreaterOrEqual(t, i, 0, "report.md has no observed section")
			section := md[i+1:]
			if j := strings.Index(section[3:], "\n## "); j >= 0 {
				section = section[:j+4]
			}
			testutil.Golden(t, "observed-"+name+".md", []byte(section))
			// A row per node the capture measured, each with its gaps.
			for _, n := range a.Observed.Nodes {
				require.Contains(t, section, "\n| "+n.Node+" | ", "node %s has no row", n.Node)
			}
			require.Contains(t, section, "| requests/s |", "the timeline's summary")
		})
	}
}

// TestNodeFitCompare flags exactly the gaps beyond the tolerance, and
// leaves undefined gaps (an observed 0, a node without slots) absent.
func TestNodeFitCompare(t *testing.T) {
	tol := DefaultTolerance()
	tests := []struct {
		name     string
		fit      NodeFit
		beyond   []string
		noP50Gap bool
		noUtil   bool
	}{
		{"within", NodeFit{ReplayedCalls: 10, Observed: NodeMeasures{P50MS: 100, P99MS: 200, ErrorRate: 0.1, PerSec: 10},
			Replayed: NodeMeasures{P50MS: 114, P99MS: 240, ErrorRate: 0.12, PerSec: 10.9}}, nil, false, true},
		{"p50 and errors beyond", NodeFit{ReplayedCalls: 10, Observed: NodeMeasures{P50MS: 100, P99MS: 200, ErrorRate: 0.01, PerSec: 10},
			Replayed: NodeMeasures{P50MS: 84, P99MS: 200, ErrorRate: 0.05, PerSec: 10}}, []string{"p50", "errors"}, false, true},
		{"p99 throughput utilisation beyond", NodeFit{ReplayedCalls: 10, Slots: 4, Observed: NodeMeasures{P50MS: 100, P99MS: 200, PerSec: 10, Utilisation: 0.5},
			Replayed: NodeMeasures{P50MS: 100, P99MS: 260, PerSec: 8, Utilisation: 0.7}}, []string{"p99", "throughput", "utilisation"}, false, false},
		{"no replayed calls: no latency gap", NodeFit{Observed: NodeMeasures{P50MS: 5, P99MS: 9, PerSec: 1},
			Replayed: NodeMeasures{}}, []string{"throughput"}, true, true},
		{"observed zero latency: no relative gap", NodeFit{ReplayedCalls: 10, Observed: NodeMeasures{PerSec: 1},
			Replayed: NodeMeasures{P50MS: 5, PerSec: 1}}, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fit
			f.Compare(tol)
			require.Equal(t, tc.beyond, f.Beyond)
			require.Equal(t, tc.noP50Gap, f.Gap.P50 == nil)
			require.Equal(t, tc.noUtil, f.Gap.UtilisationPP == nil)
			require.NotNil(t, f.Gap.ErrorPP)
		})
	}
}

// TestSignedText formats gaps with their sign and a true minus.
func TestSignedText(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{0, "0%"}, {0.04, "0%"}, {2.54, "+2.5%"}, {-9.66, "−9.7%"}, {-12.4, "−12%"}, {150, "+150%"}} {
		require.Equal(t, tc.want, signedText(tc.x, "%"), "%g", tc.x)
	}
}
