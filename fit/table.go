package fit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report for people: the header, the best point
// and each tier's, the surface and the loss plane's extremes, the
// distance from the model's values, the per-node errors in sample and
// held out, and the regression.
func WriteTable(w io.Writer, r *Report) error {
	return writeReport(textLayout{w}, r)
}

// writeReport writes the report's sections to l: WriteTable's and
// WriteMarkdown's one code path.
func writeReport(l layout, r *Report) error {
	if err := writeSummary(l, r); err != nil {
		return err
	}
	if err := writeWindows(l, r); err != nil {
		return err
	}
	if err := writeSurface(l, r); err != nil {
		return err
	}
	if err := writeMoved(l, r); err != nil {
		return err
	}
	writeBase(l, r)

	l.heading(2, "In sample: the calibrated model (all windows)", "in sample, the calibrated model (all windows):")
	if err := nodeTable(l, r.Nodes); err != nil {
		return err
	}
	if err := writeHoldout(l, r); err != nil {
		return err
	}
	return writeLogistic(l, r)
}

// writeSummary writes the header lines, the best point and each tier's,
// the calibrated point and whether it was kept, then the notes and
// warnings: what a reader needs before the tables.
func writeSummary(l layout, r *Report) error {
	tw := l.table(0, "")
	fmt.Fprintf(tw, "seed\t%d (%d seed(s) per point)\n", r.Seed, r.Seeds)
	fmt.Fprintf(tw, "grid\t%s\n", r.Grid)
	fmt.Fprintf(tw, "search\t%s: %d of %d points replayed\n", r.Search, r.Evaluated, r.Points)
	fmt.Fprintf(tw, "windows\t%d\n", len(r.Windows))
	fmt.Fprintf(tw, "best\t%s  loss %s\n", r.Best.Values.String(), fmtF(r.Best.Loss))
	for _, t := range r.Tiers {
		fmt.Fprintf(tw, "  tier %s\t%s  loss %s\n", t.Value(ParamTier), t.Values.String(), fmtF(t.Loss))
	}
	c := &r.Calibrated
	if len(c.Held) > 0 {
		fmt.Fprintf(tw, "held\t%s at the model's values (flat), the rest searched again: %d points of %s replayed\n",
			strings.Join(c.Held, ", "), c.Evaluated, c.Grid)
	}
	if c.Kept == "" {
		fmt.Fprintf(tw, "calibrated\t%s  loss %s (uncalibrated %s)\n", c.Values.String(), fmtF(c.Loss), fmtF(c.Uncalibrated))
	} else {
		fmt.Fprintf(tw, "calibrated\t%s  not written\n", c.Values.String())
		fmt.Fprintf(tw, "kept\t%s; the model is written as it came, loss %s\n", c.Kept, fmtF(c.Loss))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var lines []string
	for _, n := range r.Notes {
		lines = append(lines, "note: "+n)
	}
	for _, x := range r.Warnings {
		lines = append(lines, "warning: "+x)
	}
	l.list(lines)
	return nil
}

// writeWindows writes the window table: each window's span and load and
// its loss at the calibrated point, so that a window that fits badly
// shows.
func writeWindows(l layout, r *Report) error {
	l.heading(2, "Windows", "")
	tw := l.table(0, "WINDOW\tSTART\tLENGTH S\tROOTS\tREQUESTS\tLOSS")
	for _, x := range r.Windows {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%d\t%d\t%s\n", x.Index, x.Start, x.LengthMS/1000, x.Roots, x.Requests, fmtF(x.Loss))
	}
	return tw.Flush()
}

// writeSurface writes the surface table, how the loss moves one step
// along each axis and whether the axis is identifiable, then the loss
// plane's extremes.
func writeSurface(l layout, r *Report) error {
	l.heading(2, "Loss surface", "")
	tw := l.table(0, "AXIS\tBEST\t-1 STEP\t+1 STEP\tFLAT RANGE\tCURVATURE\tIDENTIFIABLE\tVERDICT")
	for _, s := range r.Surface {
		minus, plus := pctOrDash(s.Minus), pctOrDash(s.Plus)
		if s.Gap != nil {
			plus = "next tier " + pctOrDash(s.Gap)
		}
		flat := "-"
		if s.Low != "" {
			flat = s.Low + " .. " + s.High
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\n", s.Axis, s.Value, minus, plus, flat, fmtF(s.Curvature), s.Identifiable, s.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := r.Plane; p != nil {
		l.para(planeLine(p))
	}
	return nil
}

// writeMoved writes, when the fit moved any axis, how far each moved
// from the model's value, in units and in grid steps.
func writeMoved(l layout, r *Report) error {
	if len(r.Moved) > 0 {
		l.heading(2, "Moved from the model's values", "")
		tw := l.table(0, "AXIS\tMODEL VALUE\tFROM\tFITTED\tMOVED\tSTEPS")
		for _, m := range r.Moved {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.4g\t%+.4g\n", m.Axis, fmtF(m.Centre), m.Source, fmtF(m.Best), m.Delta, m.Steps)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeBase writes the overload bases scaled to the nodes' own failures,
// since they change the model beyond the grid's axes.
func writeBase(l layout, r *Report) {
	if len(r.Base) > 0 {
		l.heading(2, "Overload bases", "")
		lines := make([]string, len(r.Base))
		for i, b := range r.Base {
			lines[i] = fmt.Sprintf("base of %s scaled to its own failures: %s → %s (own share %s)", b.Node, fmtF(b.From), fmtF(b.To), fmtF(b.Share))
		}
		l.list(lines)
	}
}

// writeHoldout writes, when windows were held out, each one's fit
// without it and the per-node errors of predicting it: the back-test
// that tells a fit from an overfit.
func writeHoldout(l layout, r *Report) error {
	c := &r.Calibrated
	if len(r.Holdout) > 0 {
		l.heading(2, "Back-test: each window held out, fitted without it", "")
		tw := l.table(0, "HELD OUT\tFITTED WITHOUT IT\tLOSS\tIN-SAMPLE LOSS\tUNCALIBRATED LOSS")
		for _, h := range r.Holdout {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", h.Window, h.Values.String(), fmtF(h.Loss), fmtF(h.InSample), fmtF(h.Uncalibrated))
		}
		fmt.Fprintf(tw, "sum\t\t%s\t\t%s\n", fmtF(c.Backtest), fmtF(c.BacktestUncalibrated))
		if err := tw.Flush(); err != nil {
			return err
		}
		l.heading(3, "Back-test: the held-out windows predicted", "back-test, held-out windows predicted:")
		if err := nodeTable(l, r.HoldoutNodes); err != nil {
			return err
		}
	}
	return nil
}

// writeLogistic writes, when the regression was fitted, its
// coefficients beside the grid's counterparts, so that the two fits of
// the same failures can be compared.
func writeLogistic(l layout, r *Report) error {
	if lg := r.Logistic; lg != nil {
		what := fmt.Sprintf("%d calls, %d failed", lg.Calls, lg.Failures)
		if lg.Note != "" {
			what += " (" + lg.Note + ")"
		}
		l.heading(2, "Logistic regression of call failure: "+what, "logistic regression of call failure: "+what)
		if len(lg.Coefficients) > 0 {
			tw := l.table(0, "FEATURE\tESTIMATE\tSTDERR\tZ\tODDS RATIO\tGRID")
			for _, c := range lg.Coefficients {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Feature, fmtF(c.Estimate), fmtF(c.StdErr), fmtF(c.Z), fmtF(c.OddsRatio), gridCounterpart(r, c.Feature))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			l.para(fmt.Sprintf("node load: dP/dρ at the means = %s (grid: k = %s above θ = %s); pseudo R² %s",
				fmtF(lg.NodeLoadSlope), orDash(r.Best.Value(ParamK)), orDash(r.Best.Value(ParamTheta)), fmtF(lg.PseudoR2)))
		}
	}
	return nil
}

// planeLine sums up the loss plane in one line: its axes and size, its
// best cell and its worst (the first in row order of the highest).
func planeLine(p *LossPlane) string {
	wi, wj := p.BestY, p.BestX
	for i, row := range p.Loss {
		for j, l := range row {
			if l > p.Loss[wi][wj] {
				wi, wj = i, j
			}
		}
	}
	at := func(i, j int) string {
		return p.X + "=" + strconv.FormatFloat(p.XValues[j], 'g', -1, 64) + " " + p.Y + "=" + strconv.FormatFloat(p.YValues[i], 'g', -1, 64)
	}
	return fmt.Sprintf("loss plane %s × %s (%d × %d values): best %s, worst %s %s",
		p.X, p.Y, len(p.XValues), len(p.YValues), at(p.BestY, p.BestX), at(wi, wj), pctOrDash(&p.Loss[wi][wj]))
}

// nodeTable writes the per-node errors, observed against simulated, one
// row a node.
func nodeTable(l layout, rows []NodeError) error {
	tw := l.table(tabwriter.AlignRight, "node\trequests\tsim calls\tcalls err\tfail obs\tfail sim\tfail err\tp50 obs\tp50 sim\tp50 err\tp95 obs\tp95 sim\tp95 err\tp99 obs\tp99 sim\tp99 err\t")
	for _, n := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%+.2f pp\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%s\t\n", n.Node, n.Requests, n.Calls,
			pct(n.CallsErr), pctu(n.FailObs), pctu(n.FailSim), 100*n.FailErr, n.P50Obs, n.P50Sim, pct(n.P50Err),
			n.P95Obs, n.P95Sim, pct(n.P95Err), n.P99Obs, n.P99Sim, pct(n.P99Err))
	}
	return tw.Flush()
}

// gridCounterpart names the grid's fitted coefficient that a logistic
// feature corresponds to, with its value, so the table sets the two side
// by side; "" for a feature the grid has no counterpart of.
func gridCounterpart(r *Report, feature string) string {
	switch feature {
	case "node_load":
		return "k = " + orDash(r.Best.Value(ParamK)) + ", θ = " + orDash(r.Best.Value(ParamTheta))
	case "upstream_load":
		return "p = " + orDash(r.Best.Value(ParamP))
	case "attempt":
		return "r = " + orDash(r.Best.Value(ParamR))
	}
	return ""
}

// pct formats a signed fraction as a percentage.
func pct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

// pctu formats a fraction as a percentage without a sign.
func pctu(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// pctOrDash is pct to two places, or "-" when there is no value.
func pctOrDash(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", 100**x)
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtF formats a float for tables.
func fmtF(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
