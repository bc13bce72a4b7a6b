package replay

import (
	"fmt"
	"math"
	"sort"

	"cascade"
)

// buildTraffic settles the arrival process from Config.Traffic,
// Config.Observed and the model's entry rates (their sum is rates).
func (e *Engine) buildTraffic(rates float64) error {
	if e.cfg.Traffic != nil {
		e.traffic = *e.cfg.Traffic
	}
	t := &e.traffic
	dur := float64(e.cfg.Duration) / 1e6
	e.arrEnd = dur
	if t.DurationMS > 0 && t.DurationMS < dur {
		e.arrEnd = t.DurationMS
	}
	switch {
	case len(e.cfg.Observed) > 0:
		t.Kind = cascade.TrafficObserved
		// Read in place when already in time order (as fit's windows
		// are): the engine never writes it.
		e.observed = e.cfg.Observed
		if !inOrder(e.observed) {
			e.observed = append([]Arrival(nil), e.cfg.Observed...)
		}
	case t.Kind == cascade.TrafficObserved:
		e.observed = make([]Arrival, len(t.ArrivalsMS))
		for i, a := range t.ArrivalsMS {
			e.observed[i] = Arrival{AtMS: a}
		}
	case t.Kind == cascade.TrafficClosed:
		e.closed = true
	default:
		t.Kind = cascade.TrafficPoisson
		if t.RatePerSec == 0 {
			t.RatePerSec = rates
		}
	}
	if t.Kind == cascade.TrafficObserved {
		if !inOrder(e.observed) {
			sort.SliceStable(e.observed, func(i, j int) bool { return e.observed[i].AtMS < e.observed[j].AtMS })
		}
		// obsEntry stays nil (every arrival at entry 0) unless some
		// arrival names its entry.
		for i, a := range e.observed {
			if a.Entry == "" {
				continue
			}
			if e.obsEntry == nil {
				e.obsEntry = make([]int32, len(e.observed))
				for k := range e.obsEntry {
					e.obsEntry[k] = -1
				}
			}
			for j := range e.model.Entries {
				if e.model.Entries[j].Node == a.Entry {
					e.obsEntry[i] = int32(j)
					break
				}
			}
			if e.obsEntry[i] < 0 {
				return fmt.Errorf("observed arrival %d: %q is not an entry", i, a.Entry)
			}
		}
	}
	return nil
}

// inOrder reports whether the arrivals' times never decrease (and none
// is NaN), so that a stable sort would leave them as they are.
func inOrder(a []Arrival) bool {
	for i := 1; i < len(a); i++ {
		if !(a[i-1].AtMS <= a[i].AtMS) {
			return false
		}
	}
	return len(a) == 0 || a[0].AtMS == a[0].AtMS
}

// startTraffic schedules the first arrivals of a run.
func (e *Engine) startTraffic() {
	t := &e.traffic
	switch {
	case e.closed:
		e.users = e.users[:0]
		for i := 0; i < t.Users; i++ {
			e.users = append(e.users, user{retireAt: -1, pauseAt: -1})
		}
		for _, s := range t.Surges {
			at, until := e.ticks(s.AtMS), e.ticks(s.AtMS+s.ForMS)
			if s.Factor >= 1 {
				extra := int(math.Round(float64(t.Users) * (s.Factor - 1)))
				for k := 0; k < extra; k++ {
					e.users = append(e.users, user{retireAt: until, pauseAt: -1})
					e.q.push(at+e.ticks(e.arrR.ExpFloat64()*t.ThinkMS), evUser, int32(len(e.users)-1), 0)
				}
				continue
			}
			idle := int(math.Round(float64(t.Users) * (1 - s.Factor)))
			for k := 0; k < idle && k < t.Users; k++ {
				e.users[k].pauseAt, e.users[k].resumeAt = at, until
			}
		}
		for i := 0; i < t.Users; i++ {
			e.q.push(e.ticks(e.arrR.ExpFloat64()*t.ThinkMS), evUser, int32(i), 0)
		}
	case t.Kind == cascade.TrafficObserved:
		if len(e.observed) > 0 && e.observed[0].AtMS < e.arrEnd {
			e.q.push(e.ticks(e.observed[0].AtMS), evArrival, 0, 0)
		}
	default:
		e.nextMS = 0
		if e.nextPoisson() {
			e.q.push(e.ticks(e.nextMS), evArrival, 0, 0)
		}
	}
}

