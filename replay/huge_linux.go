package replay

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on linux/amd64 and
// arm64 (with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the huge pages that [p, p+n)
// overlaps with huge pages when they are first touched (madvise
// MADV_HUGEPAGE). The range is rounded out, not in: the heap grows
// upwards, so the rest of the last huge page is, most often, where the
// next block goes. The rounded range is passed as numbers, never made
// a pointer (it reaches past the allocation, which checkptr rejects);
// an error (a part not mapped) changes nothing and is ignored.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	lo := uintptr(p) &^ (hugePage - 1)
	hi := (uintptr(p) + n + hugePage - 1) &^ (hugePage - 1)
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE)
}
