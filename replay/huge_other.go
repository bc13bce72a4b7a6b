//go:build !linux

package replay

import "unsafe"

// adviseHuge does nothing here: huge pages are asked for on Linux only.
func adviseHuge(unsafe.Pointer, uintptr) {}
