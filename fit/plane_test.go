package fit_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/fit"
)

// TestRunPlane holds the loss plane's contract: two numeric axes of two
// or more values, the others at the best point; a 0 at the best cell and
// no cell below it; every cell replayed (on the best point's row and
// column, the surface's profile); sides of at most 25 values that keep
// the best's; nil with fewer than two such axes.
func TestRunPlane(t *testing.T) {
	m, obs := chainFit(t)
	tests := []struct {
		name   string
		grid   string
		search string
		x, y   string // the plane's axes; "" when it is nil
		nx, ny int
	}{
		{"exhaustive", "tier=p50|p95,p=0.1:0.5:0.2,r=0.2:1:0.4,k=0:2:1,theta=0.8", fit.SearchExhaustive, "", "", 3, 3},
		{"refine", "tier=p50|p95,p=0.1:0.5:0.1,r=0.2:1:0.2,k=0:2:0.5,theta=0.8", fit.SearchRefine, "", "", 5, 5},
		{"refine, a side thinned to 25", "tier=p95,p=0.01:0.5:0.01,k=0:2:1", fit.SearchRefine, "p", "k", 25, 3},
		{"one numeric axis", "tier=p50|p95,p=0.1:0.5:0.2", fit.SearchExhaustive, "", "", 0, 0},
		{"one numeric axis of two values or more", "tier=p95,p=0.1:0.5:0.2,k=1,theta=0.8", fit.SearchRefine, "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fit.DefaultConfig()
			cfg.Grid, cfg.Search, cfg.Holdout = tc.grid, tc.search, 0
			res, err := fit.Run(context.Background(), cfg, m, obs)
			require.NoError(t, err)
			rep := res.Report
			pl := rep.Plane
			if tc.nx == 0 {
				require.Nil(t, pl, "seed %d", rep.Seed)
				return
			}
			require.NotNil(t, pl, "seed %d", rep.Seed)
			t.Logf("seed %d: best %s, plane %s × %s, %d of %d points", rep.Seed, rep.Best.Values, pl.X, pl.Y, rep.Evaluated, rep.Points)

			// The axes: the two whose profiles rise most, in grid order.
			rise := map[string]float64{}
			var numeric []string
			for _, s := range rep.Surface {
				if len(s.Profile) > 0 {
					rise[s.Axis] = slices.Max(s.Profile)
					numeric = append(numeric, s.Axis)
				}
			}
			byRise := slices.Clone(numeric)
			slices.SortStableFunc(byRise, func(a, b string) int {
				switch {
				case rise[a] > rise[b]:
					return -1
				case rise[a] < rise[b]:
					return 1
				}
				return 0
			})
			want := []string{byRise[0], byRise[1]}
			slices.SortFunc(want, func(a, b string) int { return slices.Index(numeric, a) - slices.Index(numeric, b) })
			require.Equal(t, want, []string{pl.X, pl.Y})
			if tc.x != "" {
				require.Equal(t, []string{tc.x, tc.y}, []string{pl.X, pl.Y})
			}

			// The shape and the best cell.
			require.Len(t, pl.XValues, tc.nx)
			require.Len(t, pl.YValues, tc.ny)
			require.Len(t, pl.Loss, tc.ny)
			for _, row := range pl.Loss {
				require.Len(t, row, tc.nx)
				for _, l := range row {
					require.GreaterOrEqual(t, l, 0.0, "no cell below the best")
				}
			}
			require.Zero(t, pl.Loss[pl.BestY][pl.BestX])
			require.Equal(t, rep.Best.Value(pl.X), strconv.FormatFloat(pl.XValues[pl.BestX], 'g', -1, 64))
			require.Equal(t, rep.Best.Value(pl.Y), strconv.FormatFloat(pl.YValues[pl.BestY], 'g', -1, 64))

			// The best point's row and column are the profiles.
			prof := func(axis string, v float64) float64 {
				g, err := fit.ParseGrid(rep.Grid, nil)
				require.NoError(t, err)
				for _, a := range g.Axes {
					if a.Name() == axis {
						for _, s := range rep.Surface {
							if s.Axis == axis {
								return s.Profile[slices.Index(a.Values, v)]
							}
						}
					}
				}
				t.Fatalf("no axis %s", axis)
				return 0
			}
			for j, v := range pl.XValues {
				require.Equal(t, prof(pl.X, v), pl.Loss[pl.BestY][j], "%s=%g", pl.X, v)
			}
			for i, v := range pl.YValues {
				require.Equal(t, prof(pl.Y, v), pl.Loss[i][pl.BestX], "%s=%g", pl.Y, v)
			}

			var tab bytes.Buffer
			require.NoError(t, fit.WriteTable(&tab, rep))
			require.Contains(t, tab.String(), "loss plane "+pl.X+" × "+pl.Y)
		})
	}
}

// TestRunPlaneRefineReplaysEveryCell: where the refine search ends at the
// exhaustive search's best point, its plane is the exhaustive one to the
// bit, so every cell the search had not seen was replayed like the rest.
func TestRunPlaneRefineReplaysEveryCell(t *testing.T) {
	m, obs := chainFit(t)
	planes := map[string]*fit.Report{}
	for _, search := range []string{fit.SearchExhaustive, fit.SearchRefine} {
		cfg := fit.DefaultConfig()
		cfg.Grid = "tier=p95,p=0.1:0.5:0.1,r=0.2:1:0.2,k=0:2:0.5,theta=0.8"
		cfg.Search, cfg.Holdout = search, 0
		res, err := fit.Run(context.Background(), cfg, m, obs)
		require.NoError(t, err)
		planes[search] = res.Report
	}
	ex, rf := planes[fit.SearchExhaustive], planes[fit.SearchRefine]
	require.Equal(t, ex.Best, rf.Best, "the refine search finds the exhaustive best (seed %d)", ex.Seed)
	require.Less(t, rf.Evaluated, rf.Points, "the refine search leaves points out")
	require.NotNil(t, rf.Plane)
	require.Equal(t, ex.Plane, rf.Plane)
}
