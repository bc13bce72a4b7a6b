package replay

import (
	"math"
	"math/bits"
)

// The event queue is a timing wheel of wheelSize one-tick buckets, each a
// FIFO list, with a two-level bitmap of non-empty buckets, and a binary
// heap for events beyond the wheel's horizon. Push and pop cost O(1)
// (amortised; events past the horizon pay O(log n) once), and finding
// the next non-empty tick takes a few bit scans, so the cost of a replay
// grows with its events, not with idle ticks.
//
// Events at the same tick pop in the order they were pushed: the
// overflow heap orders by (tick, sequence) and moves its events into the
// wheel before any later push can reach their bucket. That holds for any
// wheel size, so the size is a matter of speed only: 4096 buckets (their
// heads 64 KiB of event slots, their tails 16 KiB, and 512 bytes of
// bitmap) stay in the L1 and L2 caches, where 65536 buckets missed them
// at every push and pop of a sparse replay, and the heap holds little
// more than the far timeouts and backoffs. The bitmap's second level is
// one word, which needs wheelBits = 12. Neither push nor pop branches on
// whether a bucket is or becomes empty (see slot and unlink).
const (
	wheelBits = 12
	wheelSize = 1 << wheelBits
	wheelMask = wheelSize - 1
)

// event kinds.
const (
	evArrival   uint8 = iota // next open-loop root arrival
	evUser                   // a closed-loop user sends its next request
	evJobArrive              // an attempt reaches its callee
	evJobDone                // an attempt's own (self) time is over
	evRespOK                 // a successful response reaches the caller
	evRespFail               // a failed response reaches the caller
	evTimeout                // the caller's per-attempt deadline
	evRetry                  // a backoff is over: send the next attempt
	evLeafDone               // a lean leaf attempt's work is over (Engine.call)
	evStop                   // end of the replay
	evMsgBack                // a redelivered message is back (Engine.onMsgBack)
	evBroker                 // a broker's restart, end of restart or alarm's end (Engine.onBroker)
	evWaitCap                // a queued call's wait cap is over (Engine.onWaitCap)
	evBatch                  // a batching publisher's linger is over (Engine.flushBatch)
)

// event is a scheduled event as pop returns it.
type event struct {
	at   int64
	id   int32 // job, link or user index
	gen  uint32
	kind uint8
}

// slot is an event in the wheel. Its tick is implicit: every event in
// the bucket of tick now is at now, because the wheel holds only events
// less than wheelSize ticks ahead.
//
// The first wheelSize slots of eventQueue.ev are not events but the
// buckets' heads: ev[b].next is the first event of bucket b, or -1. A
// bucket is a FIFO list through slot.next, and wheel.tail[b] is its last
// event, or b itself when it is empty, so that push appends to a bucket
// with one store whether it was empty or not (a test of emptiness is a
// branch that no predictor gets right in a replay whose ticks hold one or
// two events).
type slot struct {
	next int32 // next event in the bucket list, or -1
	id   int32
	gen  uint32
	kind uint8
}

type overflowItem struct {
	at  int64
	seq uint64
	ev  int32
}

// wheel is the buckets' tails and the bitmap of non-empty buckets (16.5
// KiB), which engines take from their scratch (see scratch) rather than
// hold, together with the event slots that begin with the buckets' heads.
// A bucket that is not marked in bits is empty: its head is -1 and its
// tail is itself.
type wheel struct {
	tail [wheelSize]int32
	bits [wheelSize / 64]uint64
	sum  [wheelSize / 64 / 64]uint64
}

type eventQueue struct {
	ev   []slot
	free int32 // free list through slot.next
	w    *wheel
	now  int64 // the tick being drained
	over []overflowItem
	// overAt is the tick of the overflow heap's first event, or
	// math.MaxInt64 when the heap is empty.
	overAt int64
	seq    uint64
	count  int64 // events pushed
}

func (q *eventQueue) reset() {
	if q.w == nil || len(q.ev) < wheelSize {
		// New memory (the wheel and the slots always travel together):
		// every bucket empty.
		if q.w == nil {
			q.w = new(wheel)
		}
		if cap(q.ev) < wheelSize {
			q.ev = make([]slot, wheelSize, 2*wheelSize)
		}
		q.ev = q.ev[:wheelSize]
		for b := range q.ev {
			q.ev[b].next = -1
			q.w.tail[b] = int32(b)
		}
		clear(q.w.bits[:])
	}
	q.ev = q.ev[:wheelSize]
	q.free = -1
	// Only buckets marked in bits hold events.
	for w, m := range q.w.bits {
		for m != 0 {
			b := w<<6 + bits.TrailingZeros64(m)
			q.ev[b].next = -1
			q.w.tail[b] = int32(b)
			m &= m - 1
		}
	}
	clear(q.w.bits[:])
	clear(q.w.sum[:])
	q.now, q.seq, q.count = 0, 0, 0
	q.over = q.over[:0]
	q.overAt = math.MaxInt64
}

// push schedules an event at tick at (clamped to now).
func (q *eventQueue) push(at int64, kind uint8, id int32, gen uint32) {
	i := q.free
	if uint64(at-q.now) >= wheelSize || i < 0 {
		// Out of line, so that the common case keeps its registers: an
		// event before now (clamped) or beyond the wheel, or no free slot.
		q.pushSlow(at, kind, id, gen)
		return
	}
	s := &q.ev[i]
	q.free = s.next
	*s = slot{next: -1, id: id, gen: gen, kind: kind}
	q.count++
	q.link(i, at)
}

