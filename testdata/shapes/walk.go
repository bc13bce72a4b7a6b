package shapes

// This file walks one request through the chain: each service's span,
// its calls to the next service with their attempts, retries, deadline
// and fan-out, as the Config's shape records them.

import (
	"cmp"
	"encoding/binary"
	"slices"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func (g *gen) id() [8]byte {
	g.ids++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], g.ids*0x9e3779b97f4a7c15)
	return b
}

// draw returns a time around mean (±30%, uniform).
func (g *gen) draw(mean float64) int64 {
	return int64(mean * (0.7 + 0.6*g.rng.Float64()) * float64(ms))
}

func (g *gen) next(svc string) string {
	i := slices.Index(Services, svc)
	if i+1 < len(Services) {
		return Services[i+1]
	}
	return ""
}

// request records svc's work on one request that starts at start, as a
// span of the given kind under parent, and returns when it ends and
// whether it failed. It records the span only after its children, so the
// end is known; the order of spans in the file does not matter.
func (g *gen) request(svc string, parent [8]byte, kind ptrace.SpanKind, name string, start int64) (end int64, failed bool) {
	ns := g.sh.nodes[svc]
	self := g.draw(ns.selfMS)
	if ns.tailP > 0 && g.rng.Float64() < ns.tailP {
		self += g.draw(ns.tailMS)
	}
	if g.slow && svc == g.cfg.Slow {
		self = int64(float64(self) * g.cfg.SlowFactor)
	}
	if svc == g.cfg.Mix {
		share := 0.1
		if g.shifted {
			share = g.cfg.MixShare
		}
		if g.rng.Float64() < share {
			self *= 5
			name += " bulk"
		}
	}
	own := g.rng.Float64() < ns.failP
	injected := false
	if g.faulty && svc == g.cfg.Fail && !own {
		own = g.rng.Float64() < g.cfg.FailShare
		injected = own
	}
	saturated := g.faulty && svc == g.cfg.Saturate
	if saturated {
		self = g.draw(g.cfg.SaturateLoad / g.sh.rate * 1000)
	}
	if own && (ns.fastFail || injected) {
		self /= 5
	} else if own && g.cfg.ErrorMessage != "" {
		self *= 3
	}
	sp := span{trace: g.trace, id: g.id(), parent: parent, svc: svc, name: name, kind: kind, start: start}
	t := start
	slot := -1
	if ns.lock && len(g.slotFree) > 0 {
		// Wait for the slot free first, then hold it to the end.
		slot = 0
		for k, f := range g.slotFree {
			if f < g.slotFree[slot] {
				slot = k
			}
		}
		t = max(t, g.slotFree[slot])
	}
	if saturated {
		t = max(t, g.satFree)
	}
	early := g.faulty && svc == g.cfg.EarlyReturn && g.rng.Float64() < g.cfg.EarlyShare
	if early && g.cfg.EarlyOwn > 0 {
		self = int64(float64(self) * g.cfg.EarlyOwn)
	}
	pre := self / 2
	t += pre
	failed = own
	if callee := g.next(svc); callee != "" && !own && !early {
		var cf bool
		t, cf = g.calls(svc, callee, sp.id, t)
		failed = failed || cf
	}
	t += self - pre
	if slot >= 0 {
		g.slotFree[slot] = t
	}
	if saturated {
		g.satFree = t
	}
	sp.end = t
	if failed {
		sp.status = "error"
		sp.code = 500
		sp.errType = g.cfg.ErrorMessage
		if own {
			sp.code = 503
			sp.errType = cmp.Or(g.cfg.ErrorMessage, "503")
		}
	}
	g.spans = append(g.spans, sp)
	return t, failed
}

