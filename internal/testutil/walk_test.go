package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// treeRoot is the repository's root, seen from this package.
const treeRoot = "../.."

// eachTestFile calls fn with the directory (relative to the root, with
// forward slashes) and contents of every _test.go file in the tree,
// outside dot directories and those skip names.
func eachTestFile(t *testing.T, skip func(dir string) bool, fn func(dir string, src []byte)) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(treeRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != treeRoot || skip != nil && skip(path) {
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
		rel, err := filepath.Rel(treeRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), b)
		return nil
	}))
}
