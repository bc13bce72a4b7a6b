package ingest

// This file reads the span CSV's cells: links, ids, times, durations
// and span kinds.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cascade"
)

// csvLinks reads a links cell: "traceid:spanid" pairs separated by spaces
// or semicolons. The slice is new for every span.
func csvLinks(v string) ([]cascade.SpanLink, error) {
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return nil, nil
	}
	links := make([]cascade.SpanLink, 0, len(fields))
	for _, f := range fields {
		tid, sid, ok := strings.Cut(f, ":")
		if !ok || tid == "" || sid == "" {
			return nil, fmt.Errorf("link %q is not traceid:spanid", truncateText(f))
		}
		links = append(links, cascade.SpanLink{TraceID: csvID(tid), SpanID: csvID(sid)})
	}
	return links, nil
}

// csvID lower-cases an id made of hexadecimal digits and keeps any other
// text as it is.
func csvID(s string) string {
	var class byte
	for i := 0; i < len(s); i++ {
		class |= hexClass[s[i]]
	}
	if class == hexUpper {
		return strings.ToLower(s)
	}
	return s
}

// Classes of bytes in ids, for csvID: 0 for a digit or lower-case
// hexadecimal letter.
const (
	hexUpper = 1 << iota // an upper-case hexadecimal letter
	hexOther             // anything else
)

// hexClass gives the class of each byte.
var hexClass = func() (t [256]byte) {
	for i := range t {
		switch c := byte(i); {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			t[i] = hexUpper
		default:
			t[i] = hexOther
		}
	}
	return t
}()

// Errors of csvScaled, which callers turn into messages.
var (
	errCSVNotNumber = errors.New("not a number")
	errCSVRange     = errors.New("out of range")
)

// csvTimeValue reads a time cell: a number of units since the Unix epoch
// (with or without a fraction) or an RFC 3339 time, as Unix nanoseconds.
func csvTimeValue(s string, unit time.Duration) (int64, error) {
	v, err := csvScaled(s, unit)
	switch err {
	case nil:
		return v, nil
	case errCSVRange:
		return 0, fmt.Errorf("%q is out of range", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a number nor an RFC 3339 time", s)
	}
	if y := t.Year(); y < 1678 || y > 2261 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return t.UnixNano(), nil
}

// csvDurationValue reads a duration cell: a number of units or a Go
// duration ("1.5ms"), in nanoseconds.
func csvDurationValue(s string, unit time.Duration) (int64, error) {
	v, err := csvScaled(s, unit)
	switch err {
	case nil:
		return v, nil
	case errCSVRange:
		return 0, fmt.Errorf("%q is out of range", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a number nor a duration", s)
	}
	return int64(d), nil
}

// csvScaled reads a decimal number of units as an integer number of
// nanoseconds, exactly for plain decimals and through float64 for
// exponents. It returns errCSVNotNumber or errCSVRange.
func csvScaled(s string, unit time.Duration) (int64, error) {
	u := int64(unit)
	if u <= 0 {
		u = 1
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v > math.MaxInt64/u || v < math.MinInt64/u {
			return 0, errCSVRange
		}
		return v * u, nil
	}
	if v, ok, inRange := csvScaleDecimal(s, u); ok {
		if !inRange {
			return 0, errCSVRange
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errCSVRange
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, errCSVNotNumber
	}
	f *= float64(u)
	if f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, errCSVRange
	}
	return int64(f), nil
}

// csvScaleDecimal reads "[+-]digits[.digits]" as a number of units (a power
// of ten of nanoseconds), truncating digits finer than a nanosecond. ok
// says whether s had that shape; inRange whether the result fits.
func csvScaleDecimal(s string, unit int64) (v int64, ok, inRange bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, false, false
	}
	inRange = true
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			inRange = false
			continue
		}
		v = v*10 + d
	}
	if inRange && v > math.MaxInt64/unit {
		inRange = false
	}
	v *= unit
	scale := unit
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		scale /= 10
		if inRange && scale > 0 {
			if v > math.MaxInt64-int64(c-'0')*scale {
				inRange = false
			} else {
				v += int64(c-'0') * scale
			}
		}
	}
	if neg {
		v = -v
	}
	return v, true, inRange
}

// csvSpanKind reads a span kind cell.
func csvSpanKind(s string) (cascade.SpanKind, bool) {
	l := strings.ToLower(s)
	l = strings.TrimPrefix(l, "span_kind_")
	l = strings.TrimPrefix(l, "spankind.")
	switch l {
	case "server", "2":
		return cascade.KindServer, true
	case "client", "3":
		return cascade.KindClient, true
	case "producer", "4":
		return cascade.KindProducer, true
	case "consumer", "5":
		return cascade.KindConsumer, true
	case "internal", "1":
		return cascade.KindInternal, true
	case "unspecified", "0":
		return cascade.KindUnspecified, true
	}
	return cascade.KindUnspecified, false
}
