package replay

import (
	"math"
	"math/bits"
)

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
	streamPriority
	streamQueue
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
	Rand *rng
}

// newStream returns the stream for (seed, purpose, entity).
func newStream(seed, purpose, entity uint64) stream {
	s := stream{Rand: new(rng)}
	s.reseed(seed, purpose, entity)
	return s
}

// reseed restarts the stream for (seed, purpose, entity).
func (s stream) reseed(seed, purpose, entity uint64) {
	hi := splitmix64(seed ^ splitmix64(purpose<<32|entity))
	lo := splitmix64(hi ^ purpose ^ entity<<17)
	s.Rand.src.Seed(hi, lo)
}

// Float64 draws from [0, 1) (rand.Rand.Float64).
func (s stream) Float64() float64 { return s.Rand.Float64() }

// ExpFloat64 draws from the exponential distribution of mean 1
// (rand.Rand.ExpFloat64).
func (s stream) ExpFloat64() float64 { return s.Rand.ExpFloat64() }

// NormFloat64 draws from the standard normal distribution
// (rand.Rand.NormFloat64).
func (s stream) NormFloat64() float64 { return s.Rand.NormFloat64() }

// IntN draws from [0, n) (rand.Rand.IntN).
func (s stream) IntN(n int) int { return s.Rand.IntN(n) }

// rng is math/rand/v2's PCG with the methods of rand.Rand the engine
// uses, called on the concrete generator rather than through the
// rand.Source interface, so they inline. Each method is the algorithm
// of the rand.Rand method of the same name (Go 1.26) and draws exactly
// what it draws from the same state.
type rng struct {
	src pcg
}

// pcg is math/rand/v2's PCG (Go 1.26): a 128-bit LCG with the DXSM
// output, the same numbers from the same seed (TestPCG). Its state is in
// fields of its own so that a loop of draws (refillSvc) can keep it in
// registers through pcgStep, where rand.PCG's unexported state went
// through memory at every draw.
type pcg struct {
	hi, lo uint64
}

// Seed is rand.PCG.Seed.
func (p *pcg) Seed(hi, lo uint64) { p.hi, p.lo = hi, lo }

// Uint64 is rand.PCG.Uint64.
func (p *pcg) Uint64() uint64 {
	var u uint64
	p.hi, p.lo, u = pcgStep(p.hi, p.lo)
	return u
}

// pcgStep advances the state (hi, lo) by one draw and returns the new
// state and the draw (rand.PCG's next and Uint64).
func pcgStep(hi, lo uint64) (nhi, nlo, u uint64) {
	const (
		mulHi = 2549297995355413924
		mulLo = 4865540595714422341
		incHi = 6364136223846793005
		incLo = 1442695040888963407
	)
	// state = state * mul + inc
	nhi, nlo = bits.Mul64(lo, mulLo)
	nhi += hi*mulLo + lo*mulHi
	nlo, c := bits.Add64(nlo, incLo, 0)
	nhi, _ = bits.Add64(nhi, incHi, c)
	// DXSM ("double xorshift multiply")
	const cheapMul = 0xda942042e4dd58b5
	u = nhi
	u ^= u >> 32
	u *= cheapMul
	u ^= u >> 48
	u *= nlo | 1
	return nhi, nlo, u
}

// Uint64 draws 64 random bits.
func (r *rng) Uint64() uint64 { return r.src.Uint64() }

// Float64 draws from [0, 1).
func (r *rng) Float64() float64 {
	return float64(r.src.Uint64()<<11>>11) * 0x1p-53 // exactly the division by 2⁵³
}

// IntN draws from [0, n); n must be positive.
func (r *rng) IntN(n int) int {
	u := uint64(n)
	if u&(u-1) == 0 {
		return int(r.src.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(r.src.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), u)
		}
	}
	return int(hi)
}

const (
	zigRe = 7.69711747013104972 // start of the exponential's tail
	zigRn = 3.442619855899      // start of the normal's tail
)

// ExpFloat64 draws from the exponential distribution of mean 1 (the
// ziggurat of Marsaglia and Tsang).
func (r *rng) ExpFloat64() float64 {
	u := r.src.Uint64()
	j := uint32(u)
	i := uint8(u >> 32)
	x := float64(j) * float64(we[i])
	if j < ke[i] {
		return x
	}
	return r.expSlow(i, x)
}

// expSlow finishes an exponential draw that left the ziggurat's core.
func (r *rng) expSlow(i uint8, x float64) float64 {
	for {
		if i == 0 {
			return zigRe - math.Log(r.Float64())
		}
		if fe[i]+float32(r.Float64())*(fe[i-1]-fe[i]) < float32(math.Exp(-x)) {
			return x
		}
		u := r.src.Uint64()
		j := uint32(u)
		i = uint8(u >> 32)
		x = float64(j) * float64(we[i])
		if j < ke[i] {
			return x
		}
	}
}

// NormFloat64 draws from the standard normal distribution (the ziggurat
// of Marsaglia and Tsang).
func (r *rng) NormFloat64() float64 {
	u := r.src.Uint64()
	j := int32(u) // possibly negative
	i := u >> 32 & 0x7F
	x := float64(j) * float64(wn[i])
	if absInt32(j) < kn[i] {
		return x
	}
	return r.normSlow(j, i, x)
}

// normSlow finishes a normal draw that left the ziggurat's core.
func (r *rng) normSlow(j int32, i uint64, x float64) float64 {
	for {
		if i == 0 {
			for {
				x = -math.Log(r.Float64()) * (1.0 / zigRn)
				y := -math.Log(r.Float64())
				if y+y >= x*x {
					break
				}
			}
			if j > 0 {
				return zigRn + x
			}
			return -zigRn - x
		}
		if fn[i]+float32(r.Float64())*(fn[i-1]-fn[i]) < float32(math.Exp(-.5*x*x)) {
			return x
		}
		u := r.src.Uint64()
		j = int32(u)
		i = u >> 32 & 0x7F
		x = float64(j) * float64(wn[i])
		if absInt32(j) < kn[i] {
			return x
		}
	}
}

func absInt32(i int32) uint32 {
	if i < 0 {
		return uint32(-i)
	}
	return uint32(i)
}
