//go:build unix

package collect

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// fileLock is an exclusive advisory lock (flock) on a file. The kernel
// releases it when the process ends, however it ends, so a crash never
// leaves the work directory locked.
type fileLock struct{ f *os.File }

// lockFile takes the lock on path without waiting, writing the process id
// into the file; when another process holds it, the error names that
// process.
func lockFile(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if _, e := strconv.Atoi(pid); e != nil || pid == "" {
				pid = "another process"
			} else {
				pid = "process " + pid
			}
			return nil, fmt.Errorf("in use by %s (another cascade collect with the same --out?)", pid)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &fileLock{f: f}, nil
}

// unlock releases the lock.
func (l *fileLock) unlock() {
	if l != nil && l.f != nil {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
}
