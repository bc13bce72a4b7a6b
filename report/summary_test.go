package report

import (
	"bytes"
	"cascade/replay"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade/incident"
	"cascade/internal/testutil"
	"cascade/rank"
)

// TestAnalysisMarkdownOpening holds what report.md opens with, on each
// fixture: the title, the paragraph in plain words and the traces to
// open, before the first section.
func TestAnalysisMarkdownOpening(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			a := fixture(t, name)
			var b bytes.Buffer
			require.NoError(t, AnalysisMarkdown(&b, a))
			md := b.String()
			opening, _, ok := strings.Cut(md, "\n## ")
			require.True(t, ok, "report.md has no section")
			testutil.Golden(t, "analysis-"+name+"-opening.md", []byte(opening+"\n"))
			// The paragraph is the first thing under the title.
			_, rest, _ := strings.Cut(md, "\n\n")
			require.True(t, strings.HasPrefix(rest, summaryParagraph(a)+"\n\n"), "seed %d", a.Seed)
			var again bytes.Buffer
			require.NoError(t, AnalysisMarkdown(&again, a))
			require.Equal(t, md, again.String(), "seed %d", a.Seed)
		})
	}
}

// TestSummarySentences holds each clause of the paragraph to the data
// that supports it: no origin, no path and no winning change are said as
// such, never invented.
func TestSummarySentences(t *testing.T) {
	tests := []struct {
		name   string
		from   string
		mutate func(*Analysis)
		// want are texts the paragraph must hold; reject are texts it
		// must not.
		want, reject []string
	}{
		{name: "origin", from: "boutique", mutate: func(*Analysis) {},
			want: []string{"the incident began at currencyservice", "its median time between its callers' calls and its own answer (the network into it) went from 598 ms normal to 3990 ms in its first window out of range, at 05:18:30Z (18× its normal spread)",
				"4 other nodes left theirs as well", "It climbed currencyservice → frontend, and no caller multiplied its calls",
				// The model replays the incident's capture with frontend's p50
				// a third high: it is not trusted to rank.
				"The model's replay misses the capture it was read from (", "frontend p50 6.15 s observed, ",
				"so no change is called a win or worse and none is recommended",
				"the first origin holds 74% of the top two origins' scores (50%: a tie)", "first origins that led by 70% to 80% were right 1 of 6 times", "the next being cartservice",
				"reproduces 60% of the changes"},
			reject: []string{"Replayed as observed", "The call graph multiplies", "Change first"}},
		{name: "no origin", from: "boutique", mutate: noOrigin,
			want:   []string{"no node left its normal range, each read from the first 3 windows (15 s), so the incident search found no origin", "Replayed as observed"},
			reject: []string{"began at", "climbed", "How sure the origin is", "path"}},
		{name: "changed but explained", from: "boutique", mutate: func(a *Analysis) {
			a.Incident.Origins, a.Incident.Path = nil, nil
		}, want: []string{"5 nodes left their normal range (currencyservice, cartservice, productcatalogservice, frontend, recommendationservice), but a change below explains each"},
			reject: []string{"began at"}},
		{name: "abstained", from: "boutique", mutate: func(a *Analysis) {
			a.Incident.Confidence, a.Incident.Abstained = 0.55, true
		}, want: []string{"left their normal range, but no origin stands out: currencyservice leads cartservice by too little to trust (it holds 55% of their two scores, under 60%)"},
			reject: []string{"the incident began at", "It climbed"}},
		{name: "origin, no path", from: "boutique", mutate: func(a *Analysis) { a.Incident.Path = nil },
			want: []string{"No caller of currencyservice left its range after it"}},
		{name: "amplified path", from: "boutique", mutate: func(a *Analysis) {
			a.Incident.Path = []incident.PathStep{{Caller: "frontend", Callee: "currencyservice", CallsPerParentBefore: 2, CallsPerParentDuring: 5,
				AttemptsPerCallBefore: 1, AttemptsPerCallDuring: 2.5}}
		}, want: []string{"it was amplified where frontend calls currencyservice, from 2 to 5 calls per request, retries taking the attempts per call from 1 to 2.5"}},
		{name: "win", from: "hotrod", mutate: func(*Analysis) {},
			want: []string{"Replayed as observed (observed closed loop", "The call graph multiplies load most where driver calls redis-manual: 13.5 calls",
				"Change first: mysql (bottleneck, 100% busy)", "over seeds 1 to 3 (3) (covering the replay's noise and the capture's uncertainty", "spread is ±0.03/s",
				"The model was checked against its capture: its replay matches the capture within "},
			reject: []string{"incident", "origin"}},
		{name: "no win", from: "hotrod", mutate: func(a *Analysis) {
			a.Rank.Set = nil
			for i := range a.Rank.Rows {
				a.Rank.Rows[i].Rank, a.Rank.Rows[i].Verdict = 0, rank.NoEffect
			}
		}, want: []string{"candidate changes replayed won (seeds 1 to 3 (3)): this ranking recommends no change"},
			reject: []string{"Change first"}},
		{name: "thin data", from: "hotrod", mutate: func(a *Analysis) {
			a.Rank.Basis.Thin = "1 trace, 1 root request; the ranking needs at least 100 root requests"
			a.Rank.Set = nil
			for i := range a.Rank.Rows {
				a.Rank.Rows[i].Rank, a.Rank.Rows[i].Verdict = 0, rank.NotEnoughData
			}
		}, want: []string{"The data is too thin to rank changes on (1 trace, 1 root request; the ranking needs at least 100 root requests), so no change is called a win or worse"},
			reject: []string{"Change first", "won"}},
		{name: "metastable", from: "hotrod", mutate: func(a *Analysis) {
			a.Rank.Metastability.Metastable, a.Rank.Metastability.Verdict = true, "goodput stayed low after the surge in 3 of 3 seeds"
		}, want: []string{"it is metastable: goodput stayed low after the surge in 3 of 3 seeds."}},
		{name: "not metastable", from: "hotrod", mutate: func(*Analysis) {}, reject: []string{"metastable"}},
		{name: "queues: flows and what the change takes from the broker", from: "hotrod", mutate: func(a *Analysis) {
			a.Rank.Flows = true
			b := a.Rank.Baseline[0]
			b.Metrics = append(b.Metrics, replay.Estimate{Name: "flow_success_rate", Mean: 0.62},
				replay.Estimate{Name: "flow_p50_ms", Mean: 42}, replay.Estimate{Name: "flow_p99_ms", Mean: 33064})
			a.Rank.Set = nil
			for i := range a.Rank.Rows {
				if a.Rank.Rows[i].Rank == 1 {
					a.Rank.Rows[i].Why = "broker rabbitmq's memory alarm (publishers blocked) on 12 s → 0 ms a run"
					a.Rank.Rows[i].WhyAtBroker = true
				}
			}
		}, want: []string{"62.0% of its flows (a request with the work of every message it published) succeed, their completion taking 42 ms at the median and 33064 ms at p99",
			"What it changes at the broker: broker rabbitmq's memory alarm (publishers blocked) on 12 s → 0 ms a run."},
			reject: []string{"answers"}},
		{name: "bare", from: "", mutate: func(*Analysis) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := variant(t, tc.from, tc.mutate)
			p := summaryParagraph(a)
			for _, w := range tc.want {
				require.Contains(t, p, w, "seed %d", a.Seed)
			}
			for _, w := range tc.reject {
				require.NotContains(t, p, w, "seed %d", a.Seed)
			}
			if tc.from == "" {
				require.Empty(t, p)
			}
		})
	}
}
