package rank

import (
	"fmt"

	"cascade/replay"
)

// Metastability is the surge check: the normal traffic multiplied for the
// middle third of the replay, then back. A system whose goodput does not
// return to 90% of offered load in the remaining third, in at least half
// the seeds, is metastable under that surge: the trigger is gone, the degradation
// stays (seed 000's retry storm).
type Metastability struct {
	// Regime names the surge.
	Regime string `json:"regime"`
	// Factor, AtMS and ForMS describe it.
	Factor float64 `json:"factor"`
	AtMS   float64 `json:"at_ms"`
	ForMS  float64 `json:"for_ms"`
	// RecoverMS is, per seed, how long after the surge goodput recovered;
	// −1 when it did not before the end.
	RecoverMS []float64 `json:"recover_ms"`
	// Recovered counts the seeds that recovered.
	Recovered int `json:"recovered"`
	// Metastable reports that at most half the seeds recovered.
	Metastable bool `json:"metastable"`
	// Removed names the candidates under which more than half the seeds
	// recover, in
	// rank order; empty when the baseline is not metastable.
	Removed []string `json:"removed,omitempty"`
	// Verdict says it in words.
	Verdict string `json:"verdict"`
}

// recovered counts the replays whose goodput recovered after the surge.
func recovered(rs []*replay.Result) int {
	n := 0
	for _, r := range rs {
		if r.RecoverMS >= 0 {
			n++
		}
	}
	return n
}

// metastability reads the baseline's surge replays, and which rows
// recover where the baseline does not.
func metastability(reg Regime, cfg Config, rs []*replay.Result, rows []Row) *Metastability {
	ms := &Metastability{Regime: reg.Name, Factor: cfg.SurgeFactor}
	if t := reg.Traffic; t != nil && len(t.Surges) > 0 {
		s := t.Surges[len(t.Surges)-1]
		ms.AtMS, ms.ForMS = s.AtMS, s.ForMS
	}
	for _, r := range rs {
		ms.RecoverMS = append(ms.RecoverMS, r.RecoverMS)
	}
	ms.Recovered = recovered(rs)
	ms.Metastable = 2*ms.Recovered <= len(rs)
	if !ms.Metastable {
		ms.Verdict = fmt.Sprintf("not metastable: goodput recovered after the surge in %d of %d seeds", ms.Recovered, len(rs))
		return ms
	}
	for i := range rows {
		if 2*rows[i].Recovered > len(rs) {
			ms.Removed = append(ms.Removed, rows[i].Candidate.Name)
		}
	}
	ms.Verdict = fmt.Sprintf("metastable: goodput stayed down after the surge in %d of %d seeds", len(rs)-ms.Recovered, len(rs))
	switch len(ms.Removed) {
	case 0:
		ms.Verdict += "; no single candidate removes it"
	default:
		ms.Verdict += fmt.Sprintf("; %d candidate(s) remove it", len(ms.Removed))
	}
	return ms
}
