package replay

// slab holds values of one type in fixed chunks, so pointers to them stay
// valid while the slab grows, and recycles freed indices. Callers keep
// generation counters in T to tell a recycled value from the one an
// event meant.
type slab[T any] struct {
	chunks []*[slabSize]T
	n      int32
	free   []int32
}

const (
	slabBits = 10
	slabSize = 1 << slabBits
)

func (s *slab[T]) at(i int32) *T { return &s.chunks[i>>slabBits][i&(slabSize-1)] }

// alloc returns a free index; its value keeps whatever a previous user
// left there.
func (s *slab[T]) alloc() int32 {
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		return i
	}
	if int(s.n) == len(s.chunks)<<slabBits {
		s.chunks = append(s.chunks, new([slabSize]T))
	}
	i := s.n
	s.n++
	return i
}

func (s *slab[T]) release(i int32) { s.free = append(s.free, i) }

// reset forgets every value but keeps the memory.
func (s *slab[T]) reset() {
	s.n = 0
	s.free = s.free[:0]
}
