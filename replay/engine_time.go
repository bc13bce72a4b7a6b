package replay

// This file converts between milliseconds and the engine's ticks: a
// setting rounds up, a drawn duration is dithered.

// ticks converts milliseconds to ticks, rounding up (a hair of slack
// keeps exact multiples exact). It is for settings (a timeout, a TTL, a
// window): a drawn duration goes through dither instead.
func (e *Engine) ticks(ms float64) int64 { return msTicks(ms, e.perMS) }

// dither converts a drawn duration to ticks without bias: it rounds the
// duration plus what rounding the stream's earlier draws left over (rem)
// to the nearest tick, and leaves the new remainder in rem. Each result
// is within a tick of its draw, and a stream's ticks add up to its draws
// within half a tick, so the mean holds at any tick. Rounding every draw
// up instead made each service and each network hop half a tick slower
// on average: 1% on a 40 ms service, which a queue near its capacity
// turns into several points of failures.
func dither(ms, perMS float64, rem *float64) int64 {
	x := ms*perMS + *rem
	if x <= 0 {
		*rem = x
		return 0
	}
	if x > 1<<62 {
		*rem = 0
		return 1 << 62
	}
	t := int64(x + 0.5)
	*rem = x - float64(t)
	return t
}

// msTicks is Engine.ticks at perMS ticks per millisecond.
func msTicks(ms, perMS float64) int64 {
	x := ms*perMS - 1e-9
	if x <= 0 {
		return 0
	}
	if x > 1<<62 {
		return 1 << 62
	}
	t := int64(x)
	if float64(t) < x {
		t++
	}
	return t
}

// ms converts ticks to milliseconds.
func (e *Engine) ms(t int64) float64 { return float64(t) * e.tickMS }

// netTicks draws a network delay on r, in ticks (dither).
func (r *route) netTicks(perMS float64) int64 {
	return dither(r.net.draw(r.netR.Rand), perMS, &r.netRem)
}
