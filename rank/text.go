package rank

import "cascade/internal/numfmt"

// How numbers read in the candidates' descriptions and the report's
// words.

// num formats a number briefly (numfmt.Brief).
func num(x float64) string { return numfmt.Brief(x) }

// ms formats milliseconds: "850 ms", "1.2 s".
func ms(x float64) string { return numfmt.MS(x) }

func round3(x float64) float64 { return numfmt.Round3(x) }