// calls makes the caller's logical calls to callee from t on and returns
// when the caller has its answers and whether its request fails.
func (g *gen) calls(caller, callee string, parent [8]byte, t int64) (int64, bool) {
	key := caller + ">" + callee
	es := g.sh.edges[key]
	et := g.et[key]
	n := es.fanout(g.rng)
	if n == 0 {
		return t, false
	}
	et.CallerRequests++
	et.Logical += int64(n)
	end, failed := t, false
	cur := t
	for range n {
		start := cur
		if es.parallel {
			start = t + int64(g.rng.IntN(20))*1000 // within 20 µs
		}
		e, f := g.logical(caller, callee, parent, start, es, et)
		if f {
			et.FailedLogical++
		}
		end = max(end, e)
		if f && es.failCaller && (es.fallbackP == 0 || g.rng.Float64() >= es.fallbackP) {
			failed = true
		}
		if !es.parallel {
			cur = e
		}
	}
	return end, failed
}

// logical makes one logical call (its attempts) and returns when the
// caller has its final answer and whether it failed.
func (g *gen) logical(caller, callee string, parent [8]byte, start int64, es edgeSpec, et *EdgeTruth) (int64, bool) {
	name := "GET /" + callee
	t := start
	for a := 1; ; a++ {
		et.Attempts++
		et.MaxAttempts = max(et.MaxAttempts, a)
		answered, failed, cut := g.attempt(caller, callee, parent, name, t, es)
		if cut {
			et.Cut++
		}
		if failed && a >= es.maxAttempts {
			et.Exhausted++
		}
		if !failed || a >= es.maxAttempts {
			return answered, failed
		}
		t = answered + int64(es.backoffMS*float64(ms)*(0.9+0.2*g.rng.Float64()))
	}
}

// attempt records one attempt as the style records it and returns when
// the caller has its answer, whether it failed in the caller's eyes, and
// whether the timeout cut it.
func (g *gen) attempt(caller, callee string, parent [8]byte, name string, t int64, es edgeSpec) (answered int64, failed, cut bool) {
	const net = 200_000 // 0.2 ms each way
	if g.faulty && callee == g.cfg.Silent {
		// Connection refused: the caller's record of the call, if it
		// keeps one, fails after 1 ms; the callee records nothing.
		answered = t + ms
		switch g.sh.style {
		case Pairs:
			g.spans = append(g.spans, span{trace: g.trace, id: g.id(), parent: parent, svc: caller, name: name,
				kind: ptrace.SpanKindClient, start: t, end: answered, status: "error"})
		case ClientOnly:
			g.spans = append(g.spans, span{trace: g.trace, id: g.id(), parent: parent, svc: callee, name: name,
				kind: ptrace.SpanKindClient, start: t, end: answered, status: "error"})
		}
		return answered, true, false
	}
	switch g.sh.style {
	case Pairs:
		cl := span{trace: g.trace, id: g.id(), parent: parent, svc: caller, name: name, kind: ptrace.SpanKindClient, start: t}
		end, f := g.request(callee, cl.id, ptrace.SpanKindServer, name, t+net)
		answered, failed = end+net, f
		if es.timeoutMS > 0 && answered-t > int64(es.timeoutMS*float64(ms)) {
			answered, failed, cut = t+int64(es.timeoutMS*float64(ms)), true, true
		}
		cl.end = answered
		if failed && (!cut || es.cutStatus == "error") {
			cl.status = "error"
			if !cut {
				cl.code = 503
				if !f {
					cl.code = 500
				}
				// The callee's message, passed up.
				cl.errType = g.cfg.ErrorMessage
			} else {
				cl.errType = g.cfg.DeadlineMessage
			}
		}
		g.spans = append(g.spans, cl)
	case ClientOnly:
		end, f := g.request(callee, parent, ptrace.SpanKindClient, name, t)
		answered, failed = end, f
	case ServerOnly:
		end, f := g.request(callee, parent, ptrace.SpanKindServer, name, t)
		answered, failed = end, f
		if es.timeoutMS > 0 && answered-t > int64(es.timeoutMS*float64(ms)) {
			answered, failed, cut = t+int64(es.timeoutMS*float64(ms)), true, true
		}
	}
	return answered, failed, cut
}
