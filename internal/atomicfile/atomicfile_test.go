package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	require.NoError(t, WriteFile(p, []byte("one")))
	require.NoError(t, WriteFile(p, []byte("two")))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "two", string(b))
	// A write that cannot happen leaves the previous file and no litter.
	missing := filepath.Join(dir, "missing", "b.json")
	err = WriteFile(missing, []byte("x"))
	require.EqualError(t, err, "write "+missing+": no such file or directory", "the error names the file asked for")
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, es, 1)
}
