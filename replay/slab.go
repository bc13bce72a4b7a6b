package replay

import "unsafe"

// slab holds values of one type in fixed chunks, so pointers to them stay
// valid while the slab grows, and recycles freed indices. Callers keep
// generation counters in T to tell a recycled value from the one an
// event meant.
type slab[T any] struct {
	chunks []*[slabSize]T
	n      int32 // indices handed out so far
	// free[:nfree] are the freed indices, last freed last. free is as
	// long as the chunks hold values, so release never grows it (and
	// inlines).
	free  []int32
	nfree int32
}

const (
	slabBits = 10
	slabSize = 1 << slabBits
	// slabBlock bounds the chunks that grow allocates at once.
	slabBlock = 256
)

func (s *slab[T]) at(i int32) *T { return &s.chunks[i>>slabBits][i&(slabSize-1)] }

// alloc returns a free index; its value keeps whatever a previous user
// left there.
func (s *slab[T]) alloc() int32 {
	if s.nfree > 0 {
		s.nfree--
		return s.free[s.nfree]
	}
	if int(s.n) == len(s.chunks)<<slabBits {
		s.grow()
	}
	i := s.n
	s.n++
	return i
}

// grow adds chunks, as many as the slab has (up to slabBlock), in one
// block of memory that the kernel is asked to back with huge pages
// (adviseHuge).
func (s *slab[T]) grow() {
	k := min(max(1, len(s.chunks)), slabBlock)
	block := make([][slabSize]T, k)
	adviseHuge(unsafe.Pointer(&block[0]), uintptr(k)*unsafe.Sizeof(block[0]))
	for i := range block {
		s.chunks = append(s.chunks, &block[i])
	}
	n := (len(s.chunks)) << slabBits
	if n > cap(s.free) {
		// Only the free indices are copied; the rest is fresh memory
		// that release writes, as far as the most indices free at once:
		// in 4 KiB pages, not huge ones, or each growth would have the
		// kernel zero a huge page of a list that is mostly never read.
		free := make([]int32, n, 2*n)
		copy(free, s.free[:s.nfree])
		s.free = free
	}
	s.free = s.free[:n]
}

func (s *slab[T]) release(i int32) {
	s.free[s.nfree] = i
	s.nfree++
}

// reset forgets every value but keeps the memory.
func (s *slab[T]) reset() {
	s.n = 0
	s.nfree = 0
}
