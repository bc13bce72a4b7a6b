package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// TestMixedRedelivery checks when a queue gets the redelivery policy
// with an immediate part and a delayed part, or without its immediate
// part: read from its redelivery, delay, immediate part and delivery
// limit, and only where a consumer fails.
func TestMixedRedelivery(t *testing.T) {
	const (
		lasts  = "a failure that passes is retried without waiting; one that lasts waits out the TTL"
		comes  = "a retry at once comes back into the failure that failed it"
		ttlWhy = "TTL 1 s, the least, above 4× rights's p99 of 180 ms"
	)
	failing := &Evidence{Failing: map[string]bool{"rights": true}}
	tests := []struct {
		name string
		q    func(q *cascade.Queue)
		ev   *Evidence
		want []derived
	}{
		{"requeue at once, 3 redeliveries: one at once, then the delay", func(q *cascade.Queue) {}, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-rights), instead of requeue at once (" + lasts + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`,
		}}},
		{"requeue by default, unlimited deliveries", func(q *cascade.Queue) { q.Redelivery, q.MaxDeliveries = "", 0 }, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-rights), instead of requeue at once (" + lasts + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`,
		}}},
		{"exactly room for one delayed redelivery after the immediate one", func(q *cascade.Queue) { q.MaxDeliveries = 3 }, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-rights), instead of requeue at once (" + lasts + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`,
		}}},
		{"a delay read as ack + republish is a requeue at once", func(q *cascade.Queue) { q.Redelivery, q.DelayMS = cascade.RedeliverDelay, 0.001 }, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 1000 ms, dead-letter back to q-rights), instead of requeue at once (" + lasts + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`,
		}}},
		{"a delay queue without an immediate part keeps its TTL", func(q *cascade.Queue) { q.Redelivery, q.DelayMS = cascade.RedeliverDelay, 5000 }, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: the first redelivery at once (nack with requeue), the later ones nack → delay queue (TTL 5000 ms, dead-letter back to q-rights), instead of every redelivery through the delay queue (" + lasts + "; the TTL as it was)",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"immediate_redeliveries":1}}}}`,
		}}},
		{"an immediate part already: every redelivery through the delay", func(q *cascade.Queue) {
			q.Redelivery, q.DelayMS, q.ImmediateRedeliveries = cascade.RedeliverDelay, 5000, 1
		}, failing, []derived{{
			"immediate=0 q-rights",
			"q-rights: every redelivery through the delay queue (TTL 5000 ms, dead-letter back to q-rights), none at once (was 1 at once first: " + comes + "; the TTL as it was)",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"immediate_redeliveries":0}}}}`,
		}}},
		{"an immediate part before a delay too short for a TTL", func(q *cascade.Queue) {
			q.Redelivery, q.DelayMS, q.ImmediateRedeliveries, q.MaxDeliveries = cascade.RedeliverDelay, 0.001, 2, 0
		}, failing, []derived{{
			"immediate=0 q-rights",
			"q-rights: every redelivery through the delay queue (TTL 1000 ms, dead-letter back to q-rights), none at once (was 2 at once first: " + comes + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":0}}}}`,
		}}},
		{"in a Kafka topic's words", func(q *cascade.Queue) { q.System = "kafka" }, failing, []derived{{
			"immediate=1 q-rights",
			"q-rights: a failed message is redelivered at once the first time, then waits 1000 ms in a delay queue, instead of requeue at once (" + lasts + "; " + ttlWhy + ")",
			KindRedelivery, `{"nodes":{"q-rights":{"queue":{"delay_ms":1000,"immediate_redeliveries":1,"redelivery":"delay"}}}}`,
		}}},
		{"one redelivery only: at once is what it does now", func(q *cascade.Queue) { q.MaxDeliveries = 2 }, failing, nil},
		{"no redelivery", func(q *cascade.Queue) { q.MaxDeliveries = 1 }, failing, nil},
		{"nack without requeue", func(q *cascade.Queue) { q.Redelivery = cascade.RedeliverNone }, failing, nil},
		{"rights did not fail: nothing is redelivered", func(q *cascade.Queue) {}, &Evidence{Failing: map[string]bool{"points": true}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := notifyModel()
			tc.q(m.Node("q-rights").Queue)
			require.NoError(t, m.Validate())
			var got []Candidate
			for _, c := range Derive(m, tc.ev, 0) {
				if c.Kind == KindRedelivery && c.Scenario.Nodes["q-rights"] != nil {
					got = append(got, c)
				}
			}
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tc.want, derivedOf(t, got))
			for _, c := range got {
				cm, _, err := replay.Apply(m, c.Scenario)
				require.NoError(t, err, c.Name)
				q := cm.Node("q-rights").Queue
				require.Equal(t, cascade.RedeliverDelay, q.Redelivery, c.Name)
				require.GreaterOrEqual(t, q.DelayMS, float64(delayMinMS), c.Name)
				require.Equal(t, m.Node("q-rights").Queue.ImmediateRedeliveries == 0, q.ImmediateRedeliveries == immediateFirst, c.Name)
			}
		})
	}
}
