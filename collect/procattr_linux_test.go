package collect

import "syscall"

// childAttr makes a child process die with the test binary, so that a
// test killed by its timeout leaves no process behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
