package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// An analysis fixture is report.json as `cascade analyze` writes it for a
// bundled capture, with small settings: testdata/analysis-NAME.json. The
// analyze package makes them (go test ./analyze -run TestReportFixtures
// -update), so the rendering tests neither replay nor drift from what the
// stages produce; `go test ./report -update` then rebuilds the goldens
// from them.
func fixture(tb testing.TB, name string) *Analysis {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "analysis-"+name+".json"))
	require.NoError(tb, err, "fixture missing: run go test ./analyze -run TestReportFixtures -update")
	var a Analysis
	require.NoError(tb, json.Unmarshal(data, &a))
	return &a
}
