package ingest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// TestDatasetLinksRoundTrip writes spans with zero, one and two links and
// the messaging columns, and reads them back through the dataset reader.
func TestDatasetLinksRoundTrip(t *testing.T) {
	in := []cascade.Span{
		{TraceID: "t1", SpanID: "a", Service: "gateway", Operation: "publish", Kind: cascade.KindProducer,
			Start: 1e9, Duration: 1e6, Status: cascade.StatusOK, MessagingSystem: "rabbitmq",
			MessagingOperation: cascade.MessagingPublish, Destination: "rights", MessageID: "m1", MessageBytes: 512},
		{TraceID: "t2", SpanID: "b", Service: "rights", Operation: "process", Kind: cascade.KindConsumer,
			Start: 2e9, Duration: 5e6, Status: cascade.StatusError, MessagingSystem: "rabbitmq",
			MessagingOperation: cascade.MessagingProcess, Destination: "rights", ConsumerGroup: "rights",
			MessageID: "m1", Redelivery: 2, BatchCount: 1,
			Links: []cascade.SpanLink{{TraceID: "t1", SpanID: "a"}}},
		{TraceID: "t3", SpanID: "c", Service: "batch", Operation: "process", Start: 3e9, Status: cascade.StatusOK,
			Links: []cascade.SpanLink{{TraceID: "t1", SpanID: "a"}, {TraceID: "t2", SpanID: "b"}}},
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := NewWriter(dir, 0)
	require.NoError(t, err)
	for i := range in {
		require.NoError(t, w.Span(&in[i]))
	}
	_, err = w.Commit()
	require.NoError(t, err)
	var got []cascade.Span
	require.NoError(t, dataset.ReadSpans(dir, func(s *cascade.Span) error {
		got = append(got, s.Clone())
		return nil
	}))
	require.Len(t, got, len(in))
	for i := range in {
		require.True(t, in[i].Equal(&got[i]), "span %d: got %+v, want %+v", i, got[i], in[i])
	}
}
