// Package numfmt formats the numbers that rank and incident write into
// their explanations: briefly, with no trailing zeros, and the same way in
// both stages.
package numfmt

import (
	"math"
	"strconv"
	"strings"
)

// Brief formats a number briefly: up to three significant digits below
// 100 (at most two decimals from 1 up), whole numbers above, no trailing
// zeros.
func Brief(x float64) string {
	ax := math.Abs(x)
	var s string
	switch {
	case ax >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 10:
		s = strconv.FormatFloat(x, 'f', 1, 64)
	case ax >= 1:
		s = strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// MS formats milliseconds: "850 ms", "1.2 s".
func MS(x float64) string {
	if math.Abs(x) >= 1000 {
		return Brief(x/1000) + " s"
	}
	return Brief(x) + " ms"
}

// Round3 rounds x to three significant digits; zero, NaN and the
// infinities come back as they are.
func Round3(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// NoNegZero drops the sign of a formatted number that reads as zero, so
// that a tiny negative value rounded to the precision shown prints as
// "0.00", not "-0.00" (nor "+-0.00", nor the true minus "−0.00"). The
// number is s's leading digits, dots and commas after the sign; what
// follows it (a unit) is kept.
func NoNegZero(s string) string {
	rest, signed := s, false
	for _, p := range []string{"+-", "-", "−"} {
		if r, ok := strings.CutPrefix(s, p); ok {
			rest, signed = r, true
			break
		}
	}
	if !signed {
		return s
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == ',') })
	if end < 0 {
		end = len(rest)
	}
	if end == 0 || strings.Trim(rest[:end], "0.,") != "" {
		return s
	}
	return rest
}
