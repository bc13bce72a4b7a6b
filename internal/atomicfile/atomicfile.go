// Package atomicfile writes files so that readers never see half of one:
// the data goes to a temporary file beside the target, is synced, and is
// renamed into place. A failed write leaves the previous file as it was.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically, with mode 0644. An error
// names path, not the temporary file.
func WriteFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return named(path, err)
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
		return named(path, err)
	}
	return nil
}

// named is err with the path it names replaced by path: the user knows
// the file they asked for, not its temporary name.
func named(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: "write", Path: path, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &os.PathError{Op: "write", Path: path, Err: le.Err}
	}
	return err
}
