package rank

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
)

// notifyBeforeModel is graph's model of testdata/notify-before (seed
// 002's notification chain on a real RabbitMQ), as `cascade graph
// testdata/notify-before/traces.otlp.json.gz --metrics
// testdata/notify-before/prometheus/rabbitmq.json.gz` writes it.
func notifyBeforeModel(t *testing.T) *cascade.Model {
	t.Helper()
	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{"../testdata/notify-before/traces.otlp.json.gz"}
	cfg.Metrics = []string{"../testdata/notify-before/prometheus/rabbitmq.json.gz"}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err := ingest.Run(context.Background(), cfg)
	require.NoError(t, err)
	src := cascade.SpanSource(func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(cfg.Out, fn) })
	samples := cascade.SampleSource(func(fn func(*cascade.Sample) error) error { return dataset.ReadSamples(cfg.Out, fn) })
	res, err := graph.Build(context.Background(), graph.DefaultConfig(), src, samples)
	require.NoError(t, err)
	return res.Model
}

// TestNotifyBeforeRedeliveryAndBatching ranks the notify-before model
// and checks that the redelivery policy with an immediate part and
// publisher batching are derived, replayed and scored: each has a row
// that did not fail, whose paired effects moved (a patch that changes
// nothing replays identically, every difference exactly zero). Where
// they rank is not asserted.
//
// queue:points requeues at once (graph reads ack + republish as a delay
// of 1 µs) up to 4 deliveries, and points fails: one redelivery at
// once, then a delay queue. queue:rights allows one redelivery only:
// none. The capture's publishes take 0.2 ms against the gateway's
// 28/s, far from overlapping, so no edge batches as captured; the test
// puts the broker 50 ms away from the gateway for its publishes to
// queue:rights (a confirm's round trip of 100 ms: about 2.8 under way
// at once), where a batch of 3 applies.
func TestNotifyBeforeRedeliveryAndBatching(t *testing.T) {
	if testing.Short() {
		t.Skip("ranks the notify-before model")
	}
	m := notifyBeforeModel(t)
	require.Equal(t, 4, m.Node("queue:points").Queue.MaxDeliveries)
	require.Equal(t, 2, m.Node("queue:rights").Queue.MaxDeliveries)
	pub := slices.IndexFunc(m.Edges, func(e cascade.Edge) bool { return e.From == "gateway" && e.To == "queue:rights" })
	require.GreaterOrEqual(t, pub, 0)
	require.False(t, m.Edges[pub].Async, "rights' publish is confirmed")
	away := cascade.Const(50)
	m.Edges[pub].NetworkMS = &away

	cfg := DefaultConfig()
	cfg.Seeds = 3
	cfg.Duration = 20 * time.Second
	cfg.Capacity = false
	cfg.FitCheck = false // the publish edge was moved on purpose
	cfg.Resample = false
	cfg.TickCheck = false
	rep, err := Run(context.Background(), m, cfg)
	require.NoError(t, err)

	for _, name := range []string{"immediate=1 queue:points", "publish-batch=3 gateway->queue:rights"} {
		i := slices.IndexFunc(rep.Rows, func(r Row) bool { return r.Candidate.Name == name })
		require.GreaterOrEqual(t, i, 0, "no row %q (seeds %v)", name, rep.Seeds)
		r := rep.Rows[i]
		t.Logf("%s: %s %+.4f: %s", name, r.Verdict, r.Gain, r.Candidate.Description)
		require.NotEqual(t, Failed, r.Verdict, r.Error)
		require.NotEmpty(t, r.Effects, name)
		moved := slices.ContainsFunc(r.Effects, func(e Effect) bool { return e.Delta.Mean != 0 })
		require.True(t, moved, "%s: the replays did not change (seeds %v)", name, rep.Seeds)
	}
	require.NotContains(t, names(rep.Rows), "immediate=1 queue:rights", "one redelivery only: no room for a delayed one")
}
