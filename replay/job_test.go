package replay

import (
	"testing"
	"unsafe"
)

// TestRecordSizes keeps the job and link records at the sizes their
// comments promise: a collapse holds hundreds of thousands of them.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(job{}); n != 64 {
		t.Errorf("job is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(link{}); n != 80 {
		t.Errorf("link is %d bytes, want 80", n)
	}
}

// TestZombieOffset checks both homes of a zombie offset: the job's four
// bytes, and the map for an offset they cannot hold.
func TestZombieOffset(t *testing.T) {
	var e Engine
	jb := &job{start: 1 << 41}
	for _, d := range []int64{0, 7, zoffBig - 1, zoffBig, 1 << 40} {
		e.setZoff(3, jb, d)
		if got := e.zombieFrom(3, jb); got != jb.start+d {
			t.Errorf("offset %d: zombie from %d, want %d", d, got, jb.start+d)
		}
	}
}
