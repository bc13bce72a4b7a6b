package shapes

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// nezhaPods are the services' pods as TrainTicket's deployments name
// them: "-<pod-template-hash>-<5>" in Kubernetes' suffix alphabet.
var nezhaPods = map[string]string{
	"gateway": "gateway-6f6cfc45b-h5m2n", "orders": "orders-5b67c48447-mv2x9",
	"stock": "stock-866bd68c97-xcqfx", "ledger": "ledger-5dc8d4f9fd-46997",
}

// nezhaNodes are the pods' nodes.
var nezhaNodes = map[string]string{
	"gateway": "33.33.33.80", "orders": "33.33.33.115", "stock": "33.33.33.76", "ledger": "33.33.33.82",
}

// logRow is one line of the log CSV.
type logRow struct {
	at       int64
	svc      string
	trace    string
	span     string
	level    string // "" for a stack line
	class    string
	msg      string
	sequence int // the order within one request, for equal times
}

// marshalNezhaLogs writes the services' logs as Nezha's log CSV
// (Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log,
// each Log a line of Docker's json-file driver holding a logback line:
// "HH:MM:SS.mmm LEVEL class#line TraceID: … SpanID: … message", the
// time in the cluster's zone, UTC+8). Each request leaves an INFO line
// when it starts, one before its call to the next service, and a
// closing INFO line with its time; a request that fails by itself an
// ERROR line, one whose call failed an ERROR line naming the callee. A
// request of Config.Throw from onset on (a ThrowShare of them, drawn
// apart from the spans so that they stay as they were) logs the
// dispatcher's ERROR with the exception, then the exception's stack
// line, and no closing line; its caller logs an ERROR for the error it
// got back. Lines carry the trace id and the controller span's id, as
// the spans' CSV spells them.
func (g *gen) marshalNezhaLogs(onset int64) ([]byte, error) {
	if g.cfg.Format != NezhaCSV {
		return nil, fmt.Errorf("shapes: logs are written beside the %s format only, not %q", NezhaCSV, g.cfg.Format)
	}
	share := g.cfg.ThrowShare
	if share == 0 {
		share = 1
	}
	rng := rand.New(rand.NewPCG(g.cfg.Seed, 0x10c5))
	byID := map[[8]byte]*span{}
	for i := range g.spans {
		byID[g.spans[i].id] = &g.spans[i]
	}
	// Which requests throw, and whose call got the error back.
	threw := map[[8]byte]bool{}
	calleeThrew := map[[8]byte]string{}
	for i := range g.spans {
		s := &g.spans[i]
		if s.kind != ptrace.SpanKindServer || s.svc != g.cfg.Throw || onset == 0 || s.start < onset || s.status == "error" {
			continue
		}
		if rng.Float64() >= share {
			continue
		}
		threw[s.id] = true
		if cl := byID[s.parent]; cl != nil {
			if caller := byID[cl.parent]; caller != nil && caller.kind == ptrace.SpanKindServer {
				calleeThrew[caller.id] = s.svc
			}
		}
	}
	var rows []logRow
	for i := range g.spans {
		s := &g.spans[i]
		if s.kind != ptrace.SpanKindServer {
			continue
		}
		ctl := s.id
		ctl[0] ^= 0xff
		th, sp := fmt.Sprintf("%x", s.trace), fmt.Sprintf("%x", ctl)
		class := fmt.Sprintf("%c.s.%sServiceImpl", s.svc[0], strings.ToUpper(s.svc[:1])+s.svc[1:])
		row := func(at int64, seq int, level, cls, msg string) {
			rows = append(rows, logRow{at: at, svc: s.svc, trace: th, span: sp, level: level, class: cls, msg: msg, sequence: seq})
		}
		id := fmt.Sprintf("%x", s.trace[8:])
		row(s.start+30_000, 0, "INFO", class+"#41", fmt.Sprintf("[handle][Receive request][order: %s]", id))
		callee := g.next(s.svc)
		own := s.status == "error" && s.code == 503
		if callee != "" && !own {
			row(s.start+40_000, 1, "INFO", class+"#57", fmt.Sprintf("[handle][Call %s][order: %s]", callee, id))
		}
		if threw[s.id] {
			exc := fmt.Sprintf("java.lang.IllegalStateException: no %s record for order %s", s.svc, id)
			row(s.end-40_000, 1, "ERROR", "o.a.c.c.C.[.[.[.[dispatcherServlet]#175",
				"Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception "+
					"[Request processing failed; nested exception is "+exc+"] with root cause")
			row(s.end-40_000, 2, "", "", exc)
			continue
		}
		switch {
		case own:
			row(s.end-30_000, 2, "ERROR", class+"#63", fmt.Sprintf("[handle][Request failed][status: 503, order: %s]", id))
		case s.status == "error":
			row(s.end-30_000, 2, "ERROR", class+"#66", fmt.Sprintf("[handle][Call %s failed][status: 500, order: %s]", callee, id))
		}
		if c := calleeThrew[s.id]; c != "" {
			row(s.end-35_000, 3, "ERROR", class+"#70", fmt.Sprintf("[handle][Call %s returned an error][status: 0, order: %s]", c, id))
		}
		row(s.end-20_000, 4, "INFO", class+"#88", fmt.Sprintf("[handle][Request complete][elapsed: %d ms]", (s.end-s.start)/ms))
	}
	slices.SortStableFunc(rows, func(a, b logRow) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.sequence, b.sequence)
	})
	zone := time.FixedZone("CST", 8*3600)
	// About 400 bytes a row: sized once, the buffer is not copied as it
	// grows (tens of MB for a two-minute capture).
	var b bytes.Buffer
	b.Grow(400 * (len(rows) + 1))
	b.WriteString("Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n")
	for _, r := range rows {
		t := time.Unix(0, r.at)
		line := r.msg + "\n"
		if r.level != "" {
			line = fmt.Sprintf("%s %-5s %s TraceID: %s SpanID: %s %s\n", t.In(zone).Format("15:04:05.000"), r.level, r.class, r.trace, r.span, r.msg)
		}
		js, err := json.Marshal(struct {
			Log    string `json:"log"`
			Stream string `json:"stream"`
			Time   string `json:"time"`
		}{line, "stdout", t.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s,%d,%s,%s,server,%s,%s,\"%s\"\n", t.UTC().Format(time.RFC3339Nano), r.at, nezhaNodes[r.svc],
			nezhaPods[r.svc], r.trace, r.span, strings.ReplaceAll(string(js), `"`, `""`))
	}
	return b.Bytes(), nil
}
