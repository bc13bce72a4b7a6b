package replay

import (
	"math/rand/v2"
	"testing"
)

// TestPCG checks that the engine's generator draws what math/rand/v2
// draws from the same seed: the PCG's bits, and the methods of rand.Rand
// that rng copies.
func TestPCG(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 2}, {^uint64(0), 12345}, {0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9}} {
		var ours rng
		ours.src.Seed(seed[0], seed[1])
		theirs := rand.New(rand.NewPCG(seed[0], seed[1]))
		for i := 0; i < 20000; i++ {
			var a, b any
			switch i % 5 {
			case 0:
				a, b = ours.Uint64(), theirs.Uint64()
			case 1:
				a, b = ours.Float64(), theirs.Float64()
			case 2:
				a, b = ours.ExpFloat64(), theirs.ExpFloat64()
			case 3:
				a, b = ours.NormFloat64(), theirs.NormFloat64()
			case 4:
				a, b = ours.IntN(1+i%7), theirs.IntN(1+i%7)
			}
			if a != b {
				t.Fatalf("seed %v, draw %d: %v, math/rand/v2 %v", seed, i, a, b)
			}
		}
	}
}

// TestRefillSvc checks that an exponential service's times drawn ahead
// (refillSvc, which draws by hand) are those drawn one at a time, tail
// draws (expSlow) included.
func TestRefillSvc(t *testing.T) {
	for _, mean := range []float64{0.2, 2.5, 40} {
		n := &node{svc: sampler{kind: sExpMean, a: mean}, perMS: 100}
		n.svcR = newStream(7, streamService, 3)
		one := newStream(7, streamService, 3)
		var rem float64
		for batch := 0; batch < 500; batch++ {
			n.refillSvc()
			for k, got := range n.svcBuf {
				if want := dither(one.ExpFloat64()*mean, n.perMS, &rem); got != want {
					t.Fatalf("mean %v, batch %d, draw %d: %d ticks, one at a time %d", mean, batch, k, got, want)
				}
			}
		}
	}
}
