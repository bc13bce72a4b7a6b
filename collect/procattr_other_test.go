//go:build !linux

package collect

import "syscall"

// childAttr is the default elsewhere: without Pdeathsig, the tests' own
// cleanups stop their children.
func childAttr() *syscall.SysProcAttr { return nil }
