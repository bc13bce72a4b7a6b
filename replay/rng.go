package replay

import "math/rand/v2"

// Purposes of random streams. Each mechanism draws from its own stream,
// derived from the seed, the purpose and the entity (node, edge or entry)
// it belongs to, so that changing one mechanism does not shift the draws
// of the others: scenarios compared under one seed see common random
// numbers.
const (
	streamArrivals uint64 = iota + 1
	streamService
	streamFailure
	streamNetwork
	streamFanOut
	streamRetry
	streamBalance
	streamAvailability
)

// splitmix64 is the SplitMix64 finaliser, used to derive stream seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// stream is one PCG random stream; reseeding it does not allocate.
type stream struct {
	src *rand.PCG
	*rand.Rand
}

// newStream returns the stream for (seed, purpose, entity).
func newStream(seed, purpose, entity uint64) stream {
	s := stream{src: &rand.PCG{}}
	s.Rand = rand.New(s.src)
	s.reseed(seed, purpose, entity)
	return s
}

// reseed restarts the stream for (seed, purpose, entity).
func (s stream) reseed(seed, purpose, entity uint64) {
	hi := splitmix64(seed ^ splitmix64(purpose<<32|entity))
	lo := splitmix64(hi ^ purpose ^ entity<<17)
	s.src.Seed(hi, lo)
}
