package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFuzzTargetsListed holds .ci/fuzz to its job: every fuzz target in
// the tree is in its list (package and name), so a decoder added with
// its target is fuzzed with the others and not only when someone
// remembers to.
func TestFuzzTargetsListed(t *testing.T) {
	const root = treeRoot
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	var want []string
	eachTestFile(t, nil, func(dir string, src []byte) {
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			want = append(want, dir+" "+m[1])
		}
	})
	require.NotEmpty(t, want, "no fuzz target found")

	ci, err := os.ReadFile(filepath.Join(root, ".ci", "fuzz"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`"([\w/]+) (Fuzz\w+) `).FindAllStringSubmatch(string(ci), -1) {
		listed[m[1]+" "+m[2]] = true
	}
	for _, w := range want {
		require.True(t, listed[w], ".ci/fuzz does not list %q", w)
	}
}
