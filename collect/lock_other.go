//go:build !unix

package collect

import "os"

// fileLock stands in for the flock of Unix systems, where it is missing:
// the work directory is not locked, and two cascade collect processes must
// not share one.
type fileLock struct{ f *os.File }

// lockFile creates path and takes no lock.
func lockFile(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f}, nil
}

// unlock closes the file.
func (l *fileLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
