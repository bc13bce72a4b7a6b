//go:build unix

package dataset

import (
	"errors"
	"syscall"
)

// processGone reports whether no process pid runs on this host: none
// exists, or it has exited and waits for its parent to collect it (a
// zombie). A process of another user (EPERM) runs.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || exited(pid)
}
