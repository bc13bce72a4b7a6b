package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/graph"
)

// TestFailureProcess holds graph's reading of how a node's own failures
// come: 2000 calls of web into db, one a trace, 10 ms apart, with 20% of
// db's calls failing independently, every 5th call, or in runs.
func TestFailureProcess(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(i int, r *rand.Rand, prev bool) bool
		verdict string
		gaps    bool
	}{
		{"independent", func(_ int, r *rand.Rand, _ bool) bool { return r.Float64() < 0.2 }, "independent", false},
		{"every 5th call", func(i int, _ *rand.Rand, _ bool) bool { return i%5 == 4 }, "regular", true},
		// Gilbert: a failure is followed by another with 0.8, a success
		// by a failure with 0.05 (20% failures in runs of 5 on average).
		{"in runs", func(_ int, r *rand.Rand, prev bool) bool {
			if prev {
				return r.Float64() < 0.8
			}
			return r.Float64() < 0.05
		}, "bursty", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			var spans []cascade.Span
			prev := false
			fails := 0
			for i := range 2000 {
				f := tc.fail(i, r, prev)
				prev = f
				var opts []func(*cascade.Span)
				if f {
					fails++
					opts = append(opts, failed("503"))
				}
				tr := fmt.Sprintf("t%04d", i)
				at := float64(i) * 10
				spans = append(spans,
					span(tr, "1", "", "web", "/", server, at, 5),
					span(tr, "2", "1", "web", "query", client, at+1, 3, opts...),
					span(tr, "3", "2", "db", "SELECT", server, at+1.5, 2, opts...))
			}
			res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(shuffle(spans)), nil)
			require.NoError(t, err)
			db := res.Model.Node("db")
			t.Logf("%d failures: %s, dispersion %g", fails, db.Observed.FailureProcess, db.Observed.FailureDispersion)
			require.Equal(t, tc.verdict, db.Observed.FailureProcess)
			require.Equal(t, tc.gaps, db.Overload.Gaps != nil)
			if tc.gaps {
				require.InDelta(t, float64(2000)/float64(fails), db.Overload.Gaps.MeanValue(), 0.25, "the mean gap is 1/p")
			}
			// web fails only through its call: no failure process of its own.
			require.Nil(t, res.Model.Node("web").Overload.Gaps)
		})
	}
}

// shuffle orders the traces at random, as trace IDs do in a dataset: the
// sequence must come from the start times, not the reading order.
func shuffle(spans []cascade.Span) []cascade.Span {
	r := rand.New(rand.NewPCG(1, 2))
	const per = 3
	n := len(spans) / per
	out := make([]cascade.Span, 0, len(spans))
	for _, i := range r.Perm(n) {
		out = append(out, spans[i*per:(i+1)*per]...)
	}
	return out
}
