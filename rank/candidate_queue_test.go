package rank

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// notifyModel is seed 002 §5.3's chain by hand: a gateway publishes an
// event to five queues (rights and points with publisher confirms, the
// others fire and forget) and calls log in line; points calls rights
// (it needs rights' data); every queue requeues a failed message, at
// most 4 deliveries, on one broker whose watermark leaves 48 MiB.
func notifyModel() *cascade.Model {
	queue := func(name string) cascade.Node {
		return cascade.Node{Name: "q-" + name, Replicas: 1, Service: cascade.Const(0), Queue: &cascade.Queue{
			System: "rabbitmq", Broker: "mq", Consumers: 2, Prefetch: 10,
			Redelivery: cascade.RedeliverRequeue, MaxDeliveries: 4, DeadLetter: "dlq", MessageBytes: 2048,
		}}
	}
	worker := func(name string, p99 float64) cascade.Node {
		n := cascade.Node{Name: name, Replicas: 1, Concurrency: 2, Service: cascade.Const(20),
			Overload: cascade.Overload{Slope: 0.5, Threshold: 0.8}}
		if p99 > 0 {
			n.Observed = &cascade.NodeObserved{LatencyP99MS: p99}
		}
		return n
	}
	dlq := cascade.Node{Name: "dlq", Replicas: 1, Service: cascade.Const(0), Queue: &cascade.Queue{System: "rabbitmq", Broker: "mq", Consumers: 1}}
	publish := func(to string, async bool) cascade.Edge {
		return cascade.Edge{From: "gateway", To: "q-" + to, Async: async, FanOut: cascade.Const(1), Propagation: 1}
	}
	deliver := func(name string) cascade.Edge {
		return cascade.Edge{From: "q-" + name, To: name, FanOut: cascade.Const(1), Propagation: 1}
	}
	confirmed := publish("points", false)
	confirmed.Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 2}
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "notify",
		Entries: []cascade.Entry{{Node: "gateway", RatePerSec: 100, Share: 1}},
		Nodes: []cascade.Node{
			dlq,
			{Name: "gateway", Replicas: 1, Concurrency: 50, Service: cascade.Const(2)},
			worker("log", 0), worker("points", 0), worker("push", 0), worker("rights", 180), worker("sms", 0),
			queue("log"), queue("points"), queue("push"), queue("rights"), queue("sms"),
		},
		Edges: []cascade.Edge{
			{From: "gateway", To: "log", FanOut: cascade.Const(1), Propagation: 1,
				Provenance: map[string]cascade.Provenance{"propagation": cascade.Default}},
			publish("log", true), confirmed, publish("push", true), publish("rights", false), publish("sms", true),
			{From: "points", To: "rights", FanOut: cascade.Const(1), Propagation: 1},
			deliver("log"), deliver("points"), deliver("push"), deliver("rights"), deliver("sms"),
		},
		Brokers: []cascade.Broker{{Name: "mq", System: "rabbitmq", BaseBytes: 16 << 20,
			MemoryWatermarkBytes: 64 << 20, Alarm: cascade.AlarmBlock}},
	}
}

// derived is one derived candidate as the tests compare it: its name,
// description, kind and patches (the scenario's nodes and edges, as
// JSON).
type derived struct{ name, desc, kind, patch string }

func derivedOf(t *testing.T, cands []Candidate) []derived {
	out := make([]derived, len(cands))
	for i, c := range cands {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(struct {
			Nodes map[string]json.RawMessage `json:"nodes,omitempty"`
			Edges map[string]json.RawMessage `json:"edges,omitempty"`
		}{c.Scenario.Nodes, c.Scenario.Edges}))
		out[i] = derived{c.Name, c.Description, c.Kind, strings.TrimSuffix(b.String(), "\n")}
	}
	return out
}

// queueKinds are the kinds only a model with queues gets.
var queueKinds = map[string]bool{KindDelayQueue: true, KindDeliveries: true, KindQueueCap: true, KindOverflow: true,
	KindConsumers: true, KindPrefetch: true, KindPublish: true, KindFanOutCut: true}