// pushSlow is push when there is no free slot or the event lies before
// now or beyond the wheel.
//
//go:noinline
func (q *eventQueue) pushSlow(at int64, kind uint8, id int32, gen uint32) {
	if at < q.now {
		at = q.now
	}
	i := q.free
	if i < 0 {
		q.ev = append(q.ev, slot{next: -1})
		i = int32(len(q.ev) - 1)
	}
	s := &q.ev[i]
	q.free = s.next
	*s = slot{next: -1, id: id, gen: gen, kind: kind}
	q.count++
	if at-q.now < wheelSize {
		q.link(i, at)
		return
	}
	q.seq++
	q.over = append(q.over, overflowItem{at: at, seq: q.seq, ev: i})
	q.up(len(q.over) - 1)
	q.overAt = q.over[0].at
}

// link appends event i to the bucket of tick at and marks the bucket.
func (q *eventQueue) link(i int32, at int64) {
	b := int(at & wheelMask)
	t := &q.w.tail[b]
	q.ev[*t].next = i
	*t = i
	q.w.bits[b>>6] |= 1 << (b & 63)
	q.w.sum[0] |= 1 << (b >> 6)
}

// pop removes the next event and returns a copy; ok is false when the
// queue is empty.
func (q *eventQueue) pop() (e event, ok bool) {
	b := int(q.now & wheelMask)
	i := q.ev[b].next
	if i < 0 {
		if !q.advance() {
			return event{}, false
		}
		b = int(q.now & wheelMask)
		i = q.ev[b].next
	}
	s := &q.ev[i]
	e = event{at: q.now, id: s.id, gen: s.gen, kind: s.kind}
	q.unlink(b, i, s)
	return e, true
}

// unlink takes event i (its slot is s), the first of bucket b, off the
// bucket and frees its slot. Engine.loop pops by hand, with unlink.
//
// Whether the bucket is now empty is as unpredictable as in push, so
// unlink marks it without a branch: when it is, its tail goes back to
// itself and its bitmap bit (and the summary's, if the word empties) is
// cleared; when it is not, the same stores leave them as they were.
func (q *eventQueue) unlink(b int, i int32, s *slot) {
	next := s.next
	q.ev[b].next = next
	s.next = q.free
	q.free = i
	empty := next >> 31 // -1 when the bucket is empty, else 0
	w := q.w
	t := w.tail[b]
	w.tail[b] = t ^ (t^int32(b))&empty
	wd := w.bits[b>>6] &^ (uint64(int64(empty)) & (1 << (b & 63)))
	w.bits[b>>6] = wd
	var z uint64
	if wd == 0 {
		z = 1
	}
	w.sum[0] &^= z << (b >> 6)
}

// emptied marks bucket b, which pop emptied, empty.
func (q *eventQueue) emptied(b int) {
	q.w.tail[b] = int32(b)
	q.w.bits[b>>6] &^= 1 << (b & 63)
	if q.w.bits[b>>6] == 0 {
		q.w.sum[0] &^= 1 << (b >> 6)
	}
}

// peekTick returns the tick of the next event, advancing now to it; ok is
// false when the queue is empty.
func (q *eventQueue) peekTick() (int64, bool) {
	if q.ev[q.now&wheelMask].next >= 0 {
		return q.now, true
	}
	if !q.advance() {
		return 0, false
	}
	return q.now, true
}

// advance moves now to the next tick that has an event and moves overflow
// events that came within the horizon into the wheel.
//
// The next non-empty bucket after now's is found circularly in one pass:
// the rest of now's bitmap word, then the summary word's later words,
// then (wrapping around) its earliest. The summary is one word, because
// the wheel has 64 bitmap words (wheelBits is 12). Callers advance only
// when now's bucket is empty.
func (q *eventQueue) advance() bool {
	cur := int(q.now & wheelMask)
	from := (cur + 1) & wheelMask
	w := from >> 6
	var b int
	if m := q.w.bits[w] >> (from & 63); m != 0 {
		b = from + bits.TrailingZeros64(m)
	} else {
		sum := q.w.sum[0]
		if sum == 0 {
			// The wheel is empty (now's bucket is, or there would be
			// nothing to advance to).
			return q.advanceOver()
		}
		s := sum &^ (uint64(2)<<w - 1) // words after w
		if s == 0 {
			s = sum // wrap around (w's own bits are all before from)
		}
		wi := bits.TrailingZeros64(s)
		b = wi<<6 + bits.TrailingZeros64(q.w.bits[wi])
	}
	next := q.now + int64((b-cur)&wheelMask)
	if q.overAt-next < wheelSize {
		// The heap's first event comes before next, or within the
		// horizon from it.
		if q.overAt < next {
			next = q.overAt
		}
		q.now = next
		q.pullOver()
		return true
	}
	q.now = next
	return true
}

// advanceOver is advance when the wheel is empty: the next event is the
// overflow heap's first, if any.
func (q *eventQueue) advanceOver() bool {
	if len(q.over) == 0 {
		return false
	}
	q.now = q.overAt
	q.pullOver()
	return true
}

// pullOver moves the overflow events that came within the horizon into
// the wheel.
func (q *eventQueue) pullOver() {
	for q.overAt-q.now < wheelSize {
		it := q.over[0]
		q.popOverflow()
		q.link(it.ev, it.at)
	}
}

// advance reads the bitmap's summary level as one word: wheelBits must
// be 12.
const _ = uint(wheelBits-12) + uint(12-wheelBits)

func (q *eventQueue) less(i, j int) bool {
	a, b := &q.over[i], &q.over[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *eventQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.over[i], q.over[p] = q.over[p], q.over[i]
		i = p
	}
}

func (q *eventQueue) popOverflow() {
	last := len(q.over) - 1
	q.over[0] = q.over[last]
	q.over = q.over[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.over[i], q.over[m] = q.over[m], q.over[i]
		i = m
	}
	if last == 0 {
		q.overAt = math.MaxInt64
	} else {
		q.overAt = q.over[0].at
	}
}
