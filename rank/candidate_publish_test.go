package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// TestPublishBatch checks when a publish into a queue gets batching, and
// its size and linger: the publishes under way at once (the publisher's
// rate per replica times a publish's cost) above 1, the size what
// arrives in one publish's cost, the linger the time those take to
// arrive, within the latency budget the model states.
func TestPublishBatch(t *testing.T) {
	net := func(oneWay float64) *cascade.Dist { d := cascade.Const(oneWay); return &d }
	tests := []struct {
		name   string
		edge   string // the publish edge changed
		change func(m *cascade.Model, e *cascade.Edge)
		rate   float64 // gateway's calls per second
		target float64 // Config.LatencyTargetMS
		want   []derived
	}{
		{"a confirm's round trip of 20 ms at 100/s: 2 under way", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS = net(10)
		}, 100, 0, []derived{{
			"publish-batch=2 gateway->q-rights",
			"gateway→q-rights: batch publishes, 2 a batch or what is there after 20 ms (gateway publishes 100/s per replica against a confirm's round trip of 20 ms: 2 under way at once; the linger is the time 2 take to arrive)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":20,"size":2}}}}`,
		}}},
		{"the observed median where the model plays no round trip", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.Observed = &cascade.EdgeObserved{LatencyP50MS: 25}
		}, 100, 0, []derived{{
			"publish-batch=3 gateway->q-rights",
			"gateway→q-rights: batch publishes, 3 a batch or what is there after 30 ms (gateway publishes 100/s per replica against a publish's observed median of 25 ms: 2.5 under way at once; the linger is the time 3 take to arrive)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":30,"size":3}}}}`,
		}}},
		{"fire and forget: the send's observed median", "q-sms", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS = net(1)
			e.Observed = &cascade.EdgeObserved{LatencyP50MS: 30}
		}, 100, 0, []derived{{
			"publish-batch=3 gateway->q-sms",
			"gateway→q-sms: batch publishes, 3 a batch or what is there after 30 ms (gateway publishes 100/s per replica against a publish's observed median of 30 ms: 3 under way at once; the linger is the time 3 take to arrive)",
			KindPublishBatch, `{"edges":{"gateway->q-sms":{"batch":{"linger_ms":30,"size":3}}}}`,
		}}},
		{"two publishes a request over two replicas", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS, e.FanOut = net(10), cascade.Const(2)
			m.Node("gateway").Replicas = 2
		}, 150, 0, []derived{{
			"publish-batch=3 gateway->q-rights",
			"gateway→q-rights: batch publishes, 3 a batch or what is there after 20 ms (gateway publishes 150/s per replica against a confirm's round trip of 20 ms: 3 under way at once; the linger is the time 3 take to arrive)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":20,"size":3}}}}`,
		}}},
		{"the publish's timeout bounds the linger", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS, e.TimeoutMS = net(10), 30
		}, 1000, 0, []derived{{
			"publish-batch=10 gateway->q-rights",
			"gateway→q-rights: batch publishes, 10 a batch or what is there after 10 ms (gateway publishes 1000/s per replica against a confirm's round trip of 20 ms: 20 under way at once; the linger is the room the publish's timeout of 30 ms leaves over its round trip of 20 ms)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":10,"size":10}}}}`,
		}}},
		{"the clients' deadline bounds the linger", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS = net(10)
			m.Entries[0].TimeoutMS = 50
			m.Node("gateway").Observed = &cascade.NodeObserved{LatencyP99MS: 45}
		}, 1000, 0, []derived{{
			"publish-batch=5 gateway->q-rights",
			"gateway→q-rights: batch publishes, 5 a batch or what is there after 5 ms (gateway publishes 1000/s per replica against a confirm's round trip of 20 ms: 20 under way at once; the linger is the room the clients' deadline of 50 ms leaves over gateway's p99 of 45 ms)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":5,"size":5}}}}`,
		}}},
		{"the latency target bounds a fire-and-forget linger", "q-sms", func(m *cascade.Model, e *cascade.Edge) {
			e.Observed = &cascade.EdgeObserved{LatencyP50MS: 20}
			m.Entries[0].TimeoutMS = 21 // a root deadline: the root does not wait for this publish
			m.Node("gateway").Observed = &cascade.NodeObserved{LatencyP99MS: 20}
		}, 1000, 28, []derived{{
			"publish-batch=8 gateway->q-sms",
			"gateway→q-sms: batch publishes, 8 a batch or what is there after 8 ms (gateway publishes 1000/s per replica against a publish's observed median of 20 ms: 20 under way at once; the linger is the room the latency target of 28 ms leaves over gateway's p99 of 20 ms)",
			KindPublishBatch, `{"edges":{"gateway->q-sms":{"batch":{"linger_ms":8,"size":8}}}}`,
		}}},
		{"a batch of another size: its size and linger", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS, e.Batch = net(10), &cascade.Batch{Size: 10, LingerMS: 50}
		}, 100, 0, []derived{{
			"publish-batch=2 gateway->q-rights",
			"gateway→q-rights: batch size 10→2, linger 50→20 ms (gateway publishes 100/s per replica against a confirm's round trip of 20 ms: 2 under way at once; the linger is the time 2 take to arrive)",
			KindPublishBatch, `{"edges":{"gateway->q-rights":{"batch":{"linger_ms":20,"size":2}}}}`,
		}}},
		{"a batch of that size already", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS, e.Batch = net(10), &cascade.Batch{Size: 2, LingerMS: 50}
		}, 100, 0, nil},
		{"one publish under way at most: nothing to batch", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS = net(5)
		}, 100, 0, nil},
		{"fire and forget with no observed cost", "q-sms", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS = net(50)
		}, 100, 0, nil},
		{"no known cost", "q-rights", func(m *cascade.Model, e *cascade.Edge) {}, 1000, 0, nil},
		{"no known rate", "q-rights", func(m *cascade.Model, e *cascade.Edge) { e.NetworkMS = net(10) }, 0, 0, nil},
		{"the timeout leaves no room for 2", "q-rights", func(m *cascade.Model, e *cascade.Edge) {
			e.NetworkMS, e.TimeoutMS = net(10), 25
		}, 300, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := notifyModel()
			for i := range m.Edges {
				if e := &m.Edges[i]; e.From == "gateway" && e.To == tc.edge {
					tc.change(m, e)
				}
			}
			require.NoError(t, m.Validate())
			ev := &Evidence{RatePerSec: map[string]float64{"gateway": tc.rate}}
			var got []Candidate
			for _, c := range Derive(m, ev, tc.target) {
				if c.Kind == KindPublishBatch {
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
				require.NoError(t, cm.Validate(), c.Name)
				var e *cascade.Edge
				for i := range cm.Edges {
					if cm.Edges[i].From == "gateway" && cm.Edges[i].To == tc.edge {
						e = &cm.Edges[i]
					}
				}
				require.NotNil(t, e.Batch, c.Name)
				require.Greater(t, e.Batch.Size, 1, c.Name)
				require.Positive(t, e.Batch.LingerMS, c.Name)
			}
		})
	}
}