// rateAt returns the open-loop rate (per ms) at time t and the next time
// the rate changes (+Inf when it does not).
func (e *Engine) rateAt(t float64) (rate, change float64) {
	rate = e.traffic.RatePerSec / 1000
	change = math.Inf(1)
	for _, s := range e.traffic.Surges {
		switch {
		case t < s.AtMS:
			change = math.Min(change, s.AtMS)
		case t < s.AtMS+s.ForMS:
			rate *= s.Factor
			change = math.Min(change, s.AtMS+s.ForMS)
		}
	}
	return rate, change
}

// nextPoisson advances e.nextMS to the next open-loop arrival; false when
// there is none before arrivals stop. Exponential gaps are memoryless, so
// a gap that crosses a rate change restarts at the change.
func (e *Engine) nextPoisson() bool {
	t := e.nextMS
	for t < e.arrEnd {
		rate, change := e.rateAt(t)
		if rate <= 0 {
			t = change
			continue
		}
		gap := e.arrR.ExpFloat64() / rate
		if t+gap < change {
			t += gap
			e.nextMS = t
			return t < e.arrEnd
		}
		t = change
	}
	return false
}

// onArrival handles an open-loop or observed arrival (id is the observed
// index).
func (e *Engine) onArrival(id int32) {
	if e.traffic.Kind == cascade.TrafficObserved {
		var en int32
		if e.obsEntry != nil {
			en = max(0, e.obsEntry[id])
		}
		e.newRoot(en, -1)
		if n := int(id) + 1; n < len(e.observed) && e.observed[n].AtMS < e.arrEnd {
			e.q.push(e.ticks(e.observed[n].AtMS), evArrival, int32(n), 0)
		}
		return
	}
	e.newRoot(e.pickEntry(), -1)
	if e.nextPoisson() {
		e.q.push(e.ticks(e.nextMS), evArrival, 0, 0)
	}
}

// pickEntry draws an entry by share.
func (e *Engine) pickEntry() int32 {
	if len(e.entries) == 1 {
		return 0
	}
	u := e.arrR.Float64()
	for i, c := range e.entryCum {
		if u < c {
			return int32(i)
		}
	}
	return int32(len(e.entryCum) - 1)
}

// onUser lets closed-loop user id send its next request.
func (e *Engine) onUser(id int32) {
	u := &e.users[id]
	if u.retireAt >= 0 && e.now >= u.retireAt {
		return
	}
	if u.pauseAt >= 0 && e.now >= u.pauseAt && e.now < u.resumeAt {
		e.q.push(u.resumeAt, evUser, id, 0)
		return
	}
	if e.ms(e.now) >= e.arrEnd {
		return
	}
	u.sentAt = e.now
	e.newRoot(e.pickEntry(), id)
}

// userDone schedules a closed-loop user's next request after its think
// time (exponential, mean ThinkMS). A user sends at most one request a
// tick: one turned away at once (a rate limit, an open breaker, a full
// queue) who thinks for no time would otherwise send again in the same
// tick forever, and the clock would never advance.
func (e *Engine) userDone(id int32) {
	at := e.now + e.ticks(e.arrR.ExpFloat64()*e.traffic.ThinkMS)
	if at <= e.users[id].sentAt {
		at = e.users[id].sentAt + 1
	}
	e.q.push(at, evUser, id, 0)
}