func TestDeriveQueueModel(t *testing.T) {
	const drop = `{"edges":{"gateway->%s":{"fan_out":{"cap":null,"floor":null,"kind":"const","max":null,"mean":null,"min":null,"mu":null,"p50":null,"p95":null,"p99":null,"points":null,"sigma":null,"spike":null,"spike_prob":null,"value":null}}}}`
	// The chain as seed 002 found it: rights fails and its queue grew
	// past the cap the broker's memory allows; points fails with it.
	seed002 := []derived{
		{"off-path gateway->log", "gateway→log: move log off the request path (async: gateway no longer waits for it)", KindAsync,
			`{"edges":{"gateway->log":{"async":true}}}`},
		{"attempts=1 gateway->q-points", "gateway→q-points: max attempts 2→1 (no retries)", KindAttempts,
			`{"edges":{"gateway->q-points":{"retry":{"max_attempts":1}}}}`},
		{"backoff gateway->q-points", "gateway→q-points: exponential backoff 100 ms + full jitter, capped at 1 s (was none)", KindBackoff,
			`{"edges":{"gateway->q-points":{"retry":{"backoff":{"base_ms":100,"kind":"full-jitter","max_ms":1000}}}}}`},
		{"budget gateway->q-points", "gateway→q-points: retry budget of 10% of calls (was unlimited)", KindBudget,
			`{"edges":{"gateway->q-points":{"retry":{"budget":{"ratio":0.1}}}}}`},
		{"no-confirm gateway->q-points", "gateway→q-points: publish without waiting for the confirm (gateway no longer waits for the broker; a refused publish is lost, not retried)", KindPublish,
			`{"edges":{"gateway->q-points":{"async":true}}}`},
		{"drop gateway->q-points", "gateway: publish to 4 of 5 queues (drop q-points): a product change, points no longer runs; flow success then counts only the remaining tasks", KindFanOutCut,
			fmt.Sprintf(drop, "q-points")},
		{"drop gateway->q-push", "gateway: publish to 4 of 5 queues (drop q-push): a product change, push no longer runs; flow success then counts only the remaining tasks", KindFanOutCut,
			fmt.Sprintf(drop, "q-push")},
		{"no-confirm gateway->q-rights", "gateway→q-rights: publish without waiting for the confirm (gateway no longer waits for the broker; a refused publish is lost, not retried)", KindPublish,
			`{"edges":{"gateway->q-rights":{"async":true}}}`},
		{"drop gateway->q-sms", "gateway: publish to 4 of 5 queues (drop q-sms): a product change, sms no longer runs; flow success then counts only the remaining tasks", KindFanOutCut,
			fmt.Sprintf(drop, "q-sms")},
		{"fallback points->rights", "points→rights: a fallback, points answers degraded (a default or cached answer) for 90% of the failed calls instead of failing (degraded answers count as successes)", KindFallback,
			`{"edges":{"points->rights":{"fallback":{"probability":0.9}}}}`},
		{"delay-queue q-points", "q-points: nack → delay queue (TTL 1000 ms, dead-letter back to q-points) instead of requeue at once (TTL 1 s: the consumers' p99 is unknown)", KindDelayQueue,
			`{"nodes":{"q-points":{"queue":{"delay_ms":1000,"redelivery":"delay"}}}}`},
		{"deliveries=2 q-points", "q-points: x-delivery-limit 3→1 (at most 1 redelivery, then dead-lettered to dlq)", KindDeliveries,
			`{"nodes":{"q-points":{"queue":{"max_deliveries":2}}}}`},
		{"deliveries=1 q-points", "q-points: x-delivery-limit 3→0 (no redelivery: a failed message is dead-lettered to dlq)", KindDeliveries,
			`{"nodes":{"q-points":{"queue":{"max_deliveries":1}}}}`},
		{"immediate=1 q-points", "q-points: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-points), instead of requeue at once (a failure that passes is retried without waiting; one that lasts waits out the TTL; TTL 1 s: the consumers' p99 is unknown)", KindRedelivery,
			`{"nodes":{"q-points":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`},
		{"consumers×2 q-points", "q-points: consumers 2 → 4 (messages waited ready), and points's slots 2 → 4 per replica, which would hold them back", KindConsumers,
			`{"nodes":{"points":{"concurrency":4},"q-points":{"queue":{"consumers":4}}}}`},
		{"consumers÷2 q-points", "q-points: consumers 2 → 1 (points fails under load: fewer messages worked at once)", KindConsumers,
			`{"nodes":{"q-points":{"queue":{"consumers":1}}}}`},
		{"prefetch×2 q-points", "q-points: prefetch (basic.qos) 10 → 20 (messages waited ready)", KindPrefetch,
			`{"nodes":{"q-points":{"queue":{"prefetch":20}}}}`},
		{"prefetch=1 q-points", "q-points: prefetch (basic.qos) 10 → 1 (a consumer holds one message at a time: none waits behind a slow one)", KindPrefetch,
			`{"nodes":{"q-points":{"queue":{"prefetch":1}}}}`},
		{"delay-queue q-rights", "q-rights: nack → delay queue (TTL 1000 ms, dead-letter back to q-rights) instead of requeue at once (TTL 1 s, the least, above 4× rights's p99 of 180 ms)", KindDelayQueue,
			`{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"redelivery":"delay"}}}}`},
		{"deliveries=2 q-rights", "q-rights: x-delivery-limit 3→1 (at most 1 redelivery, then dead-lettered to dlq)", KindDeliveries,
			`{"nodes":{"q-rights":{"queue":{"max_deliveries":2}}}}`},
		{"deliveries=1 q-rights", "q-rights: x-delivery-limit 3→0 (no redelivery: a failed message is dead-lettered to dlq)", KindDeliveries,
			`{"nodes":{"q-rights":{"queue":{"max_deliveries":1}}}}`},
		{"immediate=1 q-rights", "q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-rights), instead of requeue at once (a failure that passes is retried without waiting; one that lasts waits out the TTL; TTL 1 s, the least, above 4× rights's p99 of 180 ms)", KindRedelivery,
			`{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`},
		// 48 MiB over 6 queues of 2 KiB messages: 4096 each, down to 2000.
		{"cap=2000 drop-head q-rights", "q-rights: x-max-length 2000, overflow drop-head (the full queue dead-letters its oldest message to dlq; mq's watermark of 48 MiB holds 4096 messages of 2 KiB in each of its 6 queues, rounded down)", KindQueueCap,
			`{"nodes":{"q-rights":{"queue":{"max_length":2000,"overflow":"drop-head"}}}}`},
		{"cap=2000 reject-publish q-rights", "q-rights: x-max-length 2000, overflow reject-publish (a publish into the full queue is refused: a confirming publisher sees a nack; mq's watermark of 48 MiB holds 4096 messages of 2 KiB in each of its 6 queues, rounded down)", KindQueueCap,
			`{"nodes":{"q-rights":{"queue":{"max_length":2000,"overflow":"reject-publish"}}}}`},
		{"consumers×2 q-rights", "q-rights: consumers 2 → 4 (messages waited ready), and rights's slots 2 → 4 per replica, which would hold them back", KindConsumers,
			`{"nodes":{"q-rights":{"queue":{"consumers":4}},"rights":{"concurrency":4}}}`},
		{"consumers÷2 q-rights", "q-rights: consumers 2 → 1 (rights fails under load: fewer messages worked at once)", KindConsumers,
			`{"nodes":{"q-rights":{"queue":{"consumers":1}}}}`},
		{"prefetch×2 q-rights", "q-rights: prefetch (basic.qos) 10 → 20 (messages waited ready)", KindPrefetch,
			`{"nodes":{"q-rights":{"queue":{"prefetch":20}}}}`},
		{"prefetch=1 q-rights", "q-rights: prefetch (basic.qos) 10 → 1 (a consumer holds one message at a time: none waits behind a slow one)", KindPrefetch,
			`{"nodes":{"q-rights":{"queue":{"prefetch":1}}}}`},
		{"breaker rights", "rights: circuit breaker (opens at 50% errors over 20 calls, open 5 s, 3 probes)", KindBreaker,
			`{"nodes":{"rights":{"breaker":{"error_rate":0.5,"window":20,"open_ms":5000,"half_open_probes":3}}}}`},
	}
	// Both queues requeue for failing consumers on one broker: the delay
	// queue as the broker's policy over both, and with one retry.
	policy := []derived{
		{"delay-queue policy mq", "mq: policy on q-points, q-rights: nack → delay queue (TTL 1000 ms, dead-letter back to each queue), instead of requeue at once (TTL 1 s: the consumers' p99 is unknown)", KindDelayQueue,
			`{"nodes":{"q-points":{"queue":{"delay_ms":1000,"redelivery":"delay"}},"q-rights":{"queue":{"delay_ms":1000,"redelivery":"delay"}}}}`},
		{"delay-queue retry-once policy mq", "mq: policy on q-points, q-rights: nack → delay queue (TTL 1000 ms, dead-letter back to each queue), x-delivery-limit 1, instead of requeue at once (TTL 1 s: the consumers' p99 is unknown)", KindDelayQueue,
			`{"nodes":{"q-points":{"queue":{"delay_ms":1000,"max_deliveries":2,"redelivery":"delay"}},"q-rights":{"queue":{"delay_ms":1000,"max_deliveries":2,"redelivery":"delay"}}}}`},
	}
	tests := []struct {
		name  string
		model func() *cascade.Model
		ev    *Evidence
		want  []derived
	}{
		{"seed 002's chain", notifyModel, &Evidence{
			Queued:   map[string]bool{"q-rights": true, "q-points": true},
			Failing:  map[string]bool{"rights": true, "points": true},
			QueueMax: map[string]int{"q-rights": 12000, "q-points": 800},
		}, append(slices.Clone(seed002), policy...)},
		{"a healthy chain: only the structural changes", notifyModel, &Evidence{}, seed002[:9]},
		{"a capped queue that filled, a slow consumer, no broker", func() *cascade.Model {
			m := notifyModel()
			m.Brokers = nil
			for i := range m.Nodes {
				if q := m.Nodes[i].Queue; q != nil {
					q.Broker = ""
				}
			}
			q := m.Node("q-rights").Queue
			q.MaxLength, q.Overflow, q.Redelivery, q.MaxDeliveries, q.Prefetch = 100, cascade.OverflowRejectPublish, "", 0, 0
			m.Node("rights").Observed.LatencyP99MS = 420
			return m
		}, &Evidence{
			Failing:  map[string]bool{"rights": true},
			QueueMax: map[string]int{"q-rights": 100},
		}, append(slices.Clone(seed002[:10]), []derived{
			{"delay-queue q-rights", "q-rights: nack → delay queue (TTL 1700 ms, dead-letter back to q-rights) instead of requeue at once (TTL 4× rights's p99 of 420 ms)", KindDelayQueue,
				`{"nodes":{"q-rights":{"queue":{"delay_ms":1700,"redelivery":"delay"}}}}`},
			{"deliveries=2 q-rights", "q-rights: x-delivery-limit unlimited→1 (at most 1 redelivery, then dead-lettered to dlq)", KindDeliveries,
				`{"nodes":{"q-rights":{"queue":{"max_deliveries":2}}}}`},
			{"deliveries=1 q-rights", "q-rights: x-delivery-limit unlimited→0 (no redelivery: a failed message is dead-lettered to dlq)", KindDeliveries,
				`{"nodes":{"q-rights":{"queue":{"max_deliveries":1}}}}`},
			{"immediate=1 q-rights", "q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1700 ms, dead-letter back to q-rights), instead of requeue at once (a failure that passes is retried without waiting; one that lasts waits out the TTL; TTL 4× rights's p99 of 420 ms)", KindRedelivery,
				`{"nodes":{"q-rights":{"queue":{"delay_ms":1700,"immediate_redeliveries":1,"redelivery":"delay"}}}}`},
			{"cap×2 q-rights", "q-rights: x-max-length 100→200 (a publish into the full queue is refused: a confirming publisher sees a nack; the queue filled)", KindQueueCap,
				`{"nodes":{"q-rights":{"queue":{"max_length":200}}}}`},
			{"cap÷2 q-rights", "q-rights: x-max-length 100→50 (a publish into the full queue is refused: a confirming publisher sees a nack; the queue filled)", KindQueueCap,
				`{"nodes":{"q-rights":{"queue":{"max_length":50}}}}`},
			{"overflow=drop-head q-rights", "q-rights: overflow reject-publish→drop-head (the full queue dead-letters its oldest message to dlq; the queue filled)", KindOverflow,
				`{"nodes":{"q-rights":{"queue":{"overflow":"drop-head"}}}}`},
			{"overflow=block q-rights", "q-rights: overflow reject-publish→block (a publisher into the full queue waits for room; the queue filled)", KindOverflow,
				`{"nodes":{"q-rights":{"queue":{"overflow":"block"}}}}`},
			{"consumers÷2 q-rights", "q-rights: consumers 2 → 1 (rights fails under load: fewer messages worked at once)", KindConsumers,
				`{"nodes":{"q-rights":{"queue":{"consumers":1}}}}`},
			seed002[len(seed002)-1],
		}...)},
		{"a Kafka topic in its own words", func() *cascade.Model {
			m := notifyModel()
			m.Edges = slices.DeleteFunc(m.Edges, func(e cascade.Edge) bool {
				return e.From == "gateway" && e.To != "q-rights" || e.From == "points" || e.From != "gateway" && e.From != "q-rights"
			})
			m.Nodes = slices.DeleteFunc(m.Nodes, func(n cascade.Node) bool {
				return n.Name != "gateway" && n.Name != "q-rights" && n.Name != "rights" && n.Name != "dlq"
			})
			m.Brokers = nil
			q := m.Node("q-rights").Queue
			q.System, q.Broker, q.Prefetch, q.DeadLetter = "kafka", "", 0, ""
			m.Node("dlq").Queue.Broker = ""
			m.Node("rights").Overload = cascade.Overload{}
			return m
		}, &Evidence{
			Queued:   map[string]bool{"q-rights": true},
			Failing:  map[string]bool{"rights": true},
			QueueMax: map[string]int{"q-rights": 20000},
		}, []derived{
			seed002[7],
			{"delay-queue q-rights", "q-rights: failed messages wait 1000 ms in a delay queue, then back to q-rights instead of requeue at once (TTL 1 s, the least, above 4× rights's p99 of 180 ms)", KindDelayQueue,
				`{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"redelivery":"delay"}}}}`},
			{"deliveries=2 q-rights", "q-rights: redeliveries 3→1 (at most 1 redelivery, then dropped)", KindDeliveries,
				`{"nodes":{"q-rights":{"queue":{"max_deliveries":2}}}}`},
			{"deliveries=1 q-rights", "q-rights: redeliveries 3→0 (no redelivery: a failed message is dropped)", KindDeliveries,
				`{"nodes":{"q-rights":{"queue":{"max_deliveries":1}}}}`},
			{"immediate=1 q-rights", "q-rights: a failed message is redelivered at once the first time, then waits 1000 ms in a delay queue, instead of requeue at once (a failure that passes is retried without waiting; one that lasts waits out the TTL; TTL 1 s, the least, above 4× rights's p99 of 180 ms)", KindRedelivery,
				`{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`},
			{"cap=10000 drop-head q-rights", "q-rights: at most 10000 ready messages, overflow drop-head (the full queue drops its oldest message; seed 002's 10000 per queue)", KindQueueCap,
				`{"nodes":{"q-rights":{"queue":{"max_length":10000,"overflow":"drop-head"}}}}`},
			{"cap=10000 reject-publish q-rights", "q-rights: at most 10000 ready messages, overflow reject-publish (a publish into the full queue is refused: a confirming publisher sees a nack; seed 002's 10000 per queue)", KindQueueCap,
				`{"nodes":{"q-rights":{"queue":{"max_length":10000,"overflow":"reject-publish"}}}}`},
			{"consumers×2 q-rights", "q-rights: consumers 2 → 4 (messages waited ready), and rights's slots 2 → 4 per replica, which would hold them back", KindConsumers,
				`{"nodes":{"q-rights":{"queue":{"consumers":4}},"rights":{"concurrency":4}}}`},
			{"prefetch=1 q-rights", "q-rights: prefetch unlimited → 1 (a consumer holds one message at a time: none waits behind a slow one)", KindPrefetch,
				`{"nodes":{"q-rights":{"queue":{"prefetch":1}}}}`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model()
			require.NoError(t, m.Validate())
			cands := Derive(m, tc.ev, 0)
			require.Equal(t, tc.want, derivedOf(t, cands))
			for _, c := range cands {
				cm, _, err := replay.Apply(m, c.Scenario)
				require.NoError(t, err, c.Name)
				require.NotEqual(t, m, cm, c.Name)
			}
		})
	}
}

// TestDeriveWithoutQueues checks that a model without queues, async
// edges or not, gets no queue candidate, and the same candidates as its
// copy with the queue fields stripped from the evidence.
func TestDeriveWithoutQueues(t *testing.T) {
	async := handModel()
	async.Nodes = append(async.Nodes, cascade.Node{Name: "audit", Replicas: 1, Concurrency: 1, Service: cascade.Const(5)})
	async.Edges = append(async.Edges, cascade.Edge{From: "api", To: "audit", Async: true, FanOut: cascade.Const(1), Propagation: 1})
	for _, m := range []*cascade.Model{handModel(), async} {
		ev := &Evidence{Queued: map[string]bool{"db": true, "audit": true}, Failing: map[string]bool{"db": true}}
		with := *ev
		with.QueueMax = map[string]int{"db": 1000, "audit": 1000}
		a, b := Derive(m, ev, 0), Derive(m, &with, 0)
		require.Equal(t, derivedOf(t, a), derivedOf(t, b))
		for _, c := range a {
			require.False(t, queueKinds[c.Kind], c.Name)
		}
	}
}

// TestQueueFieldsCompatible checks that changes to different fields of
// one queue combine in a set and two changes to one field do not.
func TestQueueFieldsCompatible(t *testing.T) {
	cands := Derive(notifyModel(), nil, 0)
	byName := map[string]*Candidate{}
	for i := range cands {
		byName[cands[i].Name] = &cands[i]
	}
	tests := []struct {
		a, b string
		want bool
	}{
		{"delay-queue q-rights", "deliveries=2 q-rights", true},
		{"delay-queue q-rights", "cap=2000 drop-head q-rights", true},
		{"cap=2000 drop-head q-rights", "cap=2000 reject-publish q-rights", false},
		{"deliveries=2 q-rights", "deliveries=1 q-rights", false},
		{"consumers×2 q-rights", "prefetch=1 q-rights", true},
		{"drop gateway->q-push", "drop gateway->q-sms", true},
		{"no-confirm gateway->q-rights", "delay-queue q-rights", true},
	}
	for _, tc := range tests {
		t.Run(tc.a+" + "+tc.b, func(t *testing.T) {
			a, b := byName[tc.a], byName[tc.b]
			require.NotNil(t, a, tc.a)
			require.NotNil(t, b, tc.b)
			require.Equal(t, tc.want, compatible(a, b))
		})
	}
}

// TestDelayOutlastsBurst holds the delay queue's TTL to the consumers'
// longest failure burst where it is longer than their p99 gives: up to
// a whole second, named in the words.
func TestDelayOutlastsBurst(t *testing.T) {
	tests := []struct {
		name  string
		burst float64
		ttl   float64
		why   string
	}{
		{"no burst: 4× p99, at least 1 s", 0, 1000, "TTL 1 s, the least, above 4× rights's p99 of 180 ms"},
		{"a burst shorter than that", 600, 1000, "TTL 1 s, the least, above 4× rights's p99 of 180 ms"},
		{"a 2.6 s burst", 2600, 3000, "TTL 3 s: outlasts rights's longest failure burst, 2.6 s in which most of its calls failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := notifyModel()
			m.Node("rights").Observed.FailureBurstMS = tt.burst
			ev := &Evidence{Failing: map[string]bool{"rights": true}}
			var got []Candidate
			for _, c := range Derive(m, ev, 0) {
				if c.Name == "delay-queue q-rights" {
					got = append(got, c)
				}
			}
			require.Len(t, got, 1)
			var p struct {
				Nodes map[string]struct {
					Queue struct {
						DelayMS float64 `json:"delay_ms"`
					} `json:"queue"`
				} `json:"nodes"`
			}
			b, err := json.Marshal(got[0].Scenario)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &p))
			require.Equal(t, tt.ttl, p.Nodes["q-rights"].Queue.DelayMS)
			require.Contains(t, got[0].Description, "("+tt.why+")")
		})
	}
}
