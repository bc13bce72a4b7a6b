package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/replay"
)

// TestShardTakeFirstError: a job whose seeds were replayed on different
// shards fails with the error of its first seed to fail, as the job
// replayed in one piece does (it stops there), and keeps no results.
func TestShardTakeFirstError(t *testing.T) {
	ok := &replay.Result{}
	tests := []struct {
		name    string
		replays []Replay // of candidate 0, regime 0, seeds 1, 2, 3 (units 0, 1, 2)
		want    string
	}{
		{"all replayed", []Replay{{Seed: 1, Result: ok}, {Seed: 2, Result: ok}, {Seed: 3, Result: ok}}, ""},
		{"the second seed ran away", []Replay{{Seed: 1, Result: ok}, {Seed: 2, Error: "seed 2: runaway"}, {Seed: 3, Error: "seed 3: runaway"}}, "seed 2: runaway"},
		{"only the last", []Replay{{Seed: 1, Result: ok}, {Seed: 2, Result: ok}, {Seed: 3, Error: "seed 3: runaway"}}, "seed 3: runaway"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Partial{PartialHeader: replay.PartialHeader{Units: 3}, File: "a.json"}
			b := &Partial{PartialHeader: replay.PartialHeader{Units: 3}, File: "b.json"}
			for u, r := range tc.replays {
				[]*Partial{a, b}[u%2].Replays = append([]*Partial{a, b}[u%2].Replays, r)
			}
			sh := &sharding{parts: []*Partial{a, b}}
			rn := replay.NewBatch(replay.BatchSettings{Seed: 1, Seeds: 3})
			res, errs, err := sh.run(t.Context(), rn, []replay.BatchJob{{}}, []int{0}, []int{0})
			require.NoError(t, err)
			if tc.want == "" {
				require.NoError(t, errs[0])
				require.Equal(t, []*replay.Result{ok, ok, ok}, res[0])
				return
			}
			require.EqualError(t, errs[0], tc.want)
			require.Nil(t, res[0])
		})
	}
}
