// Package atomicfile writes files so that readers never see half of one:
// the data goes to a temporary file beside the target, is synced, and is
// renamed into place. A failed write leaves the previous file as it was.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically, with mode 0644.
func WriteFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
