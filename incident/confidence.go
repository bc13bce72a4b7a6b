package incident

import "fmt"

// AbstainBelow is the confidence under which the pass names no origin
// ("no origin stands out"): the first candidate's share of the top two
// scores is too close to a tie to trust. Chosen on the validation day
// (TrainTicket 2023-01-30, the harness's four modes, 68 answers), where
// the two answers under 0.6 were right once, a coin's odds, while every
// band above held 85% or more (see trackBands).
const AbstainBelow = 0.6

// TrackRecord is how often the first origin was right at a confidence
// like this one on the validation day.
type TrackRecord struct {
	// Band is the confidence band, "0.9 to 1".
	Band string `json:"band"`
	// Right of Answers first origins in the band were the injected
	// service.
	Right   int `json:"right"`
	Answers int `json:"answers"`
	// Day names the validation set.
	Day string `json:"day"`
}

// trackDay names the set the bands were counted on.
const trackDay = "Nezha TrainTicket 2023-01-30, 17 faults in 4 modes"

// trackBands are the validation day's first origins by confidence band,
// as `CASCADE_NEZHA=… CASCADE_NEZHA_SET=dev go test ./incident -run
// TestNezhaDay -v` tallies them (its "confidence against hits" table),
// with the constants of the early-gap freeze (docs/validation.md; the
// bands were first counted, before AbstainBelow was set, at the
// log-signal freeze: 24/25, 24/26, 10/12, 4/5).
var trackBands = []struct {
	lo, hi         float64
	right, answers int
}{
	{0.9, 1, 21, 21},
	{0.8, 0.9, 30, 32},
	{0.7, 0.8, 11, 11},
	{0, 0.7, 4, 4},
}

// trackRecord returns the validation day's record for confidence c; nil
// for no confidence.
func trackRecord(c float64) *TrackRecord {
	if c <= 0 {
		return nil
	}
	for _, b := range trackBands {
		if c >= b.lo {
			return &TrackRecord{Band: fmt.Sprintf("%g to %g", b.lo, b.hi), Right: b.right, Answers: b.answers, Day: trackDay}
		}
	}
	return nil
}
