package replay

import "math/bits"

// hist is a log-linear histogram of non-negative tick counts: exact below
// 1024, then 512 buckets per power of two (relative error under 0.1%).
// Its memory grows by powers of two as values need them, taking octaves
// from spare (when set) before allocating; Engine.give returns them there.
type hist struct {
	n     int64
	oct   [histOcts]*octave
	spare *[]*octave
}

// octave is one power of two's buckets.
type octave = [1 << histSub]int64

const (
	histSub  = 9  // log2 of the buckets per octave
	histOcts = 64 // a power of two above the 56 octaves of a uint64
)

func (h *hist) add(v int64) {
	if v < 0 {
		v = 0
	}
	o, s := histBucket(uint64(v))
	c := h.oct[o]
	if c == nil {
		c = h.grow(o)
	}
	c[s&(1<<histSub-1)]++
	h.n++
}

// grow gives octave o zeroed memory, a spare octave when there is one.
// It is kept out of line so that add inlines.
//
//go:noinline
func (h *hist) grow(o int) *octave {
	var c *octave
	if sp := h.spare; sp != nil && len(*sp) > 0 {
		c = (*sp)[len(*sp)-1]
		*sp = (*sp)[:len(*sp)-1]
	} else {
		c = new(octave)
	}
	h.oct[o] = c
	return c
}

// detach zeroes the octaves and hands them to spare, leaving h empty.
func (h *hist) detach(spare *[]*octave) {
	for o, c := range h.oct {
		if c != nil {
			clear(c[:])
			*spare = append(*spare, c)
			h.oct[o] = nil
		}
	}
	h.n = 0
}

func histBucket(v uint64) (oct, sub int) {
	if v < 1<<histSub {
		return 0, int(v)
	}
	o := bits.Len64(v) - histSub
	return o & (histOcts - 1), int(v>>(o-1)) - 1<<histSub
}

// histValue is the middle of bucket (o, s).
func histValue(o, s int) float64 {
	if o == 0 {
		return float64(s)
	}
	lo := uint64(s+1<<histSub) << (o - 1)
	width := uint64(1) << (o - 1)
	return float64(lo) + float64(width-1)/2
}

func (h *hist) reset() {
	for _, c := range h.oct {
		if c != nil {
			clear(c[:])
		}
	}
	h.n = 0
}

// quantile returns the value of rank ⌊q·n⌋ (0-based) in ticks, the
// convention of the reference scripts (sorted[int(n*q)]); 0 when empty.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	k := int64(q * float64(h.n))
	if k >= h.n {
		k = h.n - 1
	}
	var cum int64
	for o, c := range h.oct {
		if c == nil {
			continue
		}
		for s, x := range c {
			cum += x
			if cum > k {
				return histValue(o, s)
			}
		}
	}
	return 0
}

// mean returns the mean of the bucket values in ticks.
func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	var sum float64
	for o, c := range h.oct {
		if c == nil {
			continue
		}
		for s, x := range c {
			if x != 0 {
				sum += float64(x) * histValue(o, s)
			}
		}
	}
	return sum / float64(h.n)
}
