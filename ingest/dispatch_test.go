package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// TestErrorDispatch ingests two real TrainTicket traces of one route
// (Nezha's CSV records no status): the one whose travel request handed
// its answer to Spring's BasicErrorController has that request and the
// gateway's call into it failed, and nothing else; the other has no
// failed span.
func TestErrorDispatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Traces = []string{repoTestdata("nezha-trainticket", "dispatch", "10_04_dispatch_excerpt.csv")}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.EqualValues(t, 2, sum.Traces)
	require.EqualValues(t, 2, sum.DispatchErrorSpans)
	require.EqualValues(t, 2, sum.ErrorSpans)
	var failed [][3]string
	require.NoError(t, dataset.ReadSpans(cfg.Out, func(s *cascade.Span) error {
		if s.Status == cascade.StatusError {
			failed = append(failed, [3]string{s.TraceID, s.Service, s.Operation})
			require.Equal(t, "error dispatch", s.ErrorType)
		}
		return nil
	}))
	const tr = "15ee0e741d1b8b56cf04fbe7573947fe"
	require.ElementsMatch(t, [][3]string{
		{tr, "ts-gateway-service", "HTTP POST"},
		{tr, "ts-travel-service", "/api/v1/travelservice/trips/left"},
	}, failed)
}

func TestMarkDispatched(t *testing.T) {
	span := func(id, parent, svc, op string, st cascade.Status) cascade.Span {
		return cascade.Span{TraceID: "t", SpanID: id, ParentSpanID: parent, Service: svc, Operation: op, Status: st}
	}
	tests := []struct {
		name string
		rows []cascade.Span
		want []cascade.Status // per row, after
		n    int
	}{
		{"none", []cascade.Span{
			span("a", "", "gw", "/*", cascade.StatusUnset),
			span("b", "a", "svc", "/x", cascade.StatusUnset),
		}, []cascade.Status{cascade.StatusUnset, cascade.StatusUnset}, 0},
		{"through the service to the caller's span, not above", []cascade.Span{
			span("a", "", "gw", "/*", cascade.StatusUnset),
			span("b", "a", "gw", "HTTP GET", cascade.StatusUnset),
			span("c", "b", "svc", "/x", cascade.StatusUnset),
			span("d", "c", "svc", "Controller.x", cascade.StatusUnset),
			span("e", "c", "svc", "BasicErrorController.error", cascade.StatusUnset),
		}, []cascade.Status{cascade.StatusUnset, cascade.StatusError, cascade.StatusError, cascade.StatusUnset, cascade.StatusUnset}, 2},
		{"recorded statuses stay", []cascade.Span{
			span("b", "", "gw", "HTTP GET", cascade.StatusOK),
			span("c", "b", "svc", "/x", cascade.StatusError),
			span("e", "c", "svc", "BasicErrorController.errorHtml", cascade.StatusUnset),
		}, []cascade.Status{cascade.StatusOK, cascade.StatusError, cascade.StatusUnset}, 0},
		{"a root dispatch", []cascade.Span{
			span("e", "", "svc", "BasicErrorController.error", cascade.StatusUnset),
		}, []cascade.Status{cascade.StatusUnset}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			index := map[string]int{}
			for i := range tc.rows {
				index[tc.rows[i].SpanID] = i
			}
			require.Equal(t, tc.n, markDispatched(tc.rows, index))
			for i := range tc.rows {
				require.Equal(t, tc.want[i], tc.rows[i].Status, tc.rows[i].SpanID)
			}
		})
	}
}
