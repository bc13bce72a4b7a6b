package rank

import (
	"encoding/json"
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

func TestDeriveQueueModel(t *testing.T) {
	m := notifyModel()
	require.NoError(t, m.Validate())
	ev := &Evidence{
		Queued:   map[string]bool{"q-rights": true, "q-points": true},
		Failing:  map[string]bool{"rights": true, "points": true},
		QueueMax: map[string]int{"q-rights": 12000, "q-points": 800},
	}
	cands := Derive(m, ev, 0)
	for _, c := range cands {
		p, _ := json.Marshal(c.Scenario)
		t.Logf("%q, %q, %s, %v, %s", c.Name, c.Description, c.Kind, c.Fields, p)
	}
	for _, c := range cands {
		cm, _, err := replay.Apply(m, c.Scenario)
		require.NoError(t, err, c.Name)
		require.NotEqual(t, m, cm, c.Name)
	}
}
