package report

import (
	"fmt"
	"io"
	"strings"
)

// AnalysisMarkdown renders an analysis as Markdown to paste into a
// postmortem: a paragraph in plain words (what happened, where it began,
// what amplified it, what to change first and how sure that is) and a
// few traces to open by id; then what to change first (the ranking, the capacity curve and
// metastability), then the incident, how the answer moves with what the
// capture does not show (Sensitivity), the timeline, the fit and what
// was read.
func AnalysisMarkdown(w io.Writer, a *Analysis) error {
	var b strings.Builder
	if err := rankMarkdown(&b, &RankDocument{Model: "calibrated.json", Incident: a.Incident, Rank: a.Rank}); err != nil {
		return err
	}
	// The summary and the traces to open go under the title.
	title, rest, _ := strings.Cut(b.String(), "\n\n")
	b.Reset()
	b.WriteString(title + "\n\n")
	if p := summaryParagraph(a); p != "" {
		b.WriteString(p + "\n\n")
	}
	examplesMarkdown(&b, a.Examples)
	b.WriteString(rest)
	sensitivityMarkdown(&b, a.Sensitivity)
	observedMarkdown(&b, a.Observed)
	if tl := a.Timeline; tl != nil {
		fmt.Fprintf(&b, "\n## Over time: the baseline against the best change\n\n")
		fmt.Fprintf(&b, "One replay each, seed %d, under %s, windows of %s.\n\n", tl.Seed, tl.Regime, msText(tl.WindowMS))
		if tl.Changed == nil {
			fmt.Fprintf(&b, "No change won, so the baseline is shown alone.\n\n")
		} else {
			fmt.Fprintf(&b, "Change: %s.\n\n", tl.Description)
		}
		fmt.Fprintf(&b, "| Series | Baseline mean | Baseline peak | Changed mean | Changed peak |\n|---|---:|---:|---:|---:|\n")
		row := func(name string, base []float64, ch []float64, chOK bool) {
			bm, bp := meanPeak(base)
			cm, cp := "–", "–"
			if chOK {
				m, p := meanPeak(ch)
				cm, cp = m, p
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, bm, bp, cm, cp)
		}
		var ch *TimelineRun = tl.Changed
		pick := func(f func(*TimelineRun) []float64) []float64 {
			if ch == nil {
				return nil
			}
			return f(ch)
		}
		row("offered/s", tl.Baseline.OfferedPerSec, pick(func(r *TimelineRun) []float64 { return r.OfferedPerSec }), ch != nil)
		row("goodput/s", tl.Baseline.GoodputPerSec, pick(func(r *TimelineRun) []float64 { return r.GoodputPerSec }), ch != nil)
		for i, q := range tl.Baseline.Queues {
			var cq []float64
			if ch != nil && i < len(ch.Queues) {
				cq = ch.Queues[i].Depth
			}
			row("queue "+q.Node, q.Depth, cq, ch != nil)
		}
	}
	if f := a.Fit; f != nil {
		fmt.Fprintf(&b, "\n## Fit\n\n")
		fmt.Fprintf(&b, "Grid `%s`: %d points, %d replayed (%s), seed %d. Best point (loss %.4g):", f.Grid, f.Points, f.Evaluated, f.Search, f.Seed, f.Best.Loss)
		for _, v := range f.Best.Values {
			fmt.Fprintf(&b, " %s=%s", v.Axis, v.Value)
		}
		b.WriteString(".\n\n")
		for _, s := range f.Surface {
			fmt.Fprintf(&b, "- %s = %s: %s\n", s.Axis, s.Value, s.Verdict)
		}
		for _, warn := range f.Warnings {
			fmt.Fprintf(&b, "- warning: %s\n", warn)
		}
	}
	fmt.Fprintf(&b, "\n## What was read\n\n")
	fmt.Fprintf(&b, "Inputs: %s. Seed %d.\n\n", strings.Join(a.Inputs, ", "), a.Seed)
	if d := a.Dataset; d != nil {
		fmt.Fprintf(&b, "%d spans in %d traces, %d services (%s), %d operations, %d error spans.\n",
			d.Spans, d.Traces, len(d.Services), strings.Join(d.Services, ", "), d.Operations, d.ErrorSpans)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	if len(a.Notes) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nFiles: %s.\n", strings.Join(a.Files, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

func meanPeak(xs []float64) (string, string) {
	if len(xs) == 0 {
		return "–", "–"
	}
	var s, p float64
	for _, x := range xs {
		s += x
		p = max(p, x)
	}
	return fmt.Sprintf("%.3g", s/float64(len(xs))), fmt.Sprintf("%.3g", p)
}
