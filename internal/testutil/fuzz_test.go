package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFuzzTargetsListed holds .ci/fuzz to its job: every fuzz target in
// the tree is in its list (package and name), so a decoder added with
// its target is fuzzed with the others and not only when someone
// remembers to.
func TestFuzzTargetsListed(t *testing.T) {
	const root = "../.."
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	var want []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			want = append(want, filepath.ToSlash(rel)+" "+m[1])
		}
		return nil
	}))
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
