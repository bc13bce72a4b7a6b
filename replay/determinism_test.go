package replay

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sortFloats(s []float64) { slices.Sort(s) }

func TestDeterminism(t *testing.T) {
	m := loadModel(t, "seed000.json")
	cfg := DefaultConfig()
	cfg.Duration = 10 * time.Second
	cfg.Series = true
	run := func(seed uint64) []byte {
		c := cfg
		c.Seed = seed
		r, err := Replay(m, c)
		require.NoError(t, err)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		return b
	}
	a, b, c := run(1), run(1), run(2)
	require.Equal(t, a, b, "same seed, same bytes")
	require.NotEqual(t, a, c)

	// An engine reused across runs gives what a fresh one gives.
	e, err := NewEngine(m, cfg)
	require.NoError(t, err)
	e.Run(5)
	again, _ := json.Marshal(e.Run(1))
	require.Equal(t, a, again)
}

func TestRunSeedsParallelism(t *testing.T) {
	m := loadModel(t, "seed000.json")
	cfg := DefaultConfig()
	cfg.Duration = 5 * time.Second
	cfg.Seeds = 6
	var outs [][]byte
	for _, par := range []int{1, 2, 4} {
		cfg.Parallel = par
		rs, err := RunSeeds(context.Background(), m, cfg)
		require.NoError(t, err)
		b, err := json.Marshal(Summarize(rs))
		require.NoError(t, err)
		outs = append(outs, b)
		for i, r := range rs {
			require.Equal(t, uint64(1+i), r.Seed)
		}
	}
	require.Equal(t, outs[0], outs[1])
	require.Equal(t, outs[0], outs[2])
}

func TestCommonRandomNumbers(t *testing.T) {
	// Changing a retry setting does not change the arrivals.
	m := loadModel(t, "seed000.json")
	a := replayT(t, m, withDuration(5*time.Second))
	m.Entries[0].Retry.MaxAttempts = 1
	b := replayT(t, m, withDuration(5*time.Second))
	require.Equal(t, a.Series.Offered, b.Series.Offered)
}

func TestSummary(t *testing.T) {
	m := loadModel(t, "seed000.json")
	cfg := DefaultConfig()
	cfg.Duration = 10 * time.Second
	cfg.Seeds = 5
	rs, err := RunSeeds(context.Background(), m, cfg)
	require.NoError(t, err)
	s := Summarize(rs)
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, s.Seeds)
	g := s.Metric("goodput_per_sec")
	require.Less(t, g.Low, g.Mean)
	require.Greater(t, g.High, g.Mean)
	require.InDelta(t, 80, g.Mean, 4)
	// 95% t interval over 5 seeds: ±2.776·sd/√5.
	require.InDelta(t, 2.776*g.StdDev/2.2360679, g.High-g.Mean, 1e-3)
}
